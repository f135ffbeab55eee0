"""The learned pattern classifier (``patterns.classifier: forest``): its shape features worked out
by hand on small maps, what it learns from labelled maps, and the streaming analysis with it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import headatlas.analyses.patterns as patterns
from headatlas.analyses.base import run_analysis
from headatlas.analyses.patterns import (BLOCK, FEATURES, PATTERNS, SHAPE_FEATURES, AttentionPatterns,
                                         Thresholds, evaluate_labels, features_for, fit_forest,
                                         map_features, trained_forest)
from headatlas.analyses.labels import load_maps, read_labels
from headatlas.store.example import Example

NAMES = FEATURES + SHAPE_FEATURES
HALVES = np.array([0] * 4 + [1] * 4)  # two sentences of 4 tokens


def shape_of(attn: np.ndarray, units: np.ndarray = HALVES) -> dict[str, float]:
    return dict(zip(NAMES, map_features(attn, units, 3, shape=True).tolist()))


def test_shape_features_of_a_uniform_map():
    f = shape_of(np.full((8, 8), 1 / 8))
    # every key takes 1/8 per query: the top five together 5/8; the diagonals 8, 7 and 7 cells of
    # 1/8 over 8 queries; the band |i - j| <= 3 holds 8 + 2 (7 + 6 + 5) = 44 of the 64 cells
    assert [f[k] for k in ("top1", "top2", "top3", "top5")] == pytest.approx([1 / 8] * 3 + [5 / 8])
    assert f["first_key"] == pytest.approx(1 / 8) and f["last_key"] == pytest.approx(1 / 8)
    assert (f["self"], f["next"], f["previous"]) == pytest.approx((8 / 64, 7 / 64, 7 / 64))
    assert f["local"] == pytest.approx(44 / 64)
    # half of the pairs lie in one sentence, and half of the mass: no excess
    assert f["same_sentence"] == pytest.approx(0, abs=1e-7)
    assert f["row_max"] == pytest.approx(1 / 8)
    assert f["keys_2x"] == 0 and f["keys_5x"] == 0  # no key takes 2/n
    assert f["rest"] == pytest.approx(1 - f["vertical"] - f["diagonal"])
    assert f["block_of_rest"] == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize("n", [3, 9, 40, 128])
def test_a_uniform_map_has_no_shape_above_chance_at_any_length(n):
    # what the forest reads of a short sentence and of a long segment is on one scale
    units = halves_of(n)
    f = patterns.above_chance(map_features(np.full((n, n), 1 / n), units, 4, 0.08, shape=True), units, 4, 0.08)
    assert f[len(FEATURES):] == pytest.approx(np.zeros(len(SHAPE_FEATURES)), abs=1e-9)
    eye = patterns.above_chance(map_features(np.eye(n), units, 4, 0.08, shape=True), units, 4, 0.08)
    assert dict(zip(NAMES, eye))["self"] == pytest.approx(1 - 1 / n)


def test_shape_features_of_a_diagonal_and_a_vertical_map():
    eye = shape_of(np.eye(8))
    assert (eye["self"], eye["next"], eye["previous"], eye["local"]) == pytest.approx((1, 0, 0, 1))
    assert eye["same_sentence"] == pytest.approx(1 - 0.5)  # all mass in-sentence, chance 32/64
    assert eye["row_max"] == 1 and eye["rest"] == pytest.approx(0)
    column = np.zeros((8, 8))
    column[:, 0] = 1  # every query on the first key ([CLS])
    v = shape_of(column)
    assert (v["top1"], v["top2"], v["top5"], v["first_key"], v["last_key"]) == pytest.approx((1, 0, 1, 1, 0))
    # (0, 0) on the diagonal, (1, 0) one before it, (0..3, 0) in the band of 3
    assert (v["self"], v["next"], v["previous"], v["local"]) == pytest.approx((1 / 8, 0, 1 / 8, 4 / 8))
    assert v["same_sentence"] == pytest.approx(4 / 8 - 1 / 2)  # queries 0-3 share key 0's sentence
    assert (v["keys_2x"], v["keys_5x"]) == pytest.approx((1 / 8, 1 / 8))  # one key of 8, 1 > 5/8
    # raw vertical: column 0 off the band (rows 2-7) 6/8; raw band 2/8: nothing left
    assert v["rest"] == pytest.approx(0, abs=1e-12) and v["block_of_rest"] == pytest.approx(0, abs=1e-9)


def test_shape_features_of_one_map_equal_those_in_a_batch():
    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.ones(8), size=(2, 3, 8))  # [layers, heads, n, n]
    together = map_features(maps, HALVES, 3, shape=True)
    assert together.shape == (2, 3, len(NAMES))
    for i in range(2):
        for j in range(3):
            assert together[i, j] == pytest.approx(map_features(maps[i, j], HALVES, 3, shape=True), nan_ok=True)


def synthetic(kind: str, n: int, rng) -> np.ndarray:
    """A noisy map of one pattern: the shape plus Dirichlet noise, rows summing to 1."""
    shape = np.zeros((n, n))
    if kind == "vertical":
        shape[:, 0] = 1
    elif kind == "diagonal":
        shape[np.arange(1, n), np.arange(n - 1)] = 1
        shape[0, 0] = 1
    elif kind == "vertical+diagonal":
        shape[:, 0] = 0.5
        shape[np.arange(n), np.arange(n)] += 0.5
    elif kind == "block":
        half = n // 2
        shape[:half, :half] = 1 / half
        shape[half:, half:] = 1 / (n - half)
    shape = shape / np.maximum(shape.sum(-1, keepdims=True), 1e-12)
    noise = rng.dirichlet(np.full(n, 0.3), size=n)
    weight = 0.8 if kind == "heterogeneous" else 0.15
    return (1 - weight) * shape + weight * noise if kind != "heterogeneous" else noise


def halves_of(n: int) -> np.ndarray:
    return np.array([0] * (n // 2) + [1] * (n - n // 2))


def labelled(count: int, seed: int) -> tuple[list, list, list]:
    rng = np.random.default_rng(seed)
    maps, units, labels = [], [], []
    for _ in range(count):
        for kind in PATTERNS:
            n = int(rng.integers(12, 21))
            maps.append(synthetic(kind, n, rng))
            units.append(halves_of(n))
            labels.append(kind)
    return maps, units, labels


def test_the_forest_learns_labelled_patterns():
    # Learned from 15 noisy maps of each pattern, it names fresh ones; features of noise alone
    # (every map's features shuffled against its label) would leave it near chance (20%).
    maps, units, labels = labelled(15, seed=1)
    forest = fit_forest(features_for(maps, units, 3, shape=True), labels, 3, 1.0)
    fresh, fresh_units, truth = labelled(6, seed=2)
    predicted = np.array(PATTERNS)[forest.predict(features_for(fresh, fresh_units, 3, shape=True))]
    assert (predicted == np.array(truth)).mean() >= 0.9
    shuffled = np.random.default_rng(3).permutation(labels)
    blind = fit_forest(features_for(maps, units, 3, shape=True), list(shuffled), 3, 1.0)
    guessed = np.array(PATTERNS)[blind.predict(features_for(fresh, fresh_units, 3, shape=True))]
    assert (guessed == np.array(truth)).mean() < 0.6
    assert "200 trees" in forest.describe() and f"{len(maps)} hand-labelled" in forest.describe()


def test_the_forest_never_calls_a_one_sentence_input_block():
    maps, units, labels = labelled(10, seed=4)
    forest = fit_forest(features_for(maps, units, 3, shape=True), labels, 3, 1.0)
    rng = np.random.default_rng(5)
    block = synthetic("block", 16, rng)
    two = features_for([block], [halves_of(16)], 3, shape=True)
    assert forest.predict(two)[0] == BLOCK
    one = two.copy()
    one[:, FEATURES.index("block")] = np.nan  # as for an input of one sentence
    assert forest.predict(one)[0] != BLOCK


def test_the_forest_refuses_features_without_their_shape():
    maps, units, labels = labelled(2, seed=6)
    with pytest.raises(ValueError, match="shape=True"):
        fit_forest(features_for(maps, units, 3), labels, 3, 1.0)
    with pytest.raises(ValueError, match="unknown pattern"):
        fit_forest(features_for(maps, units, 3, shape=True), ["stripy"] * len(maps), 3, 1.0)
    with pytest.raises(ValueError, match="unknown pattern classifier"):
        AttentionPatterns(1, 1, classifier="cnn")


def example(attn: np.ndarray, index: int) -> Example:
    n = attn.shape[-1]
    tokens = ["[CLS]"] + ["w"] * (n - 2) + ["[SEP]"]
    return Example(index=index, id=str(index), tokens=tokens, input_ids=np.arange(n),
                   token_type_ids=halves_of(n), word_ids=np.arange(n), attn=attn.astype(np.float32))


@pytest.fixture(scope="module")
def inputs() -> list[Example]:
    rng = np.random.default_rng(7)
    out = []
    for index in range(7):
        n = int(rng.integers(12, 21))
        maps = np.stack([synthetic(kind, n, rng) for kind in PATTERNS]).reshape(1, 5, n, n)
        out.append(example(maps, index))
    return out


def test_the_analysis_counts_what_the_packaged_forest_says(inputs, monkeypatch):
    # The streaming analysis with the forest learned from the packaged labels counts, per head,
    # what that forest says of each map's features; classified in groups of 2 or of 256, and
    # merged from two parts, the counts are the same.
    forest = trained_forest(4, 0.08)
    assert forest.n_maps == int((read_labels(None)["half"] == "tune").sum())
    expected = np.zeros((1, 5, len(PATTERNS)), dtype=int)
    for e in inputs:
        units = patterns.example_units(e)
        f = patterns.above_chance(map_features(e.attn, units, 4, 0.08, shape=True), units, 4, 0.08)
        for head, label in enumerate(forest.predict(f)[0]):
            expected[0, head, label] += 1
    options = {"thresholds": {"columns": 4, "stripe": 0.08}, "classifier": "forest"}
    result = run_analysis(AttentionPatterns, inputs, progress=False, **options)
    counts = (result.table[list(PATTERNS)].to_numpy() * len(inputs)).round().astype(int)
    assert counts.tolist() == expected[0].tolist()
    assert result.attrs["classifier"] == "forest" and "random forest" in result.caption
    monkeypatch.setattr(patterns, "CLASSIFY_EVERY", 2)
    first, second = AttentionPatterns(1, 5, **options), AttentionPatterns(1, 5, **options)
    for e in inputs[:3]:
        first.add(e)
    for e in inputs[3:]:
        second.add(e)
    merged = first.merge(second.state()).result().table
    pd.testing.assert_frame_equal(merged, result.table, check_exact=False, rtol=1e-12)


def test_the_forest_agrees_with_more_held_out_labels_than_the_rules():
    # Issue 37: on the packaged labels' held-out half (maps never learned from), the forest must
    # name at least as many maps as the rules with the config's thresholds.
    labels = read_labels(None)
    maps, units, _ = load_maps(None, labels)
    t = Thresholds(columns=4, stripe=0.08, vertical=0.2, diagonal=0.1, mixed_vertical=0.2,
                   mixed_diagonal=0.05, block=0.03)
    grid = {"columns": (4,), "stripe": (0.08,), "vertical": (0.2,), "diagonal": (0.1,),
            "mixed_vertical": (0.2,), "mixed_diagonal": (0.05,), "block": (0.03,)}
    scores = {}
    for classifier in ("rules", "forest"):
        agreement = evaluate_labels(maps, units, labels, t, grid, classifier=classifier).agreement
        held = agreement[(agreement["half"] == "held-out (test)") & (agreement["model"] == "all")
                         & (agreement["corpus"] == "all")]
        assert held["classifier"].tolist() == [classifier]
        scores[classifier] = float(held["accuracy"].iloc[0])
    assert scores["forest"] >= scores["rules"]


@pytest.mark.parametrize("namespace", ["numpy", "torch"])
def test_shape_features_of_a_padded_batch_equal_each_example_s(inputs, namespace):
    # Inputs of 12-20 tokens padded to the widest: the padding changes no feature.
    import torch

    from headatlas.analyses.batch import MapBatch

    chosen = inputs[:4]
    assert len({e.n_tokens for e in chosen}) > 1
    batch = MapBatch.of(chosen)
    units = AttentionPatterns._units_of(batch)
    if namespace == "torch":
        batch = MapBatch(torch.from_numpy(np.ascontiguousarray(batch.attn)), chosen, lengths=batch.lengths)
    together = patterns.batch_features(batch, units, 4, 0.08, shape=True)[0]
    assert together.shape == (4, 1, 5, len(NAMES))
    for b, e in enumerate(chosen):
        alone = map_features(e.attn, patterns.example_units(e), 4, 0.08, shape=True)
        np.testing.assert_allclose(together[b], alone, rtol=1e-5, atol=1e-7)
