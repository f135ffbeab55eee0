"""SQuAD v1.1: the reader, the official metric, windows and the ablation path."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from headatlas.interventions.ablation import plan, run_grid, variants
from headatlas.errors import CorpusFormatError
from headatlas.interventions.grid import load_task_model
from headatlas.tasks.squad import (_pad_windows, ablation_evaluator, exact_match_score, f1_score,
                                   metric_max_over_ground_truths, normalize_answer, read_squad,
                                   sentence_starts, squad_evaluate, squad_task, squad_windows)
from tests.conftest import make_tiny_model, raises_at

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
# Heads of the tiny 2 x 2 model, 1-based: 1-1 diagonal, 1-2 dense, 2-1 dense, 2-2 vertical.
TYPES = np.array([["diagonal", "dense"], ["dense", "vertical"]], dtype=object)


# --- reading and the official metric -----------------------------------------------------

def test_read_squad():
    q1, q2 = read_squad(FIXTURES / "squad_v1.1_sample.json")
    assert (q1.id, q1.title, q1.question) == ("q1", "Eiffel_Tower", "What tower is in Paris?")
    assert q1.answers == ["The Eiffel Tower", "Eiffel Tower"] and q1.answer_starts == [0, 4]
    assert (q2.answers, q2.answer_starts) == (["1889"], [79])
    for example in (q1, q2):
        for text, start in zip(example.answers, example.answer_starts):
            assert example.context[start:start + len(text)] == text


def test_read_squad_errors(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"data": [\n  {"title": "x",\n  oops}]}', encoding="utf-8")
    with raises_at(broken, 3, "not valid JSON"):
        read_squad(broken)
    unanswerable = tmp_path / "v2.json"
    unanswerable.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [
        {"context": "c", "qas": [{"id": "q", "question": "?", "answers": []}]}]}]}))
    with pytest.raises(CorpusFormatError, match="has no answer"):
        read_squad(unanswerable)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"data": [{"paragraphs": []}]}))
    with pytest.raises(CorpusFormatError, match="missing or malformed 'title'"):
        read_squad(wrong)
    wrong.write_text(json.dumps({"data": []}))
    with pytest.raises(CorpusFormatError, match="no questions"):
        read_squad(wrong)


def _v11(qa: dict | None = None, context: str = "Paris is big.", **article) -> dict:
    qa = qa if qa is not None else {"id": "q", "question": "What?", "answers": [{"text": "Paris", "answer_start": 0}]}
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [qa]}], **article}]}


@pytest.mark.parametrize("content, problem", [
    # JSON Lines: one record per line (a common export)
    ('{"id": "q1", "context": "c", "question": "?"}\n{"id": "q2", "context": "c", "question": "?"}\n',
     r"wrong\.json:2: JSON Lines"),
    # the Hugging Face `datasets` export: a list of flat per-question records
    (json.dumps([{"id": "q", "title": "t", "context": "c", "question": "?",
                  "answers": {"text": ["c"], "answer_start": [0]}}]),
     r"a JSON list at the top, not a SQuAD v1\.1 object \(one record per question"),
    (json.dumps({"version": "v2.0", "data": []}), r"SQuAD version 'v2\.0', not 1\.1"),
    (json.dumps({"questions": []}), r"missing or malformed 'data' \(found \['questions'\]\)"),
    (json.dumps({"data": {"title": "t"}}), r"data: expected a list, found dict"),
    (json.dumps({"data": ["t"]}), r"data\[0\]: expected an object, found str"),
    (json.dumps({"data": [{"title": "t", "paragraphs": {"context": "c"}}]}),
     r"data\[0\]\.paragraphs: expected a list, found dict"),
    (json.dumps(_v11(context=["Paris", "is", "big"])), r"data\[0\]\.paragraphs\[0\]\.context: expected a string"),
    (json.dumps(_v11({"id": "q", "question": "?", "answers": {"text": ["Paris"], "answer_start": [0]}})),
     r"qas\[0\]\.answers: expected a list, found dict \(an object of lists, as in the Hugging Face"),
    (json.dumps(_v11({"id": "q", "question": "?", "answers": ["Paris"]})),
     r"qas\[0\]\.answers\[0\]: expected an object, found str"),
    (json.dumps(_v11({"id": "q", "question": "?", "answers": [{"text": "Paris", "answer_start": "0"}]})),
     r"answers\[0\]\.answer_start: expected an integer, found str"),
    (json.dumps(_v11({"id": "q", "question": "?", "answers": [{"text": "Paris", "answer_start": 99}]})),
     r"answers\[0\]\.answer_start: 99 is outside its context \(13 characters\)"),
    (json.dumps(_v11({"id": "q", "question": "?", "answers": [{"answer_start": 0}]})),
     r"missing or malformed 'text' in data\[0\]\.paragraphs\[0\]\.qas\[0\]\.answers\[0\]"),
    (json.dumps(_v11({"id": "q", "question": "?", "is_impossible": True,
                      "answers": [{"text": "Paris", "answer_start": 0}]})), r"is marked is_impossible \(SQuAD v2\.0\)"),
    (json.dumps({"data": _v11()["data"] * 2}), r"1 question id\(s\) occur more than once \(q\)"),
])
def test_read_squad_names_the_file_and_what_was_expected(tmp_path, content, problem):
    """Every shape that is not SQuAD v1.1 stops naming the file, where, and the expected shape."""
    wrong = tmp_path / "wrong.json"
    wrong.write_text(content, encoding="utf-8")
    with pytest.raises(CorpusFormatError, match=r"^" + str(wrong).replace(".", r"\.") + r"(:\d+)?: ") as err:
        read_squad(wrong)
    assert re.search(problem, str(err.value)), str(err.value)
    if "occur more than once" not in problem and "no answer" not in problem:
        assert "how to fix:" in str(err.value)


def test_read_squad_accepts_integer_ids_and_warns_on_misaligned_answers(tmp_path, caplog):
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(_v11({"id": 7, "question": "?", "answers": [{"text": "Paris", "answer_start": 1}]})))
    with caplog.at_level(logging.WARNING):
        (example,) = read_squad(path)
    assert example.id == "7" and "1 answer(s) not found at their answer_start" in caplog.text


def test_normalize_answer():
    # lower -> strip punctuation -> drop a/an/the -> collapse whitespace
    assert normalize_answer("The  Eiffel-Tower, an icon!") == "eiffeltower icon"
    assert normalize_answer("Theory") == "theory"  # articles only as whole words


def test_exact_match_and_f1_by_hand():
    assert exact_match_score("the Eiffel Tower", "Eiffel Tower!")
    assert not exact_match_score("Eiffel", "Eiffel Tower")
    # pred [in, 1889, it, was], gold [1889]: P = 1/4, R = 1, F1 = 2 * 0.25 / 1.25 = 0.4
    assert f1_score("in 1889 it was", "1889") == pytest.approx(0.4)
    # the hyphen is deleted, not split: gold [wroughtiron, lattice, tower],
    # pred [wrought, iron, tower] ("a" dropped): only "tower" shared, F1 = 1/3
    assert f1_score("a wrought iron tower", "wrought-iron lattice tower") == pytest.approx(1 / 3)
    assert f1_score("nothing", "1889") == 0
    assert metric_max_over_ground_truths(f1_score, "Eiffel", ["The Eiffel Tower", "Paris"]) \
        == pytest.approx(2 / 3)  # P = 1, R = 1/2


def test_squad_evaluate_by_hand(caplog):
    examples = read_squad(FIXTURES / "squad_v1.1_sample.json")
    scores = squad_evaluate(examples, {"q1": "Eiffel Tower!", "q2": "in 1889 it was"})
    # q1: EM 1, F1 1; q2: EM 0, F1 0.4 -> EM 50 %, F1 70 %
    assert scores == {"exact_match": pytest.approx(50.0), "f1": pytest.approx(70.0)}
    with caplog.at_level(logging.WARNING, logger="headatlas.tasks.squad"):
        scores = squad_evaluate(examples, {"q1": "the eiffel tower", "unknown": "x"})
    assert scores == {"exact_match": pytest.approx(50.0), "f1": pytest.approx(50.0)}
    assert "1 unanswered question(s) will receive score 0: q2" in caplog.text


# --- windows, predictions, the ablation path ------------------------------------------------

def test_sentence_starts():
    assert sentence_starts("It rained. Then (he) left! \"Yes.\" 3 more. end") == [0, 11, 27, 34]


@pytest.fixture(scope="module")
def tiny_qa(tmp_path_factory):
    """A tiny random BertForQuestionAnswering with the tiny WordPiece tokenizer."""
    from transformers import AutoConfig, BertForQuestionAnswering

    folder = make_tiny_model(tmp_path_factory.mktemp("tiny-qa"), layers=2, heads=2)
    torch.manual_seed(1)
    BertForQuestionAnswering(AutoConfig.from_pretrained(folder)).save_pretrained(folder)
    return load_task_model("squad", str(folder), device="cpu")


def test_squad_windows_mark_question_and_context_sentences(tiny_qa):
    _, tokenizer = tiny_qa
    examples = read_squad(FIXTURES / "squad_v1.1_sample.json")
    windows = squad_windows(tokenizer, examples, max_length=24, stride=8)
    assert len(windows) > len(examples)  # the context does not fit in 24: several windows
    for window in windows:
        ids = window.sentence_ids
        assert ids[0] == -1 and ids[-1] == -1 and set(ids) <= {-1, 0, 1, 2}
        # the question is sentence 0; context tokens carry their context sentence (1 or 2)
        first_context = next(i for i, s in enumerate(window.spans) if s is not None)
        assert set(ids[1:first_context - 1]) == {0} and ids[first_context] >= 1
    # The context's second sentence starts at "It was": its tokens are sentence 2.
    second = examples[0].context.index("It was")
    last = windows[-1]
    assert {s for s, span in zip(last.sentence_ids, last.spans) if span and span[0] >= second} == {2}


def test_squad_path_end_to_end(tiny_qa):
    model, tokenizer = tiny_qa
    examples = read_squad(FIXTURES / "squad_v1.1_sample.json")
    score = squad_task(model, tokenizer, examples, batch_size=2, max_length=24, stride=8)
    grid = [v for v in variants() if v.paper_id in ("1", "3", "9", "12", "19")]
    table = run_grid(lambda actions: score(plan(actions)), TYPES, "f1", grid=grid, progress=False)
    assert list(table["paper_id"]) == ["1", "3", "9", "12", "19"]
    for column in ("exact_match", "f1"):
        assert table[column].between(0, 100).all()
    assert table.loc[0, "paper_f1"] == 89.68


def test_pad_windows_by_hand(tiny_qa):
    _, tokenizer = tiny_qa
    windows = squad_windows(tokenizer, read_squad(FIXTURES / "squad_v1.1_sample.json"),
                            max_length=24, stride=8)
    short = min(windows, key=lambda w: len(w.input_ids))
    long = max(windows, key=lambda w: len(w.input_ids))
    inputs, sentence_ids = _pad_windows([long, short], pad_id=0)
    n, width = len(short.input_ids), len(long.input_ids)
    assert list(inputs) == ["input_ids", "token_type_ids", "attention_mask"]
    assert inputs["input_ids"][1].tolist() == short.input_ids + [0] * (width - n)
    assert inputs["token_type_ids"][1].tolist() == short.token_type_ids + [0] * (width - n)
    assert inputs["attention_mask"][1].tolist() == [1] * n + [0] * (width - n)
    assert sentence_ids[1].tolist() == short.sentence_ids + [-1] * (width - n)


def test_ablation_evaluator_describes_the_windows(tiny_qa):
    model, tokenizer = tiny_qa
    path = FIXTURES / "squad_v1.1_sample.json"
    evaluate, described = ablation_evaluator(model, tokenizer, read_squad(path), source=path, max_examples=1,
                                             batch_size=2, max_length=24, stride=8)
    assert described == (f"SQuAD v1.1 ({path}), 1 questions, windows of 24 wordpieces (stride 8); "
                         "context sentences split at . ! ? before a capital")
    scores = evaluate(plan(torch.zeros((2, 2), dtype=torch.long)))
    assert set(scores) == {"exact_match", "f1", "units"}
    f1, questions = scores["units"]  # per question: its F1 (0-1) over 1, the headline metric's units
    assert questions.tolist() == [1.0] and 100 * f1.sum() / questions.sum() == pytest.approx(scores["f1"])


def test_a_misaligned_answer_is_named_by_its_json_path_and_stops_a_strict_read(tmp_path, caplog):
    path = tmp_path / "shifted.json"
    path.write_text(json.dumps(_v11({"id": "q7", "question": "?",
                                     "answers": [{"text": "Paris", "answer_start": 0},
                                                 {"text": "big", "answer_start": 3}]})))
    with caplog.at_level(logging.WARNING):
        read_squad(path)
    assert "1 of 2 answer(s) not found at their answer_start: data[0].paragraphs[0].qas[0].answers[1] " \
           "(id q7): 'big' is not at 3 ('is ' is)" in caplog.text
    with pytest.raises(CorpusFormatError, match=r"(?s)qas\[0\]\.answers\[1\].*correct each answer_start"):
        read_squad(path, strict=True)


def test_the_strict_option_reaches_the_reader_and_not_the_evaluator(tmp_path):
    from headatlas.tasks import TASKS

    squad = TASKS["squad"]
    path = tmp_path / "shifted.json"
    path.write_text(json.dumps(_v11({"id": "q", "question": "?", "answers": [{"text": "big", "answer_start": 3}]})))
    with pytest.raises(CorpusFormatError):
        squad.read(path, {"strict": True, "stride": 128})
    assert squad.code_options({"strict": True, "stride": 128}) == {"stride": 128}
