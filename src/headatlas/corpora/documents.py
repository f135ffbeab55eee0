"""Whole documents as examples (coreference, Clark et al. §4.3).

Consecutive sentences of a document are joined into one ``[CLS] words [SEP]``
example until the wordpiece budget is full. The paper truncates documents to
128 tokens; we cut at sentence boundaries so every kept tree is complete
(a document whose first sentence alone is too long is dropped and counted).
Heads and mentions are re-indexed to document positions.

:func:`make_windows` covers whole documents instead, with overlapping windows
of whole sentences, so that mentions far into a long document are scored too.
"""

from __future__ import annotations

from collections import Counter
from itertools import groupby
from typing import Callable, Iterable

from headatlas.corpora.records import Mention, Sentence

SPECIALS = 2  # [CLS] ... [SEP]
_LAYERS = ("rels", "upos", "xpos", "feats")


def join_sentences(sentences: list[Sentence]) -> Sentence:
    """One document record from consecutive sentences of one document."""
    first = sentences[0]
    doc = Sentence(id=first.doc, doc=first.doc, split=first.split, words=[], heads=[],
                   mentions=[] if first.mentions is not None else None,
                   meta={"sentence_ids": [], "sentence_starts": []})
    for layer in _LAYERS:
        setattr(doc, layer, [] if getattr(first, layer) is not None else None)
    for sentence in sentences:
        offset = len(doc.words)
        doc.meta["sentence_ids"].append(sentence.id)
        doc.meta["sentence_starts"].append(offset)
        doc.words += sentence.words
        doc.heads += [h + offset if h > 0 else 0 for h in sentence.heads or [0] * len(sentence.words)]
        for layer in _LAYERS:
            if getattr(doc, layer) is not None:
                getattr(doc, layer).extend(getattr(sentence, layer) or ["_"] * len(sentence.words))
        if doc.mentions is not None:
            doc.mentions += [Mention(m.entity, [w + offset for w in m.words]) for m in sentence.mentions or []]
    return doc


def make_documents(sentences: Iterable[Sentence], count: Callable[[list[str]], int],
                   max_length: int) -> tuple[list[Sentence], Counter]:
    """Documents truncated to ``max_length`` wordpieces at a sentence boundary."""
    stats: Counter = Counter()
    budget = max_length - SPECIALS
    documents = []
    for _, group in groupby(sentences, key=lambda s: s.doc):
        group = list(group)
        kept, used = [], 0
        for sentence in group:
            cost = count(sentence.words)
            if used + cost > budget:
                break
            kept.append(sentence)
            used += cost
        stats["documents"] += 1
        stats["sentences_cut"] += len(group) - len(kept)
        if not kept:
            stats["dropped_first_sentence_too_long"] += 1
            continue
        documents.append(join_sentences(kept))
    stats["kept"] = len(documents)
    return documents, stats


def make_windows(sentences: Iterable[Sentence], count: Callable[[list[str]], int],
                 max_length: int, stride: int) -> tuple[list[Sentence], Counter]:
    """Whole documents as overlapping windows of whole sentences, each within ``max_length``.

    A window takes sentences from its start while they fit the wordpiece budget; the next
    window starts at the first sentence at least ``stride`` wordpieces after the current
    start (always at least one sentence later), until a window reaches the document's end.
    A sentence too long on its own is in no window (counted): windows restart after it.
    Each window is one record: id ``<doc>@<k>``, ``doc`` the source document,
    ``meta["window"] = k`` and ``meta["shared_words"]``, the number of its leading words
    that the previous window also holds (a mention there was already scored, see
    :mod:`headatlas.analyses.coref`).
    """
    if stride < 1:
        raise ValueError(f"stride {stride} must be at least 1 wordpiece")
    stats: Counter = Counter()
    budget = max_length - SPECIALS
    windows = []
    for doc, group in groupby(sentences, key=lambda s: s.doc):
        group = list(group)
        costs = [count(s.words) for s in group]
        stats["documents"] += 1
        stats["sentences_too_long"] += sum(c > budget for c in costs)
        k, previous = 0, set()
        for run in _fitting_runs(costs, budget):
            for first, last in _window_spans(run, costs, budget, stride):
                window = join_sentences(group[first:last])
                shared = [s for s in group[first:last] if s.id in previous]
                window.id, window.meta["window"] = f"{doc}@{k}", k
                window.meta["shared_words"] = sum(len(s.words) for s in shared)
                previous = {s.id for s in group[first:last]}
                windows.append(window)
                k += 1
        stats["windows"] += k
        stats["documents_without_window"] += k == 0
    stats["kept"] = len(windows)
    return windows, stats


def _fitting_runs(costs: list[int], budget: int) -> list[list[int]]:
    """Maximal runs of consecutive sentence indices that each fit the budget alone."""
    runs, run = [], []
    for i, cost in enumerate(costs):
        if cost > budget:
            if run:
                runs.append(run)
            run = []
        else:
            run.append(i)
    return runs + [run] if run else runs


def _window_spans(run: list[int], costs: list[int], budget: int, stride: int) -> list[tuple[int, int]]:
    """``(first, last)`` sentence index ranges (last exclusive) of the windows over one run."""
    offsets = [0]
    for i in run:
        offsets.append(offsets[-1] + costs[i])
    spans, start = [], 0
    while True:
        end = start
        while end < len(run) and offsets[end + 1] - offsets[start] <= budget:
            end += 1
        spans.append((run[start], run[end - 1] + 1))
        if end == len(run):
            return spans
        nxt = start + 1
        while nxt < end and offsets[nxt] - offsets[start] < stride:
            nxt += 1
        start = nxt
