"""The bounded sample of examples that keeps the norm pairs' and head-type features' states a
fixed size: the same examples whatever the order, the shards or the moment it is cut."""

from __future__ import annotations

import numpy as np
import pytest

from headatlas.analyses.sample import ExampleSample, example_key


def smallest(positions, k, seed=0):
    """The k positions of smallest key, worked out directly."""
    return sorted(sorted(positions, key=lambda i: example_key(seed, i))[:k])


def test_keys_are_a_fixed_uniform_hash_of_seed_and_position():
    # deterministic, and another seed or position gives another key
    assert example_key(0, 0) == example_key(0, 0) != example_key(1, 0) != example_key(0, 1)
    keys = np.array([example_key(0, i) for i in range(20_000)], dtype=np.float64) / 2.0**64
    assert len(set(keys)) == 20_000
    # uniform: each tenth of [0, 1) holds 2,000 +- 5 sigma (sigma ~ 42)
    counts = np.histogram(keys, bins=10, range=(0, 1))[0]
    assert (abs(counts - 2000) < 210).all()
    # not the position's order: the first 1,000 positions spread over the whole range
    assert keys[:1000].min() < 0.01 and keys[:1000].max() > 0.99


def test_the_sample_keeps_the_smallest_keys_in_corpus_order():
    sample = ExampleSample(3, seed=0)
    for i in range(10):
        sample.add(i, f"record {i}")
    chosen = smallest(range(10), 3)
    assert [i for i, _ in sample.items()] == chosen and len(sample) == 3
    assert [r for _, r in sample.items()] == [f"record {i}" for i in chosen]
    # another seed, another sample
    other = ExampleSample(3, seed=1)
    other.extend((i, i) for i in range(10))
    assert [i for i, _ in other.items()] == smallest(range(10), 3, seed=1) != chosen


@pytest.mark.parametrize("limit", [1, 4, 7, None])
def test_order_shards_and_cutting_do_not_change_the_sample(limit):
    positions = list(range(50))
    one = ExampleSample(limit)
    one.extend((i, i) for i in positions)
    rng = np.random.default_rng(0)
    shuffled = ExampleSample(limit)
    shuffled.extend((int(i), int(i)) for i in rng.permutation(positions))
    shards = [ExampleSample(limit) for _ in range(3)]
    for i in positions:
        shards[i % 3].add(i, i)
    merged = ExampleSample(limit)
    for shard in shards[::-1]:
        merged.extend(shard.items())
    expected = positions if limit is None else smallest(positions, limit)
    assert [i for i, _ in one.items()] == [i for i, _ in shuffled.items()] == [i for i, _ in merged.items()] == expected


def test_never_more_than_the_limit_is_held_and_admits_says_what_add_keeps():
    sample = ExampleSample(5)
    for i in range(1000):
        would = sample.admits(i)
        sample.add(i, i)
        assert len(sample._records) <= 5
        assert (i in sample._records) == would  # kept now (it may be evicted later)
    assert len(sample) == 5 and [i for i, _ in sample.items()] == smallest(range(1000), 5)
    assert not any(sample.admits(i) for i in range(1000, 1100) if example_key(0, i) > max(
        example_key(0, j) for j, _ in sample.items()))


def test_bad_use_is_refused():
    with pytest.raises(ValueError, match="limit >= 1"):
        ExampleSample(0)
    sample = ExampleSample(None)
    sample.add(3, "a")
    with pytest.raises(ValueError, match="example 3 was added twice"):
        sample.add(3, "b")
