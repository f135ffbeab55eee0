"""Compiled loops of :mod:`headatlas.analyses.batch`, :mod:`~headatlas.analyses.headtypes` and
:mod:`~headatlas.analyses.patterns`, apart so that importing an analysis does not import numba: a
batch takes them only once its process takes :mod:`headatlas.store.halves`' compiled loops
(:func:`~headatlas.store.halves.compiled`).

Each reads a map once where numpy makes one pass per quantity (a 4.7 MB float32 pass per
128-token MiniLM map, 0.4-1 ms on these machines), and each agrees with the numpy path it
replaces: :func:`map_sums` bitwise, :func:`top_columns`' columns and stripes exactly,
:func:`binned_rows` to float32 rounding, the float64 sums to float64 rounding
(tests/unit/test_kernels.py, tests/unit/test_patterns.py)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True, fastmath={"nnan", "ninf", "nsz"})
def map_sums(maps, columns, row_max):  # pragma: no cover (compiled; tested through MapBatch)
    """``maps`` float32 ``[B, M, N, N]``. Fills ``columns`` float64 ``[B, M, N]`` (each key's
    mass summed over the queries, in query order as numpy sums) and ``row_max`` float32
    ``[B, M, N]``. The flags let the maxima vectorise; they assume finite maps, which the caller
    checks (a NaN or inf reaches ``columns``)."""
    batch, maps_per, rows, n = maps.shape
    for b in range(batch):
        for m in range(maps_per):
            column = columns[b, m]
            column[:] = 0.0
            for i in range(rows):
                row = maps[b, m, i]
                for j in range(n):
                    column[j] += np.float64(row[j])
                top = row[0] if n else np.float32(0.0)
                for j in range(n):
                    top = max(top, row[j])
                row_max[b, m, i] = top


@numba.njit(nogil=True, cache=True, fastmath={"reassoc"})
def binned_rows(maps, slots, lengths, n_bins, out):  # pragma: no cover (compiled; tested through headtypes)
    """:func:`headatlas.analyses.headtypes.binned_rows` on the host: ``maps`` float32
    ``[B, M, N, N]``, ``slots`` int32 ``[B, N, N]`` each (query, key) pair's bin times 4 plus
    the key's position mod 4 (four accumulators per bin, so that neighbouring keys of one bin
    do not wait on each other; a bin of ``n_bins`` for pairs past an example's length), ``out``
    float32 ``[B, M, n_bins]``: each real query's row split into the bins, divided by the row's
    total (every key's), summed in float64 and averaged over the example's queries. A real
    query's row of no mass makes its map's features NaN."""
    batch, maps_per, rows, n = maps.shape
    acc = np.zeros(4 * (n_bins + 1))
    feature = np.zeros(n_bins)
    for b in range(batch):
        length = lengths[b]
        for m in range(maps_per):
            feature[:] = 0.0
            for i in range(length):
                row, slot = maps[b, m, i], slots[b, i]
                acc[:] = 0.0
                total = 0.0
                for j in range(n):
                    total += np.float64(row[j])
                for j in range(n):
                    acc[slot[j]] += np.float64(row[j])
                if total > 0:
                    for k in range(n_bins):
                        feature[k] += (acc[4 * k] + acc[4 * k + 1] + acc[4 * k + 2] + acc[4 * k + 3]) / total
                else:
                    feature[:] = np.nan
            for k in range(n_bins):
                out[b, m, k] = feature[k] / max(length, 1)


@numba.njit(nogil=True, cache=True, boundscheck=False)
def block_sums(maps, aside, example, key_at, mirror_at, keys, mirror, out):  # pragma: no cover (tested: patterns)
    """:func:`headatlas.analyses.patterns._block`'s sums on the host: ``maps`` float32
    ``[B, M, N * N]``, ``aside`` bool ``[B, M, N]`` (each map's top columns and stripes); the
    contrasting pairs' example, flat positions ``i N + j`` and ``i N + 2i - j``, and keys ``j``
    and ``2i - j`` (int32 ``[P]`` each, in example, query, key order); adds to ``out`` float64
    ``[B, M]`` each map's ``a[i, j] - a[i, 2i - j]`` summed over its example's pairs with
    neither key aside. Map by map, the pairs in the order they lie in the map: numpy's gather of
    the pairs across the maps reads them 64 KB apart."""
    for b in range(maps.shape[0]):
        for m in range(maps.shape[1]):
            flat, side, total = maps[b, m], aside[b, m], 0.0
            for p in range(len(key_at)):
                if example[p] == b and not (side[keys[p]] or side[mirror[p]]):
                    total += np.float64(flat[key_at[p]]) - np.float64(flat[mirror_at[p]])
            out[b, m] += total


@numba.njit(nogil=True, cache=True)
def top_columns(off_col, above, valid, k, top, in_top, vertical, stripes):  # pragma: no cover (tested through patterns)
    """:func:`headatlas.analyses.patterns.batch_features`' top columns on the host, for finite
    ``off_col`` float64 ``[R, N]`` (each map row: its keys' off-band mass), ``above`` ``[R]``
    (a stripe's level), ``valid`` bool ``[R, N]`` (keys within the example): fills ``top``
    int64 ``[R, k]`` (the k largest, ties to the lowest key: a stable sort's order),
    ``in_top`` bool ``[R, N]`` (a top column or a stripe), ``vertical`` ``[R]`` (their mass)
    and ``stripes`` ``[R]`` (how many stripes)."""
    rows, n = off_col.shape
    best = np.empty(k)
    for r in range(rows):
        row = off_col[r]
        filled = 0
        for j in range(n):
            x = row[j]
            if filled < k:
                slot = filled
                filled += 1
            elif x > best[k - 1]:
                slot = k - 1
            else:
                continue
            while slot > 0 and best[slot - 1] < x:  # equal values keep the lower key ahead
                best[slot] = best[slot - 1]
                top[r, slot] = top[r, slot - 1]
                slot -= 1
            best[slot] = x
            top[r, slot] = j
        count, mass = 0, 0.0
        for j in range(n):
            stripe = valid[r, j] and row[j] >= above[r]
            count += stripe
            in_top[r, j] = stripe
        for t in range(k):
            in_top[r, top[r, t]] = True
        for j in range(n):
            if in_top[r, j]:
                mass += row[j]
        vertical[r] = mass
        stripes[r] = count
