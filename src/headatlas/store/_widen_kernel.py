"""The compiled loops of :mod:`headatlas.store.halves` (``widen``, ``row_entropy``,
``norm_row_entropy``), apart so that importing the store reader does not import numba
(0.2-0.3 s): only a job that reads float16 maps pays for it."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def lookup(bits, table, out):  # pragma: no cover (compiled; tested through widen)
    for i in range(bits.shape[0]):
        out[i] = table[bits[i]]


@numba.njit(nogil=True, cache=True)
def entropy_rows(bits, terms, out):  # pragma: no cover (compiled; tested through row_entropy)
    for r in range(bits.shape[0]):
        total = 0.0  # float64, as row_entropy's numpy path sums
        for k in range(bits.shape[1]):
            total += terms[bits[r, k]]
        out[r] = total


@numba.njit(nogil=True, cache=True)
def norm_entropy_rows(bits, weights, norms, sums, logs, out):  # pragma: no cover (tested through norm_row_entropy)
    maps, rows, n = weights.shape
    log_norms = np.empty(n)
    for m in range(maps):
        for j in range(n):
            log_norms[j] = np.log(np.float64(norms[m, j])) if norms[m, j] > 0 else 0.0
        for i in range(rows):
            mass, total = 0.0, 0.0
            for j in range(n):
                p = np.float64(weights[m, i, j])
                mass += p
                total += p * (logs[bits[m, i, j]] + log_norms[j])
            s = np.float64(sums[m, i])
            out[m, i] = mass * np.log(s) - total if s > 0 else -total
