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

Then, per batch of ``--batch`` such inputs at bert-base's geometry (random maps, numpy), the
pairs' part of the update (drawing and gathering them) once its sample of examples
(``sample_examples``) is full and the batch is at corpus positions ``--position`` on: the cost
of every batch of a long run, where the sample admits an input with probability
sample_examples / position. The best of ``--rounds`` rounds of 2 batches.
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


def batch_of(size: int, start: int, layers: int = 12, heads: int = 12, n: int = 120):
    """A MapBatch of ``size`` random inputs like :func:`one_input`'s, at corpus positions ``start`` on."""
    from headatlas.analyses.batch import MapBatch
    from headatlas.store.example import Example

    rng = np.random.default_rng(start)
    tokens = ["[CLS]", *(("." if i % 10 == 4 else f"w{i}") for i in range(n - 2)), "[SEP]"]
    attn = rng.random((layers, heads, n, n), np.float32)  # one input's maps for all (the batch copies them)
    maps = dict(attn=attn / attn.sum(-1, keepdims=True), value_norms=rng.random((layers, heads, n), np.float32),
                norm_map=rng.random((layers, n, n), np.float32))
    return MapBatch.of([Example(index, f"e{index}", tokens, np.arange(n), np.zeros(n), np.arange(n), **maps)
                        for index in range(start, start + size)])


def batch_ms(args) -> float:
    """Milliseconds per batch of the pairs' part of the update once the sample of examples is
    full (module docstring): drawing and gathering them (``_gather_pairs``, each batch afresh)."""
    import heapq

    from headatlas.analyses.sample import example_key

    analysis = NormShares(12, 12, sample_examples=args.sample_examples)
    # the sample as a pass over every position before would leave it: the smallest keys (records
    # aside: the update reads only the keys)
    for index in heapq.nsmallest(args.sample_examples, range(args.position), key=lambda i: example_key(0, i)):
        analysis._pairs_kept.add(index, None)
    batches = [batch_of(args.batch, args.position + k * args.batch) for k in range(2)]
    best = float("inf")
    for _ in range(args.rounds):
        for batch in batches:
            batch._shared.clear()  # the drawn pairs are kept per batch: draw them again
        start = time.perf_counter()
        for batch in batches:
            analysis._gather_pairs(batch)
        best = min(best, (time.perf_counter() - start) / len(batches))
    return best * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64, help="inputs per batch of the batch measurement")
    parser.add_argument("--sample-examples", type=int, default=2000,
                        help="the sample of examples, full before the timed batches (the analysis's default)")
    parser.add_argument("--position", type=int, default=100_000, help="corpus position of the timed batches")
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
    print(f"12 x 12, batches of {args.batch} inputs at corpus position {args.position:,}, the sample of "
          f"{args.sample_examples:,} examples full: {batch_ms(args):.2f} ms per batch to draw and gather the pairs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
