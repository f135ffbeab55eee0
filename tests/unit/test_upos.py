"""UPOS tagging: splits, packing, a few training steps, the checkpoint, the ablation evaluator."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import torch

from headatlas.interventions.ablation import KEEP, NO_INTER, plan
from headatlas.corpora.records import Sentence
from headatlas.errors import HeadAtlasError
from headatlas.interventions.grid import load_task_model
from headatlas.tasks.upos import (IGNORE, TuneOptions, ablation_evaluator, collate, fine_tune,
                                  fine_tune_model, label_map, pack_documents, save_checkpoint,
                                  split_sentences, tag_scores, upos_task)
from tests.conftest import VOCAB, make_tiny_model

# Each word always has the same tag, so a tagger can learn it quickly.
TAGS = {"the": "DET", "a": "DET", "cat": "NOUN", "dog": "NOUN", "mat": "NOUN", "house": "NOUN",
        "sat": "VERB", "saw": "VERB", "was": "AUX", "big": "ADJ", "red": "ADJ", "he": "PRON",
        "she": "PRON", "on": "ADP", "and": "CCONJ", ".": "PUNCT"}


def tokenizer():
    from transformers import BertTokenizer

    return BertTokenizer(vocab={w: i for i, w in enumerate(VOCAB)})


def corpus(n_docs: int = 6, per_doc: int = 8, splits: bool = True, seed: int = 0) -> list[Sentence]:
    rng = random.Random(seed)
    names = ["train"] * (n_docs - 2) + ["dev", "test"]
    out = []
    for d in range(n_docs):
        for s in range(per_doc):
            words = [rng.choice(sorted(TAGS)) for _ in range(rng.randint(3, 7))]
            out.append(Sentence(f"d{d}-{s}", words, doc=f"d{d}", split=names[d] if splits else "",
                                upos=[TAGS[w] for w in words]))
    return out


def test_pack_by_hand():
    # Every word here is one wordpiece; max_length 8 leaves room for 6 between [CLS] and [SEP]:
    # sentences 1 + 2 (3 + 3) fill one example, 3 (6 words) fits exactly alone, 4 (7 words)
    # cannot fit and is counted, not cut; 5 is another document, so it starts a new example.
    doc = [Sentence("1", ["the", "cat", "sat"], doc="d", upos=["DET", "NOUN", "VERB"]),
           Sentence("2", ["he", "saw", "it"], doc="d", upos=["PRON", "VERB", "PRON"]),
           Sentence("3", ["the", "big", "red", "dog", "sat", "on"], doc="d", upos=["X"] * 6),
           Sentence("4", ["a", "big", "red", "dog", "sat", "on", "it"], doc="d", upos=["X"] * 7),
           Sentence("5", ["she"], doc="e", upos=["PRON"])]
    labels = label_map(doc)  # sorted: DET NOUN PRON VERB X
    stats = Counter()
    examples = pack_documents(tokenizer(), doc, labels, max_length=8, stats=stats)
    assert [len(e) for e in examples] == [8, 8, 3]  # docs are never mixed: "she" is alone
    first = examples[0]
    assert first.sentence_ids == [-1, 0, 0, 0, 1, 1, 1, -1]
    assert first.labels == [IGNORE, 0, 1, 3, 2, 3, 2, IGNORE]
    assert stats["too_long_sentences"] == 1 and stats["too_long_words"] == 7
    assert examples[2].doc == "e" and examples[2].n_words == 1


def test_first_wordpiece_carries_the_label():
    doc = [Sentence("1", ["he", "runs"], doc="d", upos=["PRON", "VERB"])]  # runs = run ##s
    (example,) = pack_documents(tokenizer(), doc, {"PRON": 0, "VERB": 1}, max_length=16)
    assert example.labels == [IGNORE, 0, 1, IGNORE, IGNORE]


def test_collate_pads():
    doc = [Sentence("1", ["he"], doc="a", upos=["PRON"]), Sentence("2", ["the", "cat"], doc="b",
                                                                 upos=["DET", "NOUN"])]
    examples = pack_documents(tokenizer(), doc, label_map(doc), max_length=16)
    inputs, sentence_ids = collate(examples, pad_id=0)
    assert inputs["input_ids"].shape == (2, 4)
    assert inputs["attention_mask"].tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert inputs["labels"][0].tolist() == [IGNORE, 2, IGNORE, IGNORE]  # DET 0, NOUN 1, PRON 2
    assert sentence_ids[0].tolist() == [-1, 0, -1, -1]


def test_splits_from_labels_or_by_document():
    parts, by_doc = split_sentences(corpus())
    assert not by_doc and {s.doc for s in parts["test"]} == {"d5"}
    parts, by_doc = split_sentences(corpus(n_docs=20, splits=False))
    # 20 documents, 10% each: 2 test (d18, d19), 2 dev (d16, d17), 16 train.
    assert by_doc and {s.doc for s in parts["dev"]} == {"d16", "d17"}
    assert {s.doc for s in parts["test"]} == {"d18", "d19"} and len(parts["train"]) == 16 * 8
    with pytest.raises(HeadAtlasError, match="needs train/dev/test"):
        split_sentences([Sentence("1", ["a"], split="dev"), Sentence("2", ["a"], split="test")])
    with pytest.raises(HeadAtlasError, match=">= 3 documents"):
        split_sentences(corpus(n_docs=2, splits=False))
    with pytest.raises(HeadAtlasError, match="no UPOS"):
        label_map([Sentence("1", ["a"])])


def test_fine_tuning_lowers_the_loss_and_saves_a_loadable_checkpoint(tmp_path):
    from transformers import AutoModelForTokenClassification

    from headatlas.encoders.models import load_model

    base = make_tiny_model(tmp_path / "base", layers=2, heads=2)
    # 4 training documents pack into 8 examples: an epoch is 2 steps, dev is scored after each.
    options = TuneOptions(epochs=50, batch_size=4, lr=3e-3, max_steps=20, eval_every=10,
                          patience=20, max_length=32, seed=0)
    result = fine_tune(str(base), corpus(), options, progress=False)
    curve = result.curve
    assert list(curve["step"]) == list(range(2, 21, 2))
    # Mean training loss of steps 19-20 is well below that of steps 1-2 (~log 9 = 2.2 at start).
    assert curve["train_loss"].iloc[-1] < 0.8 * curve["train_loss"].iloc[0]
    assert result.metrics["steps"] == 20 and 0 <= result.metrics["test_accuracy"] <= 100

    folder = save_checkpoint(result.model, result.tokenizer, tmp_path / "upos" / "model")
    assert not list((tmp_path / "upos").glob(".model.*partial"))
    loaded = AutoModelForTokenClassification.from_pretrained(folder).eval()
    assert loaded.config.id2label[0] == "ADJ" and len(loaded.config.id2label) == len(set(TAGS.values()))
    examples = pack_documents(result.tokenizer, corpus()[:8], loaded.config.label2id, 32)
    assert tag_scores(loaded, examples) == tag_scores(result.model, examples)
    # Per sentence, in order: its correct and scored words (the ablation's bootstrap units).
    scores = tag_scores(loaded, examples, batch_size=3, units=True)
    correct, words = scores["units"]
    assert words.tolist() == [len(s.upos) for s in corpus()[:8]]
    assert 100 * correct.sum() / words.sum() == pytest.approx(scores["accuracy"]) and (correct <= words).all()
    encoder = load_model("tuned", {"path": str(folder)}, device="cpu")  # as extraction loads it
    assert encoder.n_layers == 2 and encoder.n_heads == 2


def test_fine_tuning_is_seeded(tmp_path):
    base = make_tiny_model(tmp_path / "base")
    options = TuneOptions(epochs=1, batch_size=4, max_steps=3, eval_every=3, max_length=32)
    a = fine_tune(str(base), corpus(), options, progress=False)
    b = fine_tune(str(base), corpus(), options, progress=False)
    assert a.curve["train_loss"].equals(b.curve["train_loss"])
    for key, value in a.model.state_dict().items():
        assert torch.equal(value, b.model.state_dict()[key])


def test_fine_tune_model_names_base_corpus_and_options(tmp_path):
    base = make_tiny_model(tmp_path / "base")
    with pytest.raises(HeadAtlasError, match="random-init variant"):
        fine_tune_model("r", {"path": str(base), "random_init": True}, corpus(), "tb")
    options = {"epochs": 1, "batch_size": 4, "max_steps": 2, "eval_every": 2, "max_length": 32}
    result = fine_tune_model("tiny", {"path": str(base)}, iter(corpus()), "tb", options, progress=False)
    table = result.metrics_table()
    assert list(table.columns) == ["quantity", "value"]
    assert table["quantity"].tolist()[:4] == ["base_model", "base_source", "corpus", "test_accuracy"]
    assert table["quantity"].tolist()[-len(vars(TuneOptions())):] == list(vars(TuneOptions()))
    assert result.metrics["base_source"] == str(base) and result.metrics["max_steps"] == 2


# ----------------------------------------------------------------------------
# The tagger under a head-type ablation
# ----------------------------------------------------------------------------

def test_upos_task_runs_on_a_tiny_tagger(tmp_path):
    from transformers import AutoTokenizer, BertForTokenClassification

    folder = make_tiny_model(tmp_path / "base")
    BertForTokenClassification.from_pretrained(folder, num_labels=2).save_pretrained(tmp_path / "tagger")
    AutoTokenizer.from_pretrained(folder).save_pretrained(tmp_path / "tagger")
    model, tokenizer = load_task_model("upos", str(tmp_path / "tagger"), device="cpu")
    doc = [Sentence("s1", ["the", "cat"], doc="d", upos=["A", "B"]),
           Sentence("s2", ["it", "sat"], doc="d", upos=["B", "A"])]
    examples = pack_documents(tokenizer, doc, {"A": 0, "B": 1}, max_length=16)
    evaluate = upos_task(model, examples)
    for actions in (torch.full((2, 2), KEEP), torch.full((2, 2), NO_INTER)):
        assert 0 <= evaluate(plan(actions))["accuracy"] <= 100


def test_ablation_evaluator_packs_the_split_and_describes_it(tmp_path):
    from transformers import AutoTokenizer, BertForTokenClassification

    sentences = corpus()
    labels = label_map(sentences)
    folder = make_tiny_model(tmp_path / "base")
    BertForTokenClassification.from_pretrained(
        folder, num_labels=len(labels), label2id=labels,
        id2label={i: t for t, i in labels.items()}).save_pretrained(tmp_path / "tagger")
    AutoTokenizer.from_pretrained(folder).save_pretrained(tmp_path / "tagger")
    model, tokenizer = load_task_model("upos", str(tmp_path / "tagger"), device="cpu")
    evaluate, described = ablation_evaluator(model, tokenizer, sentences, corpus="tb", split="test",
                                             max_examples=4, max_length=32)
    # The first 4 test sentences (document d5), one wordpiece per word: 3-7 words each, so they
    # pack into inputs of <= 30 words between [CLS] and [SEP].
    test = [s for s in sentences if s.split == "test"][:4]
    n_words = sum(len(s.words) for s in test)
    n_inputs = len(pack_documents(tokenizer, test, labels, 32))
    assert described == (f"UPOS tagging, tb test split, {n_words} words in {n_inputs} inputs of "
                         "<= 32 wordpieces, each several consecutive sentences of one document")
    assert 0 <= evaluate(plan(torch.full((2, 2), KEEP)))["accuracy"] <= 100
    _, unsplit = ablation_evaluator(model, tokenizer, corpus(n_docs=20, splits=False), corpus="tb", split="dev")
    assert unsplit.startswith("UPOS tagging, tb dev split (documents split by order: the corpus "
                              "has no splits), ")
    odd = [Sentence(s.id, s.words, doc=s.doc, split=s.split, upos=["ODD"] * len(s.words))
           for s in sentences]
    with pytest.raises(HeadAtlasError, match=r"tags \['ODD'\] are not in the tagger's label map; "
                                             "was it fine-tuned on tb"):
        ablation_evaluator(model, tokenizer, odd, corpus="tb")


def test_a_model_without_token_types_fine_tunes_and_is_scored(tmp_path):
    """DistilBERT's forward has no token_type_ids: collate leaves them out for it."""
    from tests.conftest import make_tiny_encoder

    base = make_tiny_encoder(tmp_path / "distil", "distilbert")
    options = TuneOptions(epochs=1, batch_size=4, max_steps=2, eval_every=2, max_length=32)
    result = fine_tune(str(base), corpus(), options, progress=False)
    assert result.metrics["steps"] == 2 and 0 <= result.metrics["test_accuracy"] <= 100
    inputs, _ = collate(pack_documents(result.tokenizer, corpus()[:2], result.model.config.label2id, 32), 0,
                        token_types=False)
    assert "token_type_ids" not in inputs


def test_ablation_grid_scores_the_registered_task_into_one_result(tmp_path):
    """The rule's whole job on a tiny tagger: the task's reader and evaluator, every variant, a
    caption naming the task's deviation from the paper; one Result that saves and loads."""
    import pandas as pd
    from transformers import AutoTokenizer, BertForTokenClassification

    from headatlas.analyses.result import Result
    from headatlas.corpora.records import write_jsonl
    from headatlas.interventions.grid import ablation_grid

    sentences = corpus()
    labels = label_map(sentences)
    write_jsonl(tmp_path / "tb.jsonl", sentences)
    folder = make_tiny_model(tmp_path / "base")
    BertForTokenClassification.from_pretrained(
        folder, num_labels=len(labels), label2id=labels,
        id2label={i: t for t, i in labels.items()}).save_pretrained(tmp_path / "tagger")
    AutoTokenizer.from_pretrained(folder).save_pretrained(tmp_path / "tagger")
    pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2],
                  "type": ["diagonal", "dense", "dense", "vertical"]}).to_csv(tmp_path / "types.csv", index=False)
    result = ablation_grid("upos", {"path": str(tmp_path / "tagger")}, tmp_path / "tb.jsonl",
                           tmp_path / "types.csv", "tiny_upos", types_source="tiny on tb", types_own=True,
                           corpus="tb", max_examples=4, max_length=32, batch_size=4, progress=False)
    assert list(result.tables) == ["ablation"] and result.attrs == {
        "task": "upos", "metric": "accuracy", "caption": result.caption, "unit": "sentences",
        "unit_variants": list(result.table["variant"])}
    table = result.table
    # Per sentence and variant, the words right (the claims' paired bootstrap): they add up to
    # each variant's accuracy.
    correct, words = result.arrays["unit_correct"], result.arrays["unit_total"]
    assert correct.shape == (len(table), len(words)) and words.sum() > 0
    assert 100 * correct.sum(axis=1) / words.sum() == pytest.approx(table["accuracy"].to_numpy())
    assert table["variant"].iloc[0] == "unablated" and table["accuracy"].between(0, 100).all()
    assert {"accuracy", "loss", "accuracy_pct_of_attention"} <= set(table.columns)
    assert result.caption.startswith(f"Task model tiny_upos ({tmp_path / 'tagger'}, 2x2 heads); UPOS tagging, "
                                     "tb test split, ")
    assert "(the task model itself). Removed weights not renormalised. Floors: accuracy " in result.caption
    assert result.caption.endswith("; deviations: UPOS tagging instead of SQuAD, a smaller model.")
    result.save(tmp_path / "grid.npz")
    back = Result.load(tmp_path / "grid.npz")
    assert back.caption == result.caption and back.attrs["metric"] == "accuracy"
    assert back.table["variant"].tolist() == table["variant"].tolist()
