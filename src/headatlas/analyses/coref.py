"""Coreference heads (Clark et al. 2019 §4.3, Table 2).

For every mention with an antecedent, a head is correct when the mention's
head word attends most (word-level maps: to = sum over pieces, from = mean;
itself and ``[CLS]``/``[SEP]`` ignored, no renormalisation) to the head word
of one of its antecedents. Three baselines pick one earlier mention: the
nearest, the nearest with the same head word, and four sieves after Lee et
al. (2011). Accuracy is reported overall and by mention type, with the best
head chosen on one split and reported on another (and, as in the paper, on
the same data), and bootstrap 95% intervals over documents.

Conventions (the paper does not spell them out):

* Mention order is the order of head words. A mention *precedes* another
  when its head word comes earlier, so a mention never precedes one that
  shares its head word (a nested span with the same head, e.g. an
  appositive): self-attention is ignored, so such an "antecedent" could
  never be found. Among mentions sharing a head word the innermost
  (shortest) one counts as nearest.
* The head word of a span is the word whose syntactic head lies outside the
  span (a gap word of a discontinuous mention is outside); if several do,
  the leftmost. GUM has gold UD trees; CoNLL-2012 has constituency parses,
  which its reader converts to dependencies with head rules
  (:func:`headatlas.corpora.conll2012.constituency_heads`).
* Mention type from the head word's XPOS: PRP, PRP$, WP, WP$ pronoun;
  NNP, NNPS proper; anything else nominal (demonstratives tagged DT too).
* Full string match compares the lowercased words; number, gender and
  person come from FEATS, a pronoun lexicon and XPOS, and an unknown value
  agrees with anything.
* A head word without wordpieces cannot be a query: its mention is counted
  and left out of the evaluation, for every system alike.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from headatlas.analyses.base import Analysis, describe, register
from headatlas.analyses.result import Result
from headatlas.claims import PAIRED_RULE, Claim, beats_paired, difference_text, holds_if
from headatlas.corpora.records import Sentence, read_jsonl
from headatlas.errors import StoreError
from headatlas.heads import Column, HeadColumns, head_names, is_head_name, parse_head_name
from headatlas.stats import bootstrap_ratio
from headatlas.store.example import Example
from headatlas.store.wordlevel import FROM_MODES, word_level, word_units

log = logging.getLogger(__name__)
MENTION_TYPES = ("pronoun", "proper", "nominal")
KINDS = ("all",) + MENTION_TYPES
BASELINES = ("nearest", "head_match", "rule_based")
# Baselines every system is compared with on the same mentions (paired intervals in Table 2).
PAIRED_BASELINES = ("nearest", "head_match")
SYSTEM_NAMES = {"nearest": "nearest mention", "head_match": "head match",
                "rule_based": "rule-based (4 sieves)", "neural": "neural coref (Wiseman et al. 2015)"}
# Clark et al. (2019) Table 2, CoNLL-2012, BERT-base (METHODS.md). The neural system's 83 is
# on untruncated documents with predicted mentions, "only roughly comparable".
PAPER_HEAD = "5-4"
PAPER_TABLE2 = pd.DataFrame(
    [("nearest", 27, 29, 29, 19), ("head_match", 52, 47, 67, 40),
     ("rule_based", 69, 70, 77, 60), ("neural", 83, np.nan, np.nan, np.nan),
     ("head", 65, 64, 73, 58)],
    columns=["system", *KINDS]).set_index("system")

PRONOUN_TAGS = frozenset({"PRP", "PRP$", "WP", "WP$"})
PROPER_TAGS = frozenset({"NNP", "NNPS"})


def _lexicon(entries: Iterable[tuple[str, tuple]]) -> dict[str, tuple]:
    return {word: features for words, features in entries for word in words.split()}


# (number, gender, person); None = unknown. Singular "they" exists but is rare: plural.
PRONOUNS = _lexicon([
    ("i me my mine myself", ("Sing", None, "1")),
    ("we us our ours ourselves", ("Plur", None, "1")),
    ("you your yours", (None, None, "2")),
    ("yourself", ("Sing", None, "2")),
    ("yourselves", ("Plur", None, "2")),
    ("he him his himself", ("Sing", "Masc", "3")),
    ("she her hers herself", ("Sing", "Fem", "3")),
    ("it its itself", ("Sing", "Neut", "3")),
    ("they them their theirs themselves", ("Plur", None, "3")),
])
_TAG_NUMBER = {"NN": "Sing", "NNP": "Sing", "NNS": "Plur", "NNPS": "Plur"}


# ----------------------------------------------------------------------------
# Mentions
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class CorefMention:
    """One mention of a truncated document.

    ``words`` are document word indices (sorted; gaps for a discontinuous
    mention), ``head`` the head word's index, ``text``/``head_text`` the
    lowercased words, ``agreement`` (number, gender, person), None = unknown.
    """

    entity: str
    words: tuple[int, ...]
    head: int
    text: str
    head_text: str
    kind: str
    agreement: tuple[str | None, str | None, str | None]


@dataclass
class CorefDocument:
    """A document as extracted (truncated, or one window of it), mentions in head-word order.

    ``source`` is the treebank document; ``sentence_ids`` the sentences it holds. A window
    shares its first ``shared_words`` words with the previous window of its document: the
    mentions there were scored in that window (the earliest holding them, which holds
    every antecedent a later one could) and are used here as antecedents only.
    """

    id: str
    split: str
    words: list[str]
    mentions: list[CorefMention]
    n_sentences: int = 1
    source: str = ""
    window: int = 0
    shared_words: int = 0
    sentence_ids: tuple[str, ...] = ()

    def __post_init__(self):
        self.source = self.source or self.id

    def owned(self) -> np.ndarray:
        """Which mentions are scored in this document (not already in the previous window)."""
        return np.array([m.words[0] >= self.shared_words for m in self.mentions], dtype=bool)


def span_head(words: Sequence[int], heads: Sequence[int]) -> int:
    """The word of a span whose syntactic head lies outside the span (leftmost if several).

    Parameters
    ----------
    words : sequence of int
        The span's word indices (0-based; may have gaps).
    heads : sequence of int
        Heads of every word of the document, 1-based, 0 = root.
    """
    inside = set(words)
    for word in sorted(inside):
        if heads[word] - 1 not in inside:
            return word
    raise ValueError(f"span {sorted(inside)} has no word headed outside it: the tree has a cycle")


def mention_type(xpos: str) -> str:
    """``pronoun``, ``proper`` or ``nominal`` from the head word's PTB tag."""
    if xpos in PRONOUN_TAGS:
        return "pronoun"
    return "proper" if xpos in PROPER_TAGS else "nominal"


def agreement_features(word: str, xpos: str, feats: str) -> tuple[str | None, str | None, str | None]:
    """Number, gender, person of a head word; None where unknown.

    FEATS (gold in UD treebanks) first, then the pronoun lexicon, then XPOS
    (NN/NNP singular, NNS/NNPS plural, nouns third person).
    """
    parsed = dict(item.split("=", 1) for item in (feats or "_").split("|") if "=" in item)
    lexicon = PRONOUNS.get(word.lower(), (None, None, None))
    from_tag = (_TAG_NUMBER.get(xpos), None, "3" if xpos.startswith("NN") else None)
    return tuple(parsed.get(key) or lex or tag
                 for key, lex, tag in zip(("Number", "Gender", "Person"), lexicon, from_tag))


def document_mentions(doc: Sentence) -> list[CorefMention]:
    """The mentions of a document record, sorted by head word (ties: outermost first).

    Reversing this order lists the nearest mentions first and, among those
    sharing a head word, the innermost first (see :func:`preceding`).
    """
    if doc.heads is None or doc.xpos is None:
        raise ValueError(f"document {doc.id} needs dependency heads and XPOS for head words")
    mentions = []
    for mention in doc.mentions or []:
        head = span_head(mention.words, doc.heads)
        word, xpos = doc.words[head], doc.xpos[head]
        feats = doc.feats[head] if doc.feats else "_"
        mentions.append(CorefMention(
            entity=mention.entity, words=tuple(mention.words), head=head,
            text=" ".join(doc.words[w] for w in mention.words).lower(), head_text=word.lower(),
            kind=mention_type(xpos), agreement=agreement_features(word, xpos, feats)))
    return sorted(mentions, key=lambda m: (m.head, -len(m.words), m.words))


# ----------------------------------------------------------------------------
# Antecedents and baselines
# ----------------------------------------------------------------------------

def preceding(mentions: Sequence[CorefMention], i: int) -> list[int]:
    """Indices of the mentions before mention ``i`` (head word earlier), nearest first."""
    return [j for j in range(i - 1, -1, -1) if mentions[j].head < mentions[i].head]


def antecedents(mentions: Sequence[CorefMention], i: int) -> list[int]:
    """The preceding mentions of the same entity, nearest first."""
    return [j for j in preceding(mentions, i) if mentions[j].entity == mentions[i].entity]


def agree(a: CorefMention, b: CorefMention) -> bool:
    """Number, gender and person compatible; an unknown value blocks nothing."""
    return all(x is None or y is None or x == y for x, y in zip(a.agreement, b.agreement))


# Lee et al. (2011)-style sieves, most precise first: (candidate, mention) -> passes.
SIEVES: tuple[tuple[str, Callable[[CorefMention, CorefMention], bool]], ...] = (
    ("string", lambda a, b: a.text == b.text),
    ("head", lambda a, b: a.head_text == b.head_text),
    ("agreement", agree),
    ("any", lambda a, b: True),
)


def nearest_passing(mentions: Sequence[CorefMention], i: int,
                    test: Callable[[CorefMention, CorefMention], bool]) -> int | None:
    """The nearest preceding mention passing ``test``, None if there is none."""
    return next((j for j in preceding(mentions, i) if test(mentions[j], mentions[i])), None)


def predict(system: str, mentions: Sequence[CorefMention], i: int) -> int | None:
    """The antecedent a baseline picks for mention ``i`` (an index), None for no pick."""
    if system == "nearest":
        return nearest_passing(mentions, i, SIEVES[-1][1])
    if system == "head_match":
        return nearest_passing(mentions, i, SIEVES[1][1])
    if system == "rule_based":
        picks = (nearest_passing(mentions, i, test) for _, test in SIEVES)
        return next((j for j in picks if j is not None), None)
    raise ValueError(f"unknown baseline {system!r}; choose one of {BASELINES}")


# ----------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------

def word_unit_index(word_ids: np.ndarray, n_words: int) -> np.ndarray:
    """``[n_words]`` word-level unit of each word, -1 for a word without wordpieces."""
    unit_word = word_units(word_ids)
    index = np.full(n_words, -1, dtype=np.int64)
    is_word = unit_word >= 0
    index[unit_word[is_word]] = np.flatnonzero(is_word)
    return index


def attended_words(attn: np.ndarray, word_ids: np.ndarray, queries: np.ndarray,
                   how: str = "mean") -> np.ndarray:
    """The word each head's query word attends to most.

    Parameters
    ----------
    attn : ndarray, shape [layers, heads, n, n]
        Token-level attention of one example.
    word_ids : ndarray, shape [n]
        Word of each token, -1 for special tokens.
    queries : ndarray of int, shape [Q]
        Query words (each must have wordpieces).
    how : str
        How a multi-piece query's rows are combined (:func:`word_level`).

    Returns
    -------
    ndarray of int, shape [layers, heads, Q]
        The argmax word over the other words; the query itself and special
        tokens are ignored.
    """
    maps = word_level(attn, word_ids, how)  # [L, H, U, U]
    unit_word = word_units(word_ids)
    query_units = word_unit_index(word_ids, int(unit_word.max()) + 1)[queries]
    rows = maps[:, :, query_units, :]  # [L, H, Q, U]
    ignored = (unit_word < 0)[None, :] | (np.arange(len(unit_word))[None, :] == query_units[:, None])
    return unit_word[np.where(ignored, -np.inf, rows).argmax(axis=-1)]


MENTION_COLUMNS = ("doc", "window", "split", "mention", "entity", "first_word", "last_word", "n_words",
                   "discontinuous", "nested", "head_word", "head", "kind", "n_antecedents",
                   "aligned", "evaluated") + BASELINES


def mention_rows(doc: CorefDocument, aligned: np.ndarray) -> pd.DataFrame:
    """One row per mention: status and the baselines' correctness (NaN where not evaluated).

    ``aligned`` ``[n_words]`` says which words have wordpieces. Columns
    :data:`MENTION_COLUMNS`; ``evaluated`` = has an antecedent and an aligned head word.
    """
    mentions, rows = doc.mentions, []
    for i, mention in enumerate(mentions):
        gold = set(antecedents(mentions, i))
        evaluated = bool(gold) and bool(aligned[mention.head])
        row = {"doc": doc.source, "window": doc.window, "split": doc.split, "mention": i,
               "entity": mention.entity,
               "first_word": mention.words[0], "last_word": mention.words[-1],
               "n_words": len(mention.words),
               "discontinuous": mention.words[-1] - mention.words[0] + 1 > len(mention.words),
               "nested": any(set(mention.words) < set(other.words) for other in mentions),
               "head_word": mention.head, "head": mention.head_text, "kind": mention.kind,
               "n_antecedents": len(gold), "aligned": bool(aligned[mention.head]),
               "evaluated": evaluated}
        for system in BASELINES:
            row[system] = float(predict(system, mentions, i) in gold) if evaluated else np.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=list(MENTION_COLUMNS))


def head_correct(doc: CorefDocument, example: Example, evaluated: np.ndarray,
                 how: str = "mean") -> np.ndarray:
    """``[M, layers * heads]`` 1.0/0.0 whether each head finds an antecedent; NaN where not evaluated."""
    n_layers, n_heads = example.attn.shape[:2]
    out = np.full((len(doc.mentions), n_layers * n_heads), np.nan)
    rows = np.flatnonzero(evaluated)
    if not len(rows):
        return out
    # targets[k, w]: word w is the head word of an antecedent of the k-th evaluated mention.
    targets = np.zeros((len(rows), len(doc.words)), dtype=bool)
    for k, i in enumerate(rows):
        targets[k, [doc.mentions[j].head for j in antecedents(doc.mentions, i)]] = True
    queries = np.array([doc.mentions[i].head for i in rows])
    predicted = attended_words(example.attn, example.word_ids, queries, how)  # [L, H, E]
    hits = targets[np.arange(len(rows)), predicted]  # [L, H, E]
    out[rows] = hits.reshape(n_layers * n_heads, len(rows)).T
    return out


@register
class Coreference(Analysis):
    """Per-mention table: status, baselines and every head's correctness (Clark §4.3).

    Parameters
    ----------
    documents : dict of int -> CorefDocument
        By position in the documents JSONL (``Example.index``); see :func:`load_documents`.
    how : {"mean", "first", "max"}
        Word-level ``from`` mode (the paper: mean).

    ``result()`` has one table, ``mentions``: one row per mention of every analysed
    document, in corpus order (columns :data:`MENTION_COLUMNS`, then one ``layer-head``
    column per head); ``attrs["analysed_documents"]`` lists the source documents seen, in
    corpus order.

    State: the rows of the mentions scored so far, by column (``mention/<column>`` for
    :data:`MENTION_COLUMNS`, strings as unicode), ``correct`` ``[M, layers * heads]`` (the
    head columns), ``mention_example`` ``[M]`` (each row's corpus position) and ``examples``
    (the corpus positions of every document seen, mentions or not).
    """

    name = "coref"
    unit = "documents"
    data_options = ("documents",)

    @classmethod
    def load_inputs(cls, files: dict) -> dict:
        """``documents`` and ``sentences`` (paths, :func:`load_documents`) -> the documents."""
        files = dict(files)
        if "sentences" in files:
            files["documents"] = load_documents(files["documents"], files.pop("sentences"))[0]
        return files

    def __init__(self, n_layers: int, n_heads: int, documents: dict[int, CorefDocument],
                 how: str = "mean"):
        super().__init__(n_layers, n_heads)
        if how not in FROM_MODES:
            raise ValueError(f"word-level mode {how!r}; choose one of {FROM_MODES}")
        self.documents, self.how = documents, how
        self._tables: list[pd.DataFrame] = []  # per document (or merged state): its mention rows
        self._rows_of: list[np.ndarray] = []  # ... and each row's corpus position
        self._examples: list[int] = []

    def update(self, example: Example) -> None:
        doc = self._document(example)
        aligned = np.zeros(len(doc.words), dtype=bool)
        aligned[example.word_ids[example.word_ids >= 0]] = True
        rows = mention_rows(doc, aligned)
        if len(rows):
            owned = doc.owned()  # mentions of a previous window's overlap: antecedents only
            rows["evaluated"] &= owned
            rows.loc[~rows["evaluated"], list(BASELINES)] = np.nan
            correct = head_correct(doc, example, rows["evaluated"].to_numpy(), self.how)
            heads = pd.DataFrame(correct, columns=head_names(self.n_layers, self.n_heads))
            self._add(pd.concat([rows, heads], axis=1)[owned].reset_index(drop=True), example.index)
        self._examples.append(example.index)

    def _add(self, table: pd.DataFrame, index: np.ndarray | int) -> None:
        self._tables.append(table)
        self._rows_of.append(np.broadcast_to(np.asarray(index, np.int64), len(table)))

    def _document(self, example: Example) -> CorefDocument:
        doc = self.documents.get(example.index)
        if doc is None or doc.id != example.id:
            raise StoreError(f"store example {example.index} ({example.id}) is not the document "
                             "at that position of the documents file; rerun the extract rule")
        if example.word_ids.max(initial=-1) >= len(doc.words):
            raise StoreError(f"store example {example.id} has more words than its document")
        return doc

    def _rows(self) -> tuple[pd.DataFrame, np.ndarray]:
        """Every mention row so far, in the order added, and each row's corpus position."""
        if not self._tables:
            columns = list(MENTION_COLUMNS) + head_names(self.n_layers, self.n_heads)
            return pd.DataFrame(columns=columns), np.zeros(0, np.int64)
        return pd.concat(self._tables, ignore_index=True), np.concatenate(self._rows_of)

    def _state(self) -> dict[str, np.ndarray]:
        table, where = self._rows()
        state = {"examples": np.asarray(self._examples, np.int64), "mention_example": where,
                 "correct": table[head_names(self.n_layers, self.n_heads)].to_numpy(float)}
        for column in MENTION_COLUMNS:
            values = table[column].to_numpy()
            state[f"mention/{column}"] = values.astype(str) if values.dtype == object else values
        return state

    def _merge(self, state: dict[str, np.ndarray]) -> None:
        self._examples += state["examples"].tolist()
        if len(state["mention_example"]):
            columns = {}
            for column in MENTION_COLUMNS:
                values = state[f"mention/{column}"]
                # text as Python strings: the column gets the dtype update() gives it
                columns[column] = values.tolist() if values.dtype.kind == "U" else values
            heads = pd.DataFrame(state["correct"], columns=head_names(self.n_layers, self.n_heads))
            self._add(pd.concat([pd.DataFrame(columns), heads], axis=1), state["mention_example"])

    def result(self) -> Result:
        """The mentions in corpus order (by document, then as listed), however the documents
        were streamed or merged."""
        table, where = self._rows()
        table = table.iloc[np.argsort(where, kind="stable")].reset_index(drop=True)
        sources = [self.documents[i].source for i in sorted(self._examples)]
        return Result({"mentions": table}, attrs={"analysed_documents": list(dict.fromkeys(sources))})


# ----------------------------------------------------------------------------
# Documents: sources and truncation
# ----------------------------------------------------------------------------

def load_documents(documents_path: str | Path, sentences_path: str | Path
                   ) -> tuple[dict[int, CorefDocument], pd.DataFrame]:
    """The truncated documents to analyse, and what truncation left out.

    Parameters
    ----------
    documents_path : path
        The documents JSONL the store was extracted from (``prepare_documents``).
    sentences_path : path
        The sentence corpus the documents were joined from (every prepared
        corpus has dependency heads and splits, CoNLL-2012 included).

    Returns
    -------
    documents : dict of int -> CorefDocument
        By position in the documents JSONL.
    sources : DataFrame
        One row per source document: ``doc``, ``split``, ``prepared``,
        ``sentences``, ``sentences_kept``, ``mentions``, ``mentions_kept``,
        ``cross_sentence_mentions``, ``empty_node_mentions``, ``coreference_excluded``
        (the reader's ``file:line`` problem that left the document out of coreference, or "").
    """
    by_doc: dict[str, list[Sentence]] = defaultdict(list)
    for sentence in read_jsonl(sentences_path):
        by_doc[sentence.doc].append(sentence)
    for name, group in by_doc.items():
        if "coreference_excluded" in group[0].meta:
            log.warning("document %s is left out of coreference (its trees serve the other "
                        "analyses): %s", name, group[0].meta["coreference_excluded"])
    documents = {}
    for index, record in enumerate(read_jsonl(documents_path)):
        documents[index] = _document(record, by_doc.get(record.doc, []))
    prepared: dict[str, list[CorefDocument]] = defaultdict(list)
    for doc in documents.values():
        prepared[doc.source].append(doc)
    return documents, pd.DataFrame([_source_row(name, group, prepared.get(name, []))
                                    for name, group in by_doc.items()])


def _document(record: Sentence, sentences: list[Sentence]) -> CorefDocument:
    """A documents-JSONL record, checked against a run of consecutive sentences of its source."""
    kept = record.meta.get("sentence_ids", [])
    ids = [s.id for s in sentences]
    start = ids.index(kept[0]) if kept and kept[0] in ids else -1
    if start < 0 or kept != ids[start:start + len(kept)]:
        raise ValueError(f"document {record.id}: its sentences are not consecutive sentences of "
                         f"{record.doc} in the sentence corpus; rerun prepare_documents")
    if record.words != [word for s in sentences[start:start + len(kept)] for word in s.words]:
        raise ValueError(f"document {record.id} differs from its sentences; rerun prepare_documents")
    return CorefDocument(record.id, record.split, record.words, document_mentions(record), len(kept),
                         source=record.doc, window=record.meta.get("window", 0),
                         shared_words=record.meta.get("shared_words", 0), sentence_ids=tuple(kept))


def _source_row(name: str, sentences: list[Sentence], docs: list[CorefDocument]) -> dict:
    # Truncation keeps a prefix of each document's sentences; windows cover every sentence
    # that fits the budget alone.
    covered = {i for doc in docs for i in doc.sentence_ids}
    kept = [s for s in sentences if s.id in covered]
    return {
        "doc": name, "split": sentences[0].split, "prepared": bool(docs),
        "sentences": len(sentences), "sentences_kept": len(kept),
        "mentions": sum(len(s.mentions or []) for s in sentences),
        "mentions_kept": sum(len(s.mentions or []) for s in kept),
        "cross_sentence_mentions": sum(s.meta.get("cross_sentence_mentions", 0) for s in sentences),
        "empty_node_mentions": sum(s.meta.get("empty_node_mentions", 0) for s in sentences),
        "coreference_excluded": sentences[0].meta.get("coreference_excluded", ""),
    }


# ----------------------------------------------------------------------------
# Tables: counts, per-head accuracy, Table 2 with bootstrap intervals
# ----------------------------------------------------------------------------

def read_mentions(path: str | Path) -> pd.DataFrame:
    """Read a mentions table written by the coref rule (text kept as text, empty = NaN)."""
    table = pd.read_csv(path, keep_default_na=False,
                        dtype={"doc": str, "split": str, "entity": str, "head": str, "kind": str})
    scores = [c for c in table.columns if c in BASELINES or is_head_name(c)]
    table[scores] = table[scores].apply(pd.to_numeric, errors="coerce")
    return table


def score_columns(mentions: pd.DataFrame) -> list[str]:
    """The ``layer-head`` columns of a mentions table, in order."""
    return [c for c in mentions.columns if is_head_name(c)]


def _split_order(splits: Iterable[str]) -> list[str]:
    known = ["train", "dev", "test"]
    present = set(splits)
    return [s for s in known if s in present] + sorted(present - set(known))


# Why a source document is not analysed, in order of precedence: each document has one fate.
LEFT_OUT_REASONS = {
    "documents_left_out_malformed_coreference":
        "coreference left out by the reader (its trees serve the other analyses): {problem}",
    "documents_dropped_first_sentence_too_long":
        "dropped by prepare_documents: its first sentence alone is longer than max_length wordpieces "
        "(windows: every sentence is)",
    "documents_skipped_at_extraction":
        "skipped at extraction: longer than max_length wordpieces, or empty (the store's skipped_ids)",
}


def _fates(src: pd.DataFrame) -> dict[str, pd.Series]:
    """One exclusive fate per source document: the left-out reasons, then ``documents_analysed``."""
    excluded = src["coreference_excluded"] != ""
    prepared, analysed = src["prepared"], src["analysed"]
    return {"documents_left_out_malformed_coreference": excluded,
            "documents_dropped_first_sentence_too_long": ~excluded & ~prepared,
            "documents_skipped_at_extraction": ~excluded & prepared & ~analysed,
            "documents_analysed": ~excluded & prepared & analysed}


def left_out_documents(sources: pd.DataFrame, analysed: Iterable[str]) -> pd.DataFrame:
    """Every source document not analysed, named with its reason: ``doc``, ``split``, ``reason``
    (a :data:`LEFT_OUT_REASONS` text), in the order of ``sources``."""
    src = sources.assign(analysed=sources["doc"].isin(set(analysed)))
    rows = []
    for fate, mask in _fates(src).items():
        if fate == "documents_analysed":
            continue
        for _, row in src[mask].iterrows():
            rows.append({"doc": row["doc"], "split": row["split"], "fate": fate,
                         "reason": LEFT_OUT_REASONS[fate].format(problem=row["coreference_excluded"])})
    order = {doc: i for i, doc in enumerate(src["doc"])}
    return pd.DataFrame(sorted(rows, key=lambda r: order[r["doc"]]),
                        columns=["doc", "split", "fate", "reason"])


def summary_counts(sources: pd.DataFrame, mentions: pd.DataFrame, analysed: Iterable[str]) -> pd.DataFrame:
    """Where every mention went: cut, dropped, skipped, unaligned, with/without antecedent.

    Rows are quantities, columns ``all`` and each split. Every document has one fate:
    ``documents`` = left out for malformed coreference + dropped + skipped at extraction +
    analysed. ``attrs["left_out"]`` names each document not analysed, with its reason
    (:func:`left_out_documents`). Raises ``ValueError`` if the documents or the mentions
    read do not add up to those cut, dropped, skipped and analysed.
    """
    analysed = list(analysed)
    sources = sources.assign(analysed=sources["doc"].isin(set(analysed)))
    columns = {"all": _counts(sources, mentions)}
    for split in _split_order(sources["split"]):
        columns[split or "(none)"] = _counts(sources[sources["split"] == split],
                                             mentions[mentions["split"] == split])
    table = pd.DataFrame(columns)
    table.index.name = "quantity"
    table.attrs["left_out"] = left_out_documents(sources, analysed)
    return table


def _counts(src: pd.DataFrame, m: pd.DataFrame) -> dict[str, int]:
    prepared, analysed = src["prepared"], src["analysed"]
    with_antecedent = m["n_antecedents"] > 0
    fates = _fates(src)
    counts = {
        "documents": len(src),
        **{fate: mask.sum() for fate, mask in fates.items()},
        "sentences": src["sentences"].sum(),
        "sentences_cut_by_truncation": (src["sentences"] - src["sentences_kept"])[prepared].sum(),
        "mentions_read": src["mentions"].sum(),
        "mentions_on_empty_nodes_left_out_by_reader": src["empty_node_mentions"].sum(),
        "mentions_crossing_a_sentence_cut_to_first_sentence": src["cross_sentence_mentions"].sum(),
        "mentions_cut_by_truncation": (src["mentions"] - src["mentions_kept"])[prepared].sum(),
        "mentions_in_dropped_documents": src["mentions"][~prepared].sum(),
        "mentions_in_skipped_documents": src["mentions_kept"][prepared & ~analysed].sum(),
        "mentions_analysed": len(m),
        "mentions_nested": m["nested"].sum(),
        "mentions_discontinuous": m["discontinuous"].sum(),
        "mentions_without_antecedent": (~with_antecedent).sum(),
        "mentions_with_antecedent": with_antecedent.sum(),
        "mentions_head_unaligned": (~m["aligned"]).sum(),
        "mentions_with_antecedent_head_unaligned": (with_antecedent & ~m["aligned"]).sum(),
        "mentions_evaluated": m["evaluated"].sum(),
        **{f"mentions_evaluated_{kind}": (m["evaluated"] & (m["kind"] == kind)).sum()
           for kind in MENTION_TYPES},
        "entities_analysed": m.groupby(["doc", "entity"]).ngroups,
        "entities_with_one_mention_after_truncation":
            int((m.groupby(["doc", "entity"]).size() == 1).sum()),
    }
    counts = {k: int(v) for k, v in counts.items()}
    if sum(counts[fate] for fate in fates) != counts["documents"]:
        raise ValueError(f"{counts['documents']} documents but {sum(counts[f] for f in fates)} "
                         "analysed or left out: the documents file does not match its sentence corpus")
    accounted = sum(counts[k] for k in ("mentions_cut_by_truncation", "mentions_in_dropped_documents",
                                        "mentions_in_skipped_documents", "mentions_analysed"))
    if accounted != counts["mentions_read"]:
        raise ValueError(f"{counts['mentions_read']} mentions read but {accounted} accounted for: "
                         "the documents file does not match its sentence corpus")
    return counts


def head_accuracy(mentions: pd.DataFrame, scopes: Sequence[str], by_kind: str | None = None) -> pd.DataFrame:
    """Per-head accuracy (%) on the evaluated mentions of each split in ``scopes``.

    Columns ``layer``, ``head``, ``acc_<split>`` and ``n_<split>`` per scope
    (``all`` = every split), plus ``acc_<by_kind>_<type>`` per mention type.
    """
    names = score_columns(mentions)
    evaluated = mentions[mentions["evaluated"].astype(bool)]
    table = pd.DataFrame([parse_head_name(name) for name in names], columns=["layer", "head"])
    for scope in scopes:
        subset = _scope(evaluated, scope)
        table[f"acc_{scope}"] = 100 * subset[names].mean().to_numpy()
        table[f"n_{scope}"] = len(subset)
    if by_kind is not None:
        subset = _scope(evaluated, by_kind)
        for kind in MENTION_TYPES:
            table[f"acc_{by_kind}_{kind}"] = 100 * subset.loc[subset["kind"] == kind, names].mean().to_numpy()
    return table


def _scope(mentions: pd.DataFrame, scope: str) -> pd.DataFrame:
    return mentions if scope == "all" else mentions[mentions["split"] == scope]


def best_head(mentions: pd.DataFrame) -> str:
    """The head with the highest accuracy on these (evaluated) mentions; ties: the first."""
    names = score_columns(mentions)
    return names[int(np.argmax(mentions[names].mean().to_numpy()))]


def document_intervals(docs: np.ndarray, correct: np.ndarray, groups: Sequence[np.ndarray],
                       n_boot: int = 1000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """95% percentile intervals (%) of accuracy under document resampling, per group and system.

    The documents are resampled once (:func:`headatlas.stats.bootstrap_ratio`);
    every group (mention type) and system is scored on the same resamples.

    Parameters
    ----------
    docs : ndarray of int, shape [M]
        Each mention's document (0..D-1).
    correct : ndarray, shape [M, S]
        1/0 per mention and system.
    groups : sequence of bool arrays [M]
        The mentions of each group (e.g. all, pronoun, proper, nominal).

    Returns
    -------
    low, high : ndarray, shape [len(groups), S]
        NaN for a group with no mention.
    """
    n_docs = int(docs.max()) + 1 if len(docs) else 0
    n_systems = correct.shape[1]
    hits, totals = [], []
    for group in groups:
        hits.append(np.stack([np.bincount(docs[group], weights=correct[group, k], minlength=n_docs)
                              for k in range(n_systems)], axis=1))
        counts = np.bincount(docs[group], minlength=n_docs).astype(float)
        totals.append(np.repeat(counts[:, None], n_systems, axis=1))
    low, high = bootstrap_ratio(np.hstack(hits), np.hstack(totals), n_boot, seed)
    return 100 * low.reshape(len(groups), n_systems), 100 * high.reshape(len(groups), n_systems)


def table2(mentions: pd.DataFrame, select_split: str = "train", eval_split: str = "test",
           n_boot: int = 1000, seed: int = 0, selection: pd.DataFrame | None = None,
           selection_label: str = "") -> pd.DataFrame:
    """Clark et al. Table 2: systems x mention types, ours beside the paper's.

    Every system is scored on the evaluated mentions of ``eval_split`` (all
    mentions if the corpus has no such split). The best head is chosen on
    ``select_split`` (held out; row left out if the corpus lacks that split)
    and, as in the paper, on the evaluation data itself. When ``mentions``
    lack ``select_split`` (e.g. windows over the test documents only), the
    held-out head may be chosen on ``selection``, the per-mention table of the
    same model on another corpus of the same treebank (named
    ``selection_label``). Intervals: 95% bootstrap over the evaluation
    documents, the same resamples for every system and type, each head fixed
    (the selection is not redone per resample). Columns ``vs_<baseline>``,
    ``vs_<baseline>_low``, ``vs_<baseline>_high`` (for :data:`PAIRED_BASELINES`):
    the system's accuracy minus the baseline's on all mentions (points), with the
    *paired* 95% interval: the per-mention differences resampled by document.
    """
    evaluated = mentions[mentions["evaluated"].astype(bool)]
    eval_name = eval_split if (evaluated["split"] == eval_split).any() else "all"
    train, chosen_on = evaluated[evaluated["split"] == select_split], select_split
    if not len(train) and selection is not None:
        picked = selection[selection["evaluated"].astype(bool)]
        train, chosen_on = picked[picked["split"] == select_split], f"{selection_label} {select_split}"
    for note in split_notes(evaluated, select_split, eval_split, held_out=bool(len(train))):
        log.warning("%s", note)
    test = _scope(evaluated, eval_name)
    systems = [(s, "", "", s) for s in BASELINES]
    if len(train) and select_split != eval_name:
        systems.append(("head", best_head(train), chosen_on, "best head, chosen on " + chosen_on))
    systems.append(("head", best_head(test), eval_name, f"best head, chosen on {eval_name} (paper's regime)"))
    docs = pd.factorize(test["doc"])[0]
    correct = np.column_stack([test[head or system].to_numpy(float) for system, head, _, _ in systems])
    rows = [_system_row(name, system, head, chosen, eval_name) for system, head, chosen, name in systems]
    groups = [np.ones(len(test), bool) if kind == "all" else (test["kind"] == kind).to_numpy()
              for kind in KINDS]
    low, high = document_intervals(docs, correct, groups, n_boot, seed)
    # Paired: each system minus each baseline, per mention, resampled by document (all mentions).
    paired = {}
    for baseline in PAIRED_BASELINES:
        b = [s for s, _, _, _ in systems].index(baseline)
        diff = correct - correct[:, [b]]
        d_low, d_high = document_intervals(docs, diff, groups[:1], n_boot, seed)
        paired[baseline] = (100 * diff.mean(axis=0) if len(test) else np.full(len(systems), np.nan),
                            d_low[0], d_high[0])
    for k, row in enumerate(rows):
        for baseline, (point, d_low, d_high) in paired.items():
            row.update({f"vs_{baseline}": point[k], f"vs_{baseline}_low": d_low[k],
                        f"vs_{baseline}_high": d_high[k]})
    for g, (kind, keep) in enumerate(zip(KINDS, groups)):
        for k, row in enumerate(rows):
            row.update({kind: 100 * correct[keep, k].mean() if keep.any() else np.nan,
                        f"{kind}_ci_low": low[g, k], f"{kind}_ci_high": high[g, k],
                        f"{kind}_n": int(keep.sum()), f"{kind}_paper": PAPER_TABLE2.loc[systems[k][0], kind]})
    rows.append({**_system_row(SYSTEM_NAMES["neural"], "neural", "", "", ""),
                 **{f"{kind}_paper": PAPER_TABLE2.loc["neural", kind] for kind in KINDS}})
    return pd.DataFrame(rows)


def split_notes(evaluated: pd.DataFrame, select_split: str, eval_split: str,
                held_out: bool = False) -> list[str]:
    """What Table 2 cannot do for lack of a split, in words (for the log and the caption).

    ``held_out``: a held-out head was chosen elsewhere (see :func:`table2`'s ``selection``).
    """
    splits = set(evaluated["split"])
    fix = ("give the corpus train/dev/test splits (a `splits:` rule under its `corpora:` entry) "
           "to report a head chosen on held-out data")
    if eval_split not in splits:
        return [f"no evaluated mention is in the {eval_split!r} split (`coref.eval_split`): every "
                "system is scored on all evaluated mentions, and the best head is chosen and "
                f"scored on the same data (the paper's regime only); {fix}"]
    if select_split not in splits and not held_out:
        return [f"no evaluated mention is in the {select_split!r} split (`coref.select_split`): "
                f"the best head is only chosen on the {eval_split!r} data it is scored on (the "
                f"paper's regime); {fix}"]
    return []


def _system_row(name: str, system: str, head: str, chosen: str, evaluated_on: str) -> dict:
    return {"system": SYSTEM_NAMES.get(name, name), "head": head,
            "paper_head": PAPER_HEAD if system == "head" else "",
            "selected_on": chosen, "evaluated_on": evaluated_on}


def deviations(source_format: str, max_length: int) -> str:
    """The known deviations from Clark §4.3, for figure footnotes (the model's are in ``describe``)."""
    text = (f"documents cut at a sentence boundary to fit {max_length} wordpieces "
            "(the paper: cut at 128 tokens)")
    if source_format != "conll2012":
        text = ("corpus GUM/OntoGUM (gold UD trees, OntoNotes-scheme coreference) instead of "
                "CoNLL-2012; " + text)
    return "deviations: " + text


def accuracy_tables(mentions: pd.DataFrame, provenance: dict, select_split: str = "train",
                    eval_split: str = "test", n_boot: int = 1000, seed: int = 0,
                    source_format: str = "conllu", max_length: int = 128,
                    selection: pd.DataFrame | None = None, selection_label: str = "",
                    weighting: str = "attention"
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 2 and the per-head accuracies of a per-mention table, with the heat map's captions.

    Parameters
    ----------
    mentions : the per-mention table of the :class:`Coreference` analysis (:func:`read_mentions`).
    provenance : the provenance of the :class:`Coreference` result (its caption's model, corpus
        and view: ``Result.provenance``, or as its rule saved it).
    select_split, eval_split, n_boot, seed, selection, selection_label : as for :func:`table2`.
    source_format, max_length : the documents' source format and wordpiece budget (for the deviations).
    weighting : the view of the maps the mentions were scored on (for the caption).

    Returns
    -------
    table : :func:`table2`.
    heads : :func:`head_accuracy` on the splits the two head rows were chosen on (held
        out, and the evaluation data), by mention type on the latter;
        ``attrs["panels"]`` (column, title, best head) per heat-map panel and ``attrs["caption"]``.
    """
    table = table2(mentions, select_split, eval_split, n_boot, seed, selection, selection_label)
    head_rows = table[table["paper_head"] != ""]
    # Panels for the splits of these mentions (a head chosen on another corpus has none here).
    here = set(mentions["split"]) | {"all"}
    chosen = {s: h for s, h in zip(head_rows["selected_on"], head_rows["head"]) if s in here}
    held_out = len(head_rows) > 1
    heads = head_accuracy(mentions, list(chosen), by_kind=list(chosen)[-1])
    heads.attrs["panels"] = [(f"acc_{s}", f"accuracy on {s} (best {h})", h) for s, h in chosen.items()]
    heads.attrs["caption"] = "; ".join(
        [describe({**provenance, "weighting": weighting}, mentions["doc"].nunique(),
                  "documents with mentions"),
         "evaluated mentions: " + ", ".join(f"{s} {heads[f'n_{s}'].iloc[0]}" for s in chosen),
         deviations(source_format, max_length),
         *split_notes(mentions[mentions["evaluated"].astype(bool)], select_split, eval_split,
                      held_out)])
    return table, heads


# --- the paper's claims -------------------------------------------------------------------

CLARK_T2 = "Clark et al. 2019 §4.3, Table 2"


def paper_claims(table: pd.DataFrame, corpus: str) -> list[Claim]:
    """Table 2's findings judged on our data (:class:`~headatlas.claims.Claim` records).

    ``table`` is :func:`table2` (as read back from ``accuracy.csv``). The head
    judged is the one chosen on the selection split and scored on the
    evaluation split (the paper's same-data choice when there is no selection
    split; the note says which). "Beats" is :func:`~headatlas.claims.beats_paired`:
    >= 5 points ahead, with the paired 95% interval of the difference (the
    ``vs_<baseline>`` columns of :func:`table2`, documents resampled) above 0
    (until issue 23: non-overlap of the two unpaired intervals). A table without
    those columns gives "not applicable". The rule-based claim only asks that the
    head stays below that system, as in the paper (65 vs 69).

    Returns
    -------
    list[Claim]
        One :class:`~headatlas.claims.Claim` per finding
        (:func:`~headatlas.claims.claims_table` makes them a ``paper_claims.csv`` table).
    """
    systems = table.set_index("system")
    heads = [s for s in systems.index if str(s).startswith("best head")]
    held_out = [s for s in heads if "paper's regime" not in s]
    chosen = (held_out or heads or [None])[0]

    def value(system: str) -> tuple[float, tuple[float, float]]:
        row = systems.loc[system]
        return float(row["all"]), (float(row["all_ci_low"]), float(row["all_ci_high"]))

    def text(system: str) -> str:
        acc, (low, high) = value(system)
        return f"{acc:.1f} [{low:.1f}-{high:.1f}]"

    claims = []
    if chosen is None:
        return claims
    head, _ = value(chosen)
    label = f"head {systems.at[chosen, 'head']} ({chosen.removeprefix('best head, ')})"
    n = int(systems.at[chosen, "all_n"])
    note = f"{corpus}; n = {n} mentions with an antecedent" + \
        ("" if held_out else "; no selection split: the head is chosen on the evaluation data")
    for baseline, key, paper in (("nearest", "nearest", "65 vs 27"), ("head_match", "head_match", "65 vs 52")):
        name = SYSTEM_NAMES[baseline]
        diff = [float(systems.at[chosen, c]) if c in systems.columns else float("nan")
                for c in (f"vs_{baseline}", f"vs_{baseline}_low", f"vs_{baseline}_high")]
        if not np.isnan(diff[0]):  # the difference of the accuracies as printed (issue 23 item 7)
            diff[0] = round(round(head, 1) - round(value(name)[0], 1), 1)
        claims.append(Claim(
            f"clark.t2.{corpus}.head_beats_{key}", CLARK_T2,
            f"the best coreference head beats the {name} baseline ({corpus})",
            f"head {PAPER_HEAD} {paper} (all mentions)",
            f"{label} {text(chosen)} vs {text(name)}; difference {difference_text(*diff)} (paired)",
            holds_if(beats_paired(diff[0], (diff[1], diff[2]))),
            f"the head's accuracy {PAIRED_RULE.replace('ahead', f'ahead of {name}')} "
            "(resampling documents)", note))
    rule_based = SYSTEM_NAMES["rule_based"]
    claims.append(Claim(
        f"clark.t2.{corpus}.head_below_rule_based", CLARK_T2,
        f"the best head comes close to, but stays below, the rule-based system ({corpus})",
        f"head {PAPER_HEAD} 65 vs 69", f"{label} {text(chosen)} vs {text(rule_based)}",
        holds_if(head < value(rule_based)[0]), "the head's accuracy below the rule-based system's", note))
    return claims


# --- the head atlas -----------------------------------------------------------------------

def atlas_head_accuracy(path: Path) -> pd.DataFrame:
    """Per head: accuracy (%) on the split the table reports last (the evaluation split), and
    by mention type where the table has it: the atlas's reader of ``head_accuracy``
    (:data:`ATLAS`, the per-head table of :func:`accuracy_tables`)."""
    table = pd.read_csv(path)
    scopes = [c[4:] for c in table.columns if re.fullmatch(r"acc_[^_]+", c)]
    if not scopes:
        raise ValueError(f"{path}: no acc_<split> column")
    scope = scopes[-1]
    out = table[["layer", "head"]].assign(accuracy=table[f"acc_{scope}"], split=scope)
    for kind in MENTION_TYPES:
        column = next((c for c in table.columns if c.startswith("acc_") and c.endswith(f"_{kind}")), None)
        if column:
            out[kind] = table[column]
    return out


# What the per-head accuracies (head_accuracy.csv) add to the head atlas (headatlas.report.atlas).
ATLAS = {
    "head_accuracy": HeadColumns(
        "coreference", CLARK_T2, rank=60, per_corpus=True,
        reader="headatlas.analyses.coref:atlas_head_accuracy",
        columns=(
            Column("coref_{corpus}", "accuracy", "%",
                   "share of mentions (evaluation split) whose head word attends most to an "
                   "antecedent's head word", "best head 5-4: 65% (BERT-base, CoNLL-2012)"),
            Column("coref_{corpus}_split", "split", "split", "the split that accuracy is on"),
        ) + tuple(Column(f"coref_{{corpus}}_{kind}", kind, "%", f"... {kind} mentions only", reference)
                  for kind, reference in (("pronoun", "head 5-4: 64%"), ("proper", "head 5-4: 73%"),
                                          ("nominal", "head 5-4: 58%")))),
}
