"""Head clustering (Clark §6): JS distances, MDS and the permutation test, with hand-computed answers."""

import math

import numpy as np
import pandas as pd
import pytest

from headatlas.analyses.base import REGISTRY, run_analysis
from headatlas.analyses.clustering import (HeadDistances, distance_matrix, embed_heads, euclidean,
                                           group_structure, mds_table, pairwise_js, paper_claims, stress1)
from headatlas.store.example import Example
from tests.unit.test_claims import by_id


def example(attn, index=0):
    """An example with ``attn`` of shape [layers, heads, n, n] (tokens do not matter here)."""
    n = attn.shape[-1]
    return Example(index=index, id=f"ex{index}", tokens=["x"] * n, input_ids=np.zeros(n, np.int32),
                   token_type_ids=np.zeros(n, np.int8), word_ids=np.zeros(n, np.int32),
                   attn=np.asarray(attn, np.float32))


# Two heads over n = 2 tokens.
HEAD_A = [[1.0, 0.0], [0.5, 0.5]]
HEAD_B = [[0.0, 1.0], [1.0, 0.0]]


def test_js_by_hand_without_smoothing():
    # Row 0: p = [1, 0], q = [0, 1], m = [.5, .5]: KL(p||m) = KL(q||m) = ln 2, so JS = ln 2.
    # Row 1: p = [.5, .5], q = [1, 0], m = [.75, .25]:
    #   KL(p||m) = .5 ln(.5/.75) + .5 ln(.5/.25) = .5 ln(4/3);  KL(q||m) = ln(1/.75) = ln(4/3)
    #   JS = (.5 ln(4/3) + ln(4/3)) / 2 = .75 ln(4/3).
    dist = pairwise_js(np.array([HEAD_A, HEAD_B]), smoothing=0.0)
    expected = math.log(2) + 0.75 * math.log(4 / 3)  # 0.908909
    assert dist == pytest.approx(np.array([[0, expected], [expected, 0]]), abs=1e-6)


def test_js_by_hand_with_clarks_smoothing():
    # s = 0.001, n = 2: row 0 becomes p = [.9995, .0005], q = [.0005, .9995], m = [.5, .5];
    #   KL(p||m) = .9995 ln(1.999) + .0005 ln(.001) = 0.692301 - 0.003454 = 0.688847 = KL(q||m).
    # Row 1 becomes p = [.5, .5], q = [.9995, .0005], m = [.74975, .25025]:
    #   KL(p||m) = .5 ln(.5/.74975) + .5 ln(.5/.25025) = -0.202566 + 0.346074 = 0.143508
    #   KL(q||m) = .9995 ln(.9995/.74975) + .0005 ln(.0005/.25025) = 0.287372 - 0.003108 = 0.284264
    #   JS = (0.143508 + 0.284264) / 2 = 0.213886
    dist = pairwise_js(np.array([HEAD_A, HEAD_B]))
    assert dist[0, 1] == pytest.approx(0.688847 + 0.213886, abs=2e-5)


def naive_js(attn, smoothing):
    """Pair by pair, row by row, straight from the definition (float64)."""
    p = (1 - smoothing) * attn.astype(np.float64) + smoothing / attn.shape[-1]
    out = np.zeros((len(p), len(p)))
    for i in range(len(p)):
        for j in range(len(p)):
            m = (p[i] + p[j]) / 2
            out[i, j] = 0.5 * (p[i] * np.log(p[i] / m)).sum() + 0.5 * (p[j] * np.log(p[j] / m)).sum()
    return out


def random_attention(rng, shape):
    logits = rng.normal(size=shape) * 3
    return np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)


def test_every_pair_agrees_with_the_definition():
    attn = random_attention(np.random.default_rng(0), (7, 5, 5))
    expected = naive_js(attn, 0.001)
    np.fill_diagonal(expected, 0)
    assert pairwise_js(attn) == pytest.approx(expected, abs=1e-5)
    # float16 rows as the store holds them, 128 tokens: float32 terms, float64 sums
    attn = random_attention(np.random.default_rng(3), (3, 128, 128)).astype(np.float16)
    expected = naive_js(attn.astype(np.float64), 0.001)
    np.fill_diagonal(expected, 0)
    assert pairwise_js(attn) == pytest.approx(expected, rel=1e-5, abs=1e-5)


def test_analysis_sums_over_examples_and_averages_over_tokens():
    rng = np.random.default_rng(1)
    first = random_attention(rng, (2, 2, 4, 4))  # 2 layers x 2 heads, 4 tokens
    second = random_attention(rng, (2, 2, 3, 3))
    total = pairwise_js(first.reshape(4, 4, 4)) + pairwise_js(second.reshape(4, 3, 3))
    examples = [example(first), example(second, 1)]
    summed = run_analysis(HeadDistances, examples, progress=False, average=False)
    averaged = run_analysis("head_distances", examples, progress=False)
    assert "head_distances" in REGISTRY
    assert list(summed.table.columns) == ["layer", "head", "1-1", "1-2", "2-1", "2-2"]
    assert distance_matrix(summed.table) == pytest.approx(total, abs=1e-6)
    assert distance_matrix(averaged.table) == pytest.approx(total / 7, abs=1e-6)  # 4 + 3 query tokens
    assert averaged.attrs["n_rows"] == 7 and "mean JS divergence per token" in averaged.caption
    assert "summed over tokens" in summed.caption


@pytest.mark.parametrize("order", ["in corpus order", "reversed"])
def test_merging_two_halves_is_one_pass(order):
    # One example per instance: the merged sums are the two examples' pairwise_js added, over
    # 4 + 3 = 7 query tokens, whichever state is folded into which.
    rng = np.random.default_rng(1)
    first, second = random_attention(rng, (2, 2, 4, 4)), random_attention(rng, (2, 2, 3, 3))
    total = pairwise_js(first.reshape(4, 4, 4)) + pairwise_js(second.reshape(4, 3, 3))
    halves = []
    for k, attn in enumerate((first, second)):
        acc = HeadDistances(2, 2)
        acc.add(example(attn, k))
        halves.append(acc)
    into, other = halves if order == "in corpus order" else halves[::-1]
    state = other.state()
    assert set(state) == {"n_examples", "length_counts", "sums", "n_rows"} and state["sums"].shape == (4, 4)
    merged = into.merge(state)
    result = merged.result()
    assert merged.n_examples == 2 and result.attrs["n_rows"] == 7
    assert distance_matrix(result.table) == pytest.approx(total / 7, abs=1e-6)
    one = run_analysis(HeadDistances, [example(first), example(second, 1)], progress=False)
    pd.testing.assert_frame_equal(result.table, one.table, check_exact=False, rtol=1e-12)


def test_mds_table_appends_to_the_distances_caption():
    s = math.sqrt(2)
    dist = np.array([[0, 1, s, 1], [1, 0, 1, s], [s, 1, 0, 1], [1, s, 1, 0]])
    distances = pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2]})
    distances[["1-1", "1-2", "2-1", "2-2"]] = dist
    behaviour = pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2], "behaviour": ["broad"] * 4})
    table = mds_table(distances, behaviour, "distances caption", seed=0)
    assert list(table.columns) == ["layer", "head", "behaviour", "x", "y"]
    assert table.attrs["caption"] == (f"distances caption; metric MDS (random state 0), Kruskal Stress-1 = "
                                      f"{table.attrs['stress']:.3f}; behaviours: thresholds of Clark's code")


def test_identical_heads_are_at_distance_zero():
    head = random_attention(np.random.default_rng(2), (1, 6, 6))
    assert pairwise_js(np.concatenate([head, head])) == pytest.approx(np.zeros((2, 2)), abs=1e-6)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="expected"):
        pairwise_js(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="smoothing"):
        HeadDistances(1, 2, smoothing=1.5)
    table = pd.DataFrame({"layer": [1, 1], "head": [1, 2], "1-1": [0.0, 1.0]})
    with pytest.raises(ValueError, match="not square"):
        distance_matrix(table)
    table["1-2"] = [2.0, 0.0]
    with pytest.raises(ValueError, match="symmetric"):
        distance_matrix(table)


def test_mds_recovers_a_square():
    # Unit square: sides 1, diagonals sqrt 2; a 2-D picture can reproduce it exactly,
    # so the embedded points' distances equal the input (up to rotation/reflection).
    s = math.sqrt(2)
    dist = np.array([[0, 1, s, 1], [1, 0, 1, s], [s, 1, 0, 1], [1, s, 1, 0]])
    coords, stress = embed_heads(dist, seed=0)
    assert coords.shape == (4, 2)
    assert euclidean(coords) == pytest.approx(dist, abs=1e-3)
    assert stress < 1e-3
    again, _ = embed_heads(dist, seed=0)
    assert again == pytest.approx(coords)  # fixed random state: the same picture


def test_stress_by_hand():
    # Points at 0 and 1 on a line against a distance of 2: Stress-1 = sqrt((1-2)^2 / 2^2) = 0.5.
    assert stress1(np.array([[0, 2.0], [2.0, 0]]), np.array([[0.0, 0], [1, 0]])) == pytest.approx(0.5)


def planted(n_layers=3, n_heads=4):
    """Distance 1 between heads of one layer, 5 between layers."""
    layers = np.repeat(np.arange(1, n_layers + 1), n_heads)
    dist = np.where(layers[:, None] == layers[None, :], 1.0, 5.0)
    np.fill_diagonal(dist, 0)
    return dist, layers


def test_planted_layers_give_a_small_p_value():
    dist, layers = planted()
    table = group_structure(dist, layers, n_permutations=1000, seed=0).set_index("group")
    assert table.loc["all", ["within", "between", "ratio"]].tolist() == pytest.approx([1, 5, 0.2])
    # No shuffle puts all 12 heads back into their own layers' blocks (only 3!/(12!/(4!^3)) of
    # them could), so essentially none reaches within = 1: p = 1/1001.
    assert table.loc["all", "p_value"] < 0.01
    assert table.loc["2", "n_heads"] == 4 and table.loc["2", "p_value"] < 0.05


def test_equal_distances_give_p_one_and_random_labels_a_large_p():
    dist = np.ones((12, 12)) - np.eye(12)  # every shuffle ties the observed within mean
    layers = np.repeat([1, 2, 3], 4)
    assert group_structure(dist, layers, n_permutations=200).set_index("group").loc["all", "p_value"] == 1.0
    rng = np.random.default_rng(3)
    noise = rng.uniform(1, 2, (12, 12))
    noise = np.triu(noise, 1) + np.triu(noise, 1).T
    table = group_structure(noise, rng.permutation(layers), n_permutations=1000, seed=1)
    assert table.set_index("group").loc["all", "p_value"] > 0.05


def test_singleton_groups_have_no_within_distance():
    dist, _ = planted(1, 3)
    table = group_structure(dist, ["a", "a", "b"], n_permutations=10).set_index("group")
    assert np.isnan(table.loc["b", "within"]) and np.isnan(table.loc["b", "p_value"])
    assert table.loc["a", "within"] == 1.0


def test_paper_claims_name_the_test():
    dist, layers = planted()
    structure = pd.concat([
        group_structure(dist, layers, n_permutations=50).assign(space=space, grouping="layer")
        for space in ("js", "mds")])
    claims = by_id(paper_claims(structure, stress=0.12, average=True))
    same = claims.loc["clark.s6.same_layer"]
    assert same["ours"].startswith("within 1 vs between 5 (ratio 0.20), permutation p")
    assert same["verdict"] == "holds"  # 1 < 5 and p = 1 / 51 < 0.05
    assert "not testable" in claims.loc["clark.s6.behaviour", "ours"]  # no behaviour rows given
    assert claims.loc["clark.s6.behaviour", "verdict"] == "not applicable"
    assert claims.loc["clark.s6.mds_fit", ["ours", "verdict"]].tolist() == ["Kruskal Stress-1 = 0.120", "holds"]
    assert by_id(paper_claims(structure, stress=0.25, average=True)).loc[
        "clark.s6.mds_fit", "verdict"] == "does not hold"


def test_a_grouping_claim_needs_two_groups_of_two_heads():
    # Issue 23 item 7: 'behaviour' rested on one group. Eight heads: five 'broad' heads at
    # distance 1 from each other, three single heads 'next', 'prev', 'cls'; every other pair at 5.
    # The pooled within mean is the 'broad' pairs' alone (1 < 5) and few shuffles put the five
    # back together: the old rule said "heads cluster by behaviour" holds. It says only that the
    # broad heads are alike; one group of >= 2 heads is no clustering *by* behaviour.
    labels = np.array(["broad"] * 5 + ["next", "prev", "cls"])
    dist = np.where((labels[:, None] == "broad") & (labels[None, :] == "broad"), 1.0, 5.0)
    np.fill_diagonal(dist, 0)
    part = group_structure(dist, labels, n_permutations=200, seed=0)
    all_row = part.set_index("group").loc["all"]
    # C(8,5) = 56 ways to place the five: 1/56 of shuffles tie, p ~ 1/56 + 1/201 < 0.05.
    assert all_row["within"] == 1.0 and all_row["p_value"] < 0.05
    structure = part.assign(space="js", grouping="behaviour")
    row = by_id(paper_claims(structure, stress=0.1, average=True)).loc["clark.s6.behaviour"]
    assert row["verdict"] == "not applicable"
    assert row["ours"].startswith("not testable: 1 behaviour group(s) of >= 2 heads, 2 needed")
    assert "broad 5" in row["ours"] and "cls 1" in row["ours"]
    # With a second pair ('next' twice) the test runs: two groups of >= 2 heads.
    labels[6] = "next"
    dist = np.where(labels[:, None] == labels[None, :], 1.0, 5.0)
    np.fill_diagonal(dist, 0)
    structure = group_structure(dist, labels, n_permutations=200).assign(space="js", grouping="behaviour")
    assert by_id(paper_claims(structure, stress=0.1, average=True)).loc[
        "clark.s6.behaviour", "verdict"] == "holds"


