"""Value-vector norms (Kobayashi et al. 2020): the arithmetic, the hooks, the store, the weighting."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch

from headatlas.corpora.records import Sentence
from headatlas.errors import StoreError
from headatlas.store.schema import NORMS_OFF, NORMS_RECORDED, NORMS_UNSUPPORTED
from headatlas.store.example import Example
from headatlas.store.reader import Store
from headatlas.store.writer import StoreWriter
from headatlas.encoders.valuenorms import (NormRecorder, _layer_norm_map_torch, _token_grams_batched, gram_weights,
                                  layer_norm_map, norm_recorder, token_grams, value_norms_and_map)
from headatlas.weightings import norm_weighted

SENTENCES = [Sentence(id="s0", words=["the", "cat", "sat"]),
             Sentence(id="p", words=["the", "dog", "ran"], words_b=["it", "was", "happy", "."]),
             Sentence(id="s2", words=["she", "saw", "a", "big", "red", "house", "."])]


def test_gram_formula_by_hand():
    # Two heads of width 1, W_O = identity: f_1(x_j) = (v_j1, 0), f_2(x_j) = (0, v_j2).
    values = torch.tensor([[[1.0, 2.0], [3.0, 0.0], [0.0, 4.0]]])  # [batch 1, 3 tokens, 2]
    attn = torch.zeros(1, 2, 3, 3)
    attn[0, 0, 0] = torch.tensor([0.5, 0.5, 0.0])  # head 1, query 0
    attn[0, 1, 0] = torch.tensor([0.25, 0.25, 0.5])  # head 2, query 0
    value_norms, norm_map = value_norms_and_map(values, attn, gram_weights(torch.eye(2)), 2)
    np.testing.assert_allclose(value_norms[0].numpy(), [[1, 3, 0], [2, 0, 4]])
    # key 0: ||(0.5*1, 0.25*2)|| = ||(0.5, 0.5)|| = sqrt(0.5); key 1: (1.5, 0); key 2: (0, 2)
    np.testing.assert_allclose(norm_map[0, 0].numpy(), [np.sqrt(0.5), 1.5, 2.0], rtol=1e-6)


def test_gram_formula_with_mixed_heads_by_hand():
    # W_O maps both width-1 heads onto the same output axis: f_1 = (v_1, 0), f_2 = (v_2, 0),
    # so the layer-level vector is (a1 v1 + a2 v2, 0) and the heads can cancel.
    dense_weight = torch.tensor([[1.0, 1.0], [0.0, 0.0]])  # torch Linear stores W_O^T
    values = torch.tensor([[[2.0, -1.0]]])  # one token
    attn = torch.tensor([[[[0.5]], [[1.0]]]])  # heads x 1 x 1
    value_norms, norm_map = value_norms_and_map(values, attn, gram_weights(dense_weight), 2)
    np.testing.assert_allclose(value_norms[0, :, 0].numpy(), [2.0, 1.0])
    np.testing.assert_allclose(norm_map.numpy().ravel(), [abs(0.5 * 2 - 1.0 * 1)], atol=1e-7)


def test_compiled_and_tensor_norm_maps_agree():
    # The CPU kernel (numba) against the tensor-op path other devices take, and against the
    # definition: padded keys (weight 0) and an all-zero padded query row included.
    rng = torch.Generator().manual_seed(0)
    batch, heads, width, dh = 3, 4, 7, 5
    values = torch.randn(batch, width, heads * dh, generator=rng)
    attn = torch.softmax(torch.randn(batch, heads, width, width, generator=rng) * 2, -1)
    attn[0, :, :, 5:] = 0  # example 0 has 5 tokens
    attn[0, :, 5:] = 0
    dense = torch.randn(heads * dh, heads * dh, generator=rng) / 4
    grams = token_grams(values.reshape(-1, heads * dh), gram_weights(dense), heads).view(batch, width, heads, heads)
    compiled, tensor_ops = layer_norm_map(attn, grams), _layer_norm_map_torch(attn, grams)
    f = (values.view(batch, width, heads, dh).unsqueeze(-2) @ dense.T.view(heads, dh, -1)).squeeze(-2)
    direct = torch.einsum("bhij,bjhd->bijd", attn, f).norm(dim=-1)  # f: [batch, key, head, hidden]
    np.testing.assert_allclose(compiled.numpy(), tensor_ops.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(compiled.numpy(), direct.numpy(), rtol=1e-4, atol=1e-4)
    assert (compiled[0, 5:] == 0).all() and (compiled[0, :, 5:] == 0).all()


def test_the_device_token_grams_equal_the_cpu_chunks_and_the_definition():
    # G[t, h, g] = <f_h(x_t), f_g(x_t)>: the CPU's chunked upper triangle (chunks of 8 of 37
    # tokens, so one is partial) and the device's batched products over every key head (in one
    # chunk, and in chunks of 8 tokens: 37 = 4 x 8 + 5).
    rng = torch.Generator().manual_seed(1)
    heads, dh, tokens = 4, 5, 37
    values = torch.randn(tokens, heads * dh, generator=rng)
    dense = torch.randn(heads * dh, heads * dh, generator=rng) / 4
    f = (values.view(tokens, heads, 1, dh) @ dense.T.view(heads, dh, -1)).squeeze(-2)  # [t, h, hidden]
    definition = torch.einsum("thd,tgd->thg", f, f)
    cpu = token_grams(values, gram_weights(dense), heads, chunk=8)
    device = _token_grams_batched(values, gram_weights(dense), heads)
    chunked = _token_grams_batched(values, gram_weights(dense), heads, chunk_bytes=8 * heads * heads * dh * 4)
    np.testing.assert_allclose(device.numpy(), cpu.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(device.numpy(), definition.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(chunked.numpy(), device.numpy(), rtol=1e-6, atol=1e-6)


@pytest.fixture(scope="module")
def bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=40, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                        intermediate_size=32, max_position_embeddings=64, attn_implementation="eager")
    return BertModel(config).eval()  # float32


def test_recorded_norms_equal_a_direct_computation(bert):
    """||f_h(x_j)|| from the weights and hidden states; sum_h sum_j a f + b_O = the attention output."""
    torch.manual_seed(1)
    ids = torch.randint(5, 40, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0  # a padded example
    outputs = {}
    hooks = [layer.attention.output.dense.register_forward_hook(
        lambda module, args, out, k=k: outputs.__setitem__(k, out)) for k, layer in enumerate(bert.encoder.layer)]
    try:
        with NormRecorder(bert) as recorder, torch.no_grad():
            out = bert(input_ids=ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)
            recorded = recorder.take(dtype=torch.float32)
    finally:
        for hook in hooks:
            hook.remove()
    torch.set_grad_enabled(False)
    try:
        check_layers(bert, out, outputs, recorded)
    finally:
        torch.set_grad_enabled(True)


def check_layers(bert, out, outputs, recorded):
    heads, hidden = 3, 24
    dh = hidden // heads
    for k, layer in enumerate(bert.encoder.layer):
        x = out.hidden_states[k]  # the layer's input
        w_v, b_v = layer.attention.self.value.weight, layer.attention.self.value.bias
        w_o, b_o = layer.attention.output.dense.weight, layer.attention.output.dense.bias
        v = (x @ w_v.T + b_v).reshape(2, 9, heads, dh)
        f = torch.stack([v[:, :, h] @ w_o[:, h * dh:(h + 1) * dh].T for h in range(heads)], dim=2)
        alpha = out.attentions[k]  # [b, h, i, j]
        np.testing.assert_allclose(recorded.value_norms[:, k], f.norm(dim=-1).transpose(1, 2).numpy(),
                                   atol=1e-5, rtol=0)
        mixed = torch.einsum("bhij,bjhd->bijd", alpha, f)  # sum over heads, per (i, j)
        np.testing.assert_allclose(recorded.norm_map[:, k], mixed.norm(dim=-1).numpy(), atol=1e-5, rtol=0)
        # Σ_h Σ_j α^h_ij f_h(x_j) + b_O is the attention output before the residual and LayerNorm.
        np.testing.assert_allclose((mixed.sum(dim=2) + b_o).numpy(), outputs[k].numpy(), atol=1e-5, rtol=0)


def test_recorder_removes_its_hooks(bert):
    block = bert.encoder.layer[0].attention.self
    before = (len(block._forward_hooks), len(block.value._forward_hooks))
    with NormRecorder(bert):
        assert (len(block._forward_hooks), len(block.value._forward_hooks)) == (before[0] + 1, before[1] + 1)
    assert (len(block._forward_hooks), len(block.value._forward_hooks)) == before


def test_model_without_a_layout_is_extracted_without_norms_and_named():
    from transformers import XLNetConfig, XLNetModel

    model = XLNetModel(XLNetConfig(vocab_size=40, d_model=16, n_layer=1, n_head=2, d_inner=32))
    state, recorder, warning = norm_recorder(model)
    assert state == NORMS_UNSUPPORTED and "XLNetModel" in warning and "unsupported" in warning
    assert "'xlnet'" in warning and "mpnet" in warning  # names its type and the known ones
    assert recorder.take().example(0, 3) == {}
    assert norm_recorder(model, wanted=False)[0] == NORMS_OFF


# --- every family: the stored norms against a direct computation --------------------------------
# Module paths written out here, independently of the layout table, per family: the value
# projection and the output projection W_O (ALBERT: one shared layer, called once per layer).
PATHS = {
    "bert": ("encoder.layer.{k}.attention.self.value", "encoder.layer.{k}.attention.output.dense"),
    "roberta": ("encoder.layer.{k}.attention.self.value", "encoder.layer.{k}.attention.output.dense"),
    "roberta-prelayernorm": ("encoder.layer.{k}.attention.self.value",
                             "encoder.layer.{k}.attention.output.dense"),
    "electra": ("encoder.layer.{k}.attention.self.value", "encoder.layer.{k}.attention.output.dense"),
    "distilbert": ("transformer.layer.{k}.attention.v_lin", "transformer.layer.{k}.attention.out_lin"),
    "albert": ("encoder.albert_layer_groups.0.albert_layers.0.attention.value",
               "encoder.albert_layer_groups.0.albert_layers.0.attention.dense"),
    "deberta-v2": ("encoder.layer.{k}.attention.self.value_proj", "encoder.layer.{k}.attention.output.dense"),
    "mpnet": ("encoder.layer.{k}.attention.attn.v", "encoder.layer.{k}.attention.attn.o"),
    "modernbert": ("layers.{k}.attn.Wqkv", "layers.{k}.attn.Wo"),  # W_V: Wqkv's last third of rows
}
FUSED_QKV = {"modernbert"}
HIDDEN, HEADS, LAYERS, VOCAB_SIZE = 24, 3, 3, 40


def family_model(family: str):
    """A tiny random float32 encoder of ``family`` with eager attention (scores not plain QK^T
    for DeBERTa-v2's disentangled attention and MPNet's relative position bias)."""
    import transformers as tf

    sizes = {"vocab_size": VOCAB_SIZE, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
             "num_attention_heads": HEADS, "intermediate_size": 32, "max_position_embeddings": 64}
    configs = {
        "bert": lambda: tf.BertConfig(**sizes),
        "roberta": lambda: tf.RobertaConfig(**{**sizes, "max_position_embeddings": 66}, pad_token_id=1),
        "roberta-prelayernorm": lambda: tf.RobertaPreLayerNormConfig(**{**sizes, "max_position_embeddings": 66},
                                                                    pad_token_id=1),
        "electra": lambda: tf.ElectraConfig(embedding_size=16, **sizes),
        "distilbert": lambda: tf.DistilBertConfig(vocab_size=VOCAB_SIZE, dim=HIDDEN, n_layers=LAYERS,
                                                  n_heads=HEADS, hidden_dim=32, max_position_embeddings=64),
        "albert": lambda: tf.AlbertConfig(embedding_size=16, num_hidden_groups=1, inner_group_num=1, **sizes),
        "deberta-v2": lambda: tf.DebertaV2Config(relative_attention=True, position_buckets=16,
                                                 max_relative_positions=-1, pos_att_type=["p2c", "c2p"],
                                                 position_biased_input=False, type_vocab_size=0, **sizes),
        "mpnet": lambda: tf.MPNetConfig(**sizes),
        # pre-LN, RoPE; layer 1 a sliding window of +-2 tokens; biases on (the hub's model has none)
        "modernbert": lambda: tf.ModernBertConfig(**sizes, local_attention=4, global_attn_every_n_layers=2,
                                                  attention_bias=True, pad_token_id=0, bos_token_id=1,
                                                  eos_token_id=2, cls_token_id=1, sep_token_id=2),
    }
    torch.manual_seed(0)
    config = configs[family]()
    config._attn_implementation = "eager"
    return tf.AutoModel.from_config(config, attn_implementation="eager").float().eval()


@pytest.mark.parametrize("family", list(PATHS))
def test_every_family_records_norms_equal_to_a_direct_computation(family):
    """||f_h(x_j)|| from the weights and the hidden states entering W_V; sum_h sum_j α f + b_O
    equals W_O's output (the attention block before the residual) with the *stored* α."""
    model = family_model(family)
    value_path, output_path = PATHS[family]
    modules = dict(model.named_modules())
    shared = "{k}" not in value_path
    layers = [(modules[value_path.format(k=k)], modules[output_path.format(k=k)]) for k in range(LAYERS)]
    inputs, outputs, hooks = [], [], []
    for value, output in (layers[:1] if shared else layers):  # a shared layer is hooked once
        hooks.append(value.register_forward_pre_hook(lambda m, args: inputs.append(args[0])))
        hooks.append(output.register_forward_hook(lambda m, args, out: outputs.append(out)))
    torch.manual_seed(1)
    ids = torch.randint(5, VOCAB_SIZE, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0  # a padded example
    try:
        with NormRecorder(model) as recorder, torch.no_grad():
            out = model(input_ids=ids, attention_mask=mask, output_attentions=True)
            recorded = recorder.take(dtype=torch.float32)
    finally:
        for hook in hooks:
            hook.remove()
    assert len(out.attentions) == len(inputs) == len(outputs) == LAYERS
    assert recorded.value_norms.shape == (2, LAYERS, HEADS, 9) and recorded.norm_map.shape == (2, LAYERS, 9, 9)
    dh = HIDDEN // HEADS
    with torch.no_grad():
        for k, (value, output) in enumerate(layers):
            rows = slice(2 * HIDDEN, 3 * HIDDEN) if family in FUSED_QKV else slice(None)
            v = (inputs[k] @ value.weight[rows].T + value.bias[rows]).reshape(2, 9, HEADS, dh)
            w_o = output.weight
            f = torch.stack([v[:, :, h] @ w_o[:, h * dh:(h + 1) * dh].T for h in range(HEADS)], dim=2)
            alpha = out.attentions[k]  # what the store holds
            np.testing.assert_allclose(recorded.value_norms[:, k], f.norm(dim=-1).transpose(1, 2).numpy(),
                                       atol=1e-5, rtol=0)
            mixed = torch.einsum("bhij,bjhd->bijd", alpha, f)
            np.testing.assert_allclose(recorded.norm_map[:, k], mixed.norm(dim=-1).numpy(), atol=1e-5, rtol=0)
            np.testing.assert_allclose((mixed.sum(dim=2) + output.bias).numpy(), outputs[k].numpy(),
                                       atol=1e-5, rtol=0)
    if family == "modernbert":  # its sliding-window layer's maps are zero outside the window
        far = (torch.arange(9)[:, None] - torch.arange(9)).abs() > 2
        assert (out.attentions[1][0][:, far] == 0).all() and (out.attentions[0][0][:, far] > 0).all()


def test_recorder_of_a_shared_layer_hooks_it_once_and_records_every_call():
    model = family_model("albert")
    recorder = NormRecorder(model)
    assert len(recorder.blocks) == 1 and recorder.n_layers == LAYERS
    block = recorder.blocks[0].attention
    before = len(block._forward_hooks)
    with recorder, torch.no_grad():
        assert len(block._forward_hooks) == before + 1
        ours = [handle.id for handle in recorder._handles]
        model(input_ids=torch.tensor([[5, 6, 7]]), output_attentions=True)
        assert recorder.take().value_norms.shape[1] == LAYERS
    assert not set(ours) & set(block._forward_hooks)  # (transformers adds a capturing hook of its own)


def single_norms(loaded, sentence):
    from headatlas.encoders.inputs import collate, encode

    enc = encode(loaded.tokenizer, sentence, 0)
    with NormRecorder(loaded.model) as recorder, torch.inference_mode():
        loaded.model(**collate([enc], 0, loaded.model.device), output_attentions=True)
        recorded = recorder.take(dtype=torch.float32)
    return recorded.value_norms[0], recorded.norm_map[0]


def test_store_holds_the_norms_of_each_example_batched(tiny_model, tmp_path):
    from headatlas.encoders.extract import extract

    extract(tiny_model, SENTENCES, tmp_path / "s.h5", max_length=64, batch_size=3, progress=False)
    with Store(tmp_path / "s.h5", norms=True) as store:
        assert store.attrs["norms"] == NORMS_RECORDED and store.attrs["model_class"] == "BertModel"
        examples = {e.id: e for e in store}
    for sentence in SENTENCES:  # padding in a batch must not change them; float16 storage
        value_norms, norm_map = single_norms(tiny_model, sentence)
        stored = examples[sentence.id]
        np.testing.assert_allclose(stored.value_norms, value_norms, rtol=2e-3, atol=1e-3)
        np.testing.assert_allclose(stored.norm_map, norm_map, rtol=2e-3, atol=1e-3)


def test_norm_weighting_by_hand():
    attn = np.array([[[[0.5, 0.25, 0.25], [0.0, 1.0, 0.0], [1 / 3, 1 / 3, 1 / 3]]]])  # [1, 1, 3, 3]
    value_norms = np.array([[[1.0, 2.0, 4.0]]])
    # row 0: (0.5, 0.5, 1) / 2; row 1: (0, 2, 0) / 2; row 2: (1, 2, 4) / 7
    expected = [[0.25, 0.25, 0.5], [0, 1, 0], [1 / 7, 2 / 7, 4 / 7]]
    np.testing.assert_allclose(norm_weighted(attn, value_norms)[0, 0], expected, rtol=1e-6)
    example = Example(0, "e", ["[CLS]", "a", "[SEP]"], np.arange(3), np.zeros(3), np.array([-1, 0, -1]),
                      attn.astype(np.float32), value_norms=value_norms)
    np.testing.assert_allclose(example.weighted("norm").attn[0, 0], expected, rtol=1e-6)
    assert example.weighted("norm").weighting == "norm"
    with pytest.raises(StoreError, match="value norms"):
        Example(0, "e", ["a"], np.arange(1), np.zeros(1), np.zeros(1), np.ones((1, 1, 1, 1))).weighted("norm")


def test_reader_applies_the_weighting(tiny_model, tmp_path):
    from headatlas.encoders.extract import extract

    extract(tiny_model, SENTENCES, tmp_path / "s.h5", max_length=64, progress=False)
    with Store(tmp_path / "s.h5", norms=True) as raw, Store(tmp_path / "s.h5", weighting="norm") as weighted:
        for a, b in zip(raw, weighted):
            assert b.weighting == "norm" and b.norm_map is None
            np.testing.assert_allclose(b.attn, norm_weighted(a.attn, a.value_norms), rtol=1e-6)
            np.testing.assert_allclose(b.attn.sum(-1), 1, atol=1e-5)


def downgrade_to_version_1(path):
    """What a store written before norms existed looks like."""
    with h5py.File(path, "r+") as f:
        for name in ("value_norms", "norm_map"):
            if name in f:
                del f[name]
        for name in ("model_class", "norms"):
            del f.attrs[name]
        f.attrs["schema_version"] = 1


def test_version_1_store_serves_attention_and_names_the_fix_for_norms(tiny_model, tmp_path, monkeypatch):
    from headatlas.analyses import surface  # noqa: F401
    from headatlas.analyses.base import run_analysis
    from headatlas.encoders.extract import extract
    from headatlas.store import schema

    path = tmp_path / "old.h5"
    extract(tiny_model, SENTENCES, path, max_length=64, progress=False)
    downgrade_to_version_1(path)
    monkeypatch.setattr(schema, "READ_UNCHECKED", True)  # schema 1 has no checksums: read on request
    with pytest.warns(UserWarning, match="read as it is"):
        result = run_analysis("entropy", path, progress=False)
    assert result.provenance["schema_version"] == 1 and len(result.table) == 4
    with pytest.raises(StoreError) as err:
        run_analysis("entropy", path, progress=False, weighting="norm")
    assert str(path) in str(err.value) and f"snakemake --cores all --force {path}" in str(err.value)
    assert "schema version 1" in str(err.value)


def test_norms_on_an_unsupported_model_name_its_class(tiny_model, tmp_path, monkeypatch):
    from headatlas.encoders import valuenorms
    from headatlas.analyses import surface  # noqa: F401
    from headatlas.analyses.base import run_analysis
    from headatlas.encoders.extract import extract

    monkeypatch.setattr(valuenorms, "layout_of", lambda model: None)  # as for a model type without a layout
    extract(tiny_model, SENTENCES, tmp_path / "s.h5", max_length=64, progress=False)
    with h5py.File(tmp_path / "s.h5", "r") as f:
        assert f.attrs["norms"] == NORMS_UNSUPPORTED and "value_norms" not in f
    assert len(run_analysis("entropy", tmp_path / "s.h5", progress=False).table) == 4
    with pytest.raises(StoreError, match="norms are unsupported for BertModel"):
        run_analysis("entropy", tmp_path / "s.h5", progress=False, weighting="norm")


def test_extraction_without_norms_says_how_to_get_them(tiny_model, tmp_path):
    from headatlas.encoders.extract import extract

    extract(tiny_model, SENTENCES, tmp_path / "s.h5", max_length=64, progress=False, norms=False)
    with pytest.raises(StoreError, match="exclude norm.*snakemake --cores all --force"):
        Store(tmp_path / "s.h5", norms=True)


def test_writer_checks_the_norms(tmp_path):
    attrs = {"n_layers": 1, "n_heads": 2, "norms": NORMS_RECORDED}
    attn = np.full((1, 2, 2, 2), 0.5)
    with StoreWriter(tmp_path / "s.h5", attrs) as writer:
        with pytest.raises(StoreError, match="value_norms of example a: expected"):
            writer.add(0, "a", ["[CLS]", "[SEP]"], [0, 1], [0, 0], [-1, -1], attn)
        writer.add(0, "a", ["[CLS]", "[SEP]"], [0, 1], [0, 0], [-1, -1], attn,
                   value_norms=np.ones((1, 2, 2)), norm_map=np.ones((1, 2, 2)))
    with StoreWriter(tmp_path / "t.h5", {**attrs, "norms": NORMS_OFF}) as writer:
        with pytest.raises(StoreError, match="records no norms"):
            writer.add(0, "a", ["[CLS]", "[SEP]"], [0, 1], [0, 0], [-1, -1], attn,
                       value_norms=np.ones((1, 2, 2)), norm_map=np.ones((1, 2, 2)))


def test_packed_norms_are_each_example_of_the_padded_batch(tiny_model):
    from headatlas.encoders.inputs import collate, encode

    examples = [encode(tiny_model.tokenizer, s, i) for i, s in enumerate(SENTENCES)]
    lengths = [len(e) for e in examples]
    inputs = collate(examples, 0, tiny_model.model.device)
    with NormRecorder(tiny_model.model) as recorder, torch.inference_mode():
        tiny_model.model(**inputs, output_attentions=True)
        padded = recorder.take()
        tiny_model.model(**inputs, output_attentions=True)
        packed = recorder.take_packed(lengths).arrays()
    each = [padded.example(row, n) for row, n in enumerate(lengths)]
    for name in ("value_norms", "norm_map"):
        expected = np.concatenate([e[name].ravel() for e in each])
        assert packed[name].dtype == np.float16 and packed[name].tobytes() == expected.tobytes(), name
