"""The compiled loop of :func:`headatlas.store.halves.widen`, apart so that importing the store
reader does not import numba (0.2-0.3 s): only a job that reads float16 maps pays for it."""

from __future__ import annotations

import numba


@numba.njit(nogil=True, cache=True)
def lookup(bits, table, out):  # pragma: no cover (compiled; tested through widen)
    for i in range(bits.shape[0]):
        out[i] = table[bits[i]]
