"""Surface analyses (Clark §3) on tiny hand-built examples with hand-computed answers."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from headatlas.analyses.base import REGISTRY, run_analysis
from headatlas.analyses.surface import (classify_heads, layer_means, paper_claims,
                                        pick_example_heads, sink_tokens)
from headatlas.claims import COLUMNS, Claim, claims_table
from headatlas.store.example import Example

TOKENS_A = ["[CLS]", "a", ".", "[SEP]", "b", "[SEP]"]  # n = 6: CLS 0, punct 2, SEP 3 and 5
TOKENS_B = ["[CLS]", "c", "[SEP]", "[SEP]"]  # n = 4: CLS 0, SEP 2 and 3


def example(tokens, attn, index=0):
    n = len(tokens)
    return Example(index=index, id=f"ex{index}", tokens=tokens, input_ids=np.zeros(n, np.int32),
                   token_type_ids=np.zeros(n, np.int8), word_ids=np.zeros(n, np.int32),
                   attn=np.asarray(attn, np.float32))


def shift_head(n):
    """Each token puts all its attention on the next token; the last one on itself."""
    a = np.eye(n, k=1)
    a[-1, -1] = 1.0
    return a


def cls_self_head(n):
    """Each token splits its attention 0.5 / 0.5 between [CLS] and itself; [CLS] puts 1 on itself."""
    a = 0.5 * np.eye(n)
    a[:, 0] += 0.5
    return a


@pytest.fixture
def one():
    """1 layer x 2 heads over TOKENS_A: head 1 = shift, head 2 = [CLS]/self."""
    return [example(TOKENS_A, [[shift_head(6), cls_self_head(6)]])]


@pytest.fixture
def two(one):
    """``one`` plus a 4-token example where both heads are uniform (1/4 everywhere)."""
    return one + [example(TOKENS_B, np.full((1, 2, 4, 4), 0.25), index=1)]


def run(name, examples):
    return run_analysis(name, examples, progress=False).table


@pytest.mark.parametrize("name", ["relative_position", "special_tokens", "entropy"])
def test_merging_two_halves_is_one_pass(name, two):
    """State of the first example merged with the state of the second = both in one pass."""
    cls = REGISTRY[name]
    halves = []
    for part in ([two[0]], [two[1]]):
        acc = cls(1, 2)
        for example in part:
            acc.add(example)
        halves.append(acc)
    merged = halves[0].merge(halves[1].state())
    assert merged.n_examples == 2 and sorted(merged.lengths) == [4, 6]
    pd.testing.assert_frame_equal(merged.result().table, run(name, two), check_exact=False, rtol=1e-12)


def test_registered():
    assert {"relative_position", "special_tokens", "entropy"} <= set(REGISTRY)


def test_relative_position_one_example(one):
    # Head 1 (shift): prev = sum a[i, i-1] over i=1..5 = 0 -> 0/5 = 0;
    #   self = a[5,5] = 1 over 6 queries -> 1/6; next = 5 ones over i=0..4 -> 5/5 = 1.
    # Head 2 ([CLS]/self): prev = a[1,0] = 0.5, other a[i,i-1] = 0 -> 0.5/5 = 0.1;
    #   self = 1 + 5 * 0.5 = 3.5 over 6 -> 7/12; next = 0.
    t = run("relative_position", one)
    assert list(t.columns) == ["layer", "head", "prev", "self", "next"]
    assert t[["layer", "head"]].values.tolist() == [[1, 1], [1, 2]]
    np.testing.assert_allclose(t["prev"], [0.0, 0.1], atol=1e-7)
    np.testing.assert_allclose(t["self"], [1 / 6, 7 / 12], atol=1e-7)
    np.testing.assert_allclose(t["next"], [1.0, 0.0], atol=1e-7)


def test_relative_position_is_token_weighted(two):
    # Example 2 (n=4, uniform 1/4): prev 3 queries x 1/4 = 0.75, self 4 x 1/4 = 1, next 0.75.
    # Head 1: prev (0 + 0.75) / (5 + 3) = 3/32; self (1 + 1) / (6 + 4) = 0.2;
    #   next (5 + 0.75) / 8 = 23/32.  (Per-example averaging would give prev (0 + 1/4)/2 = 1/8.)
    # Head 2: prev (0.5 + 0.75) / 8 = 5/32; self (3.5 + 1) / 10 = 0.45; next 0.75 / 8 = 3/32.
    t = run("relative_position", two)
    np.testing.assert_allclose(t["prev"], [3 / 32, 5 / 32], atol=1e-7)
    np.testing.assert_allclose(t["self"], [0.2, 0.45], atol=1e-7)
    np.testing.assert_allclose(t["next"], [23 / 32, 3 / 32], atol=1e-7)


def test_special_tokens_one_example(one):
    # Head 1 (shift): key 0 ([CLS]) gets nothing -> cls 0; [SEP] keys 3, 5 get a[2,3], a[4,5],
    #   a[5,5] = 3 -> 3/6 = 0.5; '.' key 2 gets a[1,2] = 1 -> 1/6.
    #   From [SEP] queries 3 (-> b) and 5 (-> itself): (0 + 1) / 2 = 0.5;
    #   from the others 0, 1, 2, 4: a[2,3] + a[4,5] = 2 -> 2/4 = 0.5.
    # Head 2: cls = (1 + 5 * 0.5) / 6 = 7/12; sep = a[3,3] + a[5,5] = 1 -> 1/6;
    #   punct = a[2,2] = 0.5 -> 1/12; sep_from_sep = (0.5 + 0.5) / 2 = 0.5; sep_from_other = 0.
    t = run("special_tokens", one)
    assert list(t.columns) == ["layer", "head", "cls", "sep", "punct", "sep_from_sep",
                               "sep_from_other"]
    np.testing.assert_allclose(t["cls"], [0.0, 7 / 12], atol=1e-7)
    np.testing.assert_allclose(t["sep"], [0.5, 1 / 6], atol=1e-7)
    np.testing.assert_allclose(t["punct"], [1 / 6, 1 / 12], atol=1e-7)
    np.testing.assert_allclose(t["sep_from_sep"], [0.5, 0.5], atol=1e-7)
    np.testing.assert_allclose(t["sep_from_other"], [0.5, 0.0], atol=1e-7)


def test_special_tokens_token_weighted(two):
    # Example 2 (uniform 1/4; [CLS] 0, [SEP] 2, 3, no punct): per query cls 1/4, sep 2/4.
    # cls: head 1 (0 + 4/4) / 10 = 0.1; head 2 (3.5 + 1) / 10 = 0.45.
    # sep: head 1 (3 + 4 * 0.5) / 10 = 0.5; head 2 (1 + 2) / 10 = 0.3.
    # punct: head 1 1/10; head 2 0.5/10.
    # sep_from_sep: 2 [SEP] queries x 0.5 = 1 -> head 1 (1 + 1) / 4 = 0.5; head 2 (1 + 1) / 4 = 0.5.
    # sep_from_other: 2 other queries x 0.5 = 1 -> head 1 (2 + 1) / 6 = 0.5; head 2 (0 + 1) / 6.
    t = run("special_tokens", two)
    np.testing.assert_allclose(t["cls"], [0.1, 0.45], atol=1e-7)
    np.testing.assert_allclose(t["sep"], [0.5, 0.3], atol=1e-7)
    np.testing.assert_allclose(t["punct"], [0.1, 0.05], atol=1e-7)
    np.testing.assert_allclose(t["sep_from_sep"], [0.5, 0.5], atol=1e-7)
    np.testing.assert_allclose(t["sep_from_other"], [0.5, 1 / 6], atol=1e-7)


def test_special_tokens_punct_with_word_marker():
    # RoBERTa-style 'Ġ,' counts as a comma: all attention on it -> punct 1.
    a = np.zeros((1, 1, 3, 3))
    a[..., 1] = 1.0
    t = run("special_tokens", [example(["[CLS]", "Ġ,", "[SEP]"], a)])
    assert t["punct"].item() == pytest.approx(1.0)


def test_special_tokens_when_a_special_token_is_also_punctuation():
    # A tokenizer whose [SEP] is '.': that token is both [SEP] and punctuation, so the masks are
    # not the token classes (punct there excludes [SEP]); the table keeps Clark's definitions.
    # One head, n = 3 (CLS a .): every query puts 0.25 on [CLS], 0.25 on 'a', 0.5 on '.'.
    a = np.zeros((1, 1, 3, 3))
    a[..., 0], a[..., 1], a[..., 2] = 0.25, 0.25, 0.5
    e = Example(index=0, id="x", tokens=["[CLS]", "a", "."], input_ids=np.zeros(3, np.int32),
                token_type_ids=np.zeros(3, np.int8), word_ids=np.zeros(3, np.int32),
                attn=a.astype(np.float32), sep_token=".")
    t = run("special_tokens", [e])
    assert t["cls"].item() == pytest.approx(0.25)
    assert t["sep"].item() == pytest.approx(0.5) and t["punct"].item() == pytest.approx(0.5)


def test_entropy_one_example(one):
    # Head 1: every row one-hot -> entropy 0 (0 log 0 = 0, no NaN); [CLS] row 0; max weight 1.
    # Head 2: row 0 one-hot -> 0; rows 1..5 (0.5, 0.5) -> log 2 each: mean 5 log 2 / 6;
    #   [CLS] row is row 0 -> 0; max weight (1 + 5 * 0.5) / 6 = 7/12.
    # Uniform baseline: every row has 6 keys -> log 6, the same for both heads.
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a log(0) warning would fail the test
        t = run("entropy", one)
    assert list(t.columns) == ["layer", "head", "entropy", "uniform_entropy", "cls_entropy",
                               "max_weight"]
    np.testing.assert_allclose(t["entropy"], [0.0, 5 * math.log(2) / 6], atol=1e-6)
    np.testing.assert_allclose(t["uniform_entropy"], [math.log(6)] * 2, atol=1e-9)
    np.testing.assert_allclose(t["cls_entropy"], [0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(t["max_weight"], [1.0, 7 / 12], atol=1e-7)


def test_entropy_token_weighted(two):
    # Example 2: 4 uniform rows, entropy log 4 each, max weight 1/4, [CLS] row log 4.
    # entropy: head 1 (0 + 4 log 4) / 10; head 2 (5 log 2 + 4 log 4) / 10 = 13 log 2 / 10.
    # uniform: (6 log 6 + 4 log 4) / 10.  cls_entropy: 2 [CLS] rows -> (0 + log 4) / 2.
    # max_weight: head 1 (6 + 4/4) / 10 = 0.7; head 2 (3.5 + 1) / 10 = 0.45.
    t = run("entropy", two)
    np.testing.assert_allclose(t["entropy"], [0.4 * math.log(4), 1.3 * math.log(2)], atol=1e-6)
    np.testing.assert_allclose(t["uniform_entropy"], [(6 * math.log(6) + 4 * math.log(4)) / 10] * 2)
    np.testing.assert_allclose(t["cls_entropy"], [math.log(4) / 2] * 2, atol=1e-6)
    np.testing.assert_allclose(t["max_weight"], [0.7, 0.45], atol=1e-7)


def test_tables_are_layer_major():
    # 2 layers x 3 heads, one example: head (l, h) puts weight on the next token that identifies it.
    n = 3
    attn = np.zeros((2, 3, n, n))
    for layer in range(2):
        for head in range(3):
            w = (10 * (layer + 1) + head + 1) / 100  # 0.11, 0.12, 0.13, 0.21, ...
            attn[layer, head] = w * np.eye(n, k=1) + (1 - w) * np.eye(n)
            attn[layer, head, -1, -1] = 1.0
    # next = (w + w) / 2 = w for every head.
    t = run("relative_position", [example(["[CLS]", "x", "[SEP]"], attn)])
    assert t[["layer", "head"]].values.tolist() == [[1, 1], [1, 2], [1, 3], [2, 1], [2, 2], [2, 3]]
    np.testing.assert_allclose(t["next"], [0.11, 0.12, 0.13, 0.21, 0.22, 0.23], atol=1e-6)


def test_layer_means():
    t = pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2], "cls": [0.2, 0.4, 0.0, 1.0],
                      "sep": [0.0, 0.0, 0.5, 0.7]})
    m = layer_means(t, ["cls", "sep"])
    assert m["layer"].tolist() == [1, 2]
    np.testing.assert_allclose(m["cls"], [0.3, 0.5])
    np.testing.assert_allclose(m["sep"], [0.0, 0.6])


def head_tables(prev, next_, cls, sep, punct, entropy, max_weight=None, self_=None,
                sep_from_sep=None, sep_from_other=None, cls_entropy=None, n_layers=1):
    """Hand-built rel / special / entropy tables; heads numbered layer-major."""
    k = len(prev)
    n_heads = k // n_layers
    ids = {"layer": np.repeat(np.arange(1, n_layers + 1), n_heads),
           "head": np.tile(np.arange(1, n_heads + 1), n_layers)}
    zeros = [0.0] * k
    rel = pd.DataFrame({**ids, "prev": prev, "self": self_ or zeros, "next": next_})
    special = pd.DataFrame({**ids, "cls": cls, "sep": sep, "punct": punct,
                            "sep_from_sep": sep_from_sep or zeros,
                            "sep_from_other": sep_from_other or zeros})
    ent = pd.DataFrame({**ids, "entropy": entropy, "uniform_entropy": [4.85] * k,
                        "cls_entropy": cls_entropy or zeros, "max_weight": max_weight or zeros})
    return rel, special, ent


def test_classify_heads():
    # Head: 1 broad, 2 next, 3 prev, 4 cls, 5 sep, 6 punct, 7 other (all at/below thresholds:
    # entropy 3.8, next 0.5, cls 0.6 are not above them), 8 broad and cls -> cls wins (code order).
    rel, special, ent = head_tables(
        prev=[0, 0, 0.6, 0, 0, 0, 0.5, 0], next_=[0, 0.9, 0, 0, 0, 0, 0.5, 0],
        cls=[0, 0, 0, 0.7, 0, 0, 0.6, 0.7], sep=[0, 0, 0, 0, 0.8, 0, 0, 0],
        punct=[0, 0, 0, 0, 0, 0.65, 0, 0], entropy=[4.0, 1, 1, 1, 1, 1, 3.8, 4.5])
    t = classify_heads(rel, special, ent)
    assert list(t.columns) == ["layer", "head", "behaviour"]
    assert t["behaviour"].tolist() == ["broad", "next", "prev", "cls", "sep", "punct", "other", "cls"]


def test_pick_example_heads_are_distinct():
    # Head 1 has the highest entropy AND the highest next: it goes to "broad" (picked first),
    # so "next" falls to head 2 (0.6). sep -> head 3; punct: head 3 is taken, so head 4.
    rel, special, ent = head_tables(
        prev=[0] * 4, next_=[0.9, 0.6, 0.1, 0.0], cls=[0] * 4, sep=[0.1, 0.2, 0.9, 0.3],
        punct=[0.0, 0.1, 0.8, 0.5], entropy=[4.5, 2.0, 1.0, 3.0], n_layers=2)
    heads = pick_example_heads(rel, special, ent)
    assert heads == {"broad": (1, 1), "next": (1, 2), "sep": (2, 1), "punct": (2, 2)}
    assert all(type(i) is int for pair in heads.values() for i in pair)


def toy_claims(n_layers=2):
    # 2 layers x 2 heads. Only head 2-1 has next > 0.5; no head has prev > 0.5 (0.5 is not above).
    # Relative depth on 2 layers: early (1-4 of 12) = layer 1, deep (9-12) = layer 2, middle
    #   (6-10) = layers 1-2 -> sep mean over all 4 heads (0 + .2 + .6 + .8) / 4 = 40%.
    # [SEP]: layer means 0.1 (layer 1), 0.7 (layer 2) -> only layer 2 is > 50%;
    #   its sep_from_sep mean (0.9 + 1.0) / 2 = 95%, sep_from_other (0.6 + 0.4) / 2 = 50%.
    # Sinks: layer 1 cls 70% (sep 10%, punct 0%), layer 2 sep 70% (cls 10%, punct 20%).
    # cls: early (0.8 + 0.6) / 2 = 70%, deep 10%.  punct: deep (0.3 + 0.1) / 2 = 20%, early 0%.
    # Entropy: early heads 1-1 (4.2) and 1-2 (3.0): only 1-1 is > 3.8 -> its max_weight 8%.
    # Last-layer [CLS] entropy (3.5 + 3.7) / 2 = 3.60 nats, 3.60 / 4.85 = 0.74 of uniform
    #   (paper 3.89 / log 128 = 0.80: within 0.10).
    rel, special, ent = head_tables(
        prev=[0.1, 0.2, 0.3, 0.5], next_=[0.2, 0.1, 0.8, 0.5], self_=[0.1, 0.3, 0.0, 0.2],
        cls=[0.8, 0.6, 0.1, 0.1], sep=[0.0, 0.2, 0.6, 0.8], punct=[0, 0, 0.3, 0.1],
        sep_from_sep=[0.1, 0.2, 0.9, 1.0], sep_from_other=[0.0, 0.1, 0.6, 0.4],
        entropy=[4.2, 3.0, 2.0, 1.0], max_weight=[0.08, 0.3, 0.5, 0.7],
        cls_entropy=[4.0, 3.0, 3.5, 3.7], n_layers=2)
    return paper_claims(rel, special, ent, n_layers=n_layers)


def test_paper_claims():
    found = toy_claims()
    assert isinstance(found, list) and all(isinstance(c, Claim) for c in found)
    t = claims_table(found)
    assert list(t.columns) == list(COLUMNS) and t["id"].is_unique
    c = t.set_index("id")
    assert c.loc["clark.s3.next_heads", ["ours", "verdict"]].tolist() == ["1 (layer 2)", "holds"]
    assert c.loc["clark.s3.prev_heads", ["ours", "verdict"]].tolist() == ["0", "does not hold"]
    assert c.loc["clark.s3.self_little", ["ours", "verdict"]].tolist() == \
        ["median head 15%, max 30%", "does not hold"]  # 15% is not < 10%
    assert c.loc["clark.s3.sink_token", ["ours", "verdict"]].tolist() == \
        ["[CLS] in layer 1 (70%); [SEP] in layer 2 (70%)", "does not hold"]  # layer 1 is middle too
    sep = c.loc["clark.s3.sep_middle"]
    assert (sep["ours"], sep["verdict"]) == ("40% in layers 1-2", "does not hold")
    assert "depth 0.50-0.83 (layers 6-10 of 12)" in sep["rule"] and "2 layers" in sep["note"]
    assert c.loc["clark.s3.cls_early", ["ours", "verdict"]].tolist() == ["early 70%, deep 10%", "holds"]
    assert c.loc["clark.s3.punct_deep", ["ours", "verdict"]].tolist() == ["deep 20%, early 0%", "holds"]
    assert c.loc["clark.s3.sep_from_sep", ["ours", "verdict"]].tolist() == \
        ["95% from [SEP] vs 50% from other tokens (layers 2)", "holds"]
    entropy = c.loc["clark.s3.cls_entropy_last"]
    assert entropy["ours"] == "3.60 nats (0.74 of uniform, 4.85 nats)" and entropy["verdict"] == "holds"
    assert entropy["paper"].startswith("3.89 nats (0.80 of uniform")
    broad = c.loc["clark.s3.broad_max_weight"]
    assert broad["ours"].startswith("8% (mean row maximum; heads 1-1)") and broad["verdict"] == "holds"


def test_paper_claims_on_12_layers_and_what_is_not_applicable():
    rel, special, ent = head_tables(prev=[0.6] * 12, next_=[0] * 12, cls=[0] * 12, sep=[0] * 12,
                                    punct=[0] * 12, entropy=[1] * 12, n_layers=12)
    c = claims_table(paper_claims(rel, special, ent, n_layers=12)).set_index("id")
    assert c.loc["clark.s3.prev_heads", "ours"] == "12 (layers 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)"
    assert c.loc["clark.s3.sep_middle", "note"] == ""  # same depth as the paper: nothing to say
    assert c.loc["clark.s3.sep_middle", "ours"] == "0% in layers 6-10"
    # No layer puts > 50% on [SEP], no early head is broad: those claims cannot be judged.
    assert c.loc["clark.s3.sep_from_sep", "verdict"] == "not applicable"
    assert c.loc["clark.s3.broad_max_weight", "verdict"] == "not applicable"
    assert c.loc["clark.s3.broad_max_weight", "ours"] == "no head of layers 1-4 above 3.8 nats"


def test_sink_tokens_per_layer():
    rel, special, ent = head_tables(prev=[0] * 4, next_=[0] * 4, cls=[0.5, 0.3, 0.1, 0.0],
                                    sep=[0.1, 0.1, 0.6, 0.8], punct=[0.2, 0.2, 0.1, 0.1],
                                    entropy=[1] * 4, n_layers=4)
    sinks = sink_tokens(special)  # one head per layer
    assert sinks["sink"].tolist() == ["[CLS]", "[CLS]", "[SEP]", "[SEP]"]
    assert sinks["share"].tolist() == pytest.approx([0.5, 0.3, 0.6, 0.8])


@pytest.mark.parametrize("namespace", ["numpy", "torch"])
def test_special_tokens_of_a_padded_batch_by_hand(two, namespace):
    """The ``two`` answers from one padded batch: [SEP] rows at 2, 3 (example 2) and 3, 5
    (example 1) are read at the union of those rows, each example's own weighed."""
    import torch

    from headatlas.analyses.batch import MapBatch
    from headatlas.analyses.surface import SpecialTokens

    batch = MapBatch.of(two)
    if namespace == "torch":
        batch = MapBatch(torch.from_numpy(batch.attn), batch.examples)
    analysis = SpecialTokens(1, 2)
    analysis.add_batch(batch)
    t = analysis.result().table
    np.testing.assert_allclose(t["sep_from_sep"], [0.5, 0.5], atol=1e-7)
    np.testing.assert_allclose(t["sep_from_other"], [0.5, 1 / 6], atol=1e-7)
    np.testing.assert_allclose(t["sep"], [0.5, 0.3], atol=1e-7)
