"""SQuAD v1.1: reading, the official v1.1 evaluation.

:func:`read_squad` reads the JSON; :func:`squad_evaluate` is a faithful
port of ``evaluate-v1.1.py`` (exact match and F1 over normalised answers).
Malformed input raises :class:`CorpusFormatError` starting with ``file:line``.
"""

from __future__ import annotations

import json
import logging
import re
import string
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from headatlas.errors import CorpusFormatError

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------
# reading and the official metric
# ----------------------------------------------------------------------------

@dataclass
class SquadExample:
    """One SQuAD question with its paragraph and gold answers (text, character offset)."""

    id: str
    title: str
    context: str
    question: str
    answers: list[str]
    answer_starts: list[int]


def read_squad(path: str | Path) -> list[SquadExample]:
    """Read a SQuAD v1.1 JSON file (``{"data": [{"title", "paragraphs": [...]}]}``).

    Every question must have at least one answer (v2.0's unanswerable
    questions are not supported).
    """
    path = Path(path)
    try:
        dataset = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as err:
        raise CorpusFormatError(path, err.lineno, f"not valid JSON ({err.msg})",
                                "check that the download is complete") from err
    examples: list[SquadExample] = []
    try:
        for a, article in enumerate(dataset["data"]):
            title = article["title"]
            for p, paragraph in enumerate(article["paragraphs"]):
                examples += _squad_paragraph(path, title, paragraph, f"data[{a}].paragraphs[{p}]")
    except (KeyError, TypeError) as err:
        raise CorpusFormatError(path, 0, f"not SQuAD v1.1 JSON: missing or malformed {err}",
                                "expected {'data': [{'title', 'paragraphs': [{'context', "
                                "'qas': [{'id', 'question', 'answers'}]}]}]}") from err
    if not examples:
        raise CorpusFormatError(path, 0, "no questions", "check that this is a SQuAD v1.1 file")
    return examples


def _squad_paragraph(path: Path, title: str, paragraph: dict, where: str) -> list[SquadExample]:
    examples = []
    for q, qa in enumerate(paragraph["qas"]):
        if not qa["answers"]:
            raise CorpusFormatError(path, 0, f"{where}.qas[{q}] (id {qa['id']}) has no answer",
                                    "SQuAD v1.1 is expected; v2.0 unanswerable questions are "
                                    "not supported")
        examples.append(SquadExample(
            id=qa["id"], title=title, context=paragraph["context"], question=qa["question"],
            answers=[answer["text"] for answer in qa["answers"]],
            answer_starts=[answer["answer_start"] for answer in qa["answers"]]))
    return examples


_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (official v1.1)."""
    text = s.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token-level F1 of the normalised answers against one gold answer (official v1.1)."""
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    """Whether the normalised answers are equal (official v1.1)."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def metric_max_over_ground_truths(metric_fn: Callable[[str, str], float], prediction: str,
                                  ground_truths: list[str]) -> float:
    """Best score of ``prediction`` over the gold answers (official v1.1)."""
    return max(metric_fn(prediction, ground_truth) for ground_truth in ground_truths)


def squad_evaluate(examples: list[SquadExample], predictions: dict[str, str]) -> dict[str, float]:
    """Official SQuAD v1.1 exact match and F1, in percent, over all ``examples``.

    A question without a prediction scores 0 (one warning lists them);
    predictions for unknown ids are ignored, as in ``evaluate-v1.1.py``.
    """
    if not examples:
        raise ValueError("squad_evaluate needs at least one example")
    exact_match = f1 = 0.0
    missing = [example.id for example in examples if example.id not in predictions]
    for example in examples:
        if example.id in predictions:
            prediction = predictions[example.id]
            exact_match += metric_max_over_ground_truths(exact_match_score, prediction,
                                                         example.answers)
            f1 += metric_max_over_ground_truths(f1_score, prediction, example.answers)
    if missing:
        log.warning("%d unanswered question(s) will receive score 0: %s", len(missing),
                    ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    return {"exact_match": 100.0 * exact_match / len(examples), "f1": 100.0 * f1 / len(examples)}
