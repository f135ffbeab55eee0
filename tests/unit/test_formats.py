"""Readers for the paper's formats (CoNLL-X, CoNLL-2012, SQuAD) and the SQuAD v1.1 metric."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from headatlas.corpora.formats import (
    exact_match_score,
    f1_score,
    metric_max_over_ground_truths,
    normalize_answer,
    read_conll2012,
    read_conllx,
    read_squad,
    squad_evaluate,
)
from headatlas.corpora.records import Mention
from headatlas.errors import CorpusFormatError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"


def raises_at(path: Path, line: int, problem: str):
    """Expect a CorpusFormatError whose message starts with ``path:line: problem``."""
    return pytest.raises(CorpusFormatError, match="^" + re.escape(f"{path}:{line}: {problem}"))


# --- CoNLL-X ----------------------------------------------------------------------

def test_conllx_fixture():
    path = FIXTURES / "ptb_sd.conllx"
    first, second = read_conllx(path)
    assert first.id == "ptb_sd-1" and first.doc == "ptb_sd"
    assert first.words == ["Ms.", "Haag", "plays", "Elianti", "."]
    assert first.heads == [2, 3, 0, 3, 3]
    assert first.rels == ["nn", "nsubj", "root", "dobj", "punct"]
    assert first.upos == first.xpos == ["NNP", "NNP", "VBZ", "NNP", "."]
    assert first.feats == ["_"] * 5
    assert first.mentions is None
    assert second.source == f"{path}:7"
    assert second.rels[1:3] == ["poss", "possessive"] and second.heads[1:3] == [4, 2]


CONLLX = ["1 The _ DT DT _ 2 det _ _",
          "2 dog _ NN NN _ 3 nsubj _ _",
          "3 barks _ VBZ VBZ _ 0 root _ _"]


@pytest.mark.parametrize("line, row, problem", [
    (2, "2 dog _ NN NN _ 3 nsubj _", "9 tab-separated columns"),
    (2, "2 dog _ NN NN _ three nsubj _ _", "HEAD 'three' is not an integer"),
    (2, "2 dog _ NN NN _ 4 nsubj _ _", "HEAD 4 is out of range"),
    (1, "1 The _ DT DT _ 1 det _ _", "word 1 does not reach the root"),
    (2, "2-3 dog _ NN NN _ 3 nsubj _ _", "ID '2-3' is not a word ID"),  # no ranges in CoNLL-X
], ids=["columns", "head not integer", "head out of range", "cycle", "range id"])
def test_malformed_conllx(tmp_path, line, row, problem):
    rows = list(CONLLX)
    rows[line - 1] = row
    path = tmp_path / "bad.conllx"
    path.write_text("\n".join(r.replace(" ", "\t") for r in rows) + "\n", encoding="utf-8")
    with raises_at(path, line, problem):
        read_conllx(path)


def test_empty_conllx(tmp_path):
    path = tmp_path / "empty.conllx"
    path.write_text("", encoding="utf-8")
    with raises_at(path, 1, "the file has no sentences"):
        read_conllx(path)


# --- CoNLL-2012 -------------------------------------------------------------------------

def test_conll2012_fixture():
    path = FIXTURES / "sample.v4_gold_conll"
    first, second = read_conll2012(path)
    doc = "bc/test/00/test_0001/000"
    assert (first.doc, first.id, second.id) == (doc, f"{doc}-1", f"{doc}-2")
    assert first.words == ["John", "met", "his", "sister", "in", "Paris", "."]
    assert first.xpos == ["NNP", "VBD", "PRP$", "NN", "IN", "NNP", "."]
    assert first.heads is None and first.rels is None
    assert first.meta["parse"] == ["(TOP(S(NP*)", "(VP*", "(NP*", "*)", "(PP*", "(NP*)))", "*))"]
    assert (first.meta["speaker"], second.meta["speaker"]) == ("speaker1", "speaker2")
    assert (first.source, second.source) == (f"{path}:2", f"{path}:10")
    # "(1|(0)" on his: [his sister] of 1 and [his] of 0 nested inside it
    assert first.mentions == [Mention("0", [0]), Mention("1", [2, 3]), Mention("0", [2]),
                              Mention("2", [5])]
    assert second.mentions == [Mention("1", [0]), Mention("2", [2, 3])]


GOLD_CONLL = ["#begin document (d); part 000",
              "d 0 0 Dogs NNS (TOP(S(NP*) - - - - * (ARG0*) (1",
              "d 0 1 bark VBP (VP*)) - - - - * (V*) 1)",
              "",
              "#end document"]


def gold(line: int, row: str) -> list[str]:
    rows = list(GOLD_CONLL)
    rows[line - 1] = row
    return rows


BAD_GOLD_CONLL = {
    "columns": (gold(2, "d 0 0 Dogs NNS (TOP(S(NP*) - - - - (1"), 2,
                "11 columns, expected at least 12"),
    "word number": (gold(3, "d 0 2 bark VBP (VP*)) - - - - * (V*) 1)"), 3,
                    "word number '2' where 1 was expected"),
    "unopened mention": (gold(2, "d 0 0 Dogs NNS (TOP(S(NP*) - - - - * (ARG0*) -"), 3,
                         "closes a mention of entity 1 that is not open"),
    "unclosed mention": (gold(3, "d 0 1 bark VBP (VP*)) - - - - * (V*) -"), 2,
                         "mention of entity 1 opens here and is never closed"),
    "nested unclosed": (gold(2, "d 0 0 Dogs NNS (TOP(S(NP*) - - - - * (ARG0*) (1|(2"), 2,
                        "mention of entity 2 opens here and is never closed"),
    "header": (gold(1, "#begin document d"), 1, "malformed '#begin document' line"),
    "no end": (GOLD_CONLL[:4], 1, "document d/000 has no '#end document' line"),
    "outside document": (GOLD_CONLL[1:], 1, "token line outside a document"),
    "empty": ([], 1, "the file has no sentences"),
}


@pytest.mark.parametrize("rows, line, problem", BAD_GOLD_CONLL.values(),
                         ids=BAD_GOLD_CONLL.keys())
def test_malformed_conll2012(tmp_path, rows, line, problem):
    path = tmp_path / "bad_gold_conll"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with raises_at(path, line, problem):
        read_conll2012(path)


# --- SQuAD v1.1 ---------------------------------------------------------------------------

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
    with caplog.at_level(logging.WARNING, logger="headatlas.corpora.formats"):
        scores = squad_evaluate(examples, {"q1": "the eiffel tower", "unknown": "x"})
    assert scores == {"exact_match": pytest.approx(50.0), "f1": pytest.approx(50.0)}
    assert "1 unanswered question(s) will receive score 0: q2" in caplog.text
