"""Massive activations and dormant heads (issue 34): each measure by hand on tiny inputs, the
heads' outputs against the model's own output projection, and the claims' verdicts both ways."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headatlas.analyses.activations import (ActivationSums, dormant, head_outputs, hidden_activations,
                                            layer_tops, massive_on_sinks, relative_outputs, sink_heads_quiet)
from headatlas.analyses.sinks import ROLES
from headatlas.claims import FAILS, HOLDS, NOT_APPLICABLE
from tests.unit.test_contract import RECORDS

CLS, OTHER = ROLES.index("cls"), ROLES.index("other")


def test_the_top_entry_its_place_and_the_median_by_hand():
    hidden = np.array([[0.5, -1.0, 2.0],
                       [-40.0, 1.0, 0.25]])  # |h|: 0.25 0.5 1 1 2 40 -> median 1, top 40 at (1, 0)
    assert layer_tops(hidden) == (40.0, 1.0, 1, 0)


def test_each_head_s_output_by_hand_and_their_sum_is_the_projection():
    context = torch.tensor([[[1.0, 2.0]]])  # one token, two heads of one dimension each
    weight = torch.tensor([[3.0, 0.0],
                           [4.0, 1.0]])  # D = 2: head 0's column (3, 4), head 1's (0, 1)
    out = head_outputs(context, weight, 2)  # [1, H, T, D]
    assert out[0, :, 0].tolist() == [[3.0, 4.0], [0.0, 2.0]]
    assert out.norm(dim=-1)[0, :, 0].tolist() == [5.0, 2.0]
    dense = torch.nn.Linear(8, 6)  # 4 heads of 2; the heads' sum plus the bias is the layer's output
    context = torch.randn(2, 5, 8)
    summed = head_outputs(context, dense.weight, 4).sum(dim=-3) + dense.bias
    torch.testing.assert_close(summed, dense(context), rtol=1e-5, atol=1e-6)


def test_relative_outputs_and_dormant_heads_by_hand():
    outputs = np.array([[0.1, 2.0, 1.0, 0.4]])  # the layer's median head: (0.4 + 1.0) / 2 = 0.7
    relative = relative_outputs(outputs)
    np.testing.assert_allclose(relative, [[0.1 / 0.7, 2.0 / 0.7, 1.0 / 0.7, 0.4 / 0.7]])
    sinks = np.array([[0.9, 0.9, 0.1, 0.6]])
    # head 0: on the sink and quiet; 1: on the sink, loud; 2: off the sink; 3: 0.57 > 0.5
    assert dormant(sinks, relative).tolist() == [[True, False, False, False]]
    assert np.isnan(relative_outputs(np.zeros((1, 3)))).all()  # a layer of silent heads


def tops(roles_in_massive_layer, ratio=200.0):
    """Per input, two hidden states: the embeddings' (ratio 2) and one at ``ratio``."""
    return np.array([[[2.0, 1.0, OTHER, 0], [ratio, 1.0, role, 7]] for role in roles_in_massive_layer])


@pytest.mark.parametrize("roles, verdict", [([CLS] * 4, HOLDS), ([OTHER] * 4, FAILS),
                                            ([CLS, OTHER] * 2, NOT_APPLICABLE)])
def test_massive_activations_on_the_sink_tokens_can_hold_fail_or_be_undecided(roles, verdict):
    claim = massive_on_sinks(tops(roles))
    assert claim.verdict == verdict
    assert ("undecided" in claim.note) == (verdict == NOT_APPLICABLE)


def test_without_a_massive_layer_the_claim_does_not_apply():
    claim = massive_on_sinks(tops([CLS] * 4, ratio=50.0))
    assert claim.verdict == NOT_APPLICABLE and "largest mean ratio 50.0x" in claim.note


def test_sink_heads_quiet_can_hold_fail_or_be_undecided():
    sinks = np.array([[[0.9, 0.1]]] * 6)  # [N, L, H]: head 0 puts 90% on the sink in every input
    quiet = sink_heads_quiet(sinks, np.array([[[0.2, 1.8]]] * 6))
    assert quiet.verdict == HOLDS and quiet.ours.startswith("0.200 [0.200, 0.200]")
    typical = sink_heads_quiet(sinks, np.array([[[0.9, 1.1]]] * 6))  # below the median, not quiet
    assert typical.verdict == FAILS
    mixed = sink_heads_quiet(sinks, np.array([[[0.2, 1.0]], [[0.9, 1.0]]] * 3))  # mean 0.55, interval 0.2-0.9
    assert mixed.verdict == NOT_APPLICABLE and "contains 0.5" in mixed.note
    none = sink_heads_quiet(sinks * 0.1, np.array([[[0.2, 1.8]]] * 6))
    assert none.verdict == NOT_APPLICABLE and "no (input, head) pair" in none.note


def test_the_tables_of_two_inputs_by_hand():
    sums = ActivationSums(1, 2)
    roles = np.array([CLS, OTHER])
    sums.add([np.array([[9.0, 0.5], [1.0, 1.0]]), np.array([[1.0, 1.0], [0.5, 3.0]])], roles,
             np.array([[1.0, 3.0]]), np.array([[0.8, 0.2]]))
    sums.add([np.array([[5.0, 0.5], [1.0, 1.0]]), np.array([[1.0, 1.0], [0.5, 9.0]])], roles,
             np.array([[2.0, 2.0]]), np.array([[0.6, 0.0]]))
    result = sums.result()
    layers = result.tables["layers"].set_index("layer")
    # state 0: tops 9 and 5 on [CLS], dimension 0, medians 1 and 1 -> ratio (9 + 5) / 2 = 7
    assert layers.loc[0, "top_ratio"] == 7.0 and layers.loc[0, "on_cls"] == 1.0 and layers.loc[0, "top_dim"] == 0
    assert layers.loc[0, "top_cv"] == pytest.approx(np.std([9, 5]) / 7)
    assert layers.loc[1, "on_other"] == 1.0 and layers.loc[1, "top_dim"] == 1 and not layers.loc[1, "massive"]
    heads = result.tables["heads"]
    # relative outputs: input 1 median 2 -> (0.5, 1.5); input 2 median 2 -> (1, 1)
    assert heads["relative_output"].tolist() == [0.75, 1.25]
    assert heads["output_norm"].tolist() == [1.5, 2.5] and heads["sink_share"].tolist() == [0.7, 0.1]
    # head 0 is on the sink in both; quiet (0.5 <= 0.5) in the first only
    assert heads["dormant_rate"].tolist() == [0.5, 0.0]


def test_the_model_s_hidden_states_and_heads_on_the_tiny_model(tiny_model):
    result = hidden_activations(tiny_model, RECORDS, max_length=32, batch_size=2, progress=False)
    layers, heads = result.tables["layers"], result.tables["heads"]
    assert len(layers) == tiny_model.n_layers + 1 and len(heads) == tiny_model.n_layers * tiny_model.n_heads
    assert (layers["top_ratio"] >= 1).all() and (heads["output_norm"] > 0).all()
    assert heads["sink_share"].between(0, 1).all() and heads["dormant_rate"].between(0, 1).all()
    assert np.allclose(layers[[f"on_{r}" for r in ROLES]].sum(axis=1), 1)
    assert [c.id for c in result.claims] == ["sun.massive.on_sink_tokens", "clark.s3.sink_heads_quiet"]
    assert result.attrs["n_examples"] > 0 and "dormant heads" in result.attrs["caption"]


@pytest.mark.parametrize("family", ["roberta", "distilbert", "electra", "albert", "deberta-v2"])
def test_every_family_with_a_norm_layout_runs(family, tiny_encoder_dirs):
    """Each family's output projection is found and hooked once per layer (ALBERT's shared
    block included), its heads' outputs summing to the projection's output."""
    from headatlas.encoders.models import load_model
    from headatlas.encoders.valuenorms import attention_layers

    loaded = load_model(f"tiny_{family}", {"path": str(tiny_encoder_dirs[family])}, device="cpu")
    block = attention_layers(loaded.model)[0]
    seen = []
    handle = block.output.register_forward_hook(lambda module, args, out: seen.append((args[0], out)))
    try:
        result = hidden_activations(loaded, RECORDS, max_length=32, batch_size=4, progress=False)
    finally:
        handle.remove()
    context, out = seen[0]
    with torch.inference_mode():  # the tensors the forward made are inference tensors
        summed = head_outputs(context, block.output.weight, loaded.n_heads).sum(dim=-3) + block.output.bias
    torch.testing.assert_close(summed, out.float(), rtol=1e-4, atol=1e-5)
    assert len(result.tables["layers"]) == loaded.n_layers + 1
    assert len(result.tables["heads"]) == loaded.n_layers * loaded.n_heads


def test_a_model_without_a_known_output_projection_is_refused(tiny_model, monkeypatch):
    from headatlas.encoders import valuenorms
    from headatlas.errors import ModelError

    monkeypatch.setattr(valuenorms, "norms_support", lambda model: "norms are unsupported for Odd: no layout")
    with pytest.raises(ModelError, match="each head's output projection: norms are unsupported for Odd"):
        hidden_activations(tiny_model, RECORDS, max_length=32, progress=False)
