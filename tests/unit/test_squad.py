"""SQuAD v1.1: the reader, the official metric, windows and the ablation path."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from headatlas.errors import CorpusFormatError
from headatlas.tasks.squad import (exact_match_score, f1_score, metric_max_over_ground_truths,
                                   normalize_answer, read_squad, squad_evaluate)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"


def raises_at(path: Path, line: int, problem: str):
    """Expect a CorpusFormatError whose message starts with ``path:line: problem``."""
    return pytest.raises(CorpusFormatError, match="^" + re.escape(f"{path}:{line}: {problem}"))


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
