"""float16 -> float32 at memory speed, for reading stores.

numpy's cast of float16 takes a slow path for subnormal halves, and attention weights below
6.1e-5 are subnormal in float16 (about a tenth of a 128-token map's): 3.6 ms for one
``[6, 12, 128, 128]`` map. :func:`widen` looks every half up in a table of numpy's own cast of
all 65,536 bit patterns instead: 0.4 ms, and bitwise numpy's result by construction
(tests/unit/test_halves.py checks all 65,536).
"""

from __future__ import annotations

import numpy as np

# numpy's float32 value of every float16 bit pattern (256 KB: stays in a core's L2 cache).
TABLE = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)


def widen(halves: np.ndarray) -> np.ndarray:
    """``halves.astype(np.float32)``: a new C-contiguous array of the same shape (any other dtype
    than float16 is cast by numpy)."""
    if halves.dtype != np.float16:
        return halves.astype(np.float32)
    from headatlas.store._widen_kernel import lookup  # numba, on the first read only

    out = np.empty(halves.shape, np.float32)
    lookup(np.ascontiguousarray(halves).reshape(-1).view(np.uint16), TABLE, out.reshape(-1))
    return out
