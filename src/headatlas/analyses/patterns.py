"""Kovaleva et al.'s attention patterns: which of five shapes each (head, input) map takes.

Kovaleva, Romanov, Rogers and Rumshisky (2019, "Revealing the Dark Secrets of
BERT", §3) sorted BERT's self-attention maps into five patterns by eye —

* **vertical**: every token attends to the same few tokens (mostly ``[CLS]``,
  ``[SEP]``, punctuation): a few dark columns;
* **diagonal**: every token attends to itself or to a neighbour at a fixed
  offset: a dark band along the diagonal;
* **vertical + diagonal**: both at once;
* **block**: in two-sentence inputs, tokens attend within their own sentence:
  two dark squares on the diagonal;
* **heterogeneous**: anything else —

labelled about 400 maps, trained a small CNN on them and reported the share of
maps of each pattern per GLUE task (their Fig. 2): about a third vertical, and
block + heterogeneous, the only patterns that could carry more than position
and special tokens, about half.

Here the first classifier is a short decision list over features of the map, each
a share of its attention mass (or a count) that can be read off the picture,
with the thresholds in the config (``patterns.thresholds``); the second, a forest learned from
labelled maps, is below. For a map ``a``
(``[n, n]``, query rows summing to 1):

* ``diagonal``: the mass on the band of offsets -1, 0, +1 (``|i - j| <= 1``),
  the mean over queries of the row mass there;
* ``stripes``: how many key columns are stripes: columns whose off-band mass,
  per query, exceeds a uniform row's share (``1 / n``) by at least ``stripe``
  (a dark column on the picture; 0 when ``stripe`` is 1);
* ``vertical``: the mass off that band on the ``columns`` keys that receive the
  most of it (the top-``k`` columns) and on every further stripe, i.e. the
  mean over queries of the row mass on those keys (so the two never count the
  same weight). Counting every stripe is what makes a map of five or eight
  dark columns vertical, as it looks, rather than heterogeneous;
* ``block`` (attention that stops at the sentence's ends): a share of the whole map, the
  top columns and stripes set aside with the keys mirroring them. A query weighs each key more than
  :data:`BLOCK_LOCAL` = 3 tokens away against the key at the same distance on the other
  side (:func:`block_contrast`): +1 for a key in its sentence whose mirror is not, -1 the
  other way round, 0 when both or neither are. A uniform map, or any map whose rows are
  symmetric about the query (a local window of any width), scores 0; squares along the
  diagonal score high. Sentences are found within the segments (:func:`sentence_units`):
  Kovaleva et al.'s inputs were sentence pairs, one sentence per segment, while a Wikipedia
  segment holds several, and the squares a person sees are its sentences. NaN for a
  one-sentence input, where the pattern is undefined;
* ``entropy``: the mean row entropy divided by ``log n`` (0: every row on one
  key; 1: uniform), kept for inspection and for the cross-tabulations.

The classifier compares ``vertical`` and ``diagonal`` above their chance level
(:func:`above_chance`: the excess over a uniform map of the same length, as a share
of what that map leaves), so that short sentences are not diagonal by construction;
``block`` is 0 for a uniform map already. The decision list (:func:`classify`), first match wins:

1. two or more sentences and ``block >= block`` -> block;
2. ``vertical >= mixed_vertical`` and ``diagonal >= mixed_diagonal`` -> vertical + diagonal;
3. ``vertical >= vertical`` -> vertical;
4. ``diagonal >= diagonal`` -> diagonal;
5. otherwise heterogeneous.

Block comes first because a block map usually has a ``[CLS]`` or ``[SEP]``
column too (its columns are set aside before ``block`` is measured), while a
vertical map's leftover grey is spread over the sentences.

The thresholds are chosen on half of a hand-labelled set of real maps
(:mod:`headatlas.report.labelling`) by a grid search (:func:`tune`) and reported on the
other half (:func:`evaluate_labels`).

A second classifier (``patterns.classifier: forest``, the config's default) learns from the
labels instead, as Kovaleva et al.'s CNN did: a random forest (:class:`Forest`, scikit-learn,
seeded) on these five features and :data:`SHAPE_FEATURES` (column masses in rank order, the
first and last key's, each of the three diagonals, the local band, the in-sentence excess,
the largest weight per row, how many keys stand out, and block as a share of what
the columns and band leave), each less a uniform map's of the same length. It is trained on
the tune half of the same labelled maps (:func:`trained_forest`) and scored on the other half
like the rules; a one-sentence input is never block.
"""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass, fields
from typing import NamedTuple, Sequence

import numpy as np
import pandas as pd

from headatlas.analyses.base import Analysis, describe, register
from headatlas.analyses.batch import MapBatch, to_host
from headatlas.analyses.result import Result
from headatlas.claims import Claim, verdict
from headatlas.heads import ATTENTION_ONLY, Column, HeadColumns, head_table
from headatlas.store.example import Example

PATTERNS = ("vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous")
FEATURES = ("vertical", "diagonal", "block", "entropy", "stripes")
# What the forest reads besides FEATURES (batch_features(..., shape=True)), per map of n tokens:
# the key columns' mass per query in rank order (top 1-3, the top 5 together), the first key's
# ([CLS]) and the last one's ([SEP]), the diagonals i = j, j = i + 1, j = i - 1 and the band
# |i - j| <= 3, the in-sentence mass above its share of the pairs, the mean largest weight of a
# row, the share of keys taking over 2/n and over 5/n, and the mass off the top columns and the
# band ("rest") with block's share of it. The forest reads each less a uniform map's of the same
# length (above_chance), so that it reads a short sentence on the scale of a long segment.
SHAPE_FEATURES = ("top1", "top2", "top3", "top5", "first_key", "last_key", "self", "next",
                  "previous", "local", "same_sentence", "row_max", "keys_2x", "keys_5x",
                  "rest", "block_of_rest")
CLASSIFIERS = ("forest", "rules")
VERTICAL, DIAGONAL, MIXED, BLOCK, HETEROGENEOUS = range(len(PATTERNS))
# Keys this close to the query are local attention, not block: a block fills its sentence.
BLOCK_LOCAL = 3

# Kovaleva et al. (2019), Fig. 2 and §3: BERT-base fine-tuned on GLUE tasks, ~400 maps labelled.
PAPER_MODEL = "BERT-base (12 x 12 heads) fine-tuned on GLUE tasks, maps classified by a CNN"
PAPER_VERTICAL = "about a third of the maps (30% of the ~400 hand-labelled maps)"
PAPER_BLOCK_HETEROGENEOUS = "about half of the maps (block + heterogeneous)"


@dataclass(frozen=True)
class Thresholds:
    """The classifier's settings (``patterns.thresholds`` in the config).

    ``columns`` is the ``k`` of the top-``k`` columns; ``stripe`` how much more
    off-band mass per query than a uniform row gives a key makes it a stripe (1:
    only the top ``k`` count, the classifier before stripes); ``vertical`` and
    ``diagonal`` are shares of attention mass in [0, 1] above chance, ``block`` a share of
    the map (:func:`map_features`).
    The defaults here are only for a quick look from a notebook; the pipeline
    passes the config's values.
    """

    columns: int = 3
    stripe: float = 1.0
    vertical: float = 0.6
    diagonal: float = 0.5
    mixed_vertical: float = 0.25
    mixed_diagonal: float = 0.25
    block: float = 0.03

    def __post_init__(self):
        if self.columns < 1:
            raise ValueError(f"columns must be >= 1, got {self.columns}")
        for f in fields(self):
            if f.name != "columns" and not 0 <= getattr(self, f.name) <= 1:
                raise ValueError(f"threshold {f.name} must lie in [0, 1], got {getattr(self, f.name)}")

    @classmethod
    def from_dict(cls, values: dict | None) -> "Thresholds":
        values = dict(values or {})
        unknown = set(values) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown threshold(s) {sorted(unknown)}; known: "
                             f"{[f.name for f in fields(cls)]}")
        return cls(**values)

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# features and the decision list

def segments_of(token_type_ids: np.ndarray) -> np.ndarray:
    """int ``[n]``: a segment number per token, a new one wherever the token type changes."""
    types = np.asarray(token_type_ids)
    return np.concatenate([[0], np.cumsum(types[1:] != types[:-1])]) if len(types) else types


def example_segments(token_type_ids: np.ndarray, sep_mask: np.ndarray) -> np.ndarray:
    """Segments of one input: by token type, or by separator where the model takes none.

    MPNet and RoBERTa feed no token types (all 0), so a pair ``<s> A </s></s> B </s>``
    would look like one segment; there, a new segment starts after each run of
    separator tokens but the last (the final ``</s>`` closes B). A one-sentence input
    has one run and stays one segment.
    """
    types = np.asarray(token_type_ids)
    if len(types) and (types != types[0]).any():
        return segments_of(types)
    sep = np.asarray(sep_mask, dtype=bool)
    run_ends = sep & ~np.append(sep[1:], False)  # last token of each separator run
    closed = np.concatenate([[0], np.cumsum(run_ends)[:-1]]) if len(sep) else sep.astype(int)
    return np.minimum(closed, max(int(run_ends.sum()) - 1, 0))


def example_segments_many(token_type_ids: Sequence[np.ndarray], sep_masks: Sequence[np.ndarray]) -> list[np.ndarray]:
    """:func:`example_segments` of each input, all of them in one pass of array operations (for a
    batch; one input takes fewer operations input by input)."""
    inputs = _EndToEnd.of(token_type_ids)
    return inputs.split(_segments(inputs.joined(token_type_ids), inputs.joined(sep_masks).astype(bool), inputs))


class _EndToEnd(NamedTuple):
    """Inputs laid end to end: every input's length, and of those with tokens where each opens in
    the joined arrays, how long it is (``spans``) and a mask of their first tokens."""

    lengths: np.ndarray
    opening: np.ndarray
    spans: np.ndarray
    first: np.ndarray

    @classmethod
    def of(cls, parts: Sequence) -> "_EndToEnd":
        return cls.of_lengths(np.array([len(p) for p in parts], np.int64))

    @classmethod
    def of_lengths(cls, lengths: np.ndarray) -> "_EndToEnd":
        lengths = np.asarray(lengths, np.int64)
        spans = lengths[lengths > 0]
        opening = np.cumsum(spans) - spans
        first = np.zeros(int(lengths.sum()), bool)
        first[opening] = True
        return cls(lengths, opening, spans, first)

    def joined(self, parts: Sequence) -> np.ndarray:
        return np.concatenate(parts) if len(self.first) else np.zeros(0, np.int64)

    def within(self, steps: np.ndarray) -> np.ndarray:
        """The running count of ``steps`` within each input."""
        counted = np.cumsum(steps)
        return counted - np.repeat(counted[self.first], self.spans)

    def each(self, totals: np.ndarray) -> np.ndarray:
        """Per-input ``totals`` (of the inputs with tokens) at each of their tokens."""
        return np.repeat(totals, self.spans)

    def split(self, joined: np.ndarray) -> list[np.ndarray]:
        return np.split(joined.astype(np.int64), np.cumsum(self.lengths)[:-1])


def _segments(types: np.ndarray, sep: np.ndarray, inputs: _EndToEnd) -> np.ndarray:
    """:func:`example_segments` of inputs laid end to end."""
    if not len(types):
        return np.zeros(0, np.int64)
    first = inputs.first
    last = np.roll(first, -1)
    # by token type: a new segment wherever the type changes
    by_type = inputs.within(~first & (types != np.roll(types, 1)))
    typed = inputs.each(np.add.reduceat(types != inputs.each(types[inputs.opening]), inputs.opening) > 0)
    # by separator: after each separator run's last token, but the input's last run
    run_ends = sep & ~(np.roll(sep, -1) & ~last)
    closed = inputs.within(np.roll(run_ends, 1) & ~first)
    runs = inputs.each(np.add.reduceat(run_ends.astype(np.int64), inputs.opening))
    return np.where(typed, by_type, np.minimum(closed, np.maximum(runs - 1, 0)))


# A word ending a sentence: it ends in . ! or ? (closing quotes or brackets may follow), and is
# not an abbreviation: an inner period (U.S., e.g.), one letter (an initial: J.), or one of these.
_SENTENCE_END = re.compile(r"[.!?]+$")
# closing and opening quotes and brackets (and byte-level BPE's spelling of the curly quotes)
_CLOSERS = "\"'”’)]»âĢĿĻ"
_OPENERS = "\"'“‘([«"
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs no nos co corp inc ltd mt ft gen col lt sgt capt rev fig figs "
    "approx ca cf al etc op vol pp ed eds jan feb mar apr jun jul aug sep sept oct nov dec".split())


@functools.lru_cache(maxsize=1 << 16)
def _piece_text(token: str) -> str:
    """A wordpiece without its continuation or word-start mark (``##``, ``Ġ``, ``▁``)."""
    return token[2:] if token.startswith("##") else token.lstrip("Ġ▁")


@functools.lru_cache(maxsize=1 << 16)
def ends_sentence(word: str) -> bool:
    """Whether ``word`` (a whitespace word of the corpus, as its wordpieces spell it) ends a sentence."""
    word = word.rstrip(_CLOSERS).lstrip(_OPENERS)
    if not _SENTENCE_END.search(word):
        return False
    core = _SENTENCE_END.sub("", word).lower()
    return not core or ("." not in core and len(core) > 1 and core not in ABBREVIATIONS)


_FLAGS: dict[str, int] = {}  # wordpiece -> _piece_flags (a dict: looked up once per token of every input)


def _piece_flags(token: str) -> int:
    """1 if the wordpiece holds a sentence-ending mark (``.``, ``!``, ``?``), 2 if it is only
    closing marks (or nothing) once its word-start mark is off: what :func:`_units` asks of a
    word's pieces before it spells any word out."""
    text = _piece_text(token)
    return (1 if any(c in text for c in ".!?") else 0) | (0 if text.strip(_CLOSERS) else 2)


def _flags_of(tokens: list[str]) -> np.ndarray:
    if len(_FLAGS) > 1 << 18:  # a bound, as the other caches of pieces have
        _FLAGS.clear()
    flags = list(map(_FLAGS.get, tokens))
    if None in flags:
        for token in set(t for t, f in zip(tokens, flags) if f is None):
            _FLAGS[token] = _piece_flags(token)
        flags = list(map(_FLAGS.__getitem__, tokens))
    return np.array(flags, np.int64)


def sentence_units(tokens: Sequence[str], word_ids: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """int ``[n]``: the sentence of each token, within its segment (:func:`example_segments`).

    Kovaleva et al.'s block is attention within the sentence (their inputs were GLUE sentence
    pairs: one sentence per segment); a Wikipedia segment holds several, and the squares a person
    sees along the diagonal are its sentences. A new sentence starts at each segment change and
    after each word that :func:`ends_sentence` (a word is its wordpieces, ``word_ids``; special
    tokens, -1, stay with the sentence before them: ``[SEP]`` closes it; so does a word of
    closing quotes or brackets alone, as a treebank's ``." )`` spells it).
    """
    # Python lists and per-word answers (words and pieces repeat: cached), as this runs once per
    # example: 0.11 against 0.33 ms per 128-token MiniLM segment with numpy scalars per token
    words, segments = np.asarray(word_ids).tolist(), np.asarray(segments).tolist()
    text: dict[int, str] = {}
    for token, w in zip(tokens, words):
        if w >= 0:
            text[w] = text.get(w, "") + _piece_text(token)
    ends = {w: ends_sentence(t) for w, t in text.items()}
    spelt = {w: bool(t.strip(_CLOSERS)) for w, t in text.items()}  # more than closing marks
    starts = [0] * len(words)
    ended = False  # the last word seen ended a sentence
    for i in range(1, len(words)):
        previous, current = words[i - 1], words[i]
        if previous >= 0 and current != previous:
            ended = ends[previous] or (ended and not spelt[previous])
        new_word = current >= 0 and current != previous
        if segments[i] != segments[i - 1] or (new_word and ended and spelt[current]):
            starts[i], ended = 1, False
    return np.cumsum(np.array(starts, dtype=np.int64))


def sentence_units_many(tokens: Sequence[Sequence[str]], word_ids: Sequence[np.ndarray],
                        segments: Sequence[np.ndarray]) -> list[np.ndarray]:
    """:func:`sentence_units` of each input, all of them in one pass of array operations (for a
    batch: 3.6 against 11.9 ms for 64 Wikipedia segments of 128 wordpieces; one input takes
    fewer operations token by token, 0.20 against 0.48 ms)."""
    inputs = _EndToEnd.of(tokens)
    return inputs.split(_units([t for ts in tokens for t in ts], inputs.joined(word_ids).astype(np.int64),
                               inputs.joined(segments), inputs))


def _units(tokens: list[str], words: np.ndarray, segments: np.ndarray, inputs: _EndToEnd) -> np.ndarray:
    """:func:`sentence_units` of inputs laid end to end.

    Read token by token, the rule keeps one flag, whether the last word ended a sentence: a word
    spelt with more than closing marks sets it to whether it :func:`ends_sentence` when the next
    token is not of it; a word of closing marks alone leaves it; a segment change (and an input's
    start) clears it. A new word that is spelt starts a sentence where the flag is set, so the flag
    at each token is the latest of those events before it, found with a running maximum. (A
    sentence start clears the flag too, but the word that started it sets it again before any
    other word begins.) Only words with a ``.``, ``!`` or ``?`` among their pieces are spelt out."""
    if not len(words):
        return np.zeros(0, np.int64)
    first, flags = inputs.first, _flags_of(tokens)
    # words numbered across the inputs: each input's from after the last one's
    sizes = np.maximum(np.maximum.reduceat(words, inputs.opening), -1) + 1
    known = words >= 0
    word = np.where(known, words + inputs.each(np.cumsum(sizes) - sizes), -1)
    n_words = int(word.max(initial=0)) + 1  # at least one: the lookups below index with 0 for non-words
    spelt = np.bincount(word[known], weights=(flags[known] & 2) == 0, minlength=n_words) > 0
    marked = np.bincount(word[known], weights=flags[known] & 1, minlength=n_words) > 0
    ends = np.zeros(n_words, bool)
    picked = np.flatnonzero(known & marked[np.maximum(word, 0)])
    text: dict[int, str] = {}  # spelt out only where a piece has a mark
    for i, w in zip(picked.tolist(), word[picked].tolist()):
        text[w] = text.get(w, "") + _piece_text(tokens[i])
    for w, t in text.items():
        ends[w] = ends_sentence(t)
    position = np.arange(len(words))
    previous, current = np.roll(word, 1), word
    changed = ~first & (current != previous)
    sets = changed & (previous >= 0) & spelt[np.maximum(previous, 0)]  # at the token after the word
    cleared = first | (segments != np.roll(segments, 1))
    last_set = np.maximum.accumulate(np.where(sets, position, -1))
    last_clear = np.maximum.accumulate(np.where(cleared, position, -1))  # a set before it, on its token too
    ended = (last_set > last_clear) & ends[np.maximum(previous[np.maximum(last_set, 0)], 0)]
    new_word = changed & (current >= 0) & spelt[np.maximum(current, 0)]
    return inputs.within(~first & (cleared | (new_word & ended)))


def example_units(example: Example, sep_mask: np.ndarray | None = None) -> np.ndarray:
    """:func:`sentence_units` of one example, its segments by :func:`example_segments`."""
    sep = example.sep_mask if sep_mask is None else sep_mask
    return sentence_units(example.tokens, example.word_ids, example_segments(example.token_type_ids, sep))


def map_features(attn: np.ndarray, units: np.ndarray, columns: int = 3, stripe: float = 1.0,
                 return_top: bool = False, shape: bool = False):
    """The features (:data:`FEATURES`) of every map of one input.

    Parameters
    ----------
    attn : float array ``[..., n, n]``
        Attention maps of one input (query rows), e.g. ``[layers, heads, n, n]``.
    units : int array ``[n]``
        Sentence of each token (:func:`sentence_units`; segment ids, :func:`segments_of`,
        make each segment one sentence).
    columns : int
        ``k``: how many top columns count as vertical whatever their mass.
    stripe : float
        A further column counts as vertical (a stripe) when its off-band mass per
        query is at least ``1 / n + stripe``; 1 turns stripes off.
    return_top : bool
        Also return the top ``k`` columns, int ``[..., k]``, and the off-band mass each
        of them receives, float ``[..., k]``.
    shape : bool
        Also the forest's :data:`SHAPE_FEATURES`, after the five.

    Returns
    -------
    float array ``[..., 5]``: vertical, diagonal, block (NaN with one sentence), entropy,
    stripes (``[..., 5 + 16]`` with ``shape``; and the top columns and their masses if asked).

    Notes
    -----
    Every weight ``a[i, j]`` is counted once: in ``diagonal`` if ``|i - j| <= 1``,
    else in ``vertical`` if ``j`` is a top column or a stripe, else in the rest, which
    ``block`` reads against :func:`block_contrast` (keys more than 3 tokens away, in the
    query's sentence or at the mirror position beyond its boundary). The top
    columns are the ``k`` with the largest mean off-band weight (ties: the lowest keys,
    so that a uniform map's level is reproducible), so a pure
    diagonal map has no vertical mass; a pure vertical map on one key puts the 2-3
    weights of the rows next to it in ``diagonal`` (``3 / n`` of the mass). A uniform
    row gives every key ``1 / n``, so a uniform map has no stripes at any length.
    """
    attn = _as_float(attn)
    lead, n = attn.shape[:-2], attn.shape[-1]
    batch = MapBatch(attn.reshape(1, -1, 1, n, n), lengths=[n])
    features, top, top_mass = batch_features(batch, np.asarray(units)[None], columns, stripe, shape)
    features = features.reshape(*lead, features.shape[-1])
    if not return_top:
        return features
    return features, top.reshape(*lead, -1), top_mass.reshape(*lead, -1)


def batch_features(batch: MapBatch, units: np.ndarray, columns: int = 3,
                   stripe: float = 1.0, shape: bool = False, host: bool = True) -> tuple:
    """:func:`map_features` of every map of a batch, on the batch's device.

    ``units``: int ``[B, N]``, each token's sentence (:func:`example_units`, anything past an
    example's length). Returns host arrays (``host=False``: arrays on the batch's device, so
    that a layer read on a GPU waits on no copy): features ``[B, L, H, 5]`` (``[B, L, H, 21]``
    with ``shape``: :data:`SHAPE_FEATURES` after them), the top columns ``[B, L, H, k]``
    and the off-band mass each receives (``k = min(columns, N)``; a top column past a shorter
    example's length has no mass).
    """
    xp, f64 = batch.xp, batch.xp.float64
    width, lengths = batch.width, batch.lengths
    n = batch.n_tokens()[:, None, None]  # [B, 1, 1]
    # Band mass per key column: a[j, j] + a[j - 1, j] (offset +1) + a[j + 1, j] (offset -1).
    band = xp.astype(batch.diagonal(0), f64)
    if width > 1:
        edge = xp.zeros_like(band[..., :1])
        band = (band + xp.concat([edge, xp.astype(batch.diagonal(1), f64)], axis=-1)
                + xp.concat([xp.astype(batch.diagonal(-1), f64), edge], axis=-1))
    diagonal = xp.sum(band, axis=-1) / n
    off_col = (batch.column_mass() - band) / n[..., None]  # [B, L, H, N] off-band mass per key, per query
    k = min(columns, width)
    if batch.compiled_here() and np.isfinite(off_col).all():
        top, in_top, vertical, stripes = _compiled_top_columns(batch, off_col, 1.0 / n + stripe, k)
    else:
        top = xp.argsort(-off_col, axis=-1, stable=True)[..., :k]  # ties: the lowest key
        keys = batch.asarray(np.arange(width))
        is_stripe = (off_col >= 1.0 / n[..., None] + stripe) & (batch.token_mask("valid") > 0)[:, None, None]
        stripes = xp.astype(xp.sum(xp.astype(is_stripe, xp.int64), axis=-1), f64)
        in_top = is_stripe | xp.any(keys[:, None] == top[..., None, :], axis=-1)
        vertical = xp.sum(xp.where(in_top, off_col, xp.zeros_like(off_col)), axis=-1)
    block = _block(batch, units, in_top, diagonal)
    log_n = batch.asarray(np.log(np.maximum(lengths, 2)).astype(np.float64))[:, None, None]
    entropy = xp.sum(xp.astype(batch.row_entropy(), f64), axis=-1) / n / log_n
    entropy = xp.where(n > 1, entropy, xp.zeros_like(entropy))
    features = [vertical, diagonal, block, entropy, stripes]
    if shape:
        features += _shape_features(batch, units, n, vertical, diagonal, block)
    out = (xp.stack(features, axis=-1), top, xp.take_along_axis(off_col, top, axis=-1))
    return tuple(map(to_host, out)) if host else out


def _shape_features(batch: MapBatch, units: np.ndarray, n, vertical, diagonal, block) -> list:
    """:data:`SHAPE_FEATURES` of every map of a batch, float64 ``[B, L, H]`` each, on its device;
    ``n`` ``[B, 1, 1]`` the lengths, the other three :func:`batch_features`' own (raw)."""
    xp, f64, width = batch.xp, batch.xp.float64, batch.width
    cols = batch.column_mass() / n[..., None]  # [B, L, H, N]: each key's mass per query
    ranked = -xp.sort(-cols, axis=-1)  # descending; padding keys hold 0: ranked last
    if width < 5:
        ranked = xp.concat([ranked, xp.zeros_like(ranked[..., :5 - width])], axis=-1)
    last = batch.asarray(np.maximum(batch.lengths - 1, 0))[:, None, None, None]
    last = xp.take_along_axis(cols, xp.broadcast_to(last, (*cols.shape[:-1], 1)), axis=-1)[..., 0]

    def band(offsets) -> object:
        return sum(xp.sum(xp.astype(batch.diagonal(k), f64), axis=-1) for k in offsets if abs(k) < width) / n
    same = batch.shared(f"same_sentence:{hash(np.ascontiguousarray(units).tobytes())}", lambda: _same_sentence(
        batch, units))
    in_sentence, chance = same
    flat = xp.reshape(batch.attn, (*batch.attn.shape[:-2], width * width))
    in_sentence = xp.astype(xp.vecdot(flat, in_sentence[:, None, None, :]), f64) / n - chance
    row_max = xp.sum(xp.astype(batch.row_max(), f64), axis=-1) / n
    valid = batch.token_mask("valid")[:, None, None, :] > 0

    def share_above(times: float):
        above = valid & (cols > times / n[..., None])
        return xp.sum(xp.astype(above, f64), axis=-1) / n
    rest = 1 - vertical - diagonal
    return [ranked[..., 0], ranked[..., 1], ranked[..., 2], xp.sum(ranked[..., :5], axis=-1),
            cols[..., 0], last, band((0,)), band((1,)), band((-1,)), band(range(-3, 4)), in_sentence,
            row_max, share_above(2.0), share_above(5.0), rest, block / xp.clip(rest, min=1e-3)]


def _same_sentence(batch: MapBatch, units: np.ndarray):
    """float32 ``[B, N*N]``: 1 where query and key lie in one sentence (within the example), and
    float64 ``[B, 1, 1]`` the share of the example's pairs that do."""
    n = batch.lengths
    valid = np.arange(batch.width)[None, :] < n[:, None]
    same = (units[:, :, None] == units[:, None, :]) & valid[:, :, None] & valid[:, None, :]
    chance = same.sum((1, 2)) / np.maximum(n, 1) ** 2
    return (batch.asarray(same.reshape(len(n), -1).astype(np.float32)),
            batch.asarray(chance.astype(np.float64)[:, None, None]))


def _block(batch: MapBatch, units: np.ndarray, in_top, like):
    """``block`` of every map (:func:`map_features`), shaped and placed ``like`` the other
    features: NaN for a one-sentence input.

    Read from the contrasting pairs alone (:func:`block_contrast`'s +1 entries, ~10% of an
    input's pairs): each pair ``(i, j)`` and its mirror ``(i, 2i - j)`` give ``a[i, j] - a[i, 2i - j]``,
    set aside when either key is a top column or a stripe. On the host, once the process takes
    the compiled loops: the whole contrast as one dot product per map, less the pairs set aside
    (:func:`_compiled_block`: 0.9 against 1.5 ms per 128-token MiniLM example)."""
    xp = batch.xp
    two = np.array([len(np.unique(units[b, :n])) > 1 for b, n in enumerate(batch.lengths)])
    if not two.any():
        return xp.full_like(like, float("nan"))  # on the batch's device
    # the same for every view and layer of these examples: found (and moved to the device) once
    units_key = hash(np.ascontiguousarray(units).tobytes())
    if batch.compiled_here():
        contrast = batch.shared(f"block_contrast:{units_key}", lambda: block_contrast(
            units, batch.lengths, batch.width).astype(np.int8))
        return _compiled_block(batch, in_top, two, contrast)
    example, query, keys, mirror, bounds = batch.shared(f"block_pairs:{units_key}", lambda: tuple(
        batch.asarray(x) for x in _contrast_pairs(units, batch.lengths, batch.width)))
    attn, f64 = batch.attn, xp.float64
    difference = xp.astype(attn[example, :, :, query, keys], f64) - xp.astype(attn[example, :, :, query, mirror], f64)
    aside = in_top[example, :, :, keys] | in_top[example, :, :, mirror]  # [P, L, H]
    kept = xp.where(aside, xp.zeros_like(difference), difference)
    n_pairs, n_layers, n_heads = kept.shape
    # each example's sum over its pairs (consecutive: the pairs come example by example), as
    # differences of one running sum at the examples' bounds
    running = xp.cumulative_sum(xp.reshape(kept, (n_pairs, n_layers * n_heads)), axis=0, include_initial=True)
    sums = xp.take(running, bounds[1:], axis=0) - xp.take(running, bounds[:-1], axis=0)
    block = xp.reshape(sums, (len(two), n_layers, n_heads)) / batch.n_tokens()[:, None, None]
    return xp.where(batch.asarray(two)[:, None, None], block, xp.full_like(block, float("nan")))


def _compiled_top_columns(batch: MapBatch, off_col: np.ndarray, above: np.ndarray, k: int) -> tuple:
    """:func:`batch_features`' top columns, what is in them (or a stripe), their mass and the
    stripes, from one compiled loop per map (:func:`headatlas.analyses._kernels.top_columns`:
    no sort of every row, no ``[..., N, k]`` comparison)."""
    from headatlas.analyses._kernels import top_columns

    shape, width = off_col.shape[:-1], batch.width
    rows = int(np.prod(shape))
    valid = np.ascontiguousarray(np.broadcast_to(batch.valid()[:, None, None], off_col.shape)).reshape(rows, width)
    top, in_top = np.empty((rows, k), np.int64), np.empty((rows, width), bool)
    vertical, stripes = np.empty(rows), np.empty(rows)
    top_columns(np.ascontiguousarray(off_col).reshape(rows, width),
                np.ascontiguousarray(np.broadcast_to(above, shape)).reshape(rows), valid, k, top, in_top,
                vertical, stripes)
    return (top.reshape(*shape, k), in_top.reshape(*shape, width), vertical.reshape(shape),
            stripes.reshape(shape))


def _compiled_block(batch: MapBatch, in_top: np.ndarray, two: np.ndarray, contrast: np.ndarray) -> np.ndarray:
    """:func:`_block` on the host from the compiled loop (:func:`headatlas.analyses._kernels.block_sums`:
    one dot product with the ``contrast`` (int8 :func:`block_contrast`) per map, less the pairs
    with a key aside)."""
    from headatlas.analyses._kernels import block_sums

    rows, width = len(two), batch.width
    shape = batch.attn.shape[1:-2]
    sums = np.zeros((rows, int(np.prod(shape))))
    block_sums(np.ascontiguousarray(batch.attn).reshape(rows, -1, width, width),
               np.ascontiguousarray(in_top).reshape(rows, -1, width), contrast, batch.lengths, sums)
    block = sums.reshape(rows, *shape) / batch.n_tokens()[:, None, None]
    return np.where(two[:, None, None], block, np.nan)


def _contrast_pairs(units: np.ndarray, lengths: Sequence[int], width: int) -> tuple[np.ndarray, ...]:
    """The +1 pairs of :func:`block_contrast` over a batch: example, query, key and mirror key
    ``[P]`` each (example by example), and ``[B + 1]`` the bounds of each example's pairs."""
    counted, same, same_mirror = _contrast_masks(units, lengths, width)
    example, query, keys = np.nonzero(counted & same & ~same_mirror)
    bounds = np.searchsorted(example, np.arange(len(counted) + 1))
    return example, query, keys, 2 * query - keys, bounds


def block_contrast(units: np.ndarray, lengths: Sequence[int], width: int) -> np.ndarray:
    """``[B, N, N]`` weights whose sum against a map, over its queries, is its ``block``
    (:func:`map_features`; pairs with a top column or stripe at either end set aside).

    A query ``i`` weighs a key ``j`` more than :data:`BLOCK_LOCAL` tokens away against the key
    at the same distance on the other side, ``2i - j`` (its mirror, where the input has one):
    ``[j in i's sentence] - [2i - j in i's sentence]``; 0 elsewhere. A row's sum is the
    attention it keeps on its own side of a sentence boundary beyond what it gives the mirror
    keys: 0 for a uniform row and for any row symmetric about its query (a local window of any
    width, cut short or not at the input's ends), positive where attention stops at the
    sentence's ends (squares along the diagonal). The rows far from a boundary, whose mirror
    keys lie in their sentence too, weigh nothing: block is read where sentences meet.
    """
    counted, same, same_mirror = _contrast_masks(units, lengths, width)
    return np.where(counted, same.astype(float) - same_mirror, 0.0)


def _contrast_masks(units: np.ndarray, lengths: Sequence[int], width: int) -> tuple[np.ndarray, ...]:
    """``[B, N, N]`` each, for the whole batch at once: whether :func:`block_contrast` weighs the
    pair (key more than :data:`BLOCK_LOCAL` away, its mirror inside the input), whether the key
    is in the query's sentence, and whether the mirror key is."""
    units = np.asarray(units)[:, :width]
    units = np.pad(units, ((0, 0), (0, width - units.shape[1])))  # past the lengths: never counted
    n = np.asarray(lengths).reshape(-1, 1, 1)
    query, key = np.arange(width)[:, None], np.arange(width)[None, :]
    mirror = 2 * query - key
    counted = (np.abs(key - query) > BLOCK_LOCAL) & (mirror >= 0) & (mirror < n) & (query < n) & (key < n)
    same = units[:, :, None] == units[:, None, :]
    same_mirror = units[:, :, None] == units[:, np.clip(mirror, 0, width - 1)]
    return counted, same, same_mirror


def above_chance(features: np.ndarray, units: np.ndarray, columns: int,
                 stripe: float = 1.0) -> np.ndarray:
    """``vertical`` and ``diagonal`` as shares of what a uniform map leaves: ``(f - u) / (1 - u)``.

    ``u`` is the feature of the uniform map of an input of the same length (every row
    ``1 / n``; only ``units``' length matters): ``(3n - 2) / n^2`` on the band, about ``k / n``
    on the top columns. On a short sentence even uniform attention passes a fixed threshold
    (n = 9: 31% on the band), so the classifier compares the excess over that level, which is
    0 for a uniform map and 1 for a map entirely on the band or the columns, at any length;
    below chance it is negative. ``block`` is 0 for a uniform map by construction
    (:func:`block_contrast`) and is left as it is, as are ``entropy`` and ``stripes``. Two or
    fewer tokens put every key on the band: there, both are 0. The forest's
    :data:`SHAPE_FEATURES`, where given, become their excess over the uniform map's, ``f - u``
    (0 for a uniform map at any length: the forest, learned on Wikipedia segments of 50-128
    tokens, reads a 9-word treebank sentence on the same scale).
    """
    return _excess(features, _uniform_features(len(units), columns, stripe))


def _excess(features: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """``features`` ``[..., 5]`` with ``vertical`` and ``diagonal`` as shares above the
    ``uniform`` level (broadcast against them: one length's ``[5]`` or ``[21]``, or a level per
    map), and the shape features of ``[..., 21]`` less the uniform's: :func:`above_chance`'s arithmetic."""
    out = np.array(features, dtype=np.float64, copy=True)
    if out.shape[-1] > len(FEATURES):
        # (a uniform map's block is 0 by construction, NaN only as the one-sentence map it is made as)
        out[..., len(FEATURES):] -= np.nan_to_num(uniform[..., len(FEATURES):])
    for i in (0, 1):
        level = uniform[..., i]
        above = level < 1 - 1e-9
        out[..., i] = np.where(above, (out[..., i] - level) / np.where(above, 1 - level, 1.0), 0.0)
    return out


@functools.lru_cache(maxsize=1024)
def _uniform_features(n: int, columns: int, stripe: float) -> np.ndarray:
    """:func:`map_features` of the uniform map of ``n`` tokens, with its shape features (the same
    for every input of that length: computed once)."""
    features = map_features(np.full((n, n), 1.0 / n), np.zeros(n, dtype=np.int64), columns, stripe,
                            shape=True)
    features.flags.writeable = False
    return features


def classify(features: np.ndarray, thresholds: Thresholds) -> np.ndarray:
    """Pattern index (:data:`PATTERNS`) of each map from its :func:`above_chance` features ``[..., 5]``.

    A NaN ``block`` (one-sentence input) never gives block.
    """
    f = np.asarray(features, dtype=np.float64)
    v, d, b = f[..., 0], f[..., 1], f[..., 2]
    t = thresholds
    out = np.full(v.shape, HETEROGENEOUS, dtype=np.int64)
    # Assign in reverse priority, so the earlier rules of the list overwrite the later ones.
    out[d >= t.diagonal] = DIAGONAL
    out[v >= t.vertical] = VERTICAL
    out[(v >= t.mixed_vertical) & (d >= t.mixed_diagonal)] = MIXED
    out[np.nan_to_num(b, nan=-np.inf) >= t.block] = BLOCK
    return out


# Kovaleva et al. trained a CNN on ~400 labelled maps; this forest learns from the labelled maps'
# features. 5-fold cross-validation on the tune half put a forest above extra trees, boosting and
# logistic regression; these settings were the first tried (docs/findings.md).
FOREST = {"n_estimators": 200, "min_samples_leaf": 2, "random_state": 0}


@dataclass(frozen=True)
class Forest:
    """A random forest from labelled maps' features to their patterns (``patterns.classifier:
    forest``): :func:`fit_forest` makes one, :func:`trained_forest` the pipeline's."""

    model: object  # sklearn.ensemble.RandomForestClassifier
    columns: int
    stripe: float
    n_maps: int  # the maps it learned from

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Pattern index (:data:`PATTERNS`) of each map from its :func:`above_chance` features
        with :data:`SHAPE_FEATURES` (``[..., 21]``); a NaN ``block`` (one sentence) is never block."""
        f = np.asarray(features, dtype=np.float64)
        flat = f.reshape(-1, f.shape[-1])
        if not len(flat):
            return np.zeros(f.shape[:-1], dtype=np.int64)
        votes = np.zeros((len(flat), len(PATTERNS)))
        votes[:, [PATTERNS.index(c) for c in self.model.classes_]] = self.model.predict_proba(
            np.nan_to_num(flat, nan=0.0))
        votes[np.isnan(flat[:, 2]), BLOCK] = -1.0
        return np.argmax(votes, axis=-1).reshape(f.shape[:-1])

    def describe(self) -> str:
        return (f"a random forest ({FOREST['n_estimators']} trees) on {len(FEATURES) + len(SHAPE_FEATURES)} "
                f"map features, learned from {self.n_maps} hand-labelled maps (the tune half)")


def fit_forest(features: np.ndarray, labels: Sequence[str], columns: int, stripe: float) -> Forest:
    """A :class:`Forest` fitted to maps' features (:func:`features_for` with ``shape``) and labels."""
    from sklearn.ensemble import RandomForestClassifier

    features = np.asarray(features, dtype=np.float64)
    if features.shape[-1] != len(FEATURES) + len(SHAPE_FEATURES):
        raise ValueError(f"the forest reads {len(FEATURES) + len(SHAPE_FEATURES)} features per map "
                         f"(features_for(..., shape=True)), got {features.shape[-1]}")
    unknown = set(labels) - set(PATTERNS)
    if unknown:
        raise ValueError(f"unknown pattern label(s) {sorted(unknown)}; known: {list(PATTERNS)}")
    model = RandomForestClassifier(**FOREST, n_jobs=1).fit(np.nan_to_num(features, nan=0.0), list(labels))
    return Forest(model, int(columns), float(stripe), len(features))


@functools.lru_cache(maxsize=4)
def trained_forest(columns: int, stripe: float, labels: str | None = None, maps: str | None = None) -> Forest:
    """The forest learned from the tune half of the labelled maps (``labels`` / ``maps``: a label
    CSV and its frozen maps; None: the packaged set), with the features' ``columns`` and
    ``stripe``. Seeded: the same labels give the same forest. Cached per process."""
    from headatlas.analyses.labels import load_maps, read_labels

    table = read_labels(labels)
    found, units, _ = load_maps(maps, table)
    tune_half = (table["half"] == "tune").to_numpy()
    if not tune_half.any():
        raise ValueError(f"{labels or 'the packaged labels'}: no map in the tune half to learn from")
    features = features_for([m for m, t in zip(found, tune_half) if t],
                            [u for u, t in zip(units, tune_half) if t], columns, stripe, shape=True)
    return fit_forest(features, table["pattern"].to_numpy()[tune_half], columns, stripe)


# ---------------------------------------------------------------------------------------------
# the streaming analysis

# Inputs whose maps are classified together: a bounded buffer (~15 KB of features per MiniLM input).
CLASSIFY_EVERY = 256


@register
class AttentionPatterns(Analysis):
    """Per head: the share of inputs whose map shows each pattern, and the mean features.

    Parameters
    ----------
    thresholds : dict, optional
        The features' and the rules' settings (:class:`Thresholds` fields; missing ones take
        its defaults): ``patterns.thresholds`` in the config.
    classifier : ``"rules"`` (the decision list, :func:`classify`) or ``"forest"`` (a random
        forest learned from the tune half of the labelled maps, :func:`trained_forest`;
        ``patterns.classifier``, the config's default).
    labels : dict, optional
        ``file`` and ``maps`` of the labelled set the forest learns from (None or absent:
        the packaged set); ``patterns.labels``.

    The result's ``heads`` table: ``layer``, ``head``, one ``<pattern>`` column per pattern
    (share of the inputs, 0-1), ``dominant`` (the pattern with the largest share), the mean
    of each feature (``mean_<feature>``; vertical and diagonal above chance, block as it is,
    ``mean_block`` over inputs of two or more sentences only), ``special_top`` (share of the top-column
    mass that falls on ``[CLS]``, ``[SEP]``, ``.`` or ``,``, over the head's vertical and
    vertical + diagonal maps; NaN if it has none), ``n_inputs`` and ``multi_sentence_inputs``.
    ``attrs["thresholds"]`` holds every setting, ``attrs["classifier"]`` the classifier.
    Maps are classified in groups of :data:`CLASSIFY_EVERY` inputs (a forest's call costs about as
    much for one input's maps as for hundreds), always before the state is read.

    State (merging adds): ``counts`` int ``[layers, heads, 5]`` (maps per pattern),
    ``sums`` ``[layers, heads, 5]`` (features after :func:`above_chance`, NaN as 0), ``block_inputs``
    (inputs of two or more sentences), ``special`` and ``vertical`` ``[layers, heads]`` (top-column mass
    on special tokens, and all of it, over vertical(-ish) maps).
    """

    name = "patterns"
    bounded = True  # sums
    unit = "inputs"
    _SUMS = ("counts", "sums", "block_inputs", "special", "vertical")

    def __init__(self, n_layers: int, n_heads: int, thresholds: dict | None = None,
                 classifier: str = "rules", labels: dict | None = None):
        super().__init__(n_layers, n_heads)
        if classifier not in CLASSIFIERS:
            raise ValueError(f"unknown pattern classifier {classifier!r}; known: {list(CLASSIFIERS)}")
        self.thresholds, self.classifier, self.labels = thresholds, classifier, labels
        self._settings = Thresholds.from_dict(thresholds)
        # inputs not yet classified, in runs of a batch's inputs: features, special and vertical mass
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._counts = np.zeros((n_layers, n_heads, len(PATTERNS)), dtype=np.int64)
        self._sums = np.zeros((n_layers, n_heads, len(FEATURES)))
        self._block_inputs = np.int64(0)
        self._special = np.zeros((n_layers, n_heads))  # top-column mass on special tokens
        self._vertical = np.zeros((n_layers, n_heads))  # top-column mass, over vertical(-ish) maps

    def reduce(self, batch: MapBatch) -> dict:
        t = self._settings
        features, tops, top_masses = batch_features(batch, self._units_of(batch), t.columns, t.stripe,
                                                    shape=self.classifier == "forest", host=False)
        return {"features": features, "tops": tops, "top_masses": top_masses}  # [B, L, H, ...], on the device

    def fold(self, batch: MapBatch, reduced: dict) -> None:
        reduced = {key: to_host(value) for key, value in reduced.items()}  # once per batch, every layer
        t, lengths, units = self._settings, batch.lengths, self._units_of(batch)
        masks = batch.host_masks()
        special = masks["cls"] | masks["sep"] | masks["punct"]  # [B, N]
        # above_chance of every input at once: each row's uniform level is its length's
        uniform = np.stack([_uniform_features(n, t.columns, t.stripe) for n in lengths.tolist()])
        features = _excess(reduced["features"], uniform[:, None, None])  # [B, L, H, F]
        inside = np.arange(batch.width) < lengths[:, None]
        self._block_inputs += int(((units != units[:, :1]) & inside).any(axis=1).sum())  # > 1 sentence
        # which keys the vertical mass goes to: the top columns' mass on special tokens
        top, top_mass = reduced["tops"], reduced["top_masses"]  # [B, L, H, k]
        on_special = (top_mass * special[np.arange(len(batch))[:, None, None, None], top]).sum(-1)
        vertical = top_mass.sum(-1)
        clean = np.nan_to_num(features[..., :len(FEATURES)])
        for b in range(len(batch)):  # input by input, as one at a time adds them
            self._sums += clean[b]
        start = 0
        while start < len(batch):  # classified in groups of CLASSIFY_EVERY inputs, as one at a time
            stop = min(len(batch), start + CLASSIFY_EVERY - sum(len(run[0]) for run in self._pending))
            self._pending.append((features[start:stop], on_special[start:stop], vertical[start:stop]))
            start = stop
            if sum(len(run[0]) for run in self._pending) >= CLASSIFY_EVERY:
                self._classify_pending()

    @staticmethod
    def _units_of(batch: MapBatch) -> np.ndarray:
        """int ``[B, N]``: each token's sentence (:func:`example_units`)."""
        def compute():
            examples = batch.examples
            if len(examples) == 1:  # the CPU's path: fewer operations token by token
                units = np.zeros((1, batch.width), np.int64)
                units[0, :examples[0].n_tokens] = example_units(examples[0], batch.host_masks()["sep"][0])
                return units
            inputs, valid = _EndToEnd.of_lengths(batch.lengths), batch.valid()  # valid: the tokens, in order
            segments = _segments(inputs.joined([e.token_type_ids for e in examples]),
                                 batch.host_masks()["sep"][valid], inputs)
            units = np.zeros((len(batch), batch.width), np.int64)
            units[valid] = _units([t for e in examples for t in e.tokens],
                                  inputs.joined([e.word_ids for e in examples]).astype(np.int64), segments, inputs)
            return units
        return batch.shared("pattern_units", compute)

    def _classify_pending(self) -> None:
        """Classify the maps of the inputs seen since the last call, and count their patterns."""
        if not self._pending:
            return
        features, special, vertical = (np.concatenate(part) for part in zip(*self._pending))
        self._pending = []
        if self.classifier == "forest":
            labels = self._forest().predict(features)
        else:
            labels = classify(features, self._settings)
        self._counts += np.stack([(labels == p).sum(0) for p in range(len(PATTERNS))], axis=-1)
        vertical_ish = (labels == VERTICAL) | (labels == MIXED)
        self._special += np.where(vertical_ish, special, 0).sum(0)
        self._vertical += np.where(vertical_ish, vertical, 0).sum(0)

    def _forest(self) -> Forest:
        t, labels = self._settings, self.labels or {}
        return trained_forest(t.columns, t.stripe, labels.get("file"), labels.get("maps"))

    def _state(self) -> dict[str, np.ndarray]:
        self._classify_pending()
        return {name: np.asarray(getattr(self, f"_{name}")) for name in self._SUMS}

    def _merge(self, state: dict[str, np.ndarray]) -> None:
        for name in self._SUMS:
            setattr(self, f"_{name}", getattr(self, f"_{name}") + state[name])

    def result(self) -> Result:
        self._classify_pending()
        n = max(self.n_examples, 1)
        shares = self._counts / n
        means = self._sums / n
        means[..., 2] = self._sums[..., 2] / self._block_inputs if self._block_inputs else np.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            special = np.where(self._vertical > 0, self._special / self._vertical, np.nan)
        table = head_table(self.n_layers, self.n_heads,
                           **{p: shares[..., i] for i, p in enumerate(PATTERNS)},
                           **{f"mean_{f}": means[..., i] for i, f in enumerate(FEATURES)},
                           special_top=special)
        table.insert(2 + len(PATTERNS), "dominant", dominant(table))
        table["n_inputs"] = self.n_examples
        table["multi_sentence_inputs"] = int(self._block_inputs)
        return Result({"heads": table}, attrs={"thresholds": self._settings.as_dict(),
                                               "classifier": self.classifier})

    def caption(self, result: Result, provenance: dict) -> str:
        t = self._settings
        features = (f"map features (top {t.columns} columns and stripes of 1/n + {t.stripe}, band "
                    f"|i-j| <= 1, block at the sentence ends)")
        if self.classifier == "forest":
            how = (f"patterns by {self._forest().describe()}; {features} and their shape "
                   f"(patterns_evaluate: held-out agreement)")
        else:
            how = (f"patterns by a decision list on {features}, thresholds vertical {t.vertical}, "
                   f"diagonal {t.diagonal}, mixed {t.mixed_vertical}/{t.mixed_diagonal}, block {t.block}")
        return f"{describe(provenance, provenance['n_examples'], self.unit)}; {how}; Kovaleva et al. used {PAPER_MODEL}"


def dominant(table: pd.DataFrame) -> pd.Series:
    """Per head, the pattern with the largest share of inputs (first in :data:`PATTERNS` on ties)."""
    return table[list(PATTERNS)].idxmax(axis=1)


# What the per-head table adds to the head atlas (headatlas.report.atlas), by table name: one set
# of columns per corpus of `patterns.corpora`, read from the attention weights only.
ATLAS = {
    "heads": HeadColumns("patterns", "Kovaleva et al. 2019 §4", rank=40, weighting=ATTENTION_ONLY,
                         per_corpus=True, columns=(
        Column("pattern_{corpus}", "dominant", "label", "the pattern most of its maps show",
               "about a third of BERT's maps are vertical"),
    ) + tuple(Column(f"pattern_{{corpus}}_{p}", p, "share of inputs", f"share of its maps classified {p}")
              for p in PATTERNS)),
}


# ---------------------------------------------------------------------------------------------
# summaries

def corpus_shares(heads: pd.DataFrame, corpus: str) -> pd.DataFrame:
    """Share (%) of all maps (heads x inputs) showing each pattern: one row per pattern.

    Every head sees the same inputs, so this is the mean of the heads' shares
    (Kovaleva et al.'s Fig. 2 bar for one corpus).
    """
    shares = 100 * heads[list(PATTERNS)].mean(axis=0)
    return pd.DataFrame({"corpus": corpus, "pattern": list(PATTERNS),
                         "share_pct": shares.to_numpy().round(2),
                         "maps": int(len(heads) * heads["n_inputs"].iloc[0]) if len(heads) else 0})


def layer_shares(heads: pd.DataFrame) -> pd.DataFrame:
    """Share (%) of the maps of each layer showing each pattern: layers x patterns."""
    return (100 * heads.groupby("layer")[list(PATTERNS)].mean()).round(2).reset_index()


def crosstab_types(heads: pd.DataFrame, types: pd.DataFrame) -> pd.DataFrame:
    """Guan et al.'s head types against the patterns their maps show.

    One row per head type: ``heads``, then the mean share (%) of each pattern
    over the type's heads (rows sum to 100), then ``dominant_<pattern>``: how
    many of the type's heads have that pattern as their most frequent one.
    ``types`` is ``headtypes/features.csv`` (``layer``, ``head``, ``type``).
    """
    merged = heads.merge(types[["layer", "head", "type"]], on=["layer", "head"], how="inner")
    if len(merged) != len(heads):
        raise ValueError(f"head types cover {len(merged)} of {len(heads)} heads; the two tables "
                         "must come from models of the same shape")
    g = merged.groupby("type", sort=False)
    out = pd.DataFrame({"heads": g.size()})
    out = out.join((100 * g[list(PATTERNS)].mean()).round(2))
    dominant_counts = pd.crosstab(merged["type"], merged["dominant"]).reindex(
        columns=list(PATTERNS), fill_value=0).add_prefix("dominant_")
    out = out.join(dominant_counts).fillna(0)
    order = [t for t in ("dense", "diagonal", "dense&vertical", "vertical") if t in out.index]
    order += sorted(set(out.index) - set(order))
    return out.loc[order].rename_axis("type").reset_index()


def paper_claims(shares: pd.DataFrame, heads: pd.DataFrame, tolerance: float = 10.0) -> list[Claim]:
    """Kovaleva et al.'s pattern shares beside ours (one corpus's :func:`corpus_shares`).

    A share "about" the paper's holds within ``tolerance`` percentage points.

    Returns
    -------
    list[Claim]
        One :class:`~headatlas.claims.Claim` per finding
        (:func:`~headatlas.claims.claims_table` makes them a ``paper_claims.csv`` table).
    """
    share = dict(zip(shares["pattern"], shares["share_pct"]))
    corpus = shares["corpus"].iloc[0]
    note = f"{corpus}; paper: {PAPER_MODEL}; ours: a rule-based classifier (see patterns/evaluation.csv)"
    vertical = share["vertical"]
    bh = share["block"] + share["heterogeneous"]
    special = heads["special_top"].dropna()
    weights = (heads.loc[special.index, "vertical"] + heads.loc[special.index, "vertical+diagonal"])
    special_mean = float(np.average(special, weights=weights)) if weights.sum() > 0 else float("nan")
    return [
        Claim("kovaleva.s3.vertical_third", "Kovaleva et al. 2019 §3, Fig. 2",
              "about a third of the attention maps are vertical", PAPER_VERTICAL,
              f"{vertical:.1f}% vertical", verdict(abs(vertical - 100 / 3) <= tolerance),
              f"|vertical share - 33.3%| <= {tolerance:g} points", note),
        Claim("kovaleva.s3.block_heterogeneous_half", "Kovaleva et al. 2019 §3, Fig. 2",
              "block + heterogeneous maps are about half", PAPER_BLOCK_HETEROGENEOUS,
              f"{bh:.1f}% (block {share['block']:.1f}% + heterogeneous {share['heterogeneous']:.1f}%)",
              verdict(abs(bh - 50) <= tolerance), f"|block + heterogeneous - 50%| <= {tolerance:g} points",
              note),
        Claim("kovaleva.s3.vertical_special", "Kovaleva et al. 2019 §3",
              "vertical attention goes mostly to [CLS], [SEP] and punctuation",
              "'mainly corresponds to attention to special BERT tokens [CLS] and [SEP]'",
              "n/a" if np.isnan(special_mean) else
              f"{100 * special_mean:.1f}% of the top-column mass of vertical maps",
              verdict(None if np.isnan(special_mean) else special_mean > 0.5),
              "share of the top-column mass on [CLS]/[SEP]/./, > 50% (vertical and vertical+diagonal maps)",
              note),
    ]


# ---------------------------------------------------------------------------------------------
# the labelled set: evaluation and tuning

def confusion(truth: Sequence[str], predicted: Sequence[str]) -> pd.DataFrame:
    """Counts: rows the hand label, columns the classifier's pattern (:data:`PATTERNS` order)."""
    table = pd.crosstab(pd.Categorical(truth, PATTERNS), pd.Categorical(predicted, PATTERNS),
                        dropna=False)
    table.index.name, table.columns.name = "label", "predicted"
    return table


def wilson(hits: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval (%) of a proportion ``hits / n``; (NaN, NaN) when ``n`` is 0.

    With a few labels per class the normal interval leaves [0, 100] or collapses to a
    point at 0 or 100%; Wilson's stays inside and keeps a width (0 of 4: [0, 49]%).
    """
    if n <= 0:
        return float("nan"), float("nan")
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * max(centre - half, 0.0), 100 * min(centre + half, 1.0)


def cohen_kappa(matrix: np.ndarray) -> float:
    """Cohen's kappa of a confusion matrix (counts): ``(p_o - p_e) / (1 - p_e)``.

    ``p_o`` is the observed agreement (the diagonal's share), ``p_e`` the agreement
    expected by chance from the two raters' margins. NaN for an empty matrix; 0 when
    chance already explains all agreement (one class only on both sides).
    """
    m = np.asarray(matrix, dtype=float)
    total = m.sum()
    if total == 0:
        return float("nan")
    observed = np.trace(m) / total
    expected = float((m.sum(axis=1) * m.sum(axis=0)).sum()) / total ** 2
    return 0.0 if expected >= 1 - 1e-12 else (observed - expected) / (1 - expected)


def per_class(truth: Sequence[str], predicted: Sequence[str]) -> pd.DataFrame:
    """Precision, recall (%, each with its Wilson interval), F1 and support per pattern, then
    accuracy and macro averages.

    A class never predicted has precision NaN (0/0); one never labelled has recall NaN.
    The accuracy row holds the accuracy in ``f1`` and its interval in ``f1_low``/``f1_high``.
    """
    matrix = confusion(truth, predicted).to_numpy(dtype=float)
    tp = np.diag(matrix)
    guessed, labelled = matrix.sum(axis=0), matrix.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = tp / guessed
        recall = tp / labelled
        f1 = 2 * precision * recall / (precision + recall)
    f1 = np.where((tp == 0) & (guessed + labelled > 0), 0.0, f1)
    p_int = np.array([wilson(t, g) for t, g in zip(tp, guessed)])
    r_int = np.array([wilson(t, n) for t, n in zip(tp, labelled)])
    rows = pd.DataFrame({"pattern": list(PATTERNS), "precision": 100 * precision,
                         "precision_low": p_int[:, 0], "precision_high": p_int[:, 1],
                         "recall": 100 * recall, "recall_low": r_int[:, 0], "recall_high": r_int[:, 1],
                         "f1": 100 * f1, "f1_low": np.nan, "f1_high": np.nan,
                         "support": labelled.astype(int), "predicted": guessed.astype(int)})
    total = int(matrix.sum())
    accuracy = 100 * tp.sum() / total if total else np.nan
    low, high = wilson(tp.sum(), total)
    summary = pd.DataFrame({"pattern": ["accuracy", "macro average"],
                            "precision": [np.nan, np.nanmean(rows["precision"])],
                            "recall": [np.nan, np.nanmean(rows["recall"])],
                            "f1": [accuracy, np.nanmean(rows["f1"])],
                            "f1_low": [low, np.nan], "f1_high": [high, np.nan],
                            "support": [total, total], "predicted": [total, total]})
    return pd.concat([rows, summary], ignore_index=True)


def agreement(truth: Sequence[str], predicted: Sequence[str], seed: int = 0,
              resamples: int = 2000) -> dict:
    """Maps, accuracy (%, Wilson interval) and Cohen's kappa (bootstrap 95% interval over maps)."""
    codes_t = np.array([PATTERNS.index(p) for p in truth], dtype=int)
    codes_p = np.array([PATTERNS.index(p) for p in predicted], dtype=int)
    n = len(codes_t)
    out = {"maps": n, "accuracy": np.nan, "accuracy_low": np.nan, "accuracy_high": np.nan,
           "kappa": np.nan, "kappa_low": np.nan, "kappa_high": np.nan}
    if not n:
        return out
    k = len(PATTERNS)

    def kappa_of(rows: np.ndarray) -> float:
        return cohen_kappa(np.bincount(codes_t[rows] * k + codes_p[rows], minlength=k * k).reshape(k, k))

    hits = int((codes_t == codes_p).sum())
    low, high = wilson(hits, n)
    rng = np.random.default_rng(seed)
    boots = np.array([kappa_of(rng.integers(0, n, n)) for _ in range(resamples)])
    out.update(accuracy=100 * hits / n, accuracy_low=low, accuracy_high=high,
               kappa=kappa_of(np.arange(n)), kappa_low=float(np.nanpercentile(boots, 2.5)),
               kappa_high=float(np.nanpercentile(boots, 97.5)))
    return out


def macro_f1(truth: np.ndarray, predicted: np.ndarray, n_classes: int = len(PATTERNS)) -> float:
    """Mean F1 over the classes that are labelled or predicted (fast, integer labels)."""
    scores = []
    for c in range(n_classes):
        tp = np.sum((truth == c) & (predicted == c))
        labelled, guessed = np.sum(truth == c), np.sum(predicted == c)
        if labelled + guessed:
            scores.append(2 * tp / (labelled + guessed))
    return float(np.mean(scores)) if scores else float("nan")


# A threshold is tuned only for a pattern with at least this many labelled maps.
MIN_SUPPORT = 5
# The grid searched by :func:`tune`: every combination, in 0.05 steps. Ties go to the first
# setting in grid order: the fewest columns and stripes, the highest block threshold, the lowest
# vertical/diagonal thresholds.
GRID = {
    "columns": (2, 3, 4),
    # ascending, 1 last: stripes off (only the top columns count) is the fallback
    "stripe": (0.02, 0.04, 0.08, 1.0),
    # descending: among equally good settings the highest block threshold (fewest blocks) wins
    "block": (0.3, 0.25, 0.2, 0.15, 0.12, 0.1, 0.09, 0.08, 0.07, 0.06, 0.05, 0.045, 0.04, 0.035,
              0.03, 0.025, 0.02, 0.015, 0.01),
    "vertical": tuple(np.round(np.arange(0.10, 0.951, 0.05), 2)),
    "diagonal": tuple(np.round(np.arange(0.05, 0.951, 0.05), 2)),
    "mixed_vertical": tuple(np.round(np.arange(0.05, 0.601, 0.05), 2)),
    "mixed_diagonal": tuple(np.round(np.arange(0.0, 0.601, 0.05), 2)),
}


def _decision_counts(v, d, weights, mv, md, tv, td):
    """Per weight row: how many maps each rule of the list (after block) takes, over the grid.

    ``weights`` ``[w, maps]`` (0/1: the maps not taken by block, times a label indicator)
    and the threshold axes give, for every (mv, md, tv, td), the weighted count of maps
    predicted vertical+diagonal, vertical, diagonal and heterogeneous: ``[w, a, b, c, e]``
    each. The rules' indicators factorise over the thresholds (mixed = [v >= mv][d >= md],
    vertical = [v >= tv](1 - mixed), diagonal = [d >= td](1 - [v >= tv])(1 - mixed)), so
    the counts are sums of products of indicator matrices: a few matrix products instead
    of one boolean array per grid point and map.
    """
    A = (v[None] >= mv[:, None]).astype(float)  # [a, m]
    B = (d[None] >= md[:, None]).astype(float)  # [b, m]
    C = (v[None] >= tv[:, None]).astype(float)  # [c, m]
    D = (d[None] >= td[:, None]).astype(float)  # [e, m]
    a, b, c, e = len(mv), len(md), len(tv), len(td)
    AB = (A[:, None, :] * B[None, :, :]).reshape(a * b, -1)  # [ab, m]
    W = np.asarray(weights, dtype=float)  # [w, m]
    WAB = (W[:, None, :] * AB[None]).reshape(-1, AB.shape[-1])  # [w * ab, m]: 2-d products are fast
    mixed = WAB.sum(-1).reshape(-1, a, b, 1, 1)
    vertical = (W @ C.T)[:, None, None, :, None] - (WAB @ C.T).reshape(-1, a, b, c, 1)
    DnC = ((1 - C)[:, None, :] * D[None]).reshape(c * e, -1)  # [ce, m]
    diagonal = (W @ DnC.T).reshape(-1, 1, 1, c, e) - (WAB @ DnC.T).reshape(-1, a, b, c, e)
    total = W.sum(-1).reshape(-1, 1, 1, 1, 1)
    shape = (len(W), a, b, c, e)
    mixed, vertical = np.broadcast_to(mixed, shape), np.broadcast_to(vertical, shape)
    heterogeneous = total - mixed - vertical - diagonal
    return {MIXED: mixed, VERTICAL: vertical, DIAGONAL: diagonal, HETEROGENEOUS: heterogeneous}


def tune(features: dict, labels: Sequence[str], grid: dict | None = None,
         block_rows: np.ndarray | None = None) -> tuple[Thresholds, float]:
    """The thresholds with the highest macro F1 on ``labels`` (ties: the first in grid order).

    ``features[(k, stripe)]`` holds the maps' :func:`above_chance` features with
    ``columns = k`` and that ``stripe`` for every pair in the grid (:func:`features_for`).
    Exhaustive over the grid (:data:`GRID` by default; a grid without ``stripe`` keeps
    stripes off): for each ``k``, ``stripe`` and block threshold, every combination of the
    other four thresholds is scored at once (:func:`_decision_counts`). With fewer than
    :data:`MIN_SUPPORT` labelled block maps the block threshold cannot be estimated and is
    not tuned: it stays at the grid's first (most conservative) value.

    ``block_rows`` (bool ``[maps]``): choose the block threshold on these maps alone, by block's
    F1 (ties: the highest), then the other thresholds on all maps with it fixed. For labels made
    under different protocols: only maps drawn with their sentence boundaries show a labeller
    where a block ends.
    """
    grid = dict(GRID if grid is None else grid)
    grid.setdefault("stripe", (1.0,))
    truth = np.array([PATTERNS.index(p) for p in labels])
    if block_rows is None and int((truth == BLOCK).sum()) < MIN_SUPPORT:
        grid["block"] = tuple(grid["block"])[:1]
    names = ("mixed_vertical", "mixed_diagonal", "vertical", "diagonal")
    axes = [np.asarray(grid[name], dtype=float) for name in names]
    labelled = np.bincount(truth, minlength=len(PATTERNS))
    order = (MIXED, VERTICAL, DIAGONAL, HETEROGENEOUS)
    best, best_score = None, -1.0
    for k in grid["columns"]:
        for stripe in grid["stripe"]:
            f = np.asarray(features[(k, stripe)], dtype=float)
            v, d, b = f[:, 0], f[:, 1], np.nan_to_num(f[:, 2], nan=-np.inf)
            blocks = grid["block"] if block_rows is None else (
                _block_threshold(b, truth, np.asarray(block_rows, bool), grid["block"]),)
            for block_threshold in blocks:
                block = b >= block_threshold
                rest = (~block).astype(float)
                weights = np.stack([rest] + [rest * (truth == c) for c in order])
                counts = _decision_counts(v, d, weights, *axes)
                f1_sum = 0.0
                counted = 0.0
                for i, c in enumerate(order):
                    guessed, tp = counts[c][0], counts[c][i + 1]
                    present = (guessed + labelled[c]) > 0
                    f1_sum = f1_sum + np.where(present, 2 * tp / np.maximum(guessed + labelled[c], 1), 0.0)
                    counted = counted + present
                guessed, tp = int(block.sum()), int((block & (truth == BLOCK)).sum())
                if guessed + labelled[BLOCK]:
                    f1_sum = f1_sum + 2 * tp / (guessed + labelled[BLOCK])
                    counted = counted + 1
                scores = f1_sum / np.maximum(counted, 1)
                flat = int(np.argmax(scores))  # first maximum in C order = grid order
                if scores.flat[flat] > best_score + 1e-9:
                    best_score = float(scores.flat[flat])
                    idx = np.unravel_index(flat, scores.shape)
                    values = {name: float(axes[i][idx[i]]) for i, name in enumerate(names)}
                    best = Thresholds(columns=int(k), stripe=float(stripe),
                                      block=float(block_threshold), **values)
    return best, best_score


def _block_threshold(block: np.ndarray, truth: np.ndarray, rows: np.ndarray, thresholds) -> float:
    """Of ``thresholds``, the one with the best block F1 on ``rows`` (the first of equals in grid
    order: the highest, as :data:`GRID` lists them descending); the first when those rows hold
    fewer than :data:`MIN_SUPPORT` labelled blocks."""
    thresholds = tuple(thresholds)
    labelled = rows & (truth == BLOCK)
    if int(labelled.sum()) < MIN_SUPPORT:
        return thresholds[0]

    def f1(threshold: float) -> float:
        guessed = rows & (block >= threshold)
        return 2 * int((guessed & labelled).sum()) / (int(guessed.sum()) + int(labelled.sum()))
    return thresholds[int(np.argmax([f1(t) for t in thresholds]))]


def features_for(maps: Sequence[np.ndarray], units: Sequence[np.ndarray], columns: int,
                 stripe: float = 1.0, shape: bool = False) -> np.ndarray:
    """``[maps, 5]``: :func:`map_features` of single maps (the labelled set), :func:`above_chance`
    (``[maps, 21]`` with ``shape``: the forest's :data:`SHAPE_FEATURES` too, less a uniform map's).

    The same numbers as one map at a time, computed per length: the maps of one length (and
    precision) in one batch (one call per map was mostly Python: ~10,000 calls for the grid of
    :func:`tune`)."""
    out = np.empty((len(maps), len(FEATURES) + (len(SHAPE_FEATURES) if shape else 0)))
    maps = [_as_float(m) for m in maps]
    by_shape: dict[tuple, list[int]] = {}  # (length, dtype): a batch computes in its maps' precision
    for i, m in enumerate(maps):
        by_shape.setdefault((m.shape[-1], m.dtype), []).append(i)
    for (n, _), rows in by_shape.items():
        sentences = np.stack([np.asarray(units[i], dtype=int) for i in rows])
        features = _single_maps_features(np.stack([maps[i] for i in rows]), sentences, columns, stripe, shape)
        out[rows] = _excess(features, _uniform_features(n, columns, stripe))
    return out


def _as_float(attn) -> np.ndarray:
    attn = np.asarray(attn)
    return attn if attn.dtype in (np.float32, np.float64) else attn.astype(np.float32)


def _single_maps_features(attn: np.ndarray, units: np.ndarray, columns: int, stripe: float,
                          shape: bool = False) -> np.ndarray:
    """:func:`map_features` of ``[B, n, n]`` maps, map ``b`` with ``units[b]``: ``[B, 5]`` (or 21)."""
    b, n = attn.shape[0], attn.shape[-1]
    batch = MapBatch(attn.reshape(b, 1, 1, n, n), lengths=[n] * b)
    features = batch_features(batch, units, columns, stripe, shape)[0]
    return features.reshape(b, features.shape[-1])


@dataclass
class LabelEvaluation:
    """The classifier on the hand-labelled maps (:func:`evaluate_labels`)."""

    table: pd.DataFrame  # per half, model and pattern: precision, recall (Wilson intervals), F1, support
    agreement: pd.DataFrame  # per half and model: accuracy (Wilson), Cohen's kappa (bootstrap)
    confusion: pd.DataFrame  # held-out half, config thresholds: label x predicted
    thresholds: pd.DataFrame  # setting, config value, value tuned on the tune half
    maps: pd.DataFrame  # per labelled map: its features and predicted pattern
    caption: str


# How a labelled map's ``source`` says it was drawn with its sentence boundaries (issue 37).
SENTENCE_TICKS = "sentence ticks"


def sentence_labelled(labels: pd.DataFrame) -> np.ndarray:
    """bool ``[maps]``: the maps labelled from pictures that showed where each sentence ends
    (``source`` names :data:`SENTENCE_TICKS`): the block threshold is tuned on these alone
    (:func:`tune`), as the others' labellers could not see where a block ends."""
    source = labels["source"] if "source" in labels else pd.Series("", index=labels.index)
    return source.astype(str).str.contains(SENTENCE_TICKS, regex=False).to_numpy()


def _models_of(labels: pd.DataFrame) -> np.ndarray:
    return (labels["model"] if "model" in labels else pd.Series("", index=labels.index)).to_numpy()


def evaluate_labels(maps: Sequence[np.ndarray], units: Sequence[np.ndarray],
                    labels: pd.DataFrame, thresholds: Thresholds, grid: dict | None = None,
                    describe_store: str = "", classifier: str = "rules") -> LabelEvaluation:
    """Precision and recall of the classifier on each half of the labelled set: the rules with
    ``thresholds`` or (``classifier="forest"``) the forest learned from the tune half
    (:func:`fit_forest`, features with ``thresholds``' columns and stripe).

    ``labels`` is the labelled set (:func:`headatlas.analyses.labels.read_labels`) and ``maps`` /
    ``units`` its maps and their sentence ids in the same order
    (:func:`headatlas.analyses.labels.load_maps`). The grid search (:func:`tune`) is re-run on the
    ``tune`` half so that the config's thresholds can be compared with what the search finds;
    the ``test`` half is only ever scored. Every score is given for all maps, per model
    and per corpus (the ``model`` and ``corpus`` columns of the labels, when they name more than
    one): the labelled maps of the segments the claims read are scored on their own.
    """
    grid = dict(GRID if grid is None else grid)
    grid.setdefault("stripe", (1.0,))
    keys = {(k, s) for k in grid["columns"] for s in grid["stripe"]}
    if classifier not in CLASSIFIERS:
        raise ValueError(f"unknown pattern classifier {classifier!r}; known: {list(CLASSIFIERS)}")
    config_key = (thresholds.columns, thresholds.stripe)
    keys.add(config_key)
    # the forest's features hold the config key's five first: computed once for both
    shaped = features_for(maps, units, *config_key, shape=True) if classifier == "forest" else None
    features = {key: shaped[:, :len(FEATURES)] if shaped is not None and key == config_key
                else features_for(maps, units, *key) for key in sorted(keys)}
    halves = labels["half"].to_numpy()
    truth_all = labels["pattern"].to_numpy()
    tune_rows = halves == "tune"
    sentence_ticks = sentence_labelled(labels)
    tuned, tuned_score = tune({key: f[tune_rows] for key, f in features.items()},
                              list(truth_all[tune_rows]), grid,
                              block_rows=sentence_ticks[tune_rows] if sentence_ticks[tune_rows].any() else None)
    chosen = features[config_key]
    if shaped is not None:
        forest = fit_forest(shaped[tune_rows], truth_all[tune_rows], *config_key)
        predicted, how = np.array(PATTERNS)[forest.predict(shaped)], forest.describe()
    else:
        predicted, how = np.array(PATTERNS)[classify(chosen, thresholds)], "the decision list"
    models = _models_of(labels)
    corpora = labels["corpus"].to_numpy() if "corpus" in labels else np.full(len(labels), "")
    everything = np.ones(len(labels), dtype=bool)
    groups = [("all", "all", everything)]  # (model, corpus, members)
    if len(set(models)) > 1:
        groups += [(m, "all", models == m) for m in sorted(set(models))]
    if len(set(corpora)) > 1:
        groups += [("all", c, corpora == c) for c in sorted(set(corpora))]
    tables, agreements = [], []
    for half in ("test", "tune"):
        name = "held-out (test)" if half == "test" else "tune"
        for model, corpus, members in groups:
            rows = (halves == half) & members
            part = per_class(list(truth_all[rows]), list(predicted[rows]))
            tables.append(part.assign(half=name, model=model, corpus=corpus, classifier=classifier))
            agreements.append({"half": name, "model": model, "corpus": corpus, "classifier": classifier,
                               **agreement(list(truth_all[rows]), list(predicted[rows]))})
    table = pd.concat(tables, ignore_index=True)
    first = ["half", "model", "corpus", "classifier"]
    table = table[[*first, *[c for c in table.columns if c not in first]]]
    test_rows = halves == "test"
    matrix = confusion(list(truth_all[test_rows]), list(predicted[test_rows]))
    truth = np.array([PATTERNS.index(p) for p in truth_all[tune_rows]])
    config_score = macro_f1(truth, classify(chosen[tune_rows], thresholds))
    settings = pd.DataFrame({"setting": [f.name for f in fields(Thresholds)],
                             "config": list(thresholds.as_dict().values()),
                             "tuned_on_tune_half": list(tuned.as_dict().values())})
    settings.loc[len(settings)] = ["macro_f1_on_tune_half (%)", round(100 * config_score, 2),
                                   round(100 * tuned_score, 2)]
    per_map = labels[["map", "example_index", "layer", "head", "half", "pattern"]].copy()
    per_map.insert(1, "model", models)
    for i, name in enumerate(FEATURES):
        per_map[name] = chosen[:, i]
    per_map["predicted"] = predicted
    counts = labels.groupby("half")["pattern"].value_counts().unstack(fill_value=0)
    described = "; ".join(f"{half}: " + ", ".join(f"{p} {int(counts.loc[half].get(p, 0))}"
                                                  for p in PATTERNS) for half in counts.index)
    caption = (f"{len(labels)} maps labelled by eye from pictures ({describe_store}); {described}. "
               f"Patterns by {how}. The rules' thresholds from the config, chosen by a grid search "
               f"for the best macro F1 on the "
               f"tune half; the held-out half is reported, with Wilson 95% intervals (precision, "
               f"recall, accuracy) and a bootstrap 95% interval of Cohen's kappa. Kovaleva et al. "
               f"labelled ~400 maps and trained a CNN.")
    return LabelEvaluation(table, pd.DataFrame(agreements), matrix, settings, per_map, caption)
