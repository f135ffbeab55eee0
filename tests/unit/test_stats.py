"""The one bootstrap (headatlas.stats): by hand, seeded, several systems at once."""

import numpy as np
import pytest

from headatlas.stats import bootstrap_ratio


def test_bootstrap_by_hand():
    # one unit: every resample is that unit -> the interval is the point, 3/4
    assert bootstrap_ratio(np.array([3]), np.array([4])) == (0.75, 0.75)
    # all correct -> every resample is 1
    assert bootstrap_ratio(np.array([2, 3, 1]), np.array([2, 3, 1])) == (1.0, 1.0)
    # two units 1/1 and 0/1: resamples give 1 (p=1/4), 1/2 (p=1/2), 0 (p=1/4), so the
    # 2.5% and 97.5% quantiles of 1,000 resamples are 0 and 1
    assert bootstrap_ratio(np.array([1, 0]), np.array([1, 1])) == (0.0, 1.0)
    # units without an item carry no weight (kept, half the resamples would be 0/0)
    assert bootstrap_ratio(np.array([1, 0]), np.array([1, 0])) == (1.0, 1.0)
    # nothing at all -> NaN
    assert np.isnan(bootstrap_ratio(np.array([0]), np.array([0]))).all()
    assert np.isnan(bootstrap_ratio(np.zeros(0), np.zeros(0))).all()


def test_bootstrap_seeded_and_contains_point():
    rng = np.random.default_rng(1)
    total = rng.integers(1, 6, 50)
    correct = rng.binomial(total, 0.6)
    first = bootstrap_ratio(correct, total, n_boot=500, seed=3)
    assert bootstrap_ratio(correct, total, n_boot=500, seed=3) == first
    assert bootstrap_ratio(correct, total, n_boot=500, seed=4) != first
    point = correct.sum() / total.sum()
    assert first[0] < point < first[1]
    assert first[1] - first[0] < 0.3


def test_several_systems_share_the_resamples():
    rng = np.random.default_rng(2)
    total = rng.integers(1, 6, 40)
    a, b = rng.binomial(total, 0.3), rng.binomial(total, 0.8)
    low, high = bootstrap_ratio(np.column_stack([a, b]), total, n_boot=300, seed=5)
    assert low.shape == high.shape == (2,)
    # each column is what it would be alone: the resamples depend on the units only
    assert (low[0], high[0]) == bootstrap_ratio(a, total, n_boot=300, seed=5)
    assert (low[1], high[1]) == bootstrap_ratio(b, total, n_boot=300, seed=5)


def test_per_system_totals_and_empty_resamples():
    # Two documents: doc 0 has 2 pronouns (both right), doc 1 has none but 1 noun (wrong).
    # Column 0 = pronouns, column 1 = nouns; a resample without doc 0 has no pronoun (0/0):
    # left out of column 0's percentiles, so column 0 is always 1.
    correct = np.array([[2.0, 0.0], [0.0, 0.0]])
    total = np.array([[2.0, 0.0], [0.0, 1.0]])
    low, high = bootstrap_ratio(correct, total, n_boot=200)
    assert (low[0], high[0]) == (1.0, 1.0)
    assert (low[1], high[1]) == (0.0, 0.0)
    # a system with no item anywhere: NaN, without a warning
    with np.errstate(all="raise"):
        low, high = bootstrap_ratio(np.zeros((3, 2)), np.array([[1, 0], [1, 0], [2, 0]]), n_boot=50)
    assert low[0] == high[0] == 0.0 and np.isnan([low[1], high[1]]).all()


def test_memory_is_bounded_in_chunks(monkeypatch):
    import headatlas.stats as stats

    rng = np.random.default_rng(0)
    total = rng.integers(1, 4, 30)
    correct = rng.binomial(total, 0.5)
    whole = bootstrap_ratio(correct, total, n_boot=100, seed=1)
    monkeypatch.setattr(stats, "CHUNK_ELEMENTS", 30 * 7)  # 7 resamples per chunk
    chunked = bootstrap_ratio(correct, total, n_boot=100, seed=1)
    assert chunked == pytest.approx(whole, abs=0.2)  # other chunks draw another stream
    assert chunked == bootstrap_ratio(correct, total, n_boot=100, seed=1)
