"""Readers for the paper's own (licensed) corpora, given by path in the config.

- PTB WSJ converted to Stanford Dependencies, as CoNLL-X (:func:`read_conllx`);
- CoNLL-2012 / OntoNotes ``*_gold_conll`` files (:func:`read_conll2012`);
- SQuAD v1.1 JSON (:func:`read_squad`) and the official v1.1 evaluation
  (:func:`squad_evaluate`, a faithful port of ``evaluate-v1.1.py``).

Malformed input raises :class:`CorpusFormatError` starting with ``file:line``.
"""

from __future__ import annotations

import json
import logging
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from headatlas.corpora.conllu_reader import (
    MentionTracker,
    parse_block,
    read_lines,
    read_token_blocks,
)
from headatlas.corpora.records import Sentence
from headatlas.errors import CorpusFormatError

log = logging.getLogger(__name__)

CONLLX_FIELDS = ("id", "form", "lemma", "cpostag", "postag", "feats", "head", "deprel",
                 "phead", "pdeprel")


# ----------------------------------------------------------------------------
# CoNLL-X (PTB -> Stanford Dependencies)
# ----------------------------------------------------------------------------

def read_conllx(path: str | Path) -> list[Sentence]:
    """Read a CoNLL-X dependency file (e.g. PTB WSJ converted to Stanford Dependencies).

    Columns: ID FORM LEMMA CPOSTAG POSTAG FEATS HEAD DEPREL PHEAD PDEPREL.
    ``upos`` is CPOSTAG and ``xpos`` POSTAG (the same tag for a PTB
    conversion). ``doc`` is the file stem, ``id`` is ``# sent_id`` if present,
    else ``<stem>-<k>``. Validation as for CoNLL-U, except that every ID must
    be a word ID (CoNLL-X has no multiword ranges or empty nodes).
    """
    path = Path(path)
    sentences = []
    for k, block in enumerate(read_token_blocks(path, subtokens=False), 1):
        tokens = parse_block(path, block, CONLLX_FIELDS)
        sentences.append(Sentence(
            id=tokens.metadata.get("sent_id") or f"{path.stem}-{k}",
            words=[token["form"] for token in tokens],
            doc=path.stem,
            heads=[token["head"] for token in tokens],
            rels=[token["deprel"] for token in tokens],
            upos=[token["cpostag"] for token in tokens],
            xpos=[token["postag"] for token in tokens],
            feats=[token["feats"] for token in tokens],
            source=f"{path}:{block.start}",
        ))
    return sentences


# ----------------------------------------------------------------------------
# CoNLL-2012 *_gold_conll
# ----------------------------------------------------------------------------

_BEGIN = re.compile(r"#begin document \(?(?P<name>.+?)\)?; part (?P<part>\d+)\s*")
# document id, part, word number, word, POS, parse bit, lemma, frameset, sense,
# speaker, named entities, [predicate arguments...], coreference
_MIN_COLUMNS = 12
_WORD, _POS, _PARSE, _SPEAKER = 3, 4, 5, 9


def read_conll2012(path: str | Path) -> list[Sentence]:
    """Read a CoNLL-2012 ``*_gold_conll`` file (OntoNotes coreference).

    Each ``#begin document (name); part NNN`` ... ``#end document`` block is a
    document ``doc = "name/NNN"``; sentences are separated by blank lines and
    their ids are ``<doc>-<k>``. ``xpos`` is the POS column; ``heads`` and
    ``rels`` are None (the format has constituency parse bits, not
    dependencies). ``meta["parse"]`` holds the parse bits, ``meta["speaker"]``
    the speaker (per sentence in OntoNotes; taken from the first word).
    Mentions come from the last column (``(12``, ``12)``, ``(12)``, joined by
    ``|``, ``-`` for none), matched as in :class:`MentionTracker`, including
    ``meta["cross_sentence_mentions"]``.
    """
    return _Conll2012Reader(Path(path)).read()


@dataclass
class _Conll2012Reader:
    """Line-by-line state of :func:`read_conll2012`."""

    path: Path
    sentences: list[Sentence] = field(default_factory=list)
    doc: str | None = None
    begin_line: int = 0
    n_in_doc: int = 0
    rows: list[tuple[int, list[str]]] = field(default_factory=list)  # (line, columns)

    def __post_init__(self):
        self.tracker = MentionTracker(self.path)

    def read(self) -> list[Sentence]:
        lines = read_lines(self.path)
        for lineno, line in enumerate(lines, 1):
            if line.startswith("#begin document"):
                self._begin(lineno, line)
            elif line.startswith("#end document"):
                self._end(lineno)
            elif not line.strip():
                self._flush()
            elif not line.startswith("#"):
                self._row(lineno, line)
        if self.doc is not None:
            raise CorpusFormatError(self.path, self.begin_line,
                                    f"document {self.doc} has no '#end document' line",
                                    "the file may be truncated; download it again")
        if not self.sentences:
            raise CorpusFormatError(self.path, 1, "the file has no sentences",
                                    "check that this is a *_gold_conll file")
        return self.sentences

    def _begin(self, lineno: int, line: str) -> None:
        match = _BEGIN.fullmatch(line)
        if not match:
            raise CorpusFormatError(self.path, lineno, "malformed '#begin document' line",
                                    "expected '#begin document (NAME); part NNN'")
        if self.doc is not None:
            raise CorpusFormatError(self.path, lineno,
                                    f"document starts inside document {self.doc}",
                                    "add '#end document' before it")
        self.doc, self.begin_line, self.n_in_doc = f"{match['name']}/{match['part']}", lineno, 0

    def _end(self, lineno: int) -> None:
        if self.doc is None:
            raise CorpusFormatError(self.path, lineno, "'#end document' without a document",
                                    "remove it or add the matching '#begin document' line")
        self._flush()
        self.tracker.end_document()
        self.doc = None

    def _row(self, lineno: int, line: str) -> None:
        if self.doc is None:
            raise CorpusFormatError(self.path, lineno, "token line outside a document",
                                    "put it between '#begin document' and '#end document'")
        cols = line.split()
        if len(cols) < _MIN_COLUMNS:
            raise CorpusFormatError(self.path, lineno,
                                    f"{len(cols)} columns, expected at least {_MIN_COLUMNS}",
                                    "a *_gold_conll line has 11 fixed columns, one per "
                                    "predicate, and the coreference column last")
        if cols[2] != str(len(self.rows)):
            raise CorpusFormatError(self.path, lineno,
                                    f"word number {cols[2]!r} where {len(self.rows)} was expected",
                                    "number the words of each sentence 0, 1, 2, ...; separate "
                                    "sentences by a blank line")
        self.rows.append((lineno, cols))

    def _flush(self) -> None:
        if not self.rows:
            return
        self.n_in_doc += 1
        first_line, first = self.rows[0]
        sentence = Sentence(
            id=f"{self.doc}-{self.n_in_doc}",
            words=[cols[_WORD] for _, cols in self.rows],
            doc=self.doc,
            xpos=[cols[_POS] for _, cols in self.rows],
            mentions=[],
            source=f"{self.path}:{first_line}",
            meta={"parse": [cols[_PARSE] for _, cols in self.rows],
                  "speaker": first[_SPEAKER], "cross_sentence_mentions": 0},
        )
        for index, (lineno, cols) in enumerate(self.rows):
            coref = "" if cols[-1] == "-" else cols[-1].replace("|", "")
            self.tracker.token(coref, lineno, sentence, index)
        self.sentences.append(sentence)
        self.rows = []


# ----------------------------------------------------------------------------
# SQuAD v1.1
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
