"""Context mixing measures against blank-out (issue 35): each measure worked out by hand on tiny
inputs, their identities, the runner on every family, and claims that come out either way."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from headatlas.analyses.mixing import (MEASURES, PAIRS, REFERENCES, LayerParts, MixingTotals,
                                       cosine_distances, layer_measures, normalised_parts, readings,
                                       residual_parts, second_norm, spearman_rows)
from headatlas.claims import FAILS, HOLDS, NOT_APPLICABLE
from headatlas.errors import ModelError
from headatlas.interventions.mixing import ORDERS, MixingRunner, SentenceScores, mixing_benchmark
from tests.conftest import FAMILIES, make_tiny_encoder
from tests.unit.test_upos import TAGS, corpus


def worked_parts() -> LayerParts:
    """One head, D = dh = 2, W_O = I, b_O = 0, γ = 1, β = 0, ε = 0; two tokens."""
    return LayerParts(x=np.array([[1.0, 0.0], [0.0, 1.0]]),
                      alpha=np.array([[[1.0, 0.0], [0.25, 0.75]]]),
                      values=np.array([[2.0, 0.0], [0.0, 2.0]]),
                      w_o=np.eye(2), b_o=np.zeros(2), gamma=np.ones(2), beta=np.zeros(2), eps=0.0)


def test_layer_measures_worked_by_hand():
    # mixed parts α_ij v_j: row 0 (2,0), (0,0); row 1 (0.5,0), (0,1.5); T adds x_i on the diagonal:
    # row 0 (3,0), (0,0); row 1 (0.5,0), (0,2.5). z_0 = (3,0): σ 1.5; z_1 = (0.5,2.5): σ 1.
    # g_0: (1,-1), 0; g_1: (0.25,-0.25), (-1.25,1.25); y_0 = (1,-1), y_1 = (-1,1).
    maps = layer_measures(worked_parts())
    np.testing.assert_allclose(maps["attention"], [[1, 0], [0.25, 0.75]])
    np.testing.assert_allclose(maps["norm"], [[1, 0], [0.25, 0.75]])  # ‖(0.5,0)‖ : ‖(0,1.5)‖
    np.testing.assert_allclose(maps["globenc"], [[1, 0], [1 / 6, 5 / 6]])  # 0.25√2 : 1.25√2
    # ALTI: ‖y‖₁ = 2; row 1: ‖y - g_10‖₁ = 2.5 -> 0, ‖y - g_11‖₁ = 0.5 -> 1.5
    np.testing.assert_allclose(maps["alti"], [[1, 0], [0, 1]])


def test_the_parts_sum_to_the_layer_norm_output_and_alti_rows_to_one():
    rng = np.random.default_rng(0)
    n, heads, dh, d = 5, 2, 3, 4
    alpha = rng.random((heads, n, n))
    parts = LayerParts(x=rng.normal(size=(n, d)), alpha=alpha / alpha.sum(-1, keepdims=True),
                       values=rng.normal(size=(n, heads * dh)), w_o=rng.normal(size=(d, heads * dh)),
                       b_o=rng.normal(size=d), gamma=rng.normal(size=d), beta=rng.normal(size=d), eps=1e-5)
    terms = residual_parts(parts)
    g, y = normalised_parts(parts, terms)
    z = terms.sum(axis=1) + parts.b_o
    sigma = np.sqrt(z.var(-1) + parts.eps)
    bias = parts.gamma * (parts.b_o - parts.b_o.mean()) / sigma[:, None] + parts.beta
    np.testing.assert_allclose(g.sum(axis=1) + bias, y, atol=1e-12)
    torch_ln = torch.nn.functional.layer_norm(torch.tensor(z), (d,), torch.tensor(parts.gamma),
                                              torch.tensor(parts.beta), parts.eps).numpy()
    np.testing.assert_allclose(y, torch_ln, atol=1e-10)
    maps = layer_measures(parts)
    for name in ("attention", "norm", "globenc", "alti"):
        np.testing.assert_allclose(maps[name].sum(-1), 1.0, atol=1e-12, err_msg=name)
        assert (maps[name] >= 0).all()
    np.testing.assert_array_equal(maps["head_attention"], parts.alpha)
    f = np.einsum("jhd,ehd->hje", parts.values.reshape(n, heads, dh), parts.w_o.reshape(d, heads, dh))
    np.testing.assert_allclose(maps["head_norm"][1, 2, 3], parts.alpha[1, 2, 3] * np.linalg.norm(f[1, 3]))


def test_second_norm_worked_by_hand():
    parts = worked_parts()
    parts.gamma2, parts.eps2 = np.array([1.0, 2.0, 3.0]), 0.0
    parts.ffn_sum = np.array([[0.0, 2.0, 4.0]])  # var 8/3
    g = np.array([[[1.0, 2.0, 6.0]]])  # mean 3 -> (-2, -1, 3) ⊙ γ' = (-2, -2, 9)
    np.testing.assert_allclose(second_norm(parts, g), [[[-2, -2, 9]]] / np.sqrt(8 / 3))
    parts.ffn_sum = None
    np.testing.assert_array_equal(second_norm(parts, g), g)  # without the FFN's LayerNorm: N_ResLN


def test_value_zeroing_distances_worked_by_hand():
    original = np.array([[1.0, 0.0], [0.0, 1.0]])
    # variant 0 (token 0 zeroed): token 0's output turns orthogonal (1), token 1's stays (0);
    # variant 1: token 0 stays, token 1's output (1,1): 1 - 1/√2
    zeroed = np.array([[[0.0, 1.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]]])
    np.testing.assert_allclose(cosine_distances(zeroed, original), [[1, 0], [0, 1]])
    zeroed[0, 1] = [1.0, 1.0]  # token 1 also moves when token 0 is zeroed: 1 - 1/√2 each
    np.testing.assert_allclose(cosine_distances(zeroed, original), [[1, 0], [0.5, 0.5]])


def test_readings_roll_out_plainly_or_with_half_the_identity():
    a1, a2 = np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([[0.0, 1.0], [1.0, 0.0]])
    layers = {name: np.stack([a1, a2]) for name in ("attention", "norm", "globenc", "alti", "value_zeroing")}
    out = readings(layers)
    np.testing.assert_allclose(out["globenc"][-1], a2 @ a1)  # [[0.5, 0.5], [1, 0]]
    np.testing.assert_allclose(out["globenc"][-1], [[0.5, 0.5], [1, 0]])
    half = lambda a: 0.5 * a + 0.5 * np.eye(2)  # noqa: E731
    np.testing.assert_allclose(out["attention_rollout"][-1], half(a2) @ half(a1))
    np.testing.assert_array_equal(out["attention"][-1], a2)  # read at the last layer alone
    assert set(out) == set(MEASURES) - {"grad_input"}


def test_spearman_rows():
    from scipy.stats import spearmanr

    np.testing.assert_allclose(spearman_rows(np.array([[1.0, 2, 3]]), np.array([[3.0, 2, 1]])), [-1])
    assert spearman_rows(np.array([1.0, 1, 1]), np.array([1.0, 2, 3])) == 0  # constant measure
    assert np.isnan(spearman_rows(np.array([1.0, 2, 3]), np.array([2.0, 2, 2])))  # nothing to agree with
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4, 9)), rng.normal(size=(4, 9))
    a[0, :3] = 0.5  # ties
    expected = [spearmanr(x, y).statistic for x, y in zip(a, b)]
    np.testing.assert_allclose(spearman_rows(a, b), expected)


# --- the runner on tiny encoders ----------------------------------------------------------------

def tiny_tagger(folder, family: str = "bert-uncased", labels: int = 4):
    import transformers as tf

    make_tiny_encoder(folder, family, layers=2, heads=2)
    config = tf.AutoConfig.from_pretrained(folder)
    config.num_labels = labels
    torch.manual_seed(0)
    model = tf.AutoModelForTokenClassification.from_pretrained(folder, config=config,
                                                                attn_implementation="eager").eval()
    return model, tf.AutoTokenizer.from_pretrained(folder)


def sentence_of(tokenizer):
    ids = tokenizer("the cat sat on the mat")["input_ids"]
    special = np.zeros(len(ids), dtype=bool)
    special[[0, -1]] = True
    return ids, special


POST_LN = [family for family in FAMILIES if family != "modernbert"]


@pytest.mark.parametrize("family", POST_LN)
def test_every_family_decomposes_and_scores(tmp_path, family):
    model, tokenizer = tiny_tagger(tmp_path, family)
    runner = MixingRunner(model, tokenizer, deletion_steps=2)
    ids, special = sentence_of(tokenizer)
    targets = np.flatnonzero(~special)
    try:  # the runner checks each layer's rebuilt LayerNorm input against the model's
        scores = runner.sentence(ids, targets, special, np.random.default_rng(0))
    finally:
        runner.close()
    assert scores.final.shape == (len(REFERENCES), len(MEASURES), len(targets))
    assert scores.layers.shape == scores.rolled.shape == (2, 5, 2, len(targets))
    assert scores.deletion.shape == (len(ORDERS), 2, len(targets))
    assert scores.heads.shape == (2, 2, 2, len(targets))
    scored = ~np.isnan(scores.final)
    assert scored.any() and (np.abs(scores.final[scored]) <= 1 + 1e-12).all()
    assert not runner.model._forward_hooks and not runner.blocks[0].value._forward_hooks  # closed


def test_a_pre_layernorm_family_is_refused_with_its_reason(tmp_path):
    model, tokenizer = tiny_tagger(tmp_path, "modernbert")
    with pytest.raises(ModelError, match="post-attention and post-FFN LayerNorms.*ModernBertForTokenClassification"):
        MixingRunner(model, tokenizer)


def test_a_wrong_layout_is_refused(tmp_path):
    model, tokenizer = tiny_tagger(tmp_path)
    runner = MixingRunner(model, tokenizer)
    ids, _ = sentence_of(tokenizer)
    # a layout naming the value projection where the output projection is (the same shape here)
    runner.blocks = [dataclasses.replace(b, output=b.value) for b in runner.blocks]
    try:
        with pytest.raises(ModelError, match="layer 1: the attention output rebuilt"):
            runner._original(torch.tensor(ids))
    finally:
        runner.close()


def test_value_zeroing_of_a_token_no_head_attends_to_is_zero(tmp_path):
    model, tokenizer = tiny_tagger(tmp_path)
    runner = MixingRunner(model, tokenizer)
    ids, _ = sentence_of(tokenizer)
    ignored = 3
    plain = runner._inputs

    def hidden_from_all(ids):  # every query's attention on `ignored` is 0
        inputs = plain(ids)
        inputs["attention_mask"][:, ignored] = 0
        return inputs

    runner._inputs = hidden_from_all
    try:
        layered, _, outputs = runner._original(torch.tensor(ids))
        assert np.abs(layered["attention"][:, :, ignored]).max() == 0
        maps = runner._value_zeroing(torch.tensor(ids), outputs)
    finally:
        runner.close()
    assert np.abs(maps[:, :, ignored]).max() < 1e-6  # float32 rounding of a batch; others ~0.1-1
    others = np.delete(np.arange(len(ids)), ignored)
    assert (maps[:, :, others].sum(-1) > 0.99).all()


class FakeProbs:
    """A runner whose tagger gives every class at position p of input ids the probability
    ``ids[p] / 100 + sum(ids) / 10_000``: blank-out's effects are then known by hand."""

    def __init__(self, steps=2):
        self.runner = MixingRunner.__new__(MixingRunner)
        self.runner.mask_id, self.runner.steps = 1, steps
        self.runner._log_probs = lambda ids: torch.log(self.probs(ids))

    @staticmethod
    def probs(ids):
        ids = ids.double()
        p = ids / 100 + ids.sum(-1, keepdim=True) / 10_000
        return p[..., None].expand(*p.shape, 3)


def test_blank_out_worked_by_hand():
    fake = FakeProbs()
    ids = torch.tensor([2, 10, 20, 30, 3])
    special = np.array([True, False, False, False, True])
    targets, tags = np.array([1, 3]), torch.zeros(5, dtype=torch.long)
    base = np.log(fake.probs(ids[None])[0, :, 0].numpy())  # log p: 0.1065 (id 10), 0.3065 (id 30)
    mask, remove = fake.runner._blank_out(ids, targets, tags, base, special)
    # masking j (id -> 1) lowers every other position's p by (ids[j] - 1) / 10,000; the effect is
    # the fall in log p
    expected = np.full((2, 5), np.nan)
    expected[0, [2, 3]] = np.log(0.1065 / np.array([0.1046, 0.1036]))
    expected[1, [1, 2]] = np.log(0.3065 / np.array([0.3056, 0.3046]))
    np.testing.assert_allclose(mask, expected)
    # removing j: the target keeps its own id wherever it moves, the sum loses ids[j]
    expected[0, [2, 3]] = np.log(0.1065 / np.array([0.1045, 0.1035]))
    expected[1, [1, 2]] = np.log(0.3065 / np.array([0.3055, 0.3045]))
    np.testing.assert_allclose(remove, expected)


def test_deletion_masks_each_orders_top_tokens():
    fake = FakeProbs(steps=2)
    ids = torch.tensor([2, 10, 20, 30, 3])
    targets, tags = np.array([1]), torch.zeros(5, dtype=torch.long)
    base = np.log(fake.probs(ids[None])[0, :, 0].numpy())
    context = [np.array([2, 3])]
    by_position = {o: np.array([[0.0, 0, 1, 2, 0]]) for o in ORDERS}  # token 3 first, then 2
    drops = fake.runner._deletion(ids, targets, tags, base, context, by_position, np.random.default_rng(0))
    for o, order in enumerate(ORDERS):
        if order != "random":
            np.testing.assert_allclose(drops[o, :, 0], [29e-4, 48e-4])  # 30 - 1, then + 20 - 1
    assert sorted(drops[ORDERS.index("random"), :, 0].round(6)) in ([0.0019, 0.0048], [0.0029, 0.0048])


# --- totals, tables, claims -----------------------------------------------------------------------

def totals_where(rho: dict[str, float], n_sentences: int = 40, noise: float = 0.05, seed: int = 0):
    """Sentence scores whose measures agree with the reference by ``rho`` (others 0.2), noisy."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_sentences):
        targets = 5
        final = np.stack([np.stack([rho.get(m, 0.2) + noise * rng.normal(size=targets) for m in MEASURES])
                          for _ in REFERENCES])
        layers = np.zeros((len(REFERENCES), 5, 2, targets))
        heads = np.zeros((2, 2, 3, targets))  # α and ‖αf‖, 2 layers x 3 heads
        heads[0, 1, 2] = rho.get("head", 0.0)  # head 2-3's α
        out.append(SentenceScores(final, layers, layers.copy(), np.zeros((len(ORDERS), 2, targets)), heads))
    return MixingTotals.of(out)


def verdicts(totals) -> dict[str, str]:
    result = totals.result(ORDERS, n_layers=2, n_boot=200)
    return {c.id: c.verdict for c in result.claims}


def test_claims_hold_fail_or_stay_undecided():
    best = verdicts(totals_where({"value_zeroing": 0.6, "alti": 0.5, "norm": 0.4}))
    assert best == {"mohebbi.mixing.value_zeroing_best": HOLDS, "ferrando.mixing.alti_beats_rollout": HOLDS,
                    "kobayashi.mixing.norm_beats_attention": HOLDS}
    worst = verdicts(totals_where({"value_zeroing": 0.1, "alti": 0.1, "attention_rollout": 0.4,
                                   "attention": 0.5}))
    assert set(worst.values()) == {FAILS}
    tied = verdicts(totals_where({}, noise=0.5))
    assert tied["ferrando.mixing.alti_beats_rollout"] == NOT_APPLICABLE


def test_tables_of_the_totals():
    totals = totals_where({"value_zeroing": 0.6}, n_sentences=10, noise=0.0)
    result = totals.result(ORDERS, n_layers=2, n_boot=50)
    measures = result.tables["measures"]
    assert len(measures) == len(REFERENCES) * len(MEASURES)
    vz = measures[(measures.reference == "mask") & (measures.measure == "value_zeroing")].iloc[0]
    assert (vz.rho, vz["rank"], vz.targets) == (pytest.approx(0.6), 1, 50)
    assert len(result.tables["comparisons"]) == len(REFERENCES) * len(PAIRS)
    assert len(result.tables["layers"]) == len(REFERENCES) * 2 * 5 * 2
    assert set(result.tables["aopc"].order) == set(ORDERS)
    heads = result.tables["heads"]
    assert len(heads) == 6 and list(heads.columns[:4]) == ["layer", "head", "rho_attention", "rho_attention_low"]


def test_the_heads_table_reads_each_head_in_place():
    result = totals_where({"head": 0.7}, n_sentences=5, noise=0.0).result(ORDERS, n_layers=2, n_boot=20)
    heads = result.tables["heads"].set_index(["layer", "head"])
    assert heads.loc[(2, 3), "rho_attention"] == pytest.approx(0.7)
    assert (heads.drop((2, 3))["rho_attention"] == 0).all() and (heads["rho_norm"] == 0).all()


def test_benchmark_on_a_tiny_tagger(tmp_path):
    import transformers as tf

    from headatlas.tasks.upos import label_map

    sentences = corpus(per_doc=6)
    labels = label_map(sentences)
    make_tiny_encoder(tmp_path, "bert-uncased", layers=2, heads=2)
    config = tf.AutoConfig.from_pretrained(tmp_path)
    config.num_labels, config.label2id = len(labels), labels
    config.id2label = {i: t for t, i in labels.items()}
    torch.manual_seed(0)
    tf.AutoModelForTokenClassification.from_config(config).save_pretrained(tmp_path)
    result = mixing_benchmark(str(tmp_path), None, sentences, name="tiny_upos", corpus="toy",
                              max_sentences=4, deletion_steps=2, n_boot=50, progress=False)
    assert result.attrs["n_sentences"] == 4 and set(TAGS.values()) >= set(labels)
    assert len(result.claims) == 3 and "4 toy test sentences" in result.caption
    assert np.isfinite(result.tables["measures"].rho).all()


def test_value_zeroing_equals_one_plain_forward_per_token_and_layer(tmp_path):
    """The batched, early-stopped value zeroing against its definition computed the slow way: one
    whole forward per (layer, token) with that token's value vectors zeroed at that layer."""
    from headatlas.analyses.mixing import cosine_distances

    model, tokenizer = tiny_tagger(tmp_path)
    # in float64: 1 - cos of near-equal outputs, rows normalised, magnifies float32's rounding,
    # which differs between batch shapes on some CPUs (1.4e-5 seen on an AVX2 machine)
    model.double()
    ids, _ = sentence_of(tokenizer)
    runner = MixingRunner(model, tokenizer, batch_size=3)  # several batches per layer
    try:
        _, _, outputs = runner._original(torch.tensor(ids))
        batched = runner._value_zeroing(torch.tensor(ids), outputs)
    finally:
        runner.close()
    n, values = len(ids), [layer.attention.self.value for layer in model.bert.encoder.layer]
    with torch.no_grad():
        plain = model(torch.tensor([ids]), output_hidden_states=True).hidden_states
        for layer, value in enumerate(values):
            zeroed = []
            for j in range(n):
                def zero(module, args, output, j=j):
                    output = output.clone()
                    output[:, j] = 0
                    return output
                hook = value.register_forward_hook(zero)
                zeroed.append(model(torch.tensor([ids]), output_hidden_states=True).hidden_states[layer + 1][0])
                hook.remove()
            expected = cosine_distances(torch.stack(zeroed).double().numpy(), plain[layer + 1][0].double().numpy())
            np.testing.assert_allclose(batched[layer], expected, atol=1e-9)


def test_gradient_times_input_against_finite_differences(tmp_path):
    """‖∇_{e_j} log p(ŷ_t) ⊙ e_j‖ from the runner's one backward pass per batch of targets, against
    central differences of log p(ŷ_t) along each embedding coordinate (float64)."""
    model, tokenizer = tiny_tagger(tmp_path)
    model = model.double()
    runner = MixingRunner(model, tokenizer, batch_size=2)  # two batches of targets
    ids, special = sentence_of(tokenizer)
    targets = np.array([1, 2, 4])
    try:
        _, log_probs, _ = runner._original(torch.tensor(ids))
        tags = log_probs.argmax(-1)
        ours = runner._grad_input(torch.tensor(ids), targets, tags)
    finally:
        runner.close()
    embedded = model.get_input_embeddings()(torch.tensor([ids])).detach()

    def log_p(e, t):
        with torch.no_grad():
            return torch.log_softmax(model(inputs_embeds=e).logits[0, t], -1)[tags[t]].item()

    h = 1e-6
    for row, t in enumerate(targets):
        grad = torch.zeros_like(embedded)
        for j in range(len(ids)):
            for d in range(embedded.shape[-1]):
                step = torch.zeros_like(embedded)
                step[0, j, d] = h
                grad[0, j, d] = (log_p(embedded + step, t) - log_p(embedded - step, t)) / (2 * h)
        np.testing.assert_allclose(ours[row], (grad * embedded)[0].norm(dim=-1).numpy(), rtol=1e-5, atol=1e-9)


def test_log_softmax_is_torchs_and_keeps_a_confident_class():
    from headatlas.interventions.mixing import log_softmax

    logits = torch.randn(3, 4, 5, dtype=torch.float64)
    torch.testing.assert_close(log_softmax(logits), torch.log_softmax(logits, dim=-1))
    sure = torch.tensor([60.0, 0.0, 0.0], dtype=torch.float64)  # log p_0 = -log(1 + 2 e^-60)
    assert torch.log_softmax(sure, -1)[0] == 0 and log_softmax(sure)[0] == pytest.approx(-2 * np.exp(-60))


def test_a_confident_tagger_is_still_scored(tmp_path):
    """A tagger so sure that p(ŷ) is 1.0 to the last bit: blank-out reads the fall in log p, which
    still moves (in p every effect would be 0 and no target scored)."""
    model, tokenizer = tiny_tagger(tmp_path)
    with torch.no_grad():
        model.classifier.weight *= 500
    runner = MixingRunner(model, tokenizer)
    ids, special = sentence_of(tokenizer)
    targets = np.flatnonzero(~special)
    try:
        _, log_probs, _ = runner._original(torch.tensor(ids))
        tags = log_probs.argmax(-1)
        base = log_probs[torch.arange(len(ids)), tags].numpy()
        mask, _ = runner._blank_out(torch.tensor(ids), targets, tags, base, special)
    finally:
        runner.close()
    saturated = np.exp(base[targets]) == 1.0
    assert saturated.any()  # p is 1.0 for these targets, whatever is masked ...
    assert (np.nanmax(np.abs(mask[saturated]), axis=1) > 0).all()  # ... log p is not
