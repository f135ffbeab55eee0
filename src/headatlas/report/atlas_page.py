"""The head atlas page: ``results/atlas.html``, one self-contained file (no network, no CDN).

For every model it shows a layer x head grid coloured by any column of ``heads.csv``
(:mod:`headatlas.report.atlas`), a sortable and filterable head table, and on a click the head's
card: its numbers beside the papers' (the column dictionary's ``reference``), its type and
pattern, and its attention on a few real examples of each corpus, as lines (Clark's Fig. 1,
bertviz's head view) and as a heat map, over words. A toggle switches every number and
picture between the attention weights and the norm weighting in place.

The examples are read from the stores (:mod:`headatlas.store`): per (model, corpus)
``examples`` inputs of about ``0.6 * max_units`` words, collapsed to words with
:func:`headatlas.store.wordlevel.word_level` (attention *to* a word: the sum over its pieces; *from*
it: the mean), cut to the first ``max_units`` words when longer, and stored as one byte per
weight (0-255, base64). The page's size is therefore about
``models_with_stores x corpora x examples x layers x heads x weightings x words^2 x 4/3`` bytes
plus the tables (a few hundred kB): :func:`size_report` gives the breakdown.
"""

from __future__ import annotations

import base64
import html
import json
import math
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from headatlas.corpora.records import read_jsonl
from headatlas.report.atlas import PAGE_OPTIONS
from headatlas.store.reader import Store
from headatlas.store.wordlevel import word_level, word_units

SPECIAL_WORD_MARKERS = "Ġ▁"


@dataclass
class ModelData:
    """One model's part of the page: its joined table, dictionary and examples."""

    name: str
    heads: pd.DataFrame
    columns: pd.DataFrame
    examples: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def piece_text(token: str) -> str:
    """A word piece's text: ``##`` continuation and ``Ġ``/``▁`` word-start marks dropped."""
    return token[2:] if token.startswith("##") else token.lstrip(SPECIAL_WORD_MARKERS)


def is_punctuation(text: str) -> bool:
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def display_units(tokens: Sequence[str], word_ids: np.ndarray, words: Sequence[str] | None = None
                  ) -> tuple[np.ndarray, list[str]]:
    """Word ids for the page, and the text of each unit: a word's leading and trailing
    punctuation pieces are units of their own (Wikipedia's whitespace words carry them: "insects,"
    is "insects" and ","), so heads that attend to punctuation show it; a word of punctuation
    only stays whole. ``words`` (the corpus record's words, segment B's after A's) give each word
    its text as written (an uncased model's pieces are lower-cased); without them, the pieces'.
    Special tokens keep id -1 and their token as text.

    Returns ``(ids, texts)``: per token a new word id (units in token order, as
    :func:`headatlas.store.wordlevel.units` numbers them) and per unit its text.
    """
    word_ids = np.asarray(word_ids)
    ids = np.full(len(word_ids), -1, dtype=np.int64)
    texts: list[str] = []
    next_id, t = 0, 0
    while t < len(word_ids):
        w = int(word_ids[t])
        if w < 0:
            texts.append(tokens[t])
            t += 1
            continue
        end = t
        while end < len(word_ids) and word_ids[end] == w:
            end += 1
        pieces = [piece_text(tokens[k]) for k in range(t, end)]
        punct = [is_punctuation(x) for x in pieces]
        lead = 0 if all(punct) else next(k for k, x in enumerate(punct) if not x)
        trail = 0 if all(punct) else next(k for k, x in enumerate(reversed(punct)) if not x)
        core = slice(lead, len(pieces) - trail)
        written = words[w] if words is not None and w < len(words) else None
        core_text = "".join(pieces[core])
        if written is not None:
            cut = written[len("".join(pieces[:lead])):len(written) - len("".join(pieces[len(pieces) - trail:]))]
            core_text = cut or core_text  # as written (case, accents), unless nothing is left
        groups = [[k] for k in range(lead)] + [list(range(core.start, core.stop))] + \
            [[k] for k in range(core.stop, len(pieces))]
        for group in groups:
            ids[[t + k for k in group]] = next_id
            texts.append(core_text if group and group[0] == core.start and core.stop > core.start
                         else "".join(pieces[k] for k in group))
            next_id += 1
        t = end
    return ids, [x if x else "·" for x in texts]


def _quantise(maps: np.ndarray) -> str:
    """``[L, H, U, U]`` weights in [0, 1] -> one byte each (round(255 w)), base64."""
    q = np.clip(np.rint(np.asarray(maps, dtype=np.float64) * 255), 0, 255).astype(np.uint8)
    return base64.b64encode(q.tobytes()).decode("ascii")


def pick_examples(shards: Sequence[str | Path], n: int = 2, max_units: int = 40,
                  min_units: int = 8) -> list[tuple[str, int]]:
    """``(shard, position)`` of ``n`` examples whose word count is nearest ``0.6 * max_units``
    (at least ``min_units`` where any is that long), ties by corpus order."""
    return [(path, i) for path, i, _ in _pick(shards, n, max_units, min_units)]


def _pick(shards, n: int, max_units: int, min_units: int) -> list[tuple[str, int, int]]:
    """:func:`pick_examples` with each example's corpus index: ``(shard, position, index)``."""
    target = max(min_units, round(0.6 * max_units))
    candidates = []
    for path in shards:
        with Store(path) as store:
            for i, (n_words, index) in enumerate(zip(store.n_words, store.example_index)):
                words = int(n_words)
                candidates.append((abs(words - target) + (1000 if words < min_units else 0),
                                   int(index), str(path), i))
    candidates.sort()
    return [(path, i, index) for _, index, path, i in candidates[:n]]


def read_example(path: str | Path, position: int, max_units: int, norm: bool,
                 written: dict[int, list[str]] | None = None) -> dict:
    """One example of a store as the page holds it: words (:func:`display_units`; as written
    in the corpus when ``written``, corpus index -> words, has its record), and per weighting its
    word-level maps (quantised, base64), cut to ``max_units`` words (:func:`kept_units`)."""
    with Store(path, "attention", norms=norm) as store:
        example = store.example(position)
        corpus_index = int(store.example_index[position])
    views = {"attention": example}
    if norm:
        views["norm"] = example.weighted("norm")
    written = (written or {}).get(corpus_index)
    ids, words = display_units(example.tokens, example.word_ids, written)
    keep = kept_units(word_units(ids), max_units)
    record = {"id": example.id, "index": corpus_index, "words": [words[u] for u in keep],
              "n_units": len(words), "layers": int(example.attn.shape[0]),
              "heads": int(example.attn.shape[1]), "maps": {}}
    for weighting, view in views.items():
        maps = word_level(view.attn, ids, "mean")[..., keep[:, None], keep[None, :]]
        record["maps"][weighting] = _quantise(maps)
    return record


def record_words(path: str | Path, indices: set[int]) -> dict[int, list[str]]:
    """The words of the records ``indices`` of a prepared corpus (segment B's after A's), as
    written, read in one pass."""
    found = {i: list(s.words) + list(s.words_b or []) for i, s in enumerate(read_jsonl(path)) if i in indices}
    missing = sorted(indices - set(found))
    if missing:
        raise ValueError(f"{path}: no record {missing[0]} (the store was extracted from another file: "
                         "rerun its extraction)")
    return found


def kept_units(unit_word: np.ndarray, max_units: int) -> np.ndarray:
    """The units an example keeps on the page: all of them if at most ``max_units``, else every
    special token ([CLS], each [SEP]: what so many heads attend to) and the first words that fit."""
    unit_word = np.asarray(unit_word)
    if len(unit_word) <= max_units:
        return np.arange(len(unit_word))
    special = np.flatnonzero(unit_word < 0)
    words = np.flatnonzero(unit_word >= 0)[:max(0, max_units - len(special))]
    return np.sort(np.concatenate([special, words]))[:max_units]


def model_examples(stores: dict[str, Sequence[str | Path]], n: int, max_units: int,
                   min_units: int, norm: bool, corpora: dict[str, str | Path] | None = None) -> list[dict]:
    """Examples of every corpus of one model: ``stores`` maps corpus -> its shard paths,
    ``corpora`` corpus -> the prepared file the stores were extracted from (the words as written)."""
    examples = []
    for corpus, shards in stores.items():
        if not shards:
            continue
        with Store(shards[0]) as first:
            has_norms = first.has_norms
        chosen = _pick(shards, n, max_units, min_units)
        corpus_file = (corpora or {}).get(corpus)
        written = record_words(corpus_file, {index for _, _, index in chosen}) if corpus_file else None
        for path, position, _ in chosen:
            record = read_example(path, position, max_units, norm and has_norms, written)
            examples.append({"corpus": corpus, **record})
    return examples


def _round(value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return None
        return float(f"{value:.4g}")
    if value is None or (isinstance(value, str) and value == ""):
        return None
    return value


def _table_payload(heads: pd.DataFrame, columns: pd.DataFrame) -> dict:
    """heads.csv as {weighting: {column: [value per head, layer-major]}} and the dictionary."""
    present = columns[columns["status"] == "present"] if "status" in columns else columns
    names = [c for c in present["column"] if c in heads.columns]
    n_layers, n_heads = int(heads["layer"].max()), int(heads["head"].max())
    rows = {}
    for weighting, part in heads.groupby("weighting", sort=False):
        part = part.set_index(["layer", "head"]).reindex(
            pd.MultiIndex.from_product([range(1, n_layers + 1), range(1, n_heads + 1)]))
        rows[weighting] = {c: [_round(v) for v in part[c].tolist()] for c in names}
    info = {}
    for _, row in present.iterrows():
        if row["column"] not in names:
            continue
        values = heads[row["column"]].dropna()
        numeric = pd.api.types.is_numeric_dtype(heads[row["column"]]) and \
            not pd.api.types.is_bool_dtype(heads[row["column"]])
        info[row["column"]] = {
            "unit": _text(row.get("unit")), "paper": _text(row.get("paper")),
            "reference": _text(row.get("reference")), "meaning": _text(row.get("meaning")),
            "weightings": _text(row.get("weightings")), "source": _text(row.get("source")),
            "numeric": bool(numeric and len(values)),
        }
    absent = [{"columns": _text(r["column"]), "status": _text(r["status"])}
              for _, r in columns.iterrows() if str(r.get("status", "present")) != "present"]
    return {"layers": n_layers, "heads": n_heads, "weightings": list(rows), "values": rows,
            "columns": names, "info": info, "absent": absent}


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


# JSON inside a <script> element: no character may end the element or open a comment there,
# whatever a corpus word holds ("</script>", "<!--"); U+2028/2029 are escaped by ensure_ascii.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def script_json(data) -> str:
    """``data`` as JSON that is safe inside an HTML ``<script>`` element (and still JSON)."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=True).translate(_SCRIPT_SAFE)


def page(models: Sequence[ModelData], title: str = "headatlas: the head atlas") -> str:
    """The page's HTML (one string): the data inline as JSON, the script and style inline."""
    data = {"title": title, "models": [
        {"name": m.name, **_table_payload(m.heads, m.columns), "examples": m.examples,
         "notes": m.notes} for m in models]}
    payload = script_json(data)
    template = (Path(__file__).resolve().parents[1] / "data" / "atlas.html.tmpl").read_text(encoding="utf-8")
    return template.replace("{{TITLE}}", html.escape(title)).replace("{{DATA}}", payload)


def size_report(models: Sequence[ModelData], text: str) -> str:
    """What makes up the page's size: the tables, and the examples per model and corpus."""
    lines = [f"page {len(text.encode('utf-8')) / 1e6:.2f} MB"]
    for m in models:
        by_corpus: dict[str, list[int]] = {}
        for e in m.examples:
            size = sum(len(v) for v in e["maps"].values())
            by_corpus.setdefault(e["corpus"], []).append(size)
        table = len(json.dumps(_table_payload(m.heads, m.columns), separators=(",", ":")))
        lines.append(f"  {m.name}: table {table / 1e3:.0f} kB; examples " + (", ".join(
            f"{c} {len(s)} x {sum(s) / len(s) / 1e3:.0f} kB" for c, s in by_corpus.items()) or "none"))
    return "\n".join(lines)


def build_page(models: Sequence[str], results: str | Path,
               stores: dict[str, dict[str, Sequence[str]]], examples: int = PAGE_OPTIONS["examples"],
               max_units: int = PAGE_OPTIONS["max_units"],
               min_units: int = PAGE_OPTIONS["min_units"],
               corpora: dict[str, dict[str, str]] | None = None) -> tuple[str, list[ModelData]]:
    """Read every model's ``heads.csv`` and dictionary under ``results`` and the examples of
    ``stores`` (model -> corpus -> shards; models without stores show numbers only) -> the page.
    ``corpora`` (model -> corpus -> prepared file) give the examples' words as written."""
    parts = []
    for name in models:
        heads = pd.read_csv(Path(results) / name / "heads.csv")
        columns = pd.read_csv(Path(results) / name / "heads_columns.csv")
        norm = "norm" in set(heads["weighting"])
        model_stores = stores.get(name) or {}
        notes = [] if model_stores else [
            "no attention examples: this model's stores are not kept after the run "
            "(extraction.keep_stores)"]
        parts.append(ModelData(name, heads, columns,
                               model_examples(model_stores, examples, max_units, min_units, norm,
                                              (corpora or {}).get(name)),
                               notes))
    return page(parts), parts
