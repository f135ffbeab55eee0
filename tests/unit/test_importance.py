"""Which heads matter: gates, the layer cache, importance, single-head disabling, pruning curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from headatlas.interventions.importance import (HeadTask, Scorer, TaggingHeads, UnitScores, chance_gains,
                                        AWAKE, DORMANT, compare, disable_heads, heads_table, normalise_by_layer,
                                        output_rho, paper_claims,
                                        prunable_share, pruning_curves, pruning_order, spearman)
from tests.conftest import make_tiny_model
from tests.unit.test_upos import corpus


# ----------------------------------------------------------------------------
# a task whose scores are known by hand
# ----------------------------------------------------------------------------

class ToyTask(HeadTask):
    """1 layer x 4 heads, 100 sentences of one word. Intact: sentence 99 is wrong (99%).

    Removing head 1 breaks sentence 0, head 2 breaks sentences 0-29, head 3 *fixes* sentence 99;
    head 0 does nothing.
    """

    metric = "accuracy"
    unit = "sentences"

    def __init__(self):
        self.n_layers, self.n_heads = 1, 4
        self.sizes = np.ones(100)
        self.calls = 0

    def scores(self, gates):
        self.calls += 1
        off = (gates[0] == 0).numpy()
        correct = np.ones(100)
        correct[99] = 1.0 if off[3] else 0.0
        if off[1]:
            correct[0] = 0
        if off[2]:
            correct[:30] = 0
        return UnitScores(correct, self.sizes)

    def importance(self, progress=False):
        return np.array([[0.0, 1.0, 3.0, 0.5]])


def test_single_head_changes_by_hand():
    task = ToyTask()
    scorer = Scorer(task)
    assert scorer.base.value == pytest.approx(99)
    heads, layers = disable_heads(scorer, n_boot=200)
    assert heads["delta"].tolist() == pytest.approx([0, -1, -30, 1])
    assert heads["improves"].tolist() == [False, False, False, True]
    # head 0 changes nothing: the interval is [0, 0]; head 2 breaks 30 of 100 sentences in every
    # resample (the interval lies below 0); head 1 breaks one sentence, absent from some resamples.
    assert heads.loc[0, ["ci_low", "ci_high"]].tolist() == [0, 0]
    assert heads.loc[2, "ci_high"] < 0 and heads.loc[2, "significant"]
    assert heads.loc[1, "ci_low"] < -1 < heads.loc[1, "ci_high"] + 1e-9 and not heads.loc[1, "significant"]
    # the whole layer: every head off -> sentences 0-29 wrong, 99 right: 70%
    assert layers["delta"].tolist() == pytest.approx([70 - 99])
    assert scorer.evaluations == 1 + 4 + 1


def test_scorer_scores_each_gate_pattern_once():
    task = ToyTask()
    scorer = Scorer(task)
    gates = task.ones()
    gates[0, 2] = 0
    scorer(gates), scorer(gates.clone()), scorer(task.ones())
    assert task.calls == 2 and scorer.evaluations == 2


def test_normalise_by_layer_l2():
    out = normalise_by_layer(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.tolist() == [[0.6, 0.8], [0.0, 0.0]]


def test_pruning_orders():
    importance = np.array([[0.0, 1.0, 3.0, 0.5]])
    assert pruning_order(importance, "importance").tolist() == [0, 3, 1, 2]
    assert pruning_order(importance, "reverse").tolist() == [2, 1, 3, 0]
    assert sorted(pruning_order(importance, "random", 1).tolist()) == [0, 1, 2, 3]
    assert pruning_order(importance, "random", 1).tolist() == pruning_order(importance, "random", 1).tolist()
    with pytest.raises(ValueError, match="order"):
        pruning_order(importance, "sideways")


def test_pruning_curves_and_prunable_share_by_hand():
    task = ToyTask()
    scorer = Scorer(task)
    curves = pruning_curves(scorer, task.importance(), [0, 0.25, 0.5, 0.75, 1.0], seeds=[0])
    imp = curves[curves["order"] == "importance"]
    # least important first: remove head 0 (no change), + head 3 (fixes sentence 99: 100%),
    # + head 1 (breaks sentence 0: 99%), + head 2 (breaks 0-29: 70%)
    assert imp["heads_removed"].tolist() == [0, 1, 2, 3, 4]
    assert imp["score"].tolist() == pytest.approx([99, 99, 100, 99, 70])
    rev = curves[curves["order"] == "reverse"]  # head 2 first: 69%, + 1: 69%, + 3: 70%, all: 70%
    assert rev["score"].tolist() == pytest.approx([99, 69, 69, 70, 70])
    # within 1 point up to 75% in importance order; reverse loses 30 points at the first step
    assert prunable_share(curves, 1.0) == 75
    assert prunable_share(curves, 1.0, "reverse") == 0


def test_prunable_share_stops_at_the_first_crossing():
    curves = pd.DataFrame({"order": "importance", "share_pct": [0, 10, 20, 30],
                           "delta": [0, -2.0, -0.5, -3.0]})
    assert prunable_share(curves, 1.0) == 0  # 10% already loses 2 points; 20% does not count
    assert prunable_share(curves, 2.5) == 20


def test_heads_table_compare_and_claims():
    task = ToyTask()
    scorer = Scorer(task)
    single, layers = disable_heads(scorer, n_boot=200)
    heads = heads_table(task.importance(), single)
    assert heads["rank"].tolist() == [4, 2, 1, 3]  # head 3 (1-based 1-3) is the most important
    types = pd.DataFrame({"layer": 1, "head": [1, 2, 3, 4], "type": ["dense", "dense", "diagonal", "vertical"]})
    patterns = pd.DataFrame({"layer": 1, "head": [1, 2, 3, 4],
                             "dominant": ["vertical", "vertical", "diagonal", "vertical"]})
    table = compare(heads, types, patterns, top_share=0.25).set_index(["by", "group"])
    assert table.loc[("type", "diagonal"), "top_heads"] == 1 and table.loc[("type", "dense"), "heads"] == 2
    assert table.loc[("pattern", "vertical"), "mean_delta"] == pytest.approx((0 - 1 + 1) / 3)
    assert table.loc[("pattern", "diagonal"), "significant_drops"] == 1
    # Dormancy: head 1 is dormant on 20% of the inputs, head 2 on 5% (not often: below 10%),
    # heads 3-4 never; relative outputs rank the heads 3 > 2 > 4 > 1 and importance ranks them
    # 3 > 2 > 4 > 1 too (ranks 1, 2, 3, 4 above)
    outputs = pd.DataFrame({"layer": 1, "head": [1, 2, 3, 4], "dormant_rate": [0.2, 0.05, 0, 0],
                            "relative_output": [0.3, 1.1, 1.4, 0.9]})
    table = compare(heads, None, None, top_share=0.25, activations=outputs).set_index(["by", "group"])
    assert table.loc[("output", DORMANT), "heads"] == 1 and table.loc[("output", AWAKE), "heads"] == 3
    assert table.loc[("output", AWAKE), "top_heads"] == 1
    assert table.loc[("output", DORMANT), "mean_importance"] == heads.set_index("head").loc[1, "importance"]
    assert output_rho(heads, outputs) == pytest.approx(1.0)
    assert output_rho(heads, outputs.assign(relative_output=-outputs["relative_output"])) == pytest.approx(-1.0)
    curves = pruning_curves(scorer, task.importance(), [0, 0.25, 0.5, 0.75, 1.0], seeds=[0])
    found = {c.id: c for c in paper_claims(heads, layers, curves, 99, "accuracy", 1.0, "toy")}
    assert found["michel.s3.single_heads_harmless"].verdict == "holds"  # 3 of 4 not significant drops
    assert found["michel.s4.prunable_share"].verdict == "holds"  # 75% >= 30%
    # Every head removed: 70, so attention gives 29 points; the claim allows 2% of them, 0.58.
    assert found["michel.s4.prunable_share"].ours == (
        "75% prunable for <= 0.58 point(s) of accuracy = 2% of what attention gives (intact 99.00, "
        "every head removed 70.00); within 1 point(s): 75% (random order: 0%)")
    assert found["kovaleva.s6.disabling_improves"].verdict == "does not hold"  # +1 not significant
    # The same numbers from a SQuAD model whose intact F1 is 3 (random weights): the old rule
    # said "holds" for two claims; below the floor (F1 20) every claim says the model is untrained.
    from headatlas.interventions.ablation import UNTRAINED

    untrained = paper_claims(heads, layers, curves, 3.0, "f1", 1.0, "toy", task="squad")
    assert [c.verdict for c in untrained] == ["not applicable"] * len(found)
    assert all(c.note.startswith(f"{UNTRAINED} (intact f1 3.00 < 20") for c in untrained)
    measured = [c.ours.replace("accuracy", "f1") for c in found.values() if c.id != "michel.s4.prunable_share"]
    assert [c.ours for c in untrained if c.id != "michel.s4.prunable_share"] == measured  # measured
    # the relative tolerance needs intact > floor: the points of `tolerance` instead
    assert {c.id: c.ours for c in untrained}["michel.s4.prunable_share"] == \
        "75% prunable for <= 1 point(s) of f1 (random order: 0%)"
    trained = paper_claims(heads, layers, curves, 99, "f1", 1.0, "toy", task="squad")
    assert [c.verdict for c in trained] == [c.verdict for c in found.values()]


def test_the_prunable_share_is_judged_relative_to_what_attention_gives():
    """A tagger at 96.6 that keeps 86.6 with every head removed: attention gives 10 points, and the
    claim allows 2% of them, 0.2 points. Importance-order pruning loses 0.1, 0.3, 0.6, 0.9 points
    at 10-40%: 40% prunable within 1 point (holds, >= 30%), but only 10% within 0.2 (does not)."""
    heads = pd.DataFrame({"layer": 1, "head": [1, 2], "improves": False, "ci_low": -1.0, "ci_high": 1.0,
                          "delta": 0.0})
    deltas = [0.0, -0.1, -0.3, -0.6, -0.9, -10.0]
    curves = pd.DataFrame({"order": "importance", "seed": -1, "share_pct": [0.0, 10, 20, 30, 40, 100],
                           "heads_removed": range(6), "delta": deltas})
    curves["score"] = 96.6 + curves["delta"]
    curves = pd.concat([curves, curves.assign(order="random", seed=0)], ignore_index=True)
    claim = {c.id: c for c in paper_claims(heads, pd.DataFrame(), curves, 96.6, "accuracy", 1.0, "toy")}
    prunable = claim["michel.s4.prunable_share"]
    assert prunable.verdict == "does not hold" and prunable.ours.startswith(
        "10% prunable for <= 0.20 point(s) of accuracy = 2% of what attention gives")
    assert "within 1 point(s): 40%" in prunable.ours
    loose = {c.id: c for c in paper_claims(heads, pd.DataFrame(), curves, 96.6, "accuracy", 1.0, "toy",
                                           claim_tolerance=10.0)}
    assert loose["michel.s4.prunable_share"].verdict == "holds"  # 10% of 10 points: 1 point, 40%


def test_claims_are_not_applicable_when_attention_contributes_nothing():
    """A tagger at 100% whatever its heads do (the tiny workflow's): judged the old way, every head
    is "harmless" and 100% of them "prunable" (two verdicts that could not have come out the other
    way). With every head removed still at 100, attention gives nothing measurable: not applicable."""
    heads = pd.DataFrame({"layer": 1, "head": [1, 2], "improves": False, "ci_low": 0.0, "ci_high": 0.0,
                          "delta": 0.0})
    curves = pd.DataFrame({"order": "importance", "seed": -1, "share_pct": [0.0, 50.0, 100.0],
                           "heads_removed": [0, 1, 2], "score": 100.0, "delta": 0.0})
    curves = pd.concat([curves, curves.assign(order="random", seed=0)], ignore_index=True)
    found = paper_claims(heads, pd.DataFrame(), curves, 100.0, "accuracy", 1.0, "toy")
    assert {c.verdict for c in found} == {"not applicable"}
    assert all(c.note.startswith("not applicable: attention contributes nothing measurable (unablated "
                                 "100.00, floor 100.00: a gap of 0.00 < 1 point)") for c in found)
    assert all("attention contributes nothing measurable" in c.rule for c in found)
    # 2 points above the floor: judged (both heads harmless).
    lower = curves.assign(score=np.where(curves["share_pct"] == 100, 98.0, 100.0))
    judged = {c.id: c.verdict for c in paper_claims(heads, pd.DataFrame(), lower, 100.0, "accuracy", 1.0, "toy")}
    assert judged["michel.s3.single_heads_harmless"] == "holds"


def test_chance_gains_by_hand():
    # 4 heads at 2.5%: P(X >= 1) = 1 - 0.975^4 = 9.6% >= 5%; P(X >= 2) = 1 - 0.975^4 - 4 x 0.025 x
    # 0.975^3 = 0.36% < 5% -> 2 gains are needed. One head: even 1 gain has only 2.5% -> 1.
    assert chance_gains(4) == 2 and chance_gains(1) == 1
    assert chance_gains(72) == 5  # P(X >= 4) = 10.6%, P(X >= 5) = 3.4%


def test_spearman():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)


# ----------------------------------------------------------------------------
# a tiny tagger: gates, the layer cache, the importance gradient
# ----------------------------------------------------------------------------

def random_tagger(base, tagger_class, folder, labels):
    """A tagger with a random head on the encoder saved in ``base``, loaded as the rules load it."""
    from transformers import AutoTokenizer

    from headatlas.interventions.grid import load_task_model

    torch.manual_seed(0)
    tagger_class.from_pretrained(
        base, num_labels=len(labels), label2id=labels,
        id2label={i: t for t, i in labels.items()}).save_pretrained(folder)
    AutoTokenizer.from_pretrained(base).save_pretrained(folder)
    return load_task_model("upos", str(folder), device="cpu")


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    from transformers import BertForTokenClassification

    from headatlas.tasks.upos import label_map, pack_documents

    root = tmp_path_factory.mktemp("importance")
    sentences = corpus()
    labels = label_map(sentences)
    folder = make_tiny_model(root / "base", layers=2, heads=2)
    model, tokenizer = random_tagger(folder, BertForTokenClassification, root / "tagger", labels)
    test = pack_documents(tokenizer, [s for s in sentences if s.split == "test"], labels, 24)
    dev = pack_documents(tokenizer, [s for s in sentences if s.split == "dev"], labels, 24)
    return model, test, dev


def test_a_zero_gate_equals_pruning_the_head(tagger):
    from headatlas.interventions.ablation import PRUNE, plan

    model, test, _ = tagger
    task = TaggingHeads(model, test, test[:2], batch_size=3, cache=False)
    inputs, _, _ = task.batches[0]
    gates = task.ones()
    gates[0, 1] = 0
    actions = torch.zeros(2, 2, dtype=torch.long)
    actions[0, 1] = PRUNE
    with torch.no_grad():
        gated = model(**inputs, headatlas_gates=gates).logits
        pruned = model(**inputs, **plan(actions)(None)).logits
        intact = model(**inputs).logits
        ones = model(**inputs, headatlas_gates=task.ones()).logits
        per_input = model(**inputs, headatlas_gates=gates.expand(len(inputs["input_ids"]), 2, 2)).logits
    assert torch.allclose(gated, pruned, atol=1e-6) and torch.allclose(ones, intact, atol=1e-6)
    assert torch.allclose(per_input, gated, atol=1e-6)
    assert not torch.allclose(gated, intact, atol=1e-4)


def test_layer_cache_gives_the_full_forward_scores(tagger):
    model, test, _ = tagger
    cached = TaggingHeads(model, test, test[:2], batch_size=3, cache=True)
    full = TaggingHeads(model, test, test[:2], batch_size=3, cache=False)
    assert cached.cache is not None and cached.check_cache()
    assert cached.sizes.sum() == sum(e.n_words for e in test)
    assert cached.n_units == sum(max(e.sentence_ids) + 1 for e in test)
    for pattern in ([[1, 1], [1, 1]], [[0, 1], [1, 1]], [[1, 1], [1, 0]], [[0, 0], [0, 0]]):
        gates = torch.tensor(pattern, dtype=torch.float32)
        a, b = cached.scores(gates), full.scores(gates)
        assert np.array_equal(a.score, b.score) and a.value == b.value


def test_importance_is_the_mean_absolute_gate_gradient(tagger):
    from headatlas.tasks.upos import IGNORE, collate

    model, test, dev = tagger
    task = TaggingHeads(model, test, dev, batch_size=2, cache=False)
    importance = task.importance()

    # Central differences of each input's mean word loss in each gate, averaged in absolute value.
    def losses(gates):
        out = []
        for example in dev:
            inputs, _ = collate([example], model.config.pad_token_id or 0)
            labels = inputs.pop("labels")
            with torch.no_grad():
                logits = model(**inputs, headatlas_gates=gates).logits
            out.append(torch.nn.functional.cross_entropy(logits[0], labels[0], ignore_index=IGNORE).item())
        return np.array(out)

    eps = 1e-3
    expected = np.zeros((2, 2))
    for layer in range(2):
        for head in range(2):
            up, down = torch.ones(2, 2, dtype=torch.float64), torch.ones(2, 2, dtype=torch.float64)
            up[layer, head] += eps
            down[layer, head] -= eps
            expected[layer, head] = np.abs((losses(up.float()) - losses(down.float())) / (2 * eps)).mean()
    assert importance == pytest.approx(expected, rel=2e-2, abs=1e-4)


def test_a_tagger_without_segment_table_is_scored_and_cached(tmp_path):
    # RoBERTa's token-type table has one row: the batches carry no token_type_ids, the layer
    # cache still reproduces the full forward pass, and a zero gate changes the logits.
    from transformers import RobertaForTokenClassification

    from headatlas.tasks.upos import label_map, pack_documents
    from tests.conftest import make_tiny_encoder

    sentences = corpus()
    labels = label_map(sentences)
    folder = make_tiny_encoder(tmp_path / "base", "roberta", layers=2, heads=2)
    model, tokenizer = random_tagger(folder, RobertaForTokenClassification, tmp_path / "tagger", labels)
    test = pack_documents(tokenizer, [s for s in sentences if s.split == "test"], labels, 24)
    cached = TaggingHeads(model, test, test[:2], batch_size=3, cache=True)
    full = TaggingHeads(model, test, test[:2], batch_size=3, cache=False)
    assert all("token_type_ids" not in inputs for inputs, _, _ in cached.batches)
    assert cached.cache is not None and cached.check_cache()
    gates = cached.ones()
    gates[1, 0] = 0
    assert np.array_equal(cached.scores(gates).score, full.scores(gates).score)
    with torch.no_grad():
        inputs = cached.batches[0][0]
        assert not torch.allclose(model(**inputs, headatlas_gates=gates).logits,
                                  model(**inputs).logits, atol=1e-4)
    assert np.isfinite(cached.importance()).all()


def tiny_squad(folder):
    """A tiny random QA model loaded as the rules load it, its tokenizer and the SQuAD sample."""
    from pathlib import Path

    from transformers import AutoConfig, BertForQuestionAnswering

    from headatlas.interventions.grid import load_task_model
    from headatlas.tasks.squad import read_squad

    make_tiny_model(folder, layers=2, heads=2)
    torch.manual_seed(1)
    BertForQuestionAnswering(AutoConfig.from_pretrained(folder)).save_pretrained(folder)
    model, tokenizer = load_task_model("squad", str(folder), device="cpu")
    return model, tokenizer, read_squad(Path(__file__).resolve().parents[1] / "fixtures" / "formats"
                                        / "squad_v1.1_sample.json")


def test_squad_heads_score_is_the_official_f1_and_targets_the_answer_tokens(tmp_path):
    # The paper configuration's task: per-question F1 whose mean is squad_evaluate's F1, and
    # the importance loss's target tokens cover the first gold answer's characters.
    from headatlas.interventions.importance import SquadHeads
    from headatlas.tasks.squad import squad_evaluate, squad_predictions

    model, tokenizer, examples = tiny_squad(tmp_path / "qa")
    task = SquadHeads(model, tokenizer, examples, batch_size=2, max_length=48, stride=16)
    scores = task.scores(task.ones())
    assert scores.size.tolist() == [1.0] * len(examples) and ((0 <= scores.score) & (scores.score <= 1)).all()
    official = squad_evaluate(examples, squad_predictions(model, task.windows, examples, 2))["f1"]
    assert scores.value == pytest.approx(official)
    covered = set()
    for window in task.windows:
        first, last = task._positions(window)
        if (first, last) == (0, 0):
            continue
        example = examples[window.example]
        start, end = example.answer_starts[0], example.answer_starts[0] + len(example.answers[0])
        assert window.spans[first][0] <= start < window.spans[first][1] or window.spans[first][0] >= start
        assert window.spans[last][0] < end <= window.spans[last][1] and first <= last
        covered.add(window.example)
    assert covered == set(range(len(examples)))  # every answer lies in some window
    importance = task.importance()
    assert importance.shape == (2, 2) and np.isfinite(importance).all() and (importance >= 0).all()


# ----------------------------------------------------------------------------
# the registered tasks, the rule's result
# ----------------------------------------------------------------------------

def test_every_registered_task_has_a_head_scorer_that_takes_its_settings():
    import inspect

    from headatlas.interventions.importance import HEAD_TASKS
    from headatlas.tasks import SETTINGS, TASKS
    from tests.unit.test_tasks import ablation_schema

    assert set(HEAD_TASKS) == set(TASKS)
    for name, kind in HEAD_TASKS.items():
        task = TASKS[name]
        assert kind.definition is task and kind.metric == task.metric and kind.unit == task.unit
        takes = {p.name for p in inspect.signature(kind.from_records).parameters.values()
                 if p.kind is p.KEYWORD_ONLY}
        assert set(kind.settings) <= takes and set(kind.settings) <= set(SETTINGS)
        if task.options:
            options = set(ablation_schema()[task.options]["properties"])
            assert options - set(task.reader_options) <= takes


def test_run_experiments_returns_one_result_with_its_tables_claims_and_caption(tmp_path):
    from headatlas.analyses.result import Result
    from headatlas.interventions.importance import run_experiments

    result = run_experiments(ToyTask(), [0, 0.5, 1.0], [0], n_boot=50, name="toy", progress=False)
    assert list(result.tables) == ["heads", "layers", "curves", "summary"]
    assert result.table is result.tables["heads"] and len(result.table) == 4
    assert result.attrs["metric"] == "accuracy" and result.attrs["task"] is None
    assert result.caption.startswith("Task model toy, ; intact accuracy 99.00%.")
    assert result.tables["summary"]["value"].iloc[0] == 99.0
    assert [c.id for c in result.claims] == ["kovaleva.s6.disabling_improves", "michel.s3.single_heads_harmless",
                                             "michel.s4.prunable_share", "michel.s4.importance_beats_random"]
    result.save(tmp_path / "importance.npz")
    back = Result.load(tmp_path / "importance.npz")
    assert back.caption == result.caption and back.claims == result.claims
    pd.testing.assert_frame_equal(back.tables["layers"], result.tables["layers"], check_dtype=False)


def test_build_task_reads_and_describes_each_task(tmp_path):
    from pathlib import Path

    from transformers import AutoConfig, BertForQuestionAnswering, BertForTokenClassification

    from headatlas.corpora.records import write_jsonl
    from headatlas.interventions.importance import SquadHeads, build_task
    from headatlas.tasks.upos import label_map

    sentences = corpus()
    data = tmp_path / "tb.jsonl"
    write_jsonl(data, sentences)
    base = make_tiny_model(tmp_path / "base", layers=2, heads=2)
    random_tagger(base, BertForTokenClassification, tmp_path / "tagger", label_map(sentences))
    task = build_task("upos", {"path": str(tmp_path / "tagger")}, data, corpus="tb", max_examples=3,
                      max_length=24, batch_size=3)
    assert isinstance(task, TaggingHeads) and task.n_units == 3  # the first 3 test sentences
    words = int(task.sizes.sum())
    assert task.description == (f"UPOS tagging, tb test split ({words} words, 3 sentences, the first 3 "
                                "sentences), importance on the dev split")
    assert words == sum(len(s.words) for s in [s for s in sentences if s.split == "test"][:3])

    folder = make_tiny_model(tmp_path / "qa", layers=2, heads=2)
    BertForQuestionAnswering(AutoConfig.from_pretrained(folder)).save_pretrained(folder)
    squad = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "squad_v1.1_sample.json"
    qa = build_task("squad", {"path": str(folder)}, squad, max_examples=1, batch_size=2,
                    options={"max_length": 48, "stride": 16})
    assert isinstance(qa, SquadHeads) and len(qa.examples) == 1
    assert max(len(w.input_ids) for w in qa.windows) <= 48
    assert qa.description == f"SQuAD v1.1 F1 on 1 questions of {squad} (importance on the same)"
