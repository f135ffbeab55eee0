"""SQuAD v1.1: reading, the official evaluation, model inputs and span prediction.

:func:`read_squad` reads the JSON (malformed input raises
:class:`CorpusFormatError` starting with ``file:line``); :func:`squad_evaluate`
is a faithful port of ``evaluate-v1.1.py`` (exact match and F1 over
normalised answers). :func:`squad_windows` tokenises question + context into
overlapping windows that record each token's sentence (question 0, context
sentences 1..), :func:`squad_predictions` picks the best span per question,
and :func:`squad_task` / :func:`ablation_evaluator` (the task's evaluator,
:data:`headatlas.tasks.TASKS` ``["squad"]``) score a QA model with each batch's
extra forward arguments (e.g. a head-type ablation's plan).
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

import numpy as np
import torch

from headatlas.encoders.batching import pad_batch, to_device
from headatlas.errors import CorpusFormatError
from headatlas.tasks.base import UNITS
from headatlas.encoders.models import takes_token_types

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
    where: str = ""  # its JSON path in the file, data[i].paragraphs[j].qas[k]


V11_SHAPE = ("{'version': '1.1', 'data': [{'title': str, 'paragraphs': [{'context': str, 'qas': "
             "[{'id': str, 'question': str, 'answers': [{'text': str, 'answer_start': int}, ...]}]}]}]}")
_FIX = f"a SQuAD v1.1 file (e.g. the official dev-v1.1.json) is expected: {V11_SHAPE}"


def read_squad(path: str | Path, strict: bool = False) -> list[SquadExample]:
    """Read a SQuAD v1.1 JSON file (``{"data": [{"title", "paragraphs": [...]}]}``).

    Every question must have at least one answer (v2.0's unanswerable
    questions are not supported). Anything not v1.1-shaped stops with a
    :class:`CorpusFormatError` naming the file, the JSON location and what was
    expected there: JSON Lines, a top-level list or flat per-question records
    (the Hugging Face ``datasets`` export), a v2.0 file, ``answers`` as an
    object of lists, a field of the wrong type, an ``answer_start`` outside its
    context, duplicate question ids. An answer whose text is not found at its
    ``answer_start`` is logged with its JSON path, not refused (the official script never reads
    the offsets, but the importance loss points at them); ``strict`` refuses it.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8-sig")
    try:
        dataset = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data" and _is_json(text.splitlines()[0] if text.strip() else ""):
            raise CorpusFormatError(path, err.lineno, "JSON Lines (one JSON record per line), not a SQuAD "
                                    "v1.1 JSON document", _FIX) from err
        raise CorpusFormatError(path, err.lineno, f"not valid JSON ({err.msg})",
                                "check that the download is complete") from err
    if isinstance(dataset, list):
        flat = bool(dataset) and isinstance(dataset[0], dict) and {"context", "question"} <= set(dataset[0])
        raise CorpusFormatError(path, 0, "a JSON list at the top, not a SQuAD v1.1 object"
                                + (" (one record per question: the Hugging Face `datasets` layout)"
                                   if flat else ""), _FIX)
    if not isinstance(dataset, dict) or "data" not in dataset:
        found = sorted(dataset)[:8] if isinstance(dataset, dict) else type(dataset).__name__
        raise CorpusFormatError(path, 0, f"not SQuAD v1.1 JSON: missing or malformed 'data' (found {found})",
                                _FIX)
    version = str(dataset.get("version", "1.1")).lstrip("v")
    if not version.startswith("1."):
        raise CorpusFormatError(path, 0, f"SQuAD version {dataset['version']!r}, not 1.1",
                                "SQuAD v1.1 is expected (its official EM/F1); v2.0 with unanswerable "
                                "questions is not supported: use dev-v1.1.json")
    examples: list[SquadExample] = []
    try:
        articles = _expect(path, dataset["data"], list, "data")
        for a, article in enumerate(articles):
            where = f"data[{a}]"
            article = _expect(path, article, dict, where)
            title = _expect(path, _field(path, article, "title", where), str, f"{where}.title")
            paragraphs = _expect(path, _field(path, article, "paragraphs", where), list, f"{where}.paragraphs")
            for p, paragraph in enumerate(paragraphs):
                examples += _squad_paragraph(path, title, paragraph, f"{where}.paragraphs[{p}]")
    except (KeyError, TypeError) as err:  # defensive: every access above is checked
        raise CorpusFormatError(path, 0, f"not SQuAD v1.1 JSON: missing or malformed {err}", _FIX) from err
    if not examples:
        raise CorpusFormatError(path, 0, "no questions", "check that this is a SQuAD v1.1 file")
    seen: dict[str, int] = Counter(e.id for e in examples)
    repeated = sorted(i for i, n in seen.items() if n > 1)
    if repeated:
        raise CorpusFormatError(path, 0, f"{len(repeated)} question id(s) occur more than once "
                                f"({', '.join(repeated[:5])}): predictions are keyed by id",
                                "SQuAD v1.1 gives every question its own id; was a file concatenated?")
    misaligned = misaligned_answers(examples)
    if misaligned:
        n_answers = sum(len(e.answers) for e in examples)
        shown = "; ".join(misaligned[:5]) + ("; ..." if len(misaligned) > 5 else "")
        message = (f"{len(misaligned)} of {n_answers} answer(s) not found at their answer_start: "
                   f"{shown}")
        fix = ("correct each answer_start to where its text begins in the context (the official "
               "dev-v1.1.json has none wrong)")
        if strict:
            raise CorpusFormatError(path, 0, message, fix)
        log.warning("%s: %s (the EM/F1 score never reads the offsets; the importance loss points at "
                    "those positions: %s, or set `ablation.squad.strict: true` to stop on them)",
                    path, message, fix)
    return examples


def misaligned_answers(examples: Sequence[SquadExample]) -> list[str]:
    """Each answer whose text is not at its ``answer_start``: its JSON path and what is there."""
    found = []
    for e in examples:
        for k, (text, start) in enumerate(zip(e.answers, e.answer_starts)):
            there = e.context[start:start + len(text)]
            if there != text:
                found.append(f"{e.where}.answers[{k}] (id {e.id}): {text!r} is not at {start} "
                             f"({there!r} is)")
    return found


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


_TYPE_NAMES = {list: "a list", dict: "an object", str: "a string", int: "an integer"}


def _expect(path: Path, value, kind: type, where: str):
    """``value`` if it is a ``kind`` (an int is never a bool), else a CorpusFormatError naming ``where``."""
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    found = type(value).__name__ if value is not None else "null"
    hint = ""
    if where.endswith(".answers") and isinstance(value, dict):
        hint = " (an object of lists, as in the Hugging Face `datasets` layout)"
    raise CorpusFormatError(path, 0, f"{where}: expected {_TYPE_NAMES[kind]}, found {found}{hint}", _FIX)


def _field(path: Path, record: dict, key: str, where: str):
    if key not in record:
        raise CorpusFormatError(path, 0, f"not SQuAD v1.1 JSON: missing or malformed {key!r} in {where} "
                                f"(it has {sorted(record)[:8]})", _FIX)
    return record[key]


def _squad_paragraph(path: Path, title: str, paragraph, where: str) -> list[SquadExample]:
    paragraph = _expect(path, paragraph, dict, where)
    context = _expect(path, _field(path, paragraph, "context", where), str, f"{where}.context")
    examples = []
    for q, qa in enumerate(_expect(path, _field(path, paragraph, "qas", where), list, f"{where}.qas")):
        at = f"{where}.qas[{q}]"
        qa = _expect(path, qa, dict, at)
        qid = _field(path, qa, "id", at)
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        qid = _expect(path, qid, str, f"{at}.id")
        question = _expect(path, _field(path, qa, "question", at), str, f"{at}.question")
        if qa.get("is_impossible"):
            raise CorpusFormatError(path, 0, f"{at} (id {qid}) is marked is_impossible (SQuAD v2.0)",
                                    "SQuAD v1.1 is expected; v2.0 unanswerable questions are not supported")
        answers = _expect(path, _field(path, qa, "answers", at), list, f"{at}.answers")
        if not answers:
            raise CorpusFormatError(path, 0, f"{at} (id {qid}) has no answer",
                                    "SQuAD v1.1 is expected; v2.0 unanswerable questions are "
                                    "not supported")
        texts, starts = [], []
        for k, answer in enumerate(answers):
            here = f"{at}.answers[{k}]"
            answer = _expect(path, answer, dict, here)
            texts.append(_expect(path, _field(path, answer, "text", here), str, f"{here}.text"))
            start = _expect(path, _field(path, answer, "answer_start", here), int, f"{here}.answer_start")
            if not 0 <= start < max(len(context), 1):
                raise CorpusFormatError(path, 0, f"{here}.answer_start: {start} is outside its context "
                                        f"({len(context)} characters)", _FIX)
            starts.append(start)
        examples.append(SquadExample(id=qid, title=title, context=context, question=question,
                                     answers=texts, answer_starts=starts, where=at))
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


def squad_evaluate(examples: list[SquadExample], predictions: dict[str, str], units: bool = False) -> dict:
    """Official SQuAD v1.1 exact match and F1, in percent, over all ``examples``.

    A question without a prediction scores 0 (one warning lists them);
    predictions for unknown ids are ignored, as in ``evaluate-v1.1.py``. ``units``: also
    :data:`~headatlas.tasks.base.UNITS`, each question's F1 (0-1) over 1.
    """
    if not examples:
        raise ValueError("squad_evaluate needs at least one example")
    exact_match = 0.0
    f1 = np.zeros(len(examples))
    missing = [example.id for example in examples if example.id not in predictions]
    for i, example in enumerate(examples):
        if example.id in predictions:
            prediction = predictions[example.id]
            exact_match += metric_max_over_ground_truths(exact_match_score, prediction,
                                                         example.answers)
            f1[i] = metric_max_over_ground_truths(f1_score, prediction, example.answers)
    if missing:
        log.warning("%d unanswered question(s) will receive score 0: %s", len(missing),
                    ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    scores = {"exact_match": 100.0 * exact_match / len(examples),
              "f1": 100.0 * sum(f1.tolist()) / len(examples)}  # summed in order, as the official script
    return {**scores, UNITS: (f1, np.ones(len(examples)))} if units else scores


# ----------------------------------------------------------------------------
# model inputs, span prediction, the task under an ablation
# ----------------------------------------------------------------------------

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
        out = model(**to_device(inputs, device), **extra)
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


def squad_task(model, tokenizer, examples: Sequence, batch_size: int = 32, max_length: int = 384,
               stride: int = 128, max_answer_length: int = 30
               ) -> Callable[[Callable | None], dict[str, float]]:
    """``evaluate(batch_kwargs)`` -> official SQuAD v1.1 exact match and F1 (%) on ``examples``.

    ``batch_kwargs(sentence_ids)`` gives each batch's extra forward arguments (an intervention's),
    or None for the plain forward.
    """
    windows = squad_windows(tokenizer, examples, max_length, stride)
    log.info("%d questions -> %d windows of <= %d wordpieces", len(examples), len(windows), max_length)

    def evaluate(batch_kwargs: Callable | None = None) -> dict[str, float]:
        predictions = squad_predictions(model, windows, examples, batch_size, batch_kwargs,
                                        max_answer_length)
        return squad_evaluate(examples, predictions, units=True)

    return evaluate


def ablation_evaluator(model, tokenizer, examples: Sequence[SquadExample], *, source: str | Path = "",
                       max_examples: int | None = None, batch_size: int = 32, max_length: int = 384,
                       stride: int = 128, max_answer_length: int = 30
                       ) -> tuple[Callable[[Callable | None], dict[str, float]], str]:
    """The QA model's evaluation on the first ``max_examples`` of ``examples``, and its description.

    The task's evaluator (:data:`headatlas.tasks.TASKS`, the contract of
    :mod:`headatlas.tasks.base`): ``examples`` are :func:`read_squad`'s, ``source`` the file
    they come from (named in the description); ``max_length``, ``stride`` and
    ``max_answer_length`` (the config's ``ablation.squad``) shape the windows and answers.
    """
    examples = list(examples)[:max_examples]
    data = (f"SQuAD v1.1 ({source}), {len(examples)} questions, windows of "
            f"{max_length} wordpieces (stride {stride}); context sentences "
            "split at . ! ? before a capital")
    return squad_task(model, tokenizer, examples, batch_size, max_length, stride,
                      max_answer_length), data
