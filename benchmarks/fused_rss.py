#!/usr/bin/env python
"""Benchmark: the resident memory of a fused extraction as it goes, with and without writing
the runs' states out (``extraction.spill_every``; issue 32).

Usage (from the repository root; the segments from ``benchmarks/fused.py --scale 10`` first)::

    .venv/bin/python benchmarks/fused_rss.py --spill-every 0 --segments 3000
    .venv/bin/python benchmarks/fused_rss.py --spill-every 500 --segments 3000

One process, MiniLM, one thread, the per-head statistics of benchmarks/fused.py (``fused_stats``)
on the first ``--segments`` Wikipedia segments of ``benchmarks/out/fused-work/segments-10000.jsonl``;
prints the RSS (MB) after every 500 examples, at the end, and the peak (VmHWM).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def rss_mb() -> int:
    with open("/proc/self/status") as handle:
        return int(next(line for line in handle if line.startswith("VmRSS")).split()[1]) // 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spill-every", type=int, required=True)
    parser.add_argument("--segments", type=int, default=3000)
    args = parser.parse_args(argv)
    from headatlas.pipeline.jobs import limit_threads

    limit_threads(1)
    import fused as bench

    from headatlas.analyses import fused
    from headatlas.corpora.records import read_jsonl
    from headatlas.encoders.models import load_model

    corpus = HERE / "out" / "fused-work" / "segments-10000.jsonl"
    if not corpus.exists():
        raise SystemExit(f"{corpus} is missing: run benchmarks/fused.py --scale 10 --paths forward first")
    sentences = list(read_jsonl(corpus))[:args.segments]
    loaded = load_model(*bench.MODEL, "cpu")
    limit_threads(1)
    samples, seen = [], [0]
    start_views = fused._Views.__init__

    def counted(self, example):  # every example passes here once, on the host path
        seen[0] += 1
        if seen[0] % 500 == 0:
            samples.append((seen[0], rss_mb()))
        start_views(self, example)

    fused._Views.__init__ = counted
    states = HERE / "out" / f"rss-{args.spill_every}.h5"
    fused.fused_extract(loaded, sentences, states, bench.runs("fused_stats"), exemplar_path=None,
                        max_length=bench.MAX_LENGTH, batch_size=bench.BATCH_SIZE, progress=False,
                        store_attrs={"corpus": "wikipedia", "corpus_sha256": ""}, spill_every=args.spill_every)
    states.unlink()
    print(f"spill_every {args.spill_every}: RSS after " + ", ".join(f"{n}: {mb}" for n, mb in samples)
          + f"; at the end {rss_mb()} MB; peak {bench.vm_hwm_kb() // 1000} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
