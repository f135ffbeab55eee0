"""Head-type ablation: the attention function, the masks, the grid (tasks: test_upos.py, test_squad.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from headatlas.interventions.ablation import (IMPLEMENTATION, KEEP, NO_INTER, NO_INTRA, PRUNE, UNIFORM,
                                Ablation, Variant, ablate, head_actions, read_head_types, run_grid,
                                same_sentence, variants)
from headatlas.corpora.records import Sentence
from headatlas.errors import HeadAtlasError
from headatlas.tasks.upos import label_map, pack_documents
from tests.conftest import make_tiny_encoder, make_tiny_model
from tests.unit.test_claims import by_id

# [CLS] a b c [SEP]: "a b" is sentence 0, "c" sentence 1; specials are in no sentence.
TWO_SENTENCES = torch.tensor([[-1, 0, 0, 1, -1]])
SAME = torch.tensor([[1, 0, 0, 0, 0],
                     [0, 1, 1, 0, 0],
                     [0, 1, 1, 0, 0],
                     [0, 0, 0, 1, 0],
                     [0, 0, 0, 0, 1]], dtype=torch.bool)
# Heads of the tiny 2 x 2 model, 1-based: 1-1 diagonal, 1-2 dense, 2-1 dense, 2-2 vertical.
TYPES = np.array([["diagonal", "dense"], ["dense", "vertical"]], dtype=object)


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    """The tiny random BertModel loaded with the ablation attention (and the same with eager)."""
    from transformers import AutoModel

    from headatlas.interventions.ablation import register

    folder = make_tiny_model(tmp_path_factory.mktemp("tiny-ablate"), layers=2, heads=2)
    register()
    ablated = AutoModel.from_pretrained(folder, attn_implementation=IMPLEMENTATION).eval()
    eager = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    return ablated, eager


def inputs():
    """Two inputs, the second padded: lengths 6 and 4."""
    ids = torch.tensor([[2, 9, 11, 13, 5, 3], [2, 16, 17, 3, 0, 0]])
    mask = (torch.arange(6) < torch.tensor([[6], [4]])).long()
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def per_head_context(model, layer: int, **kwargs) -> torch.Tensor:
    """``[batch, T, heads, d]``: the context vectors of every head of ``layer`` (0-based)."""
    seen = {}
    module = model.encoder.layer[layer].attention.self
    hook = module.register_forward_hook(lambda mod, args, out: seen.update(out=out[0]))
    with torch.no_grad():
        model(**inputs(), **kwargs)
    hook.remove()
    heads = model.config.num_attention_heads
    return seen["out"].view(*seen["out"].shape[:2], heads, -1)


def test_same_sentence_matches_hand_written_mask():
    assert torch.equal(same_sentence(TWO_SENTENCES)[0], SAME)


def test_intra_inter_removal_by_hand():
    weights = torch.full((1, 2, 5, 5), 0.2)  # uniform rows over the 5 tokens
    actions = torch.tensor([NO_INTRA, NO_INTER])
    real = torch.ones(1, 5, dtype=torch.bool)
    out = ablate(weights, actions, real, same_sentence(TWO_SENTENCES))
    # Not renormalised: head 0 keeps 0.2 where tokens are in different sentences, head 1 the rest.
    assert torch.allclose(out[0, 0], 0.2 * (~SAME).float())
    assert torch.allclose(out[0, 1], 0.2 * SAME.float())
    norm = ablate(weights, actions, real, same_sentence(TWO_SENTENCES), renormalise=True)
    # Renormalised: row "a" of head 0 keeps [CLS], c, [SEP] -> 1/3 each; row [CLS] keeps 4 -> 1/4.
    assert torch.allclose(norm[0, 0, 1], torch.tensor([1 / 3, 0, 0, 1 / 3, 1 / 3]))
    assert torch.allclose(norm[0, 0, 0], torch.tensor([0, 0.25, 0.25, 0.25, 0.25]))
    # Head 1: row "a" keeps a, b -> 1/2 each; [CLS] keeps only itself -> 1.
    assert torch.allclose(norm[0, 1, 1], torch.tensor([0, 0.5, 0.5, 0, 0]))
    assert torch.allclose(norm[0, 1, 0], torch.tensor([1.0, 0, 0, 0, 0]))


def test_prune_and_uniform_by_hand():
    weights = torch.tensor([[0.5, 0.3, 0.2, 0.0]]).expand(1, 3, 4, 4)  # last key is padding
    real = torch.tensor([[True, True, True, False]])
    out = ablate(weights, torch.tensor([KEEP, PRUNE, UNIFORM]), real)
    assert torch.equal(out[0, 0], weights[0, 0])
    assert torch.equal(out[0, 1], torch.zeros(4, 4))
    assert torch.allclose(out[0, 2], torch.tensor([1 / 3, 1 / 3, 1 / 3, 0]).expand(4, 4))
    with pytest.raises(ValueError, match="sentence ids"):
        ablate(weights, torch.tensor([KEEP, NO_INTRA, KEEP]), real)


def test_packed_example_keeps_sentence_boundaries():
    from transformers import BertTokenizer

    from tests.conftest import VOCAB

    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(VOCAB)})
    doc = [Sentence("s1", ["the", "cat"], doc="d", upos=["DET", "NOUN"]),
           Sentence("s2", ["it", "runs"], doc="d", upos=["PRON", "VERB"])]
    (example,) = pack_documents(tokenizer, doc, label_map(doc), max_length=16)
    # [CLS] the cat it run ##s [SEP]: "runs" has two pieces, both in sentence 1.
    assert example.sentence_ids == [-1, 0, 0, 1, 1, 1, -1]
    expected = torch.tensor([[1, 0, 0, 0, 0, 0, 0],
                             [0, 1, 1, 0, 0, 0, 0],
                             [0, 1, 1, 0, 0, 0, 0],
                             [0, 0, 0, 1, 1, 1, 0],
                             [0, 0, 0, 1, 1, 1, 0],
                             [0, 0, 0, 1, 1, 1, 0],
                             [0, 0, 0, 0, 0, 0, 1]], dtype=torch.bool)
    assert torch.equal(same_sentence(torch.tensor([example.sentence_ids]))[0], expected)


def test_keep_everything_is_eager_attention(encoder):
    ablated, eager = encoder
    keep = Ablation(torch.full((2, 2), KEEP))
    with torch.no_grad():
        a = ablated(**inputs(), headatlas_ablation=keep).last_hidden_state
        b = eager(**inputs()).last_hidden_state
        c = ablated(**inputs()).last_hidden_state  # no plan at all
    assert torch.allclose(a, b, atol=1e-6) and torch.allclose(c, b, atol=1e-6)


def test_uniform_everywhere_equals_hand_computed_forward(encoder):
    ablated, _ = encoder
    x_in = inputs()
    with torch.no_grad():
        out = ablated(**x_in, headatlas_ablation=Ablation(torch.full((2, 2), UNIFORM)))
        real = x_in["attention_mask"].float()[:, :, None]  # [batch, T, 1]
        x = ablated.embeddings(input_ids=x_in["input_ids"], token_type_ids=x_in["token_type_ids"])
        for layer in ablated.encoder.layer:
            # Uniform weights 1/L over the L real tokens: every query's context, in every head,
            # is the mean of the value vectors of the real tokens (padding excluded).
            values = layer.attention.self.value(x)
            context = ((values * real).sum(1, keepdim=True) / real.sum(1, keepdim=True)).expand_as(x)
            att = layer.attention.output.LayerNorm(layer.attention.output.dense(context) + x)
            hidden = torch.nn.functional.gelu(layer.intermediate.dense(att))
            x = layer.output.LayerNorm(layer.output.dense(hidden) + att)
    assert torch.allclose(out.last_hidden_state, x, atol=1e-5)


def test_modernbert_uniform_spreads_over_each_querys_window(tmp_path):
    """A sliding-window layer's head sees +-4 tokens (the tiny ModernBERT's window): uniform
    weights give each query the mean of the values in its window (padding excluded), and
    keeping every head is eager attention, full and sliding layers alike."""
    from transformers import AutoModel

    from headatlas.interventions.ablation import register

    folder = make_tiny_encoder(tmp_path / "modernbert", "modernbert", layers=2, heads=2)
    register()
    ablated = AutoModel.from_pretrained(folder, attn_implementation=IMPLEMENTATION).eval()
    eager = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    ids = torch.tensor([[1] + list(range(5, 16)) + [2], [1] + list(range(5, 12)) + [2, 3, 3, 3, 3]])
    mask = (ids != 3).long()  # 13 and 9 real tokens (3 = [PAD])
    with torch.no_grad():
        kept = ablated(ids, attention_mask=mask, headatlas_ablation=Ablation(torch.full((2, 2), KEEP)))
        plain = eager(ids, attention_mask=mask)
        assert torch.allclose(kept.last_hidden_state, plain.last_hidden_state, atol=1e-6)
        actions = torch.tensor([[KEEP, KEEP], [UNIFORM, UNIFORM]])  # layer 2 slides
        seen = {}
        attn = ablated.layers[1].attn
        width = attn.Wo.in_features  # Wqkv's outputs: queries, keys, values
        hooks = [attn.Wqkv.register_forward_hook(lambda m, a, out: seen.update(values=out[..., 2 * width:])),
                 attn.Wo.register_forward_pre_hook(lambda m, a: seen.update(context=a[0]))]
        ablated(ids, attention_mask=mask, headatlas_ablation=Ablation(actions))
        for hook in hooks:
            hook.remove()
    positions = torch.arange(13)
    window = (positions[:, None] - positions).abs() <= 4
    for row, n in enumerate((13, 9)):
        allowed = (window & (positions < n))[:n].float()  # [query, key]
        expected = allowed @ seen["values"][row] / allowed.sum(-1, keepdim=True)
        assert torch.allclose(seen["context"][row, :n], expected, atol=1e-6)


def test_pruning_a_type_leaves_other_heads_unchanged(encoder, tmp_path):
    ablated, _ = encoder
    csv = tmp_path / "types.csv"
    pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2],
                  "type": ["diagonal", "dense", "dense", "vertical"]}).to_csv(csv, index=False)
    types = read_head_types(csv, 2, 2)
    actions = head_actions(types, Variant("prune dense", "prune one", (("dense", "prune"),)))
    assert actions.tolist() == [[KEEP, PRUNE], [PRUNE, KEEP]]
    before = per_head_context(ablated, 0)
    after = per_head_context(ablated, 0, headatlas_ablation=Ablation(actions))
    # Layer 1 gets the same input either way: head 1-1 (diagonal) is untouched, 1-2 is zero.
    assert torch.equal(after[:, :, 0], before[:, :, 0])
    assert torch.equal(after[:, :, 1], torch.zeros_like(after[:, :, 1]))
    assert not torch.equal(before[:, :, 1], after[:, :, 1])
    # Layer 2: the pruned dense head 2-1 outputs zeros as well.
    assert per_head_context(ablated, 1, headatlas_ablation=Ablation(actions))[:, :, 0].abs().max() == 0


def test_read_head_types_errors(tmp_path):
    csv = tmp_path / "t.csv"
    pd.DataFrame({"layer": [1, 1, 2], "head": [1, 2, 1], "type": ["dense"] * 3}).to_csv(csv, index=False)
    with pytest.raises(HeadAtlasError, match="2 x 2 heads once"):
        read_head_types(csv, 2, 2)
    pd.DataFrame({"layer": [1], "head": [1], "type": ["c1"]}).to_csv(csv, index=False)
    with pytest.raises(HeadAtlasError, match="unknown head type"):
        read_head_types(csv, 1, 1)
    pd.DataFrame({"layer": [1], "kind": ["dense"]}).to_csv(csv, index=False)
    with pytest.raises(HeadAtlasError, match="lacks column"):
        read_head_types(csv, 1, 1)


def test_grid_has_the_papers_rows():
    from headatlas.analyses.headtypes import NO_TYPES

    grid = variants()
    by_id = {v.paper_id: v for v in grid if v.paper_id}
    assert sorted(by_id, key=int) == [str(i) for i in range(1, 20)]
    assert by_id["3"].action("diagonal") == "prune" and by_id["3"].action("dense") == "keep"
    assert by_id["6"].action("diagonal") == "keep" and by_id["6"].action("vertical") == "prune"
    assert by_id["9"].action("diagonal") == "uniform"
    # 16: only diagonal keeps intra-sentence attention; 19: only dense&vertical keeps inter.
    assert [by_id["16"].action(t) for t in ("dense", "diagonal")] == ["no_intra", "keep"]
    assert by_id["19"].action("vertical") == "no_inter" and by_id["19"].action("dense&vertical") == "keep"
    assert grid[0].name == "unablated" and len(grid) == 34
    # The floors: every head pruned, uniform, without inter-sentence attention (every type: every head).
    floors = {v.name: v for v in grid if v.group == "floor"}
    assert {v.action(t) for t in ("dense", "diagonal", "dense&vertical", "vertical")
            for v in [floors["prune all"]]} == {"prune"}
    assert {floors["uniform all"].action(t) for t in ("dense", "vertical")} == {"uniform"}
    assert {floors["no inter all"].action(t) for t in ("dense", "diagonal", NO_TYPES)} == {"no_inter"}


def test_run_grid_scores_each_distinct_plan_once():
    calls = []

    def evaluate(actions):  # a fake task: score = 100 - 10 per changed head
        calls.append(actions)
        return {"accuracy": 100.0 - 10 * int((actions != KEEP).sum())}

    types = np.array([["dense", "dense"], ["diagonal", "diagonal"]], dtype=object)  # no vertical heads
    table = run_grid(evaluate, types, "accuracy", progress=False)
    row = table.set_index("variant")
    assert row.loc["prune dense", "accuracy"] == 80 and row.loc["prune vertical", "accuracy"] == 100
    assert row.loc["prune dense", "accuracy_pct_of_unablated"] == 80
    # Floors: all 4 heads changed -> 60. Attention gives 100 - 60 = 40 points; pruning the two
    # dense heads keeps 80 - 60 = 20 of them: 50%, where the share of the unablated score says 80%.
    assert row.loc["prune all", "accuracy"] == 60 and row.loc["uniform all", "accuracy"] == 60
    assert row.loc["prune dense", "accuracy_pct_of_attention"] == pytest.approx(50.0)
    assert row.loc["prune dense", "accuracy_pct_of_attention_vs_uniform"] == pytest.approx(50.0)
    assert row.loc["unablated", "accuracy_pct_of_attention"] == 100
    assert row.loc["prune all", "accuracy_pct_of_attention"] == 0
    assert row.loc["prune diagonal", "paper_f1"] == 7.55 and np.isnan(row.loc["prune dense", "paper_f1"])
    assert len(calls) < len(table)  # "prune vertical" is the unablated plan: not re-scored
    broken = run_grid(lambda actions: {"f1": 0.0}, types, "f1", grid=variants()[:3], progress=False)
    assert broken["f1_pct_of_unablated"].isna().all()  # no share of a zero score


def test_run_grid_keeps_per_unit_scores_out_of_the_table():
    from headatlas.interventions.grid import unit_arrays
    from headatlas.interventions.ablation import saved_units

    def evaluate(actions):  # two sentences of 2 words; each changed head costs sentence 1 a word
        changed = int((actions != KEEP).sum())
        return {"accuracy": 100.0 - 25 * min(changed, 2), "units": (np.array([2.0 - min(changed, 2), 2.0]),
                                                                     np.array([2.0, 2.0]))}

    types = np.array([["dense", "vertical"]], dtype=object)
    units: dict = {}
    table = run_grid(evaluate, types, "accuracy", progress=False, units=units)
    assert "units" not in table.columns and list(units) == list(table["variant"])
    assert units["prune dense"][0].tolist() == [1.0, 2.0] and units["prune all"][0].tolist() == [0.0, 2.0]
    arrays = unit_arrays(units)
    assert arrays["unit_correct"].shape == (len(table), 2) and arrays["unit_total"].tolist() == [2.0, 2.0]
    again = saved_units(arrays, {"unit_variants": list(units)})
    assert again["prune dense"][0].tolist() == [1.0, 2.0] and unit_arrays({}) == {}
    with pytest.raises(ValueError, match="different units"):
        unit_arrays({"a": ([1.0], [2.0]), "b": ([1.0], [3.0])})


def test_paper_claims_of_the_ablation_grid(tmp_path):
    from headatlas.interventions.ablation import paper_claims

    # Unablated 90, all heads pruned 10: attention gives 80 points. Prune diagonal 81 (71 of 80:
    # 88.75%, not below 50%); prune vertical 89.1 (79.1 of 80: 98.9% >= 98.5%); uniform dense 80.1
    # (70.1 of 80: 87.6% < 90%); diagonal: no intra changes no head (no diagonal heads).
    table = pd.DataFrame({
        "paper_id": ["1", "", "", "3", "5", "8", "12", ""],
        "variant": ["unablated", "prune all", "uniform all", "prune diagonal", "prune vertical",
                    "uniform dense", "diagonal: no intra", "keep only dense"],
        "heads_changed": [0, 72, 72, 5, 23, 15, 0, 57],
        "accuracy": [90.0, 10.0, 30.0, 81.0, 89.1, 80.1, 90.0, 10.0],
    })
    table["accuracy_pct_of_unablated"] = 100 * table["accuracy"] / 90.0
    table["paper_f1_pct_of_unablated"] = float("nan")
    path = tmp_path / "ablation.csv"
    table.to_csv(path, index=False)  # read back as the rule does: ids become floats, "" NaN
    c = by_id(paper_claims(pd.read_csv(path)))
    assert list(c.index) == ["guan.ablation.prune_diagonal", "guan.ablation.prune_vertical",
                             "guan.ablation.uniform_dense", "guan.ablation.diagonal_no_intra"]
    prune = c.loc["guan.ablation.prune_diagonal"]
    # Above the uniform floor 30: 51 of 60 points, 85.0%.
    assert prune["ours"] == ("accuracy 81.00: 88.8% of what attention gives (unablated 90.00, all heads "
                             "pruned 10.00; 85.0% above uniform attention, 30.00), 90.0% of the "
                             "unablated score, 5 heads changed")
    assert prune["verdict"] == "does not hold" and "(row 3;" in prune["paper"]
    # The rule names every way a claim is not applicable, the registered tasks' untrained floors too.
    assert prune["rule"].endswith(
        "(not applicable if no head has that type, if that gap is below 1 point: attention contributes "
        "nothing measurable, or if the unablated SQuAD model scores below EM 10 or F1 20: untrained)")
    assert c.loc["guan.ablation.prune_vertical", "verdict"] == "holds"
    assert c.loc["guan.ablation.uniform_dense", "verdict"] == "does not hold"
    assert c.loc["guan.ablation.diagonal_no_intra", "verdict"] == "not applicable"


def test_an_untrained_squad_model_makes_every_ablation_claim_not_applicable(tmp_path):
    """A random QA model: unablated EM 0.0 / F1 3.0. Shares of noise judged the old way: pruning
    the vertical heads "costs little" (F1 3.0 of 3.0, 100%) and pruning the diagonal heads "makes
    the model inoperative" (F1 1.2, 40%): two verdicts on a model that never learnt SQuAD."""
    from headatlas.interventions.ablation import UNTRAINED, paper_claims, untrained_reason

    def grid(em, f1):  # the first two rows: unablated, all heads pruned
        table = pd.DataFrame({"paper_id": ["1", "", "3", "5"],
                              "variant": ["unablated", "prune all", "prune diagonal", "prune vertical"],
                              "heads_changed": [0, 72, 5, 23], "exact_match": em, "f1": f1})
        table["f1_pct_of_unablated"] = 100 * table["f1"] / f1[0]
        table["paper_f1_pct_of_unablated"] = float("nan")
        path = tmp_path / "ablation.csv"
        table.to_csv(path, index=False)
        return by_id(paper_claims(pd.read_csv(path)))

    random_model = grid([0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 1.2, 3.0])
    assert (random_model["verdict"] == "not applicable").all()
    assert random_model["note"].iloc[0].startswith(
        f"{UNTRAINED} (unablated exact_match 0.00 < 10, f1 3.00 < 20: below the word-overlap baseline of "
        "SQuAD v1.1, EM 13.2 / F1 20.2; the floor is EM 10 or F1 20)")
    assert random_model["note"].str.startswith(UNTRAINED).all()
    assert "f1 3.00 < 20" in random_model.loc["guan.ablation.prune_vertical", "note"]
    assert "F1 20: untrained" in random_model.loc["guan.ablation.prune_vertical", "rule"]
    # The measurement itself is still reported, as measured.
    assert random_model.loc["guan.ablation.prune_diagonal", "ours"].startswith(
        "f1 1.20: 40.0% of what attention gives (unablated 3.00, all heads pruned 0.00;")
    # EM alone below its floor is enough (F1 25, EM 5: word overlap without exact spans).
    assert untrained_reason({"exact_match": 5.0, "f1": 25.0}).startswith(UNTRAINED)
    assert untrained_reason({"exact_match": 10.0, "f1": 20.0}) is None  # at the floor: judged
    assert untrained_reason({"accuracy": 3.0}) is None  # not a SQuAD score: no floor here
    # The task given by name: its floor, whatever the scores' metrics say (the tagger has none).
    assert untrained_reason({"f1": 3.0}, "squad").startswith(f"{UNTRAINED} (unablated f1 3.00 < 20: below the "
                                                              "word-overlap baseline of SQuAD v1.1")
    assert untrained_reason({"exact_match": 0.0, "f1": 3.0}, "upos") is None
    # A trained model is judged as before.
    trained = grid([80.0, 0.0, 5.0, 79.5], [88.0, 0.5, 7.0, 87.5])
    assert trained.loc["guan.ablation.prune_diagonal", "verdict"] == "holds"
    assert trained.loc["guan.ablation.prune_vertical", "verdict"] == "holds"
    assert not trained["note"].str.contains(UNTRAINED).any()


def test_share_of_attention_by_hand():
    from headatlas.interventions.ablation import contribution_missing, share_of_attention

    # The audit's tagger: 96.2 intact, 86.5 with every head pruned: attention gives 9.7 points.
    assert share_of_attention(93.5, 96.2, 86.5) == pytest.approx(100 * 7.0 / 9.7)  # 72.2%: 28% lost
    assert share_of_attention(88.0, 96.2, 86.5) == pytest.approx(100 * 1.5 / 9.7)  # 15.5%
    assert share_of_attention(85.0, 96.2, 86.5) == pytest.approx(100 * -1.5 / 9.7)  # below the floor
    assert contribution_missing(96.2, 86.5) is None
    assert contribution_missing(91.0, 90.0) is None  # a gap of exactly 1 point is judged
    for intact, floor in ((100.0, 100.0), (90.0, 89.5), (90.0, 92.0)):
        assert "nothing measurable" in contribution_missing(intact, floor)
        assert np.isnan(share_of_attention(intact, intact, floor))
    assert "no floor row" in contribution_missing(96.2, float("nan"))


def tagger_grid(tmp_path, intact=96.2, pruned=86.5, uniform=88.0, floors=True):
    """A tagger's grid as ``ablation.csv`` (read back as the rule does); scores in %."""
    rows = [("1", "unablated", 0, intact), ("", "prune all", 72, pruned), ("", "uniform all", 72, uniform),
            ("3", "prune diagonal", 6, 88.0), ("5", "prune vertical", 15, 96.1),
            ("8", "uniform dense", 27, 94.9), ("16", "only diagonal keeps intra", 66, 87.3)]
    table = pd.DataFrame([r for r in rows if floors or r[1] not in ("prune all", "uniform all")],
                         columns=["paper_id", "variant", "heads_changed", "accuracy"])
    table["accuracy_pct_of_unablated"] = 100 * table["accuracy"] / intact
    table["paper_f1_pct_of_unablated"] = float("nan")
    table.to_csv(tmp_path / "ablation.csv", index=False)
    return pd.read_csv(tmp_path / "ablation.csv")


def test_claims_are_judged_above_the_floor_without_attention(tmp_path):
    """A tagger that keeps 86.5% with every head pruned (96.2% intact). Judged on shares of the
    unablated score (the old rule), pruning the diagonal heads (88.0: 91.5%) could never "make the
    model inoperative" (< 50%), keeping only the diagonal heads' intra-sentence attention (87.3:
    90.7%) always "keeps it usable", and uniform dense heads (94.9: 98.6%) "cost little". Above the
    floor, of the 9.7 points attention gives: 1.5 (15.5%), 0.8 (8.2%) and 8.4 (86.6%)."""
    from headatlas.interventions.ablation import paper_claims

    c = by_id(paper_claims(tagger_grid(tmp_path)))
    verdicts = c["verdict"].to_dict()
    assert verdicts == {"guan.ablation.prune_diagonal": "holds",  # old rule: does not hold
                        "guan.ablation.prune_vertical": "holds",  # 9.6 of 9.7: 99.0% >= 98.5%
                        "guan.ablation.uniform_dense": "does not hold",  # old rule: holds
                        "guan.ablation.only_diagonal_intra": "does not hold"}  # old rule: holds
    assert c.loc["guan.ablation.prune_diagonal", "ours"] == (
        "accuracy 88.00: 15.5% of what attention gives (unablated 96.20, all heads pruned 86.50; "
        "0.0% above uniform attention, 88.00), 91.5% of the unablated score, 6 heads changed")
    # Above the uniform floor 88.0 (8.2 points): 87.3 is -0.7 of them, -8.5%.
    assert "-8.5% above uniform attention" in c.loc["guan.ablation.only_diagonal_intra", "ours"]
    assert "of what attention gives" in c.loc["guan.ablation.prune_diagonal", "rule"]
    assert "near 0" in c.loc["guan.ablation.prune_diagonal", "note"]  # the paper's reading


def inter_grid(no_inter_all: float, diagonal: float = 96.1, only_dense_vertical: float = 95.0) -> pd.DataFrame:
    """A tagger's grid with the inter-sentence floor and the two inter-sentence claims' rows."""
    rows = [("1", "unablated", 0, 96.2), ("", "prune all", 72, 86.5), ("", "uniform all", 72, 88.0),
            ("", "no inter all", 72, no_inter_all), ("13", "diagonal: no inter", 6, diagonal),
            ("19", "only dense&vertical keeps inter", 47, only_dense_vertical)]
    table = pd.DataFrame(rows, columns=["paper_id", "variant", "heads_changed", "accuracy"])
    return table.assign(accuracy_pct_of_unablated=100 * table["accuracy"] / 96.2)


def test_inter_sentence_claims_are_judged_above_the_model_without_any():
    """Every head without inter-sentence attention: 96.0 of 96.2, a gap of 0.2 point. Judged above
    the all-pruned floor (9.7 points), "diagonal: no inter" at 96.1 keeps 99.0% (holds) and "only
    dense&vertical keeps inter" at 95.0 keeps 87.6% (holds) whatever the heads do: both are not
    applicable. With a floor of 90.0 (6.2 points inter-sentence attention gives): 96.1 keeps
    98.4% (< 98.5: does not hold) and 95.0 keeps 80.6% (>= 50: holds)."""
    from headatlas.interventions.ablation import paper_claims

    flat = by_id(paper_claims(inter_grid(96.0)))
    inter = ["guan.ablation.diagonal_no_inter", "guan.ablation.only_dense_vertical_inter"]
    assert flat.loc[inter, "verdict"].tolist() == ["not applicable"] * 2
    assert all("inter-sentence attention contributes nothing measurable (unablated 96.20, floor 96.00: "
               "a gap of 0.20 < 1 point)" in n for n in flat.loc[inter, "note"])
    assert "(score - no inter all) / (unablated - no inter all)" in flat.loc[inter[0], "rule"]
    real = by_id(paper_claims(inter_grid(90.0)))
    assert real.loc[inter, "verdict"].tolist() == ["does not hold", "holds"]
    assert real.loc[inter[0], "ours"].startswith(
        "accuracy 96.10: 98.4% of what inter-sentence attention gives (every head without it 90.00); "
        "99.0% of what attention gives")


def tagger_units(drops: dict[str, int]) -> dict:
    """Per-sentence scores behind :func:`tagger_grid`: 1,000 sentences of 10 words, the unablated
    model 9,620 words right (620 sentences all right, 380 with one error), every head pruned one
    word fewer in each of the first 970 sentences (8,650), and each variant one word fewer than the
    unablated model in each of its first ``drops[variant]`` sentences."""
    words = np.full(1000, 10.0)
    unablated = np.where(np.arange(1000) < 620, 10.0, 9.0)

    def fewer(n):
        return unablated - (np.arange(1000) < n)

    return {"unablated": (unablated, words), "prune all": (fewer(970), words),
            **{name: (fewer(n), words) for name, n in drops.items()}}


def test_verdicts_rest_on_the_paired_bootstrap_interval(tmp_path):
    """Pruning the vertical heads loses 10 words of the 970 attention gives: 98.97% of it, above
    the 98.5% of "costs little" - but 10 words over 1,000 sentences is within noise (the interval,
    about 98.2-99.6%, straddles 98.5): undecided, not applicable. The other claims are far from
    their thresholds and keep their verdicts (uniform dense: 86.6%, wholly below 90%)."""
    from headatlas.interventions.ablation import decide, paper_claims
    from headatlas.stats import bootstrap_share

    units = tagger_units({"prune vertical": 10, "prune diagonal": 820, "uniform dense": 130,
                          "only diagonal keeps intra": 890})
    c = by_id(paper_claims(tagger_grid(tmp_path), "upos", units=units))
    assert c["verdict"].to_dict() == {"guan.ablation.prune_diagonal": "holds",
                                      "guan.ablation.prune_vertical": "not applicable",
                                      "guan.ablation.uniform_dense": "does not hold",
                                      "guan.ablation.only_diagonal_intra": "does not hold"}
    low, high = bootstrap_share(np.stack([units[v][0] for v in ("prune vertical", "unablated", "prune all")],
                                         axis=1), units["unablated"][1])
    assert 97.9 < low < 98.5 < high < 99.9
    assert f"undecided, the 95% interval of the share ({low:.1f}% to {high:.1f}%) straddles 98.5%" in \
        c.loc["guan.ablation.prune_vertical", "note"]
    assert c.loc["guan.ablation.prune_vertical", "ours"].startswith(
        f"accuracy 96.10: 99.0% [{low:.1f}% to {high:.1f}%, 95% interval] of what attention gives")
    assert "paired bootstrap 95% interval of that share over sentences" in c.loc["guan.ablation.uniform_dense", "rule"]
    # Units that all score alike leave no noise: the interval is the point (9 of 10 right, half
    # above a floor of 5: 80%).
    same = np.tile([[9.0, 10.0, 5.0]], (50, 1))
    assert bootstrap_share(same, np.full(50, 10.0)) == pytest.approx((80.0, 80.0))
    assert [decide("at least", 50, 60, 70), decide("at least", 50, 40, 60), decide("at least", 50, 30, 40),
            decide("below", 50, 30, 40), decide("below", 50, 40, 60), decide("below", 50, 60, 70)] == \
        [True, None, False, True, None, False]
    # Without per-unit scores (a grid from before), the point estimate decides, as before.
    assert by_id(paper_claims(tagger_grid(tmp_path)))["verdict"]["guan.ablation.prune_vertical"] == "holds"


def test_claims_are_not_applicable_when_attention_contributes_nothing(tmp_path):
    """The tiny workflow's tagger scores 100% whatever its heads do. Judged the old way, pruning the
    vertical heads "costs little" (holds) and pruning the diagonal heads "breaks" nothing (does not
    hold): verdicts on a model whose attention gives no measurable point."""
    from headatlas.interventions.ablation import paper_claims

    flat = tagger_grid(tmp_path, intact=100.0, pruned=100.0, uniform=100.0)
    flat["accuracy"] = 100.0
    c = paper_claims(flat)
    assert {x.verdict for x in c} == {"not applicable"}
    assert all("attention contributes nothing measurable (unablated 100.00, floor 100.00: a gap of 0.00 "
               "< 1 point)" in x.note for x in c)
    assert not any("nan" in x.ours for x in c)
    # A gap of half a point is not measured either; a table from before the floors had none.
    assert {x.verdict for x in paper_claims(tagger_grid(tmp_path, intact=87.0))} == {"not applicable"}
    old = paper_claims(tagger_grid(tmp_path, floors=False))
    assert {x.verdict for x in old} == {"not applicable"} and all("no floor row" in x.note for x in old)


def test_a_uniform_floor_above_the_model_leaves_the_verdict_to_the_pruned_floor(tmp_path):
    from headatlas.interventions.ablation import paper_claims

    c = by_id(paper_claims(tagger_grid(tmp_path, uniform=97.0)))
    assert c.loc["guan.ablation.prune_diagonal", "verdict"] == "holds"
    assert "n/a above uniform attention, 97.00" in c.loc["guan.ablation.prune_diagonal", "ours"]


def test_the_caption_names_the_floors(tmp_path):
    from headatlas.interventions.grid import floors_text

    text = floors_text(tagger_grid(tmp_path), "accuracy")
    assert text.startswith("Floors: accuracy 96.20 unablated, 86.50 with every head pruned, 88.00 with "
                           "every head uniform; bars show the share of what attention gives")
    flat = floors_text(tagger_grid(tmp_path, intact=86.9), "accuracy")
    assert "shares of the unablated score shown: attention contributes nothing measurable" in flat


def test_heads_without_distinct_types_score_only_the_floors(tmp_path):
    """Head types that are not distinct (every head "no distinct types"): the table is read, the
    grid scores the unablated model and the two floors only (each floor changes all 4 heads),
    and every type claim is "not applicable" with that reason instead of being left out."""
    from headatlas.interventions.ablation import paper_claims
    from headatlas.analyses.headtypes import NO_TYPES

    csv = tmp_path / "types.csv"
    pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2], "type": [NO_TYPES] * 4}).to_csv(csv, index=False)
    types = read_head_types(csv, 2, 2)

    def evaluate(actions):  # score = 100 - 10 per changed head
        return {"accuracy": 100.0 - 10 * int((actions != KEEP).sum())}

    table = run_grid(evaluate, types, "accuracy", progress=False)
    assert list(table["variant"]) == ["unablated", "prune all", "uniform all", "no inter all"]
    assert list(table["heads_changed"]) == [0, 4, 4, 4] and list(table["accuracy"]) == [100.0, 60.0, 60.0, 60.0]
    claims = paper_claims(table)
    assert len(claims) == 7 and {c.verdict for c in claims} == {"not applicable"}
    assert all("head types are not distinct" in c.note for c in claims)


def test_an_untrained_model_without_distinct_types_says_both(tmp_path):
    """A random SQuAD model whose heads do not separate: only the floors are scored, and every
    claim's note gives both reasons, the untrained model first."""
    from headatlas.interventions.ablation import UNTRAINED, paper_claims

    table = pd.DataFrame({"paper_id": ["1", "", ""], "variant": ["unablated", "prune all", "uniform all"],
                          "heads_changed": [0, 4, 4], "exact_match": [0.5, 0.4, 0.3], "f1": [3.0, 2.9, 2.8]})
    table["f1_pct_of_unablated"] = 100 * table["f1"] / 3.0
    claims = paper_claims(table)
    assert len(claims) == 7 and {c.verdict for c in claims} == {"not applicable"}
    assert all(UNTRAINED in c.note and "head types are not distinct" in c.note for c in claims)


def test_disable_heads_zeroes_exactly_those_heads_outputs(tiny_model_dir):
    """headatlas.disable_heads: no head named -> the model's own output; head (1, 2) named -> the
    input of layer 1's output projection is zero on that head's slice, and only there."""
    import torch
    from transformers import BertModel

    import headatlas

    model = BertModel.from_pretrained(tiny_model_dir, attn_implementation="eager").eval()
    inputs = {"input_ids": torch.tensor([[2, 5, 6, 7, 3]]), "attention_mask": torch.ones(1, 5, dtype=torch.long)}
    with torch.no_grad():
        plain = model(**inputs).last_hidden_state
        kept = model(**inputs, **headatlas.disable_heads(model, [])).last_hidden_state
        seen = []
        hook = model.encoder.layer[0].attention.output.dense.register_forward_pre_hook(
            lambda module, args: seen.append(args[0].clone()))
        off = model(**inputs, **headatlas.disable_heads(model, [(1, 2)])).last_hidden_state
        hook.remove()
    torch.testing.assert_close(kept, plain, rtol=1e-5, atol=1e-6)
    width = model.config.hidden_size // model.config.num_attention_heads
    context = seen[0][0]  # [tokens, heads x width]
    assert torch.count_nonzero(context[:, width:2 * width]) == 0
    assert torch.count_nonzero(context[:, :width]) == context[:, :width].numel()
    assert not torch.allclose(off, plain)
    with pytest.raises(ValueError, match="head 3-1: the model has layers 1-2"):
        headatlas.disable_heads(model, [(3, 1)])


def test_claims_on_unstable_head_types_are_not_applicable(tmp_path):
    """The tagger's types keep 48.6% of heads across refits (the paper's procedure): each type
    names another set of heads from fit to fit, so no claim about ablating a type is judged; at
    96% (the paper's models) the verdicts stand; types given by hand (no stability) are judged."""
    from headatlas.interventions.ablation import UNSTABLE, paper_claims, type_stability, unstable_types

    table = pd.DataFrame({"resample": ["heads", "inputs"], "consistent_pct": [48.61, 98.61]})
    assert type_stability(table) == 48.61 and np.isnan(type_stability(table.iloc[1:]))
    claims = paper_claims(tagger_grid(tmp_path))
    shaky = unstable_types(claims, type_stability(table))
    assert {c.verdict for c in shaky} == {"not applicable"} and [c.ours for c in shaky] == [c.ours for c in claims]
    assert all(c.note.startswith(f"{UNSTABLE}: 48.6% of heads keep their type across refits") for c in shaky)
    assert all("fewer than 80% of heads keep their type" in c.rule for c in shaky)
    assert unstable_types(claims, 96.0) == claims and unstable_types(claims, float("nan")) == claims
    assert unstable_types(claims, 48.61, minimum=40) == claims


def test_the_library_defaults_are_the_schemas():
    """The verdict rules' defaults live in the library (for notebooks) and in the schema (for the
    workflow): one value."""
    from headatlas.interventions.ablation import MIN_TYPE_STABILITY
    from headatlas.interventions.importance import CLAIM_TOLERANCE_PCT
    from headatlas.pipeline.config import default_config

    defaults = default_config()
    assert defaults["ablation"]["min_type_stability"] == MIN_TYPE_STABILITY
    assert defaults["importance"]["claim_tolerance_pct"] == CLAIM_TOLERANCE_PCT
    assert defaults["ablation"]["bootstrap"] == {"n": 1000, "seed": 0}
