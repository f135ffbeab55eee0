"""Percentile bootstrap of a ratio over resampled units: the one bootstrap of the project.

An accuracy is ``sum(correct) / sum(total)`` over units (sentences, documents)
that each hold several scored items. Its interval resamples the units with
replacement, recomputes the ratio, and takes percentiles: the items of one
unit are not independent, so units, not items, are resampled.
"""

from __future__ import annotations

import numpy as np

CHUNK_ELEMENTS = 1 << 22  # drawn indices per chunk of resamples (~32 MB of int64)


def bootstrap_ratio(correct, total, n_boot: int = 1000, seed: int = 0, level: float = 0.95):
    """Percentile bootstrap interval of ``sum(correct) / sum(total)``, resampling units.

    Parameters
    ----------
    correct : array ``[U]`` or ``[U, S]``
        Per unit (and per system ``S``): correct items. Several systems are
        scored on the *same* resamples, so their intervals are comparable.
    total : array ``[U]`` or ``[U, S]``
        Per unit (and per system): scored items. ``[U]`` is shared by every system.
    n_boot : int
        Resamples. They are drawn in chunks of ``CHUNK_ELEMENTS`` indices, so
        memory stays bounded (~100 MB) for any number of units and systems.
    seed : int
        Seed of the generator: the same inputs give the same interval.
    level : float
        Coverage of the interval (0.95: the 2.5th and 97.5th percentiles).

    Returns
    -------
    (low, high)
        Floats for a 1-D ``correct``, arrays ``[S]`` for a 2-D one. Units whose
        total is 0 for every system carry no weight and are dropped before
        resampling; a ratio that is 0/0 in a resample (a system with no item
        there) is left out of that system's percentiles; NaN where nothing is left.

    Notes
    -----
    Resample ``b`` draws ``U'`` unit indices uniformly with replacement
    (``U'`` = units kept), as rows of ``rng.integers(0, U', size=(chunk, U'))``
    with ``chunk = max(1, CHUNK_ELEMENTS // U')``; the percentiles are
    ``np.nanquantile`` (linear interpolation) of the ``n_boot`` ratios.
    """
    correct, total = np.asarray(correct, dtype=float), np.asarray(total, dtype=float)
    single = correct.ndim == 1
    correct = correct[:, None] if single else correct
    total = np.broadcast_to(total[:, None] if total.ndim == 1 else total, correct.shape)
    keep = (total > 0).any(axis=1)
    correct, total = correct[keep], total[keep]
    n_units, n_systems = correct.shape
    if n_units == 0:
        nan = np.full(n_systems, np.nan)
        return (float("nan"), float("nan")) if single else (nan, nan.copy())
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_ELEMENTS // n_units)
    ratios = []
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        pick = rng.integers(0, n_units, size=(size, n_units))
        # Draws per resample and unit; a matrix product then sums every system at once
        # (exact: the sums are of integers far below 2**53).
        rows = np.repeat(np.arange(size) * n_units, n_units)
        weights = np.bincount(rows + pick.ravel(), minlength=size * n_units).reshape(size, n_units)
        weights = weights.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratios.append((weights @ correct) / (weights @ total))
    ratios = np.concatenate(ratios)  # [n_boot, S]
    low, high = _nan_quantiles(ratios, [(1 - level) / 2, (1 + level) / 2])
    return (float(low[0]), float(high[0])) if single else (low, high)


def _nan_quantiles(values: np.ndarray, q) -> np.ndarray:
    """``np.nanquantile`` over axis 0, NaN (without a warning) for an all-NaN column."""
    out = np.full((len(q), values.shape[1]), np.nan)
    some = ~np.isnan(values).all(axis=0)
    if some.any():
        out[:, some] = np.nanquantile(values[:, some], q, axis=0)
    return out
