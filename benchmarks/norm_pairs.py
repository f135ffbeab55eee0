#!/usr/bin/env python
"""Benchmark: norm shares' pair sampling per input, the host work a GPU run waits for (issue 32).

Usage (from the repository root)::

    .venv/bin/python benchmarks/norm_pairs.py
    PYTHONPATH=<clone of an older commit>/src .venv/bin/python benchmarks/norm_pairs.py   # the code before

Times :meth:`headatlas.analyses.norms.NormShares._sample_pairs` on one input of 120 tokens
([CLS], [SEP], 11 punctuation marks, the rest other tokens) with a generator seeded per input as
the analysis seeds it, for MiniLM's (6 x 12) and bert-base's (12 x 12) geometry: milliseconds per
input, the best of ``--rounds`` rounds of ``--inputs`` inputs. Run the two versions interleaved:
this machine's timings move by tens of percent between runs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from headatlas.analyses.norms import CLASSES, NormShares


def one_input(n: int = 120) -> np.ndarray:
    onehot = np.zeros((n, len(CLASSES)), bool)
    onehot[0, 0], onehot[-1, 1] = True, True
    onehot[5:-1:10, 2] = True
    onehot[:, 3] = ~onehot[:, :3].any(axis=1)
    return onehot


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    onehot = one_input()
    for layers, heads in ((6, 12), (12, 12)):
        analysis = NormShares(layers, heads)
        best = float("inf")
        for _ in range(args.rounds):
            start = time.perf_counter()
            for index in range(args.inputs):
                analysis._sample_pairs(onehot, np.random.default_rng([analysis.seed, index]))
            best = min(best, (time.perf_counter() - start) / args.inputs)
        print(f"{layers} x {heads}: {best * 1e3:.3f} ms per input")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
