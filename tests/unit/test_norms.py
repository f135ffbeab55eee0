"""Kobayashi et al.'s shares, correlations and claims, and attention rollout, on 3-token maps by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headatlas.analyses.base import run_analysis
from headatlas.analyses.norms import CLASSES, NormShares, compact, paper_claims, spearman
from headatlas.analyses.rollout import Rollout, offset_sums, rollout
from headatlas.claims import FAILS, HOLDS, NOT_APPLICABLE, claims_table
from headatlas.store.example import Example

TOKENS = ["[CLS]", "a", "[SEP]"]
# One layer, two heads. Head 1 rows; head 2 puts (1/2, 1/4, 1/4) on every row.
ALPHA = np.array([[[[0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.0, 1.0]],
                   [[0.5, 0.25, 0.25]] * 3]], dtype=np.float32)
VALUE_NORMS = np.array([[[2.0, 1.0, 1.0], [1.0, 1.0, 2.0]]], dtype=np.float32)  # [1, 2 heads, 3]
NORM_MAP = np.array([[[1.0, 1.0, 2.0], [0.0, 3.0, 1.0], [2.0, 0.0, 2.0]]], dtype=np.float32)


def example(attn=ALPHA, value_norms=VALUE_NORMS, norm_map=NORM_MAP, index=0):
    return Example(index, f"e{index}", TOKENS, np.arange(3), np.zeros(3), np.array([-1, 0, -1]),
                   attn, value_norms=value_norms, norm_map=norm_map)


def merged(cls, halves, **options):
    """One instance per half (a list of examples), the second's state merged into the first."""
    accs = []
    for half in halves:
        acc = cls(half[0].attn.shape[0], half[0].attn.shape[1], **options)
        for e in half:
            acc.add(e)
        accs.append(acc)
    return accs[0].merge(accs[1].state())


def test_shares_under_the_three_views_by_hand():
    report = run_analysis(NormShares, [example()], progress=False, pairs_per_example=1000)
    assert list(report.tables) == ["shares", "correlation"]
    shares = report.tables["shares"].set_index("class")
    # alpha: head 1 puts 1.0 / 1.5 / 0.5 on [CLS] / [SEP] / a over its 3 rows, head 2 1.5 / 0.75 / 0.75;
    # mean over heads / 3 queries.
    np.testing.assert_allclose(shares.loc[["cls", "sep", "punct", "other"], "attention"],
                               [1.25 / 3, 1.125 / 3, 0, 0.625 / 3], rtol=1e-6)
    # alpha * ||f||, per row renormalised: head 1 rows (2/3, 1/3, 0), (2/3, 0, 1/3), (0, 0, 1);
    # head 2 every row (0.5, 0.25, 0.5) / 1.25 = (0.4, 0.2, 0.4).
    np.testing.assert_allclose(shares.loc[["cls", "sep", "other"], "norm"],
                               [(4 / 3 + 1.2) / 6, (4 / 3 + 1.2) / 6, (1 / 3 + 0.6) / 6], rtol=1e-6)
    # layer map rows renormalised: (1/4, 1/4, 1/2), (0, 3/4, 1/4), (1/2, 0, 1/2)
    np.testing.assert_allclose(shares.loc[["cls", "sep", "other"], "layer_norm"],
                               [0.75 / 3, 1.25 / 3, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(shares.loc[["cls", "sep", "other"], "value_norm"], [1.5, 1.5, 1.0])
    assert np.isnan(shares.loc["punct", "value_norm"])  # no period or comma: no norm to average
    for view in ("attention", "norm", "layer_norm"):
        assert shares[view].sum() == pytest.approx(1)


def test_correlation_of_alpha_and_value_norm_by_hand():
    report = run_analysis(NormShares, [example()], progress=False, pairs_per_example=1000)
    corr = report.tables["correlation"].set_index("class")
    # [CLS] key: alpha (0.5, 0.5, 0 | 0.5, 0.5, 0.5) with ||f|| (2, 2, 2 | 1, 1, 1):
    # ranks (4, 4, 1, 4, 4, 4) and (5, 5, 5, 2, 2, 2) -> rho = -4.5 / sqrt(7.5 * 13.5) = -1/sqrt(5)
    assert corr.loc["cls", "spearman"] == pytest.approx(-1 / np.sqrt(5))
    assert corr.loc["cls", "layer_1"] == pytest.approx(-1 / np.sqrt(5))
    assert corr.loc["cls", "n_pairs"] == 6 and corr.loc["punct", "n_pairs"] == 0
    assert np.isnan(corr.loc["punct", "spearman"])
    assert spearman(np.array([1.0, 2, 3]), np.array([3.0, 2, 1])) == pytest.approx(-1)


def test_pairs_are_sampled_up_to_the_budget():
    report = run_analysis(NormShares, [example(index=i) for i in range(3)], progress=False,
                          pairs_per_example=4)
    n_pairs = report.tables["correlation"].set_index("class")["n_pairs"]
    assert n_pairs["cls"] == 3 * 4 and n_pairs["other"] == 3 * 4  # 6 pairs each, 4 drawn
    again = run_analysis(NormShares, [example(index=i) for i in range(3)], progress=False,
                         pairs_per_example=4)
    pd.testing.assert_frame_equal(report.tables["correlation"], again.tables["correlation"])  # seeded


def test_samples_are_kept_in_float16_only_where_that_loses_nothing():
    halves = np.array([0.5, 0.125, 0.333251953125], np.float32)  # float16 values
    assert compact(halves).dtype == np.float16 and np.array_equal(compact(halves), halves)
    thirds = np.array([1 / 3, 0.5], np.float32)  # 1/3 in float32 is no float16
    assert compact(thirds).dtype == np.float32 and np.array_equal(compact(thirds), thirds)
    # the hand-made example's maps are float16 values: its whole sample is, and rho is unchanged
    acc = NormShares(1, 2, pairs_per_example=1000)
    acc.start(None)
    acc.add(example())
    state = acc.state()
    assert state["pair_alpha"].dtype == state["pair_norm"].dtype == np.float16
    assert spearman(state["pair_alpha"], state["pair_norm"]) == pytest.approx(
        spearman(state["pair_alpha"].astype(np.float64), state["pair_norm"].astype(np.float64)), abs=0)


def shares_table(attention, norm, layer_norm, sep=None):
    """Per-layer shares of [CLS] (and optionally [SEP]); the rest goes to 'other'."""
    rows = []
    for layer, values in enumerate(zip(attention, norm, layer_norm), start=1):
        sep_values = sep[layer - 1] if sep else (0.0, 0.0, 0.0)
        rows.append(dict(layer=layer, **{"class": "cls"}, attention=values[0], norm=values[1],
                         layer_norm=values[2]))
        rows.append(dict(layer=layer, **{"class": "sep"}, attention=sep_values[0], norm=sep_values[1],
                         layer_norm=sep_values[2]))
        rows.append(dict(layer=layer, **{"class": "punct"}, attention=0.0, norm=0.0, layer_norm=0.0))
        rows.append(dict(layer=layer, **{"class": "other"}, attention=1 - values[0] - sep_values[0],
                         norm=1 - values[1] - sep_values[1], layer_norm=1 - values[2] - sep_values[2]))
    return pd.DataFrame(rows)


def correlation_table(rho_cls, rho_sep=0.1, n_layers=3, per_layer=None):
    """Pooled ρ per class; within each layer the same ρ unless ``per_layer`` ({class: [ρ_l]}) says."""
    table = pd.DataFrame({"class": ["cls", "sep", "punct", "other"],
                          "spearman": [rho_cls, rho_sep, np.nan, 0.2], "n_pairs": [10, 10, 0, 10]})
    for layer in range(n_layers):
        table[f"layer_{layer + 1}"] = [(per_layer or {}).get(c, [rho] * n_layers)[layer]
                                       for c, rho in zip(table["class"], table["spearman"])]
    return table


def judged(shares: pd.DataFrame, correlation: pd.DataFrame) -> pd.DataFrame:
    """:func:`paper_claims` of two tables as a claims table indexed by id."""
    return claims_table(paper_claims(shares, correlation)).set_index("id")


def test_claims_by_hand():
    # [CLS] draws 40% and 30% of alpha in layers 2-3 (the sink layers, >= 20%), 10% in layer 1.
    shares = shares_table(attention=[0.1, 0.4, 0.3], norm=[0.1, 0.05, 0.15], layer_norm=[0.1, 0.3, 0.1])
    claims = judged(shares, correlation_table(-0.3))
    collapse = claims.loc["kobayashi.s4.special_collapse"]
    assert collapse["verdict"] == HOLDS  # 5% <= 20% and 15% <= 15%
    assert collapse["ours"] == "[CLS]: α 30-40% in layers 2-3 -> ‖αf(x)‖ (per head) 5-15%"
    assert claims.loc["kobayashi.s4.special_collapse_layer", "verdict"] == FAILS  # 30% > 20%
    assert claims.loc["kobayashi.s4.alpha_fx_negative", "verdict"] == HOLDS
    assert claims.loc["kobayashi.s4.sep_collapse", "verdict"] == NOT_APPLICABLE  # [SEP] never a sink
    positive = judged(shares, correlation_table(0.3))
    assert positive.loc["kobayashi.s4.alpha_fx_negative", "verdict"] == FAILS


def test_the_alpha_norm_correlation_is_judged_within_the_sink_layers():
    # Issue 23 item 6. [CLS] is the sink in layers 2-3 (40%, 30% of α). Pooled over layers ρ = -0.53
    # (big α in layers with small norms, and the reverse), but within layer 2 ρ = -0.02 and within
    # layer 3 ρ = 0.01: no cancellation where the claim is made. The old rule (pooled ρ < 0) held;
    # the new one asks ρ <= -0.3 in each sink layer: does not hold.
    shares = shares_table(attention=[0.1, 0.4, 0.3], norm=[0.1, 0.05, 0.15], layer_norm=[0.1, 0.3, 0.1])
    pooled_only = correlation_table(-0.53, per_layer={"cls": [-0.6, -0.02, 0.01]})
    row = judged(shares, pooled_only).loc["kobayashi.s4.alpha_fx_negative"]
    assert row["verdict"] == FAILS
    assert row["ours"].startswith("[CLS] in layers 2-3: Spearman ρ within each layer -0.02, 0.01; "
                                  "pooled over all layers [CLS] -0.53")
    # Layer 1 (not a sink layer) does not count: -0.6 there changes nothing. Both sink layers at
    # -0.35 and -0.4 (<= -0.3): holds; one at -0.29: does not hold.
    ok = correlation_table(0.1, per_layer={"cls": [0.5, -0.35, -0.4]})
    assert judged(shares, ok).loc["kobayashi.s4.alpha_fx_negative", "verdict"] == HOLDS
    weak = correlation_table(-0.5, per_layer={"cls": [-0.9, -0.29, -0.4]})
    assert judged(shares, weak).loc["kobayashi.s4.alpha_fx_negative", "verdict"] == FAILS
    # A sink layer whose ρ is undefined (constant α or norms): not applicable.
    undefined = correlation_table(-0.5, per_layer={"cls": [-0.9, np.nan, -0.4]})
    assert judged(shares, undefined).loc["kobayashi.s4.alpha_fx_negative", "verdict"] == NOT_APPLICABLE


def test_the_sink_is_each_layers_own():
    # Issue 23 item 4. Layers 1-3: [CLS] 60% of α, [SEP] 10%; layers 4-6: [CLS] 25%, [SEP] 50%.
    # Averaged over layers [CLS] leads (42.5% vs 30%), so the old rule tested [CLS] in every layer
    # where it drew >= 20%, i.e. all six, and in layers 4-6 its norm share 20% > 0.5 x 25%:
    # "does not hold", judged on a token that is not the sink there. Per layer: [CLS] in 1-3
    # (10% <= 30%), [SEP] in 4-6 (10% <= 25%): holds.
    shares = shares_table(attention=[0.6] * 3 + [0.25] * 3, norm=[0.1] * 3 + [0.2] * 3,
                          layer_norm=[0.1] * 6, sep=[(0.1, 0.05, 0.05)] * 3 + [(0.5, 0.1, 0.1)] * 3)
    per_layer = {"cls": [-0.5] * 3 + [0.0] * 3, "sep": [0.0] * 3 + [-0.6] * 3}
    claims = judged(shares, correlation_table(-0.5, -0.4, 6, per_layer))
    collapse = claims.loc["kobayashi.s4.special_collapse"]
    assert collapse["verdict"] == HOLDS
    assert collapse["ours"] == ("[CLS] (layers 1-3) / [SEP] (layers 4-6): α 50-60% in layers 1-6 -> "
                                "‖αf(x)‖ (per head) 10%")
    assert "the layer's sink draws" in collapse["rule"]
    # The correlation, too, is read on each layer's sink: [CLS] -0.5 in 1-3, [SEP] -0.6 in 4-6.
    assert claims.loc["kobayashi.s4.alpha_fx_negative", "verdict"] == HOLDS
    # The paper's [SEP] beside: it draws >= 20% in layers 4-6 and collapses there.
    assert claims.loc["kobayashi.s4.sep_collapse", "verdict"] == HOLDS


def test_sep_claim_when_sep_is_a_sink():
    shares = shares_table(attention=[0.1, 0.1], norm=[0.1, 0.1], layer_norm=[0.1, 0.1],
                          sep=[(0.5, 0.1, 0.1), (0.2, 0.15, 0.05)])
    claims = judged(shares, correlation_table(0.1, -0.5))
    assert claims.loc["kobayashi.s4.special_collapse", "ours"].startswith("[SEP]: α 20-50% in layers 1-2")
    assert claims.loc["kobayashi.s4.sep_collapse", "verdict"] == FAILS  # 15% > 0.5 x 20%


# --- rollout -----------------------------------------------------------------------------------

A1 = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]
A2 = [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]


def test_rollout_by_hand():
    rolled = rollout(np.array([A1, A2]))
    # A~1 = A1 / 2 + I / 2: (1, 0, 0), (1/4, 3/4, 0), (0, 0, 1)
    np.testing.assert_allclose(rolled[0], [[1, 0, 0], [0.25, 0.75, 0], [0, 0, 1]])
    # A~2 rows (1/2, 1/2, 0), (0, 1/2, 1/2), (1/2, 0, 1/2), times A~1
    np.testing.assert_allclose(rolled[1], [[0.625, 0.375, 0], [0.125, 0.375, 0.5], [0.5, 0, 0.5]])
    sums, counts = offset_sums(rolled[1], 1)
    np.testing.assert_allclose(sums / counts, [0.0625, 0.5, 0.4375])  # offsets -1, 0, +1


def test_rollout_of_a_torch_batch_is_the_numpy_rule_bit_for_bit_on_its_products():
    import torch

    rolled = rollout(torch.tensor([[A1, A2]], dtype=torch.float64))  # [B, L, n, n]: the device's branch
    np.testing.assert_allclose(rolled[0, 1].numpy(), [[0.625, 0.375, 0], [0.125, 0.375, 0.5], [0.5, 0, 0.5]])
    maps = torch.rand(3, 5, 7, 7, generator=torch.Generator().manual_seed(0))
    maps = maps / maps.sum(-1, keepdim=True)
    mixed = (0.5 * maps + 0.5 * torch.eye(7)) / (0.5 * maps + 0.5 * torch.eye(7)).sum(-1, keepdim=True)
    products = [mixed[:, 0]]
    for layer in range(1, 5):  # torch.matmul, layer by layer: the rule as the numpy branch reads it
        products.append(torch.matmul(mixed[:, layer], products[-1]))
    assert torch.equal(rollout(maps), torch.stack(products, dim=1))


def test_rollout_analysis_from_both_sources_by_hand():
    attn = np.array([[A1], [A2]], dtype=np.float32)  # 2 layers, 1 head
    # The norm maps: layer 1 proportional to A1; layer 2's first row (0, 1, 1) -> (0, 1/2, 1/2).
    norm_map = np.array([[[2, 0, 0], [1, 1, 0], [0, 0, 3]], [[0, 1, 1], [0, 0, 2], [5, 0, 0]]], np.float32)
    report = run_analysis(Rollout, [example(attn, np.ones((2, 1, 3), np.float32), norm_map)],
                          progress=False, max_offset=3)
    assert list(report.tables) == ["shares", "profile"]
    shares = report.tables["shares"].set_index(["source", "layer"])
    # attention, layer 2: rows (0.625, 0.375, 0), (0.125, 0.375, 0.5), (0.5, 0, 0.5) over [CLS] a [SEP]
    np.testing.assert_allclose(shares.loc[("attention", 2), ["cls", "sep", "punct", "other", "special"]],
                               [1.25 / 3, 1 / 3, 0, 0.25, 1.25 / 3 + 1 / 3])
    # norm, layer 2: A~2's first row is (0, 1/2, 1/2) / 2 + (1, 0, 0) / 2 = (1/2, 1/4, 1/4), so R's is
    # 1/2 A~1[0] + 1/4 A~1[1] + 1/4 A~1[2] = (0.5625, 0.1875, 0.25); the other rows as for attention.
    np.testing.assert_allclose(shares.loc[("norm", 2), ["cls", "sep", "other"]],
                               [1.1875 / 3, 1.25 / 3, 0.5625 / 3])
    np.testing.assert_allclose(shares.loc[("norm", 1), ["cls", "sep", "other"]],
                               shares.loc[("attention", 1), ["cls", "sep", "other"]])
    profile = report.tables["profile"].set_index(["source", "layer", "offset"])["mass"]
    assert profile[("attention", 2, 1)] == pytest.approx(0.4375)
    assert np.isnan(profile[("attention", 2, 3)])  # no key three tokens away in a 3-token input


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_rollout_merging_two_halves_is_one_pass(order):
    """The 2-layer example of the test above twice, one per half: every sum doubles, so the shares
    and the profile are that example's (layer 2 under α: [CLS] 1.25 / 3, [SEP] 1 / 3; offset +1
    0.4375); merged in either order it is the one pass over both."""
    attn = np.array([[A1], [A2]], dtype=np.float32)
    norm_map = np.array([[[2, 0, 0], [1, 1, 0], [0, 0, 3]], [[0, 1, 1], [0, 0, 2], [5, 0, 0]]], np.float32)
    halves = [[example(attn, np.ones((2, 1, 3), np.float32), norm_map, index)] for index in (0, 1)]
    both = merged(Rollout, [halves[k] for k in order], max_offset=3).result()
    shares = both.tables["shares"].set_index(["source", "layer"])
    np.testing.assert_allclose(shares.loc[("attention", 2), ["cls", "sep", "punct", "other"]],
                               [1.25 / 3, 1 / 3, 0, 0.25])
    np.testing.assert_allclose(shares.loc[("norm", 2), ["cls", "sep", "other"]], [1.1875 / 3, 1.25 / 3, 0.5625 / 3])
    assert both.tables["profile"].set_index(["source", "layer", "offset"]).loc[("attention", 2, 1), "mass"] == \
        pytest.approx(0.4375)
    one = run_analysis(Rollout, halves[0] + halves[1], progress=False, max_offset=3)
    for name in one.tables:
        pd.testing.assert_frame_equal(both.tables[name], one.tables[name], check_exact=False, rtol=1e-12)


def test_the_sample_does_not_depend_on_the_order_of_the_examples():
    """A sharded store yields its examples in another order: the sampled pairs, and so ρ, stay."""
    rng = np.random.default_rng(1)

    def distinct(index):
        attn = rng.dirichlet(np.ones(3), size=(1, 2, 3)).astype(np.float32)
        return example(attn, rng.uniform(0.5, 2, (1, 2, 3)).astype(np.float32), NORM_MAP, index)

    examples = [distinct(i) for i in range(6)]
    forward, shuffled = (run_analysis(NormShares, order, progress=False, pairs_per_example=2)
                         for order in (examples, [examples[i] for i in (4, 1, 5, 0, 3, 2)]))
    pd.testing.assert_frame_equal(forward.tables["correlation"], shuffled.tables["correlation"])
    assert forward.tables["correlation"].set_index("class").at["other", "n_pairs"] == 6 * 2  # sampled, not all 6


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_merging_two_halves_is_one_pass(order):
    """The same 3-token example twice (corpus positions 0 and 1), one per half: the sums double, so
    the shares are those of one example; the sampled pairs double (6 -> 12 for [CLS]) and ρ stays
    -1/sqrt(5) (duplicating the pairs maps their average ranks r to 2r - 1/2). Merged in either
    order, it is the one pass over both."""
    halves = [[example(index=0)], [example(index=1)]]
    both = merged(NormShares, [halves[k] for k in order], pairs_per_example=1000).result()
    shares = both.tables["shares"].set_index("class")
    np.testing.assert_allclose(shares.loc[["cls", "sep", "punct", "other"], "attention"],
                               [1.25 / 3, 1.125 / 3, 0, 0.625 / 3], rtol=1e-6)
    np.testing.assert_allclose(shares.loc[["cls", "sep", "other"], "value_norm"], [1.5, 1.5, 1.0])
    corr = both.tables["correlation"].set_index("class")
    assert corr.loc["cls", "n_pairs"] == 12 and corr.loc["cls", "spearman"] == pytest.approx(-1 / np.sqrt(5))
    one = run_analysis(NormShares, halves[0] + halves[1], progress=False, pairs_per_example=1000)
    for name in one.tables:
        pd.testing.assert_frame_equal(both.tables[name], one.tables[name], check_exact=False, rtol=1e-12)
    assert both.claims == one.claims and len(both.claims) == 4


def test_merged_samples_are_the_one_pass_sample():
    """Pairs drawn per example (seeded by its corpus position) and kept per example: three
    examples against three, merged either way round, give the one pass's ρ exactly."""
    rng = np.random.default_rng(2)
    examples = [example(rng.dirichlet(np.ones(3), size=(1, 2, 3)).astype(np.float32),
                        rng.uniform(0.5, 2, (1, 2, 3)).astype(np.float32), NORM_MAP, i) for i in range(6)]
    one = run_analysis(NormShares, examples, progress=False, pairs_per_example=2).tables["correlation"]
    for halves in ([examples[:3], examples[3:]], [examples[3:], examples[:3]], [examples[::2], examples[1::2]]):
        both = merged(NormShares, halves, pairs_per_example=2).result().tables["correlation"]
        pd.testing.assert_frame_equal(both, one, check_exact=True)


def test_the_pairs_drawn_are_the_class_s_each_about_equally_often():
    """One draw per example: every (head, query, key) of a class of 8 pairs, budget 4, is
    drawn about equally often over 500 examples (seeded: the same every time), never a pair
    outside the class; a class within the budget is taken whole, each pair once a layer."""
    acc = NormShares(2, 2, pairs_per_example=4)
    onehot = np.zeros((4, len(CLASSES)), bool)
    onehot[0, 0] = True  # [CLS] at position 0: 2 heads x 4 queries = 8 pairs
    onehot[1, 1] = True  # [SEP]: 8 pairs as well
    onehot[2:, 3] = True  # two other tokens: 16 pairs
    seen = np.zeros(8, int)
    for index in range(500):
        head, query, key, per_class = acc._sample_pairs(onehot, np.random.default_rng([0, index]))
        assert head.shape == (2, 12) and per_class.tolist() == [4, 4, 0, 4]
        assert (key[:, :4] == 0).all() and (key[:, 4:8] == 1).all() and np.isin(key[:, 8:], [2, 3]).all()
        np.add.at(seen, (head[:, :4] * 4 + query[:, :4]).ravel(), 1)
    assert seen.sum() == 500 * 2 * 4 and seen.min() > 0.8 * 500 and seen.max() < 1.2 * 500
    whole = NormShares(2, 2, pairs_per_example=8)
    head, query, key, per_class = whole._sample_pairs(onehot, np.random.default_rng(0))
    assert per_class.tolist() == [8, 8, 0, 8]
    assert sorted(zip(head[0, :8], query[0, :8])) == [(h, q) for h in range(2) for q in range(4)]


def test_the_pairs_of_a_capped_sample_of_examples_and_the_shares_of_every_example():
    """sample_examples = 3 of 8 examples: the pairs (and ρ) are those of the 3 examples of
    smallest key, the same merged from shards; the shares still sum every example."""
    from headatlas.analyses.sample import example_key

    rng = np.random.default_rng(4)
    examples = [example(rng.dirichlet(np.ones(3), size=(1, 2, 3)).astype(np.float32),
                        rng.uniform(0.5, 2, (1, 2, 3)).astype(np.float32), NORM_MAP, i) for i in range(8)]
    capped = run_analysis(NormShares, examples, progress=False, pairs_per_example=2, sample_examples=3)
    chosen = sorted(sorted(range(8), key=lambda i: example_key(0, i))[:3])
    only = run_analysis(NormShares, [examples[i] for i in chosen], progress=False, pairs_per_example=2,
                        sample_examples=None)
    every = run_analysis(NormShares, examples, progress=False, pairs_per_example=2, sample_examples=None)
    pd.testing.assert_frame_equal(capped.tables["correlation"], only.tables["correlation"], check_exact=True)
    assert capped.tables["correlation"].set_index("class").at["other", "n_pairs"] == 3 * 2
    pd.testing.assert_frame_equal(capped.tables["shares"], every.tables["shares"], check_exact=True)
    assert "from a seeded sample of 3 of the 8 segments" in capped.caption
    assert "seeded sample" not in every.caption
    acc = NormShares(1, 2, pairs_per_example=2, sample_examples=3)
    for e in examples:
        acc.add(e)
    assert acc.state()["pair_example"].tolist() == chosen
    both = merged(NormShares, [examples[1::2], examples[::2]], pairs_per_example=2, sample_examples=3).result()
    pd.testing.assert_frame_equal(both.tables["correlation"], capped.tables["correlation"], check_exact=True)


def test_once_the_sample_of_examples_is_full_only_the_examples_it_admits_draw_pairs():
    """sample_examples = 3, fed in batches of 4 (8 examples, then 8 more): a batch draws pairs for
    the examples the sample would keep and for no other; the state is the one-at-a-time pass's."""
    from headatlas.analyses.batch import MapBatch
    from headatlas.analyses.sample import example_key

    rng = np.random.default_rng(5)
    examples = [example(rng.dirichlet(np.ones(3), size=(1, 2, 3)).astype(np.float32),
                        rng.uniform(0.5, 2, (1, 2, 3)).astype(np.float32), NORM_MAP, i) for i in range(16)]
    batched, single = NormShares(1, 2, pairs_per_example=2, sample_examples=3), \
        NormShares(1, 2, pairs_per_example=2, sample_examples=3)
    for start in range(0, 16, 4):
        batch = MapBatch.of(examples[start:start + 4])
        kept = sorted(example_key(0, i) for i in range(start))[:3]  # the 3 smallest keys so far
        would = [start == 0 or example_key(0, e.index) < kept[-1] for e in batch.examples]
        drawn = batched._drawn(batch)
        assert drawn.rows.tolist() == [b for b, w in enumerate(would) if w]
        assert len(drawn.per_class) == sum(would) and all(c.sum() == 2 * 3 for c in drawn.per_class)
        batched.add_batch(batch)
    for e in examples:
        single.add(e)
    assert sum(would) < 4  # the last batch skipped an example: the test sees the skipping
    for name, value in single.state().items():
        np.testing.assert_array_equal(batched.state()[name], value, err_msg=name)


def test_offset_sums_of_numpy_and_torch_agree_and_skip_missing_diagonals():
    import torch

    maps = np.random.default_rng(3).random((2, 3, 5, 5))
    for max_offset in (0, 2, 7):  # 7: offsets 5-7 have no diagonal in a 5-token map
        sums, counts = offset_sums(maps, max_offset)
        expected = [[[np.trace(m, offset=k) if abs(k) < 5 else 0.0 for k in range(-max_offset, max_offset + 1)]
                     for m in row] for row in maps]
        np.testing.assert_allclose(sums, expected, rtol=1e-12)
        np.testing.assert_allclose(offset_sums(torch.from_numpy(maps), max_offset)[0].numpy(), sums, rtol=1e-12)
        assert counts.tolist() == [max(5 - abs(k), 0) for k in range(-max_offset, max_offset + 1)]
    assert offset_sums(np.zeros((1, 0, 0)), 2)[0].tolist() == [[0.0] * 5]
