"""SQuAD v1.1: reading, the official evaluation, model inputs and span prediction.

:func:`read_squad` reads the JSON (malformed input raises
:class:`CorpusFormatError` starting with ``file:line``); :func:`squad_evaluate`
is a faithful port of ``evaluate-v1.1.py`` (exact match and F1 over
normalised answers). :func:`squad_windows` tokenises question + context into
overlapping windows that record each token's sentence (question 0, context
sentences 1..), :func:`squad_predictions` picks the best span per question,
and :func:`squad_task` / :func:`ablation_evaluator` score a QA model under a
head-type ablation (:mod:`headatlas.ablation`).
"""

from __future__ import annotations

import bisect
import json
import logging
import re
import string
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

from headatlas.batching import pad_batch
from headatlas.errors import CorpusFormatError
from headatlas.models import takes_token_types

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


# ----------------------------------------------------------------------------
# model inputs, span prediction, the task under an ablation
# ----------------------------------------------------------------------------

MAIN_METRIC = "f1"

# A sentence ends at . ! or ? (closing quotes/brackets included) followed by space and a capital,
# digit or opening quote. SQuAD has no sentence annotation; abbreviations ("Mr. Smith") are split.
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def sentence_starts(text: str) -> list[int]:
    """Character offsets where the sentences of ``text`` start (the first is 0)."""
    return [0] + [m.end() for m in _SENTENCE_END.finditer(text)]


@dataclass
class SquadWindow:
    """One model input ``[CLS] question [SEP] context window [SEP]``."""

    example: int  # index into the examples
    input_ids: list[int]
    token_type_ids: list[int]
    spans: list[tuple[int, int] | None]  # character span in the context; None off the context
    sentence_ids: list[int]  # question 0, context sentences 1.., -1 for [CLS]/[SEP]


def squad_windows(tokenizer, examples: Sequence, max_length: int = 384,
                  stride: int = 128) -> list[SquadWindow]:
    """Tokenise SQuAD examples; a long context becomes overlapping windows (``stride`` overlap)."""
    enc = tokenizer([e.question.lstrip() for e in examples], [e.context for e in examples],
                    truncation="only_second", max_length=max_length, stride=stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True,
                    return_token_type_ids=True)
    windows = []
    for i, ids in enumerate(enc["input_ids"]):
        example = enc["overflow_to_sample_mapping"][i]
        starts = sentence_starts(examples[example].context)
        parts = enc.sequence_ids(i)
        offsets = enc["offset_mapping"][i]
        spans = [tuple(o) if part == 1 else None for o, part in zip(offsets, parts)]
        sentences = [-1 if part is None else 0 if part == 0 else bisect.bisect_right(starts, o[0])
                     for o, part in zip(offsets, parts)]
        windows.append(SquadWindow(example, ids, enc["token_type_ids"][i], spans, sentences))
    return windows


@torch.inference_mode()
def squad_predictions(model, windows: Sequence[SquadWindow], examples: Sequence,
                      batch_size: int = 32, extra_inputs: Callable | None = None,
                      max_answer_length: int = 30) -> dict[str, str]:
    """Question id -> answer text: the best-scoring span (start + end logit) over its windows.

    A span lies inside the context, ends at or after its start and is at most
    ``max_answer_length`` tokens long (as in the BERT SQuAD recipe).
    """
    device = next(model.parameters()).device
    best: dict[int, tuple[float, str]] = {}
    token_types = takes_token_types(model)  # DistilBERT, RoBERTa: no segment table to index
    for start in range(0, len(windows), batch_size):
        batch = windows[start:start + batch_size]
        inputs, sentence_ids = _pad_windows(batch, model.config.pad_token_id or 0)
        if not token_types:
            inputs.pop("token_type_ids")
        extra = extra_inputs(sentence_ids.to(device)) if extra_inputs else {}
        out = model(**{k: v.to(device) for k, v in inputs.items()}, **extra)
        for row, window in enumerate(batch):
            score, text = _best_span(out.start_logits[row], out.end_logits[row], window,
                                     examples[window.example].context, max_answer_length)
            if window.example not in best or score > best[window.example][0]:
                best[window.example] = (score, text)
    return {examples[i].id: text for i, (_, text) in best.items()}


def _best_span(start_logits, end_logits, window: SquadWindow, context: str,
               max_answer_length: int) -> tuple[float, str]:
    n = len(window.input_ids)
    inside = torch.tensor([span is not None for span in window.spans], device=start_logits.device)
    scores = start_logits[:n, None] + end_logits[None, :n]  # [start, end]
    order = torch.ones(n, n, dtype=torch.bool, device=scores.device)
    valid = inside[:, None] & inside[None, :] & order.triu() & ~order.triu(max_answer_length)
    if not bool(valid.any()):
        return -float("inf"), ""
    flat = int(scores.masked_fill(~valid, -torch.inf).argmax())
    first, last = divmod(flat, n)
    return float(scores[first, last]), context[window.spans[first][0]:window.spans[last][1]]


def _pad_windows(batch: Sequence[SquadWindow], pad_id: int) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Model inputs ``[batch, width]`` and the windows' ``sentence_ids`` (-1 = special/pad)."""
    inputs = pad_batch(batch, {"input_ids": pad_id, "token_type_ids": 0, "sentence_ids": -1})
    return inputs, inputs.pop("sentence_ids")


def squad_task(model, tokenizer, examples: Sequence, batch_size: int = 32,
               renormalise: bool = False, max_length: int = 384, stride: int = 128,
               max_answer_length: int = 30) -> Callable[[torch.Tensor], dict[str, float]]:
    """``evaluate(actions)`` -> official SQuAD v1.1 exact match and F1 (%) on ``examples``."""
    from headatlas.ablation import plan

    windows = squad_windows(tokenizer, examples, max_length, stride)
    log.info("%d questions -> %d windows of <= %d wordpieces", len(examples), len(windows), max_length)

    def evaluate(actions: torch.Tensor) -> dict[str, float]:
        predictions = squad_predictions(model, windows, examples, batch_size,
                                        plan(actions, renormalise), max_answer_length)
        return squad_evaluate(examples, predictions)

    return evaluate


def ablation_evaluator(model, tokenizer, path: str | Path, max_examples: int | None = None,
                       batch_size: int = 32, renormalise: bool = False, max_length: int = 384,
                       stride: int = 128, max_answer_length: int = 30
                       ) -> tuple[Callable[[torch.Tensor], dict[str, float]], str]:
    """The QA model's evaluation on the first ``max_examples`` questions of ``path``, and its description."""
    examples = read_squad(path)[:max_examples]
    data = (f"SQuAD v1.1 ({path}), {len(examples)} questions, windows of "
            f"{max_length} wordpieces (stride {stride}); context sentences "
            "split at . ! ? before a capital")
    return squad_task(model, tokenizer, examples, batch_size, renormalise, max_length, stride,
                      max_answer_length), data
