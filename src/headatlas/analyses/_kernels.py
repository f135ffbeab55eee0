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
def binned_rows(maps, by_key, by_distance, lengths, n_bins, out):  # pragma: no cover (tested through headtypes)
    """:func:`headatlas.analyses.headtypes.binned_rows` on the host, for bins decided by the key
    alone or else by the distance to the query (:func:`~headatlas.analyses.headtypes.key_bins`'
    form): ``maps`` float32 ``[B, M, N, N]``; ``by_key`` int32 ``[B, N]`` each key's bin, or -1
    where the distance decides; ``by_distance`` int32 ``[B, N]`` the bin at each distance ``|i -
    j|``; a bin of ``n_bins`` is read by no feature. Fills ``out`` float32 ``[B, M, n_bins]``:
    each real query's row divided by its total (every key's), split into the bins, averaged
    over the example's queries; a real query's row of no mass makes its map's features NaN.

    No bin is looked up per entry: each scaled row is added to the keys' column sums and, for the
    keys the distance bins, along its diagonals (``j - i``), each a contiguous loop (0.6-0.8
    against 1.6-1.9 ms a view of a 128-token MiniLM example for a bin looked up per entry); the
    bins read those sums once per map. Sums in float64."""
    batch, maps_per, rows, n = maps.shape
    columns, diagonals = np.zeros(n), np.zeros(2 * n)
    distance_decides, feature = np.zeros(n, np.float32), np.zeros(n_bins + 1)
    for b in range(batch):
        length = lengths[b]
        for j in range(n):
            distance_decides[j] = 1.0 if j < length and by_key[b, j] < 0 else 0.0
        for m in range(maps_per):
            columns[:] = 0.0
            diagonals[:] = 0.0
            empty = False
            for i in range(length):
                row = maps[b, m, i]
                total = 0.0
                for j in range(n):
                    total += np.float64(row[j])
                if not total > 0:
                    empty = True
                    continue
                scale = 1.0 / total
                for j in range(length):
                    columns[j] += np.float64(row[j]) * scale
                along = diagonals[n - 1 - i:n - 1 - i + length]  # along[j]: offset j - i
                for j in range(length):
                    along[j] += np.float64(row[j] * distance_decides[j]) * scale
            feature[:] = 0.0
            for j in range(length):
                if by_key[b, j] >= 0:
                    feature[by_key[b, j]] += columns[j]
            feature[by_distance[b, 0]] += diagonals[n - 1]
            for d in range(1, length):
                feature[by_distance[b, d]] += diagonals[n - 1 + d] + diagonals[n - 1 - d]
            for k in range(n_bins):
                out[b, m, k] = np.nan if empty else feature[k] / max(length, 1)


@numba.njit(nogil=True, cache=True, fastmath={"reassoc"})
def block_sums(maps, aside, contrast, lengths, out):  # pragma: no cover (tested through patterns)
    """:func:`headatlas.analyses.patterns._block`'s sums on the host: ``maps`` float32
    ``[B, M, N, N]``, ``aside`` bool ``[B, M, N]`` (each map's top columns and stripes),
    ``contrast`` int8 ``[B, N, N]`` (:func:`~headatlas.analyses.patterns.block_contrast`: +1 at
    a contrasting pair's key, -1 at its mirror). Adds to ``out`` float64 ``[B, M]`` each map's
    ``a[i, j] - a[i, 2i - j]`` summed over its example's pairs with neither key aside.

    The whole contrast is one contiguous dot product per map; the pairs with a key aside (a few
    columns a map) are then taken back out, column by column: each pair once, from its key's
    column where that is aside, else from its mirror's."""
    for b in range(maps.shape[0]):
        n = lengths[b]
        weights = contrast[b]
        for m in range(maps.shape[1]):
            a, side, total = maps[b, m], aside[b, m], 0.0
            for i in range(n):
                row, weight = a[i], weights[i]
                for j in range(n):
                    total += np.float64(row[j]) * weight[j]
            for c in range(n):
                if not side[c]:
                    continue
                for i in range(n):
                    w = weights[i, c]
                    if w > 0:  # c is the pair's key
                        total -= np.float64(a[i, c]) - np.float64(a[i, 2 * i - c])
                    elif w < 0 and not side[2 * i - c]:  # c is the mirror of a pair whose key is not aside
                        total -= np.float64(a[i, 2 * i - c]) - np.float64(a[i, c])
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
