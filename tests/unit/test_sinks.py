"""Attention sinks (Gu et al. 2025): hand-worked sink rates on three tiny examples."""

from __future__ import annotations

import numpy as np
import pytest

from headatlas.analyses.sinks import EPSILON, SinkRate, key_importance, role_masks
from headatlas.store.example import Example


def example(index: int, tokens: list[str], rows: list[list[float]]) -> Example:
    """One layer; head h's every query row is ``rows[h]``."""
    n = len(tokens)
    attn = np.stack([np.tile(np.asarray(row, np.float32), (n, 1)) for row in rows])[None]
    return Example(index, f"e{index}", tokens, np.arange(n), np.zeros(n, int), np.arange(n), attn)


EXAMPLES = [
    # head 1: [SEP] gets 0.7 of every row (a sink); head 2: uniform, 0.25 each (none)
    example(0, ["[CLS]", "a", ".", "[SEP]"], [[0.1, 0.1, 0.1, 0.7], [0.25] * 4]),
    # head 1: half the rows on [CLS] b, half on c [SEP]: 0.25 each (none); head 2: b, the first
    # word piece, gets 0.8
    example(1, ["[CLS]", "b", "c", "[SEP]"], [[0.5, 0.5, 0.0, 0.0], [0.05, 0.8, 0.1, 0.05]]),
    # both heads: [CLS] gets 0.9
    example(2, ["[CLS]", "b", "c", "[SEP]"], [[0.9, 0.05, 0.03, 0.02]] * 2),
]
EXAMPLES[1].attn[0, 0, 2:] = [0.0, 0.0, 0.5, 0.5]  # rows 3 and 4 of head 1 on c and [SEP]


def test_roles_of_the_tokens():
    roles = role_masks(["[CLS]", "a", ".", "b", "[SEP]", "c", "[SEP]"], "[CLS]", "[SEP]")
    assert roles.astype(int).tolist() == [[1, 0, 0, 0, 0, 0, 0],   # cls
                                          [0, 0, 0, 0, 1, 0, 1],   # sep
                                          [0, 0, 1, 0, 0, 0, 0],   # punct
                                          [0, 1, 0, 0, 0, 0, 0],   # first word piece
                                          [0, 0, 0, 1, 0, 1, 0]]   # other
    assert key_importance(EXAMPLES[1].attn)[0, 0].tolist() == pytest.approx([0.25] * 4)


def test_sink_rates_by_hand():
    acc = SinkRate(1, 2)
    for e in EXAMPLES:
        acc.add(e)
    result = acc.result()
    heads = result.tables["heads"].set_index("head")
    # head 1: sinks in examples 1 ([SEP]) and 3 ([CLS]); head 2: in 2 (b) and 3 ([CLS])
    assert heads["sink_rate"].tolist() == pytest.approx([2 / 3, 2 / 3])
    assert heads["sink_sep"].tolist() == pytest.approx([1 / 3, 0])
    assert heads["sink_cls"].tolist() == pytest.approx([1 / 3, 1 / 3])
    assert heads["sink_first"].tolist() == pytest.approx([0, 1 / 3])
    assert heads["sink_punct"].tolist() == heads["sink_other"].tolist() == [0, 0]
    assert heads["top_importance"].tolist() == pytest.approx([(0.7 + 0.25 + 0.9) / 3, (0.25 + 0.8 + 0.9) / 3])
    layers = result.tables["layers"].set_index("role")["sink_rate"]
    assert layers.to_dict() == pytest.approx({"any": 2 / 3, "cls": 1 / 3, "sep": 1 / 6, "punct": 0,
                                              "first": 1 / 6, "other": 0, "special": 1 / 2})
    claims = {c.id: c for c in result.claims}
    # 4 of 6 (segment, head) pairs, 3 of those 4 on [CLS] or [SEP]; three segments are too few
    # to decide (a resample of the first segment three times has 1 of 2)
    assert claims["gu.sinks.most_heads"].ours.startswith("66.7% [50.0%, ")
    assert claims["gu.sinks.on_special_tokens"].ours.startswith("75.0% [")
    assert {c.verdict for c in claims.values()} == {"not applicable"}
    assert "straddles 50%" in claims["gu.sinks.most_heads"].note


def claims_of(examples) -> dict:
    acc = SinkRate(1, 2)
    for i, e in enumerate(examples):
        acc.add(Example(i, e.id, e.tokens, e.input_ids, e.token_type_ids, e.word_ids, e.attn))
    return {c.id: c for c in acc.result().claims}


def test_the_verdicts_come_out_either_way():
    both_on_cls, sep_in_one_head, uniform = EXAMPLES[2], EXAMPLES[0], example(9, ["[CLS]", "a", "b", "[SEP]"],
                                                                                [[0.25] * 4] * 2)
    claims = claims_of([both_on_cls] * 40)  # every pair, on [CLS]: [100%, 100%]
    assert [c.verdict for c in claims.values()] == ["holds", "holds"]
    claims = claims_of([sep_in_one_head] * 40)  # half the pairs in every segment: 50% is not most
    assert claims["gu.sinks.most_heads"].verdict == "does not hold"
    assert claims["gu.sinks.on_special_tokens"].verdict == "holds"
    claims = claims_of([both_on_cls, uniform] * 20)  # 50% on average, either way in resamples
    assert claims["gu.sinks.most_heads"].verdict == "not applicable"
    claims = claims_of([uniform] * 40)  # a random encoder: no sink anywhere
    assert claims["gu.sinks.most_heads"].verdict == "does not hold"
    assert claims["gu.sinks.on_special_tokens"].verdict == "not applicable"  # none to place
    assert claims["gu.sinks.on_special_tokens"].ours == "no sink in any (segment, head) pair"


def test_epsilon_and_merging():
    uniform = example(3, ["[CLS]", "a", "b", "[SEP]"], [[0.25] * 4] * 2)
    for epsilon, rate in ((EPSILON, 0), (0.2, 1)):  # 0.25 each: a sink on every key below 0.25
        acc = SinkRate(1, 2, epsilon=epsilon)
        acc.add(uniform)
        assert acc.result().tables["heads"]["sink_rate"].tolist() == [rate, rate]
    whole, first, rest = SinkRate(1, 2), SinkRate(1, 2), SinkRate(1, 2)
    for e in EXAMPLES:
        whole.add(e)
    first.add(EXAMPLES[0])
    for e in EXAMPLES[1:]:
        rest.add(e)
    rest.merge(first.state())  # in the other order: the bootstrap still resamples the same
    merged = rest.result()
    np.testing.assert_allclose(merged.tables["heads"].to_numpy(), whole.result().tables["heads"].to_numpy())
    assert merged.claims == whole.result().claims
    with pytest.raises(ValueError, match="epsilon"):
        SinkRate(1, 2, epsilon=1.5)
