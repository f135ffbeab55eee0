"""Kovaleva et al.'s attention patterns: which of five shapes each (head, input) map takes.

Kovaleva, Romanov, Rogers and Rumshisky (2019, "Revealing the Dark Secrets of
BERT", §3) sorted BERT's self-attention maps into five patterns by eye —

* **vertical**: every token attends to the same few tokens (mostly ``[CLS]``,
  ``[SEP]``, punctuation): a few dark columns;
* **diagonal**: every token attends to itself or to a neighbour at a fixed
  offset: a dark band along the diagonal;
* **vertical + diagonal**: both at once;
* **block**: in two-segment inputs, tokens attend within their own segment:
  two dark squares on the diagonal;
* **heterogeneous**: anything else —

labelled about 400 maps, trained a small CNN on them and reported the share of
maps of each pattern per GLUE task (their Fig. 2): about a third vertical, and
block + heterogeneous, the only patterns that could carry more than position
and special tokens, about half.

Here the classifier is a short decision list over four features of the map,
each a share of its attention mass that can be read off the picture, with the
thresholds in the config (``patterns.thresholds``). For a map ``a`` (``[n, n]``,
query rows summing to 1):

* ``diagonal``: the mass on the band of offsets -1, 0, +1 (``|i - j| <= 1``),
  the mean over queries of the row mass there;
* ``vertical``: the mass off that band on the ``columns`` keys that receive the
  most of it (the top-``k`` columns), i.e. the mean over queries of the row
  mass on those keys (so the two never count the same weight);
* ``block``: of the mass outside the top columns and the band, the share that
  stays in the query's own segment (token type) at more than
  :data:`BLOCK_LOCAL` = 3 tokens from the query (a block fills its segment;
  attention to the next few tokens is local, not block); NaN for a
  one-segment input, where the whole input is one block and the pattern is
  undefined;
* ``entropy``: the mean row entropy divided by ``log n`` (0: every row on one
  key; 1: uniform), kept for inspection and for the cross-tabulations.

The classifier compares ``vertical`` and ``diagonal`` above their chance level
(:func:`above_chance`: the excess over a uniform map of the same length, as a
share of what that map leaves), so that short sentences are not diagonal by
construction. The decision list (:func:`classify`), first match wins:

1. ``vertical >= mixed_vertical`` and ``diagonal >= mixed_diagonal`` -> vertical + diagonal;
2. ``vertical >= vertical`` -> vertical;
3. ``diagonal >= diagonal`` -> diagonal;
4. two segments and ``block >= block`` -> block;
5. otherwise heterogeneous.

The thresholds are chosen on half of a hand-labelled set of real maps
(:mod:`headatlas.labelling`) by a grid search (:func:`tune`) and reported on the
other half (:func:`evaluate`).
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, fields
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from headatlas.analyses.base import Analysis, describe, register
from headatlas.claims import Claim, verdict
from headatlas.heads import head_table
from headatlas.store import Example

PATTERNS = ("vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous")
FEATURES = ("vertical", "diagonal", "block", "entropy")
VERTICAL, DIAGONAL, MIXED, BLOCK, HETEROGENEOUS = range(len(PATTERNS))
# Keys this close to the query are local attention, not block: a block fills its segment.
BLOCK_LOCAL = 3

# Kovaleva et al. (2019), Fig. 2 and §3: BERT-base fine-tuned on GLUE tasks, ~400 maps labelled.
PAPER_MODEL = "BERT-base (12 x 12 heads) fine-tuned on GLUE tasks, maps classified by a CNN"
PAPER_VERTICAL = "about a third of the maps (30% of the ~400 hand-labelled maps)"
PAPER_BLOCK_HETEROGENEOUS = "about half of the maps (block + heterogeneous)"


@dataclass(frozen=True)
class Thresholds:
    """The classifier's settings (``patterns.thresholds`` in the config).

    ``columns`` is the ``k`` of the top-``k`` columns; the others are shares of
    attention mass in [0, 1] (``block``: of the mass left after columns and band).
    The defaults here are only for a quick look from a notebook; the pipeline
    passes the config's values.
    """

    columns: int = 3
    vertical: float = 0.6
    diagonal: float = 0.5
    mixed_vertical: float = 0.25
    mixed_diagonal: float = 0.25
    block: float = 0.8

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


def map_features(attn: np.ndarray, segments: np.ndarray, columns: int = 3,
                 return_top: bool = False):
    """The four features (:data:`FEATURES`) of every map of one input.

    Parameters
    ----------
    attn : float array ``[..., n, n]``
        Attention maps of one input (query rows), e.g. ``[layers, heads, n, n]``.
    segments : int array ``[n]``
        Segment of each token (:func:`segments_of`).
    columns : int
        ``k``: how many top columns count as vertical.
    return_top : bool
        Also return the top columns, int ``[..., k]``, and the off-band mass each
        of them receives, float ``[..., k]`` (their sum is ``vertical``).

    Returns
    -------
    float array ``[..., 4]``: vertical, diagonal, block (NaN with one segment), entropy
    (and the top columns and their masses if asked).

    Notes
    -----
    Every weight ``a[i, j]`` is counted once: in ``diagonal`` if ``|i - j| <= 1``,
    else in ``vertical`` if ``j`` is a top column, else in the rest, of which
    ``block`` is the share in the query's segment with ``|i - j| > 3``. The top columns are the ``k`` with the largest mean
    off-band weight (ties: any), so a pure diagonal map has no vertical mass;
    a pure vertical map on one key puts the 2-3 weights of the rows next to it
    in ``diagonal`` (``3 / n`` of the mass).
    """
    attn = np.asarray(attn)
    if attn.dtype not in (np.float32, np.float64):
        attn = attn.astype(np.float32)
    n = attn.shape[-1]
    segments = np.asarray(segments)
    # Band mass per key column: a[j, j] + a[j - 1, j] (offset +1) + a[j + 1, j] (offset -1).
    band_col = np.diagonal(attn, 0, -2, -1).astype(np.float64)
    if n > 1:
        band_col[..., 1:] += np.diagonal(attn, 1, -2, -1)
        band_col[..., :-1] += np.diagonal(attn, -1, -2, -1)
    col = attn.sum(axis=-2, dtype=np.float64)
    diagonal = band_col.sum(-1) / n
    off_col = (col - band_col) / n  # [..., n] off-band mass each key receives, per query
    k = min(columns, n)
    top = np.argpartition(off_col, n - k, axis=-1)[..., n - k:]
    in_top = np.zeros(off_col.shape, dtype=bool)
    np.put_along_axis(in_top, top, True, axis=-1)
    vertical = np.where(in_top, off_col, 0).sum(-1)
    rest = np.clip(1 - vertical - diagonal, 0, None)
    two = len(np.unique(segments)) > 1
    if two:
        pos = np.arange(n)
        far = (np.abs(pos[:, None] - pos[None, :]) > BLOCK_LOCAL) & (segments[:, None] == segments[None, :])
        within_col = (attn * far.astype(attn.dtype)).sum(axis=-2, dtype=np.float64) / n
        within = np.where(in_top, 0, within_col).sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            block = np.clip(np.where(rest > 1e-9, within / np.maximum(rest, 1e-12), 0.0), 0, 1)
    else:
        block = np.full(vertical.shape, np.nan)
    if n > 1:
        from scipy.special import xlogy

        entropy = -xlogy(attn, attn).sum(-1, dtype=np.float64).mean(-1) / np.log(n)
    else:
        entropy = np.zeros(vertical.shape)
    features = np.stack([vertical, diagonal, block, entropy], axis=-1)
    return (features, top, np.take_along_axis(off_col, top, -1)) if return_top else features


def above_chance(features: np.ndarray, segments: np.ndarray, columns: int) -> np.ndarray:
    """``vertical`` and ``diagonal`` as shares of what a uniform map leaves: ``(f - u) / (1 - u)``.

    ``u`` is the feature of the uniform map of the same input (every row ``1 / n``):
    ``(3n - 2) / n^2`` on the band, about ``k / n`` on the top columns. On a short
    sentence even uniform attention passes a fixed threshold (n = 9: 31% on the band),
    so the classifier compares the excess over that level, which is 0 for a uniform
    map and 1 for a map entirely on the band or the columns at any length; below
    chance it is negative. ``block`` and ``entropy`` are left as they are. Two or
    fewer tokens put every key on the band: there, both are 0.
    """
    n = len(segments)
    uniform = map_features(np.full((n, n), 1.0 / n), segments, columns)
    out = np.array(features, dtype=np.float64, copy=True)
    for i in (0, 1):
        level = uniform[i]
        out[..., i] = (out[..., i] - level) / (1 - level) if level < 1 - 1e-9 else 0.0
    return out


def classify(features: np.ndarray, thresholds: Thresholds) -> np.ndarray:
    """Pattern index (:data:`PATTERNS`) of each map from its :func:`map_features` ``[..., 4]``.

    A NaN ``block`` (one-segment input) never gives block.
    """
    f = np.asarray(features, dtype=np.float64)
    v, d, b = f[..., 0], f[..., 1], f[..., 2]
    t = thresholds
    out = np.full(v.shape, HETEROGENEOUS, dtype=np.int64)
    # Assign in reverse priority, so the earlier rules of the list overwrite the later ones.
    out[np.nan_to_num(b, nan=-1.0) >= t.block] = BLOCK
    out[d >= t.diagonal] = DIAGONAL
    out[v >= t.vertical] = VERTICAL
    out[(v >= t.mixed_vertical) & (d >= t.mixed_diagonal)] = MIXED
    return out


# ---------------------------------------------------------------------------------------------
# the streaming analysis

@register
class AttentionPatterns(Analysis):
    """Per head: the share of inputs whose map shows each pattern, and the mean features.

    Columns: ``layer``, ``head``, one ``<pattern>`` column per pattern (share of
    the inputs, 0-1), ``dominant`` (the pattern with the largest share), the
    mean of each feature (``mean_<feature>``; vertical and diagonal above chance,
    ``mean_block`` over two-segment inputs only), ``special_top`` (share of the top-column mass that falls on
    ``[CLS]``, ``[SEP]``, ``.`` or ``,``, over the head's vertical and
    vertical + diagonal maps; NaN if it has none), ``n_inputs`` and
    ``two_segment_inputs``. ``attrs["thresholds"]`` holds the settings.
    """

    name = "patterns"
    unit = "inputs"

    def __init__(self, n_layers: int, n_heads: int, thresholds: dict | None = None, **params):
        super().__init__(n_layers, n_heads, thresholds=thresholds, **params)
        self.thresholds = Thresholds.from_dict(thresholds)
        self._counts = np.zeros((n_layers, n_heads, len(PATTERNS)), dtype=np.int64)
        self._sums = np.zeros((n_layers, n_heads, len(FEATURES)))
        self._block_inputs = 0
        self._special = np.zeros((n_layers, n_heads))  # top-column mass on special tokens
        self._vertical = np.zeros((n_layers, n_heads))  # top-column mass, over vertical(-ish) maps

    def update(self, example: Example) -> None:
        segments = segments_of(example.token_type_ids)
        features, top, top_mass = map_features(example.attn, segments, self.thresholds.columns,
                                               return_top=True)
        features = above_chance(features, segments, self.thresholds.columns)
        labels = classify(features, self.thresholds)
        np.add.at(self._counts, (*np.indices(labels.shape), labels), 1)
        self._block_inputs += int(len(np.unique(segments)) > 1)
        self._sums += np.nan_to_num(features)
        # Which keys the vertical mass goes to: the top columns' mass on special tokens.
        special = example.cls_mask | example.sep_mask | example.punct_mask
        vertical_ish = (labels == VERTICAL) | (labels == MIXED)
        self._special += np.where(vertical_ish, (top_mass * special[top]).sum(-1), 0)
        self._vertical += np.where(vertical_ish, top_mass.sum(-1), 0)

    def result(self) -> pd.DataFrame:
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
        table["two_segment_inputs"] = self._block_inputs
        table.attrs["thresholds"] = self.thresholds.as_dict()
        return table

    def caption(self, result, provenance: dict) -> str:
        t = self.thresholds
        return (describe(provenance, provenance["n_examples"], self.unit)
                + f"; patterns by a decision list on map features (top {t.columns} columns, band "
                f"|i-j| <= 1, within-segment share), thresholds vertical {t.vertical}, diagonal "
                f"{t.diagonal}, mixed {t.mixed_vertical}/{t.mixed_diagonal}, block {t.block}; "
                f"Kovaleva et al. used {PAPER_MODEL}")


def dominant(table: pd.DataFrame) -> pd.Series:
    """Per head, the pattern with the largest share of inputs (first in :data:`PATTERNS` on ties)."""
    return table[list(PATTERNS)].idxmax(axis=1)


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


def claims(shares: pd.DataFrame, heads: pd.DataFrame, tolerance: float = 10.0) -> list[Claim]:
    """Kovaleva et al.'s pattern shares beside ours (one corpus's :func:`corpus_shares`).

    A share "about" the paper's holds within ``tolerance`` percentage points.
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


def per_class(truth: Sequence[str], predicted: Sequence[str]) -> pd.DataFrame:
    """Precision, recall, F1 (%) and support per pattern, then accuracy and macro averages.

    A class never predicted has precision NaN (0/0); one never labelled has recall NaN.
    """
    matrix = confusion(truth, predicted).to_numpy(dtype=float)
    tp = np.diag(matrix)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = tp / matrix.sum(axis=0)
        recall = tp / matrix.sum(axis=1)
        f1 = 2 * precision * recall / (precision + recall)
    f1 = np.where((tp == 0) & (matrix.sum(axis=0) + matrix.sum(axis=1) > 0), 0.0, f1)
    rows = pd.DataFrame({"pattern": list(PATTERNS), "precision": 100 * precision,
                         "recall": 100 * recall, "f1": 100 * f1,
                         "support": matrix.sum(axis=1).astype(int),
                         "predicted": matrix.sum(axis=0).astype(int)})
    total = int(matrix.sum())
    accuracy = 100 * tp.sum() / total if total else np.nan
    summary = pd.DataFrame({"pattern": ["accuracy", "macro average"],
                            "precision": [np.nan, np.nanmean(rows["precision"])],
                            "recall": [np.nan, np.nanmean(rows["recall"])],
                            "f1": [accuracy, np.nanmean(rows["f1"])],
                            "support": [total, total], "predicted": [total, total]})
    return pd.concat([rows, summary], ignore_index=True)


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
# setting in grid order: the lowest vertical/diagonal thresholds, the highest block threshold.
GRID = {
    "columns": (1, 2, 3, 4, 5),
    "vertical": tuple(np.round(np.arange(0.10, 0.951, 0.05), 2)),
    "diagonal": tuple(np.round(np.arange(0.05, 0.951, 0.05), 2)),
    "mixed_vertical": tuple(np.round(np.arange(0.05, 0.601, 0.05), 2)),
    "mixed_diagonal": tuple(np.round(np.arange(0.0, 0.601, 0.025), 3)),
    # descending: among equally good settings the highest block threshold (fewest blocks) wins
    "block": tuple(np.round(np.arange(0.95, 0.499, -0.05), 2)),
}


def tune(features_by_columns: dict[int, np.ndarray], labels: Sequence[str],
         grid: dict | None = None) -> tuple[Thresholds, float]:
    """The thresholds with the highest macro F1 on ``labels`` (ties: the first in grid order).

    ``features_by_columns[k]`` holds the maps' :func:`map_features` with
    ``columns = k`` for every ``k`` in the grid. Exhaustive over the grid
    (:data:`GRID` by default): for each ``k`` every combination of the five
    thresholds is scored at once, by broadcasting. With fewer than
    :data:`MIN_SUPPORT` labelled block maps the block threshold cannot be
    estimated and is not tuned: it stays at the grid's first (most
    conservative) value.
    """
    grid = dict(GRID if grid is None else grid)
    truth = np.array([PATTERNS.index(p) for p in labels])
    if int((truth == BLOCK).sum()) < MIN_SUPPORT:
        grid["block"] = tuple(grid["block"])[:1]
    names = ("mixed_vertical", "mixed_diagonal", "vertical", "diagonal", "block")
    axes = [np.asarray(grid[name], dtype=float) for name in names]
    shape = tuple(len(a) for a in axes)
    best, best_score = None, -1.0
    for k in grid["columns"]:
        f = np.asarray(features_by_columns[k], dtype=float)
        v, d, b = f[:, 0], f[:, 1], np.nan_to_num(f[:, 2], nan=-1.0)
        expand = [a.reshape([-1 if i == j else 1 for j in range(5)] + [1]) for i, a in enumerate(axes)]
        mixed = (v >= expand[0]) & (d >= expand[1])  # [mv, md, 1, 1, 1, maps]
        vertical = ~mixed & (v >= expand[2])
        diagonal = ~mixed & ~vertical & (d >= expand[3])
        block = ~mixed & ~vertical & ~diagonal & (b >= expand[4])
        predicted = {MIXED: mixed, VERTICAL: vertical, DIAGONAL: diagonal, BLOCK: block}
        predicted[HETEROGENEOUS] = ~(mixed | vertical | diagonal | block)
        f1_sum = np.zeros(shape)
        counted = np.zeros(shape)
        for c in range(len(PATTERNS)):
            hit = np.broadcast_to(predicted[c], shape + (len(truth),))
            guessed = hit.sum(-1)
            tp = (hit & (truth == c)).sum(-1)
            labelled = int((truth == c).sum())
            present = (guessed + labelled) > 0
            f1_sum += np.where(present, 2 * tp / np.maximum(guessed + labelled, 1), 0.0)
            counted += present
        scores = f1_sum / np.maximum(counted, 1)
        flat = int(np.argmax(scores))  # first maximum in C order = grid order
        if scores.flat[flat] > best_score + 1e-12:
            best_score = float(scores.flat[flat])
            idx = np.unravel_index(flat, shape)
            values = {name: float(axes[i][idx[i]]) for i, name in enumerate(names)}
            best = Thresholds(columns=int(k), **values)
    return best, best_score


def features_for(maps: Iterable[np.ndarray], token_types: Iterable[np.ndarray],
                 columns: int) -> np.ndarray:
    """``[maps, 4]``: :func:`map_features` of single maps (the labelled set), :func:`above_chance`."""
    return np.stack([above_chance(map_features(m, segments_of(t), columns), segments_of(t), columns)
                     for m, t in zip(maps, token_types)])


@dataclass
class LabelEvaluation:
    """The classifier on the hand-labelled maps (:func:`evaluate_labels`)."""

    table: pd.DataFrame  # per half and pattern: precision, recall, F1, support
    confusion: pd.DataFrame  # held-out half, config thresholds: label x predicted
    thresholds: pd.DataFrame  # setting, config value, value tuned on the tune half
    maps: pd.DataFrame  # per labelled map: its features and predicted pattern
    caption: str


def evaluate_labels(maps: Sequence[np.ndarray], token_types: Sequence[np.ndarray],
                    labels: pd.DataFrame, thresholds: Thresholds, grid: dict | None = None,
                    describe_store: str = "") -> LabelEvaluation:
    """Precision and recall of the classifier with ``thresholds`` on each half of the labelled set.

    ``labels`` is the labelled set (:func:`headatlas.labelling.read_labels`) and ``maps`` /
    ``token_types`` its maps in the same order (:func:`headatlas.labelling.labelled_maps`).
    The grid search (:func:`tune`) is re-run on the ``tune`` half so that the config's thresholds
    can be compared with what the search finds; the ``test`` half is only ever scored.
    """
    grid = GRID if grid is None else grid
    columns = sorted(set(grid["columns"]) | {thresholds.columns})
    features = {k: features_for(maps, token_types, k) for k in columns}
    halves = labels["half"].to_numpy()
    tune_rows = halves == "tune"
    tuned, tuned_score = tune({k: f[tune_rows] for k, f in features.items()},
                              list(labels["pattern"][tune_rows]), grid)
    predicted = np.array(PATTERNS)[classify(features[thresholds.columns], thresholds)]
    tables = []
    for half in ("test", "tune"):
        rows = halves == half
        part = per_class(list(labels["pattern"][rows]), list(predicted[rows]))
        tables.append(part.assign(half="held-out (test)" if half == "test" else "tune"))
    table = pd.concat(tables, ignore_index=True)
    table = table[["half", *[c for c in table.columns if c != "half"]]]
    test_rows = halves == "test"
    matrix = confusion(list(labels["pattern"][test_rows]), list(predicted[test_rows]))
    truth = np.array([PATTERNS.index(p) for p in labels["pattern"][tune_rows]])
    config_score = macro_f1(truth, classify(features[thresholds.columns][tune_rows], thresholds))
    settings = pd.DataFrame({"setting": [f.name for f in fields(Thresholds)],
                             "config": list(thresholds.as_dict().values()),
                             "tuned_on_tune_half": list(tuned.as_dict().values())})
    settings.loc[len(settings)] = ["macro_f1_on_tune_half (%)", round(100 * config_score, 2),
                                   round(100 * tuned_score, 2)]
    per_map = labels[["map", "example_index", "layer", "head", "half", "pattern"]].copy()
    for i, name in enumerate(FEATURES):
        per_map[name] = features[thresholds.columns][:, i]
    per_map["predicted"] = predicted
    counts = labels.groupby("half")["pattern"].value_counts().unstack(fill_value=0)
    described = "; ".join(f"{half}: " + ", ".join(f"{p} {int(counts.loc[half].get(p, 0))}"
                                                  for p in PATTERNS) for half in counts.index)
    caption = (f"{len(labels)} maps labelled by eye ({describe_store}); {described}. Thresholds "
               f"from the config, chosen by a grid search for the best macro F1 on the tune half; "
               f"the held-out half is reported. Kovaleva et al. labelled ~400 maps and trained a CNN.")
    return LabelEvaluation(table, matrix, settings, per_map, caption)
