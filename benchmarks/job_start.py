#!/usr/bin/env python
"""What a store-reading job pays to widen float16 maps: numpy's take of the lookup table vs the
compiled loop (numba), per half and to start (headatlas.store.halves.NUMPY_HALVES).

Usage: .venv/bin/python benchmarks/job_start.py [--rounds 5]

Two measurements, each in fresh processes (a job is one), interleaved A B B A:
- **start**: CPU seconds of a process that imports the store reader and widens one small map
  (6 x 2 x 2 x 16 x 16 halves) with the loop, minus the same process widening it with take: the
  loop's fixed cost (numba's import and the load of its cached kernel);
- **per half**: the CPU time per half of both on a 128-token MiniLM map ([6, 12, 128, 128]),
  timed in one process over 50 maps each.
Prints the medians, the break-even (start / per-half difference, in halves and in 128-token
MiniLM maps) and NUMPY_HALVES beside it.
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

from headatlas.store import halves

CHILD = """
import numpy as np, headatlas.store.halves as h
h.NUMPY_HALVES = {numpy_halves}
h.widen(np.full((6, 2, 2, 16, 16), 0.01, np.float16))
"""
MAP = (6, 12, 128, 128)


def child_cpu(numpy_halves: int) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", CHILD.format(numpy_halves=numpy_halves)], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def per_half(loop: bool, maps: int = 50) -> float:
    rng = np.random.default_rng(0)
    halves.NUMPY_HALVES = 0 if loop else 1 << 62
    data = rng.random(MAP, dtype=np.float32).astype(np.float16) ** 4  # many subnormals
    halves.widen(data)  # the loop's start is not timed here
    start = time.process_time()
    for _ in range(maps):
        halves.widen(data)
    return (time.process_time() - start) / (maps * data.size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    configured = halves.NUMPY_HALVES
    starts = []
    for r in range(rounds):
        order = (0, 1 << 62) if r % 2 == 0 else (1 << 62, 0)  # loop first, then take; flipped
        cpu = {threshold: child_cpu(threshold) for threshold in order}
        starts.append(cpu[0] - cpu[1 << 62])
    take = statistics.median(per_half(False) for _ in range(rounds))
    loop = statistics.median(per_half(True) for _ in range(rounds))
    start = statistics.median(starts)
    even = start / (take - loop)
    size = math.prod(MAP)
    print(f"loop's start: {start:.2f} CPU-s (median of {rounds}; rounds: "
          + ", ".join(f"{s:.2f}" for s in starts) + ")")
    print(f"per half: take {take * 1e9:.2f} ns, loop {loop * 1e9:.2f} ns (ratio {take / loop:.1f}x)")
    print(f"break-even: {even:.3g} halves = {even / size:.0f} maps of {MAP}; "
          f"NUMPY_HALVES = {configured:.3g} ({configured / size:.0f} maps)")


if __name__ == "__main__":
    main()
