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
    n_systems = correct.shape[1]
    if len(correct) == 0:
        nan = np.full(n_systems, np.nan)
        return (float("nan"), float("nan")) if single else (nan, nan.copy())
    ratios = []
    for weights in _resample_weights(len(correct), n_boot, seed):
        with np.errstate(invalid="ignore", divide="ignore"):
            ratios.append((weights @ correct) / (weights @ total))
    ratios = np.concatenate(ratios)  # [n_boot, S]
    low, high = _nan_quantiles(ratios, [(1 - level) / 2, (1 + level) / 2])
    return (float(low[0]), float(high[0])) if single else (low, high)


def bootstrap_share(correct, total, n_boot: int = 1000, seed: int = 0, level: float = 0.95
                    ) -> tuple[float, float]:
    """Paired percentile bootstrap interval of ``100 (r_v - r_f) / (r_u - r_f)``, resampling units.

    ``correct`` is ``[U, 3]``: per unit, the correct items of a variant ``v``, of the reference
    ``u`` (the unablated model) and of the floor ``f``; ``total`` ``[U]`` the unit's scored items,
    shared by the three (they score the same units). Each ``r`` is ``sum(correct) / sum(total)``
    on the same resample, so the interval is that of the share of the reference's gap above the
    floor the variant keeps (the ablation's "share of what attention gives"). Resamples whose
    gap is 0 are left out; NaN when nothing is left.
    """
    correct, total = np.asarray(correct, dtype=float), np.asarray(total, dtype=float)
    if correct.ndim != 2 or correct.shape[1] != 3 or total.shape != correct.shape[:1]:
        raise ValueError(f"bootstrap_share takes correct [U, 3] and total [U], got {correct.shape} "
                         f"and {total.shape}")
    keep = total > 0
    correct, total = correct[keep], total[keep]
    if len(correct) == 0:
        return float("nan"), float("nan")
    shares = []
    for weights in _resample_weights(len(correct), n_boot, seed):
        v, u, f = ((weights @ correct) / (weights @ total)[:, None]).T
        with np.errstate(invalid="ignore", divide="ignore"):
            shares.append(np.where(u != f, 100.0 * (v - f) / (u - f), np.nan))
    low, high = _nan_quantiles(np.concatenate(shares)[:, None], [(1 - level) / 2, (1 + level) / 2])
    return float(low[0]), float(high[0])


def _resample_weights(n_units: int, n_boot: int, seed: int):
    """Chunks ``[chunk, n_units]`` of draws per resample and unit (multinomial counts), ``n_boot``
    rows in all: a matrix product with per-unit sums then sums every system at once (exact: the
    sums are of integers far below 2**53)."""
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_ELEMENTS // n_units)
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        pick = rng.integers(0, n_units, size=(size, n_units))
        rows = np.repeat(np.arange(size) * n_units, n_units)
        weights = np.bincount(rows + pick.ravel(), minlength=size * n_units).reshape(size, n_units)
        yield weights.astype(float)


def _nan_quantiles(values: np.ndarray, q) -> np.ndarray:
    """``np.nanquantile`` over axis 0, NaN (without a warning) for an all-NaN column."""
    out = np.full((len(q), values.shape[1]), np.nan)
    some = ~np.isnan(values).all(axis=0)
    if some.any():
        out[:, some] = np.nanquantile(values[:, some], q, axis=0)
    return out
