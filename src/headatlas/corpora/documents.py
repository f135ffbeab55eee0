"""Whole documents as examples (coreference, Clark et al. §4.3).

Consecutive sentences of a document are joined into one ``[CLS] words [SEP]``
example until the wordpiece budget is full. The paper truncates documents to
128 tokens; we cut at sentence boundaries so every kept tree is complete
(a document whose first sentence alone is too long is dropped and counted).
Heads and mentions are re-indexed to document positions.
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
