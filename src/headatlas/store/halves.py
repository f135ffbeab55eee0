"""float16 -> float32 at memory speed, for reading stores.

numpy's cast of float16 takes a slow path for subnormal halves, and attention weights below
6.1e-5 are subnormal in float16 (about a tenth of a 128-token map's): 3.6 ms for one
``[6, 12, 128, 128]`` map. :func:`widen` looks every half up in a table of numpy's own cast of
all 65,536 bit patterns instead, bitwise numpy's result by construction
(tests/unit/test_halves.py checks all 65,536): numpy's ``take`` of the table, then, once a
process has widened enough halves to pay for it, a compiled loop 2.6x faster per half.

The compiled loop costs about 0.7 CPU-s of a job to start (numba's import and the load of its
cached kernel): a quarter of what a tiny store's analysis job took in all. Each process therefore
widens its first :data:`NUMPY_HALVES` halves with numpy, which costs about as much more as the
start would, and only then starts the loop: never more than twice the cheaper of the two,
without knowing the job's size in advance (``benchmarks/job_start.py`` measures both).
"""

from __future__ import annotations

import numpy as np

# numpy's float32 value of every float16 bit pattern (256 KB: stays in a core's L2 cache).
TABLE = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
# about the break-even of benchmarks/job_start.py: 0.72 CPU-s of start / 0.6 ns more per half
# with take = 1.2e9 halves, about 1,000 maps of a 128-token MiniLM segment (2026-11-27)
NUMPY_HALVES = 1_000_000_000
_widened = 0  # halves this process has widened with numpy


def exact_halves(values: np.ndarray) -> np.ndarray | None:
    """``values`` as float16 when every one is a float16's (maps and value norms as a store or a
    fused run holds them: half the bytes, nothing lost), else None."""
    half = values.astype(np.float16)
    return half if np.array_equal(half, values, equal_nan=True) else None


def widen(halves: np.ndarray) -> np.ndarray:
    """``halves.astype(np.float32)``: a new C-contiguous array of the same shape (any other dtype
    than float16 is cast by numpy)."""
    global _widened
    if halves.dtype != np.float16:
        return halves.astype(np.float32)
    bits = np.ascontiguousarray(halves).view(np.uint16)
    if _widened < NUMPY_HALVES:
        _widened += bits.size
        return np.take(TABLE, bits).reshape(halves.shape)  # ascontiguousarray makes 0-d 1-d
    from headatlas.store._widen_kernel import lookup  # numba: ~0.7 s to start, once per process

    out = np.empty(halves.shape, np.float32)
    lookup(bits.reshape(-1), TABLE, out.reshape(-1))
    return out
