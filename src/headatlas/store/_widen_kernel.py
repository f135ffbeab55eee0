"""The compiled loops of :mod:`headatlas.store.halves` (``widen``, ``row_entropy``,
``norm_row_entropy``, ``norm_weighted_and_totals``), apart so that importing the store reader
does not import numba (0.2-0.3 s): only a job that reads float16 maps pays for it."""

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


@numba.njit(nogil=True, cache=True)
def norm_weighted(maps, norms, out, totals):  # pragma: no cover (tested through norm_weighted_and_totals)
    """:func:`headatlas.weightings.norm_weighted_and_totals` in one pass, bitwise numpy's: ``maps``
    float32 ``[M, R, N]``, ``norms`` float32 ``[M, N]``; fills ``out`` (each row of ``a v``
    divided by its sum, or by 1 where the sum is not positive) and ``totals`` float32 ``[M, R]``
    (the sums, in numpy's pairwise order: :func:`_numpy_sum`)."""
    maps_per, rows, n = maps.shape
    for m in range(maps_per):
        norm = norms[m]
        for i in range(rows):
            row, weighted = maps[m, i], out[m, i]
            for j in range(n):
                weighted[j] = row[j] * norm[j]
            total = _numpy_sum(weighted, 0, n)
            totals[m, i] = total
            divisor = total if total > 0 else np.float32(1.0)
            for j in range(n):
                weighted[j] = weighted[j] / divisor


@numba.njit(nogil=True, cache=True)
def _numpy_sum(row, start, n):  # pragma: no cover (compiled)
    """float32 sum of ``row[start:start + n]`` in numpy's order (its ``pairwise_sum``: a run of
    more than 128 halved at a multiple of 8, the halves' sums added; :func:`_block_sum` below
    that). Without recursion: numba's cache loads a recursive function broken (a segfault), so
    the halving is walked with explicit stacks, in numpy's order (left, right, their sum)."""
    if n <= 128:
        return _block_sum(row, start, n)
    starts, sizes = np.empty(64, np.int64), np.empty(64, np.int64)
    joins, sums = np.zeros(64, np.bool_), np.empty(64, np.float32)
    starts[0], sizes[0], joins[0] = start, n, False
    pending, done = 1, 0
    while pending:
        pending -= 1
        first, size, join = starts[pending], sizes[pending], joins[pending]
        if join:  # both halves are summed: the left one lies below the right one
            sums[done - 2] = sums[done - 2] + sums[done - 1]
            done -= 1
        elif size <= 128:
            sums[done] = _block_sum(row, first, size)
            done += 1
        else:
            half = size // 2
            half -= half % 8
            starts[pending], sizes[pending], joins[pending] = first, size, True
            starts[pending + 1], sizes[pending + 1], joins[pending + 1] = first + half, size - half, False
            starts[pending + 2], sizes[pending + 2], joins[pending + 2] = first, half, False
            pending += 3
    return sums[0]


@numba.njit(nogil=True, cache=True)
def _block_sum(row, start, n):  # pragma: no cover (compiled)
    """numpy's ``pairwise_sum`` of at most 128 float32s: one by one below 8, else eight running
    sums over the multiples of 8, added as a tree, then the rest one by one."""
    if n < 8:
        total = np.float32(0.0)
        for i in range(start, start + n):
            total += row[i]
        return total
    r0, r1, r2, r3 = row[start], row[start + 1], row[start + 2], row[start + 3]
    r4, r5, r6, r7 = row[start + 4], row[start + 5], row[start + 6], row[start + 7]
    i, stop = 8, n - n % 8
    while i < stop:
        k = start + i
        r0 += row[k]
        r1 += row[k + 1]
        r2 += row[k + 2]
        r3 += row[k + 3]
        r4 += row[k + 4]
        r5 += row[k + 5]
        r6 += row[k + 6]
        r7 += row[k + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        total += row[start + i]
        i += 1
    return total
