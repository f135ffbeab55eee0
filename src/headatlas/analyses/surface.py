"""Surface-level attention patterns (Clark et al. 2019 §3; Fig. 1, 2 and 4).

Three streaming analyses, each vectorised over the ``[layers, heads, n, n]``
block of one example:

* ``relative_position``: attention to the previous token, the token itself,
  the next token (§3.1);
* ``special_tokens``: attention to ``[CLS]``, ``[SEP]`` and ``.``/``,``, and
  to ``[SEP]`` from ``[SEP]`` vs from other tokens (§3.2, Fig. 2);
* ``entropy``: entropy of the attention rows against uniform attention, of
  the ``[CLS]`` row alone, and the largest single weight (§3.3, Fig. 4).

All averages are token-weighted: a statistic is summed over every query
token of every example and divided by the number of those tokens, so a
128-token segment counts four times as much as a 32-token one. (Clark's
notebook averages within each example first, then over examples; with
segments of nearly equal length the two agree closely.)

The helpers below turn the tables into Fig. 1's head choice, the behaviour
labels of Clark's clustering figure, and the paper-vs-ours claims table.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from headatlas.analyses.base import Analysis, describe, register, store_provenance
from headatlas.analyses.batch import MapBatch, to_host
from headatlas.analyses.result import Result
from headatlas.claims import (PAPER_LAYERS, Claim, depth_layers, depth_text, holds_if, pct, span_text,
                              verdict)
from headatlas.heads import Column, HeadColumns, head_name, head_table
from headatlas.store.example import Example

# Thresholds of Clark's published clustering code (General_Analysis.ipynb).
from headatlas.store.maps import as_maps, pick_example
ENTROPY_THRESHOLD = 3.8
POSITION_THRESHOLD = 0.5
SPECIAL_TOKEN_THRESHOLD = 0.6


def _ratio(total: np.ndarray, count: float) -> np.ndarray:
    """``total / count``, NaN when nothing was counted (e.g. no [SEP] seen)."""
    return total / count if count else np.full_like(total, np.nan)


class _Sums(Analysis):
    """A surface analysis whose state is a few arrays of sums: merging adds them."""
    bounded = True  # sums

    _SUMS: tuple[str, ...] = ()  # the attributes holding the sums (numpy arrays or numbers)

    def _state(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(getattr(self, name)) for name in self._SUMS}

    def _merge(self, state: dict[str, np.ndarray]) -> None:
        for name in self._SUMS:
            setattr(self, name, getattr(self, name) + state[name])


@register
class RelativePosition(_Sums):
    """Average attention to the previous token, the token itself, the next token.

    Columns ``prev``, ``self``, ``next`` (plus ``layer``, ``head``). Token-weighted:
    ``prev`` sums ``attn[i, i-1]`` over every query ``i >= 1`` of every example and
    divides by the number of such queries (n - 1 per example); ``next`` likewise
    over ``i <= n-2``; ``self`` over all n queries.
    """

    name = "relative_position"
    _SUMS = ("_sums", "_counts")

    def __init__(self, n_layers: int, n_heads: int):
        super().__init__(n_layers, n_heads)
        self._sums = np.zeros((3, n_layers, n_heads))  # prev, self, next
        self._counts = np.zeros(3)

    def reduce(self, batch: MapBatch) -> dict:
        xp = batch.xp
        # offset -1 are the entries [i, i-1] (previous key), +1 are [i, i+1] (next key); zero
        # past each example's length, so the batch's sums are its examples'.
        sums = [xp.sum(batch.diagonal(offset), axis=-1, dtype=xp.float64) for offset in (-1, 0, 1)]
        return {"sums": xp.stack(sums, axis=2)}  # [B, L, 3, H]

    def fold(self, batch: MapBatch, reduced: dict) -> None:
        self._sums += np.moveaxis(to_host(reduced["sums"]).sum(axis=0), 1, 0)
        for k, offset in enumerate((-1, 0, 1)):
            self._counts[k] += int(np.maximum(batch.lengths - abs(offset), 0).sum())

    def result(self) -> Result:
        prev, self_, next_ = (_ratio(s, c) for s, c in zip(self._sums, self._counts))
        return Result({"heads": head_table(self.n_layers, self.n_heads, prev=prev, self=self_, next=next_)})


@register
class SpecialTokens(_Sums):
    """Average attention mass on ``[CLS]``, ``[SEP]`` and ``.``/``,`` (Fig. 2).

    Columns: ``cls``, ``sep`` (all [SEP]s together), ``punct`` — mass per query
    token averaged over all query tokens; ``sep_from_sep`` — mass on [SEP]s
    averaged over the [SEP] query tokens only; ``sep_from_other`` — the same
    over every other query token ([CLS] included, as in Clark's code).
    Token-weighted across examples; NaN if no query of that kind was seen.
    """

    name = "special_tokens"
    _SUMS = ("_to_kind", "_sep_from", "_n_queries", "_n_sep_queries")

    def __init__(self, n_layers: int, n_heads: int):
        super().__init__(n_layers, n_heads)
        self._to_kind = np.zeros((n_layers, n_heads, 3))  # mass on cls, sep, punct
        self._sep_from = np.zeros((2, n_layers, n_heads))  # from [SEP], from others
        self._n_queries = 0
        self._n_sep_queries = 0

    def reduce(self, batch: MapBatch) -> dict:
        # Both are sums over the queries, so both come from each key column's mass (one float64
        # sum per column, shared with sinks and patterns), less what the [SEP] rows (one or two
        # per example) give: no per-query mass per kind is made.
        xp, f64 = batch.xp, batch.xp.float64
        kinds = xp.stack([batch.token_mask(kind) for kind in ("cls", "sep", "punct")], axis=-1)  # [B, N, 3]
        to_kind = xp.matmul(batch.column_mass(), xp.astype(kinds, f64)[:, None])  # [B, L, H, 3]
        from_sep = _sep_from_sep(batch)  # [B, L, H]
        # [B, L, 2, H]: from [SEP], from the others
        return {"to_kind": to_kind, "sep_from": xp.stack([from_sep, to_kind[..., 1] - from_sep], axis=2)}

    def fold(self, batch: MapBatch, reduced: dict) -> None:
        self._to_kind += to_host(reduced["to_kind"]).sum(axis=0)
        self._sep_from += np.moveaxis(to_host(reduced["sep_from"]).sum(axis=0), 1, 0)
        self._n_queries += int(batch.lengths.sum())
        self._n_sep_queries += int(batch.host_masks()["sep"].sum())

    def result(self) -> Result:
        to_kind = _ratio(self._to_kind, self._n_queries)
        return Result({"heads": head_table(
            self.n_layers, self.n_heads,
            cls=to_kind[..., 0], sep=to_kind[..., 1], punct=to_kind[..., 2],
            sep_from_sep=_ratio(self._sep_from[0], self._n_sep_queries),
            sep_from_other=_ratio(self._sep_from[1], self._n_queries - self._n_sep_queries),
        )})


def _sep_from_sep(batch: MapBatch):
    """float64 ``[B, L, H]``: the mass the [SEP] queries give the [SEP] keys, read from the rows
    where some example of the batch has a [SEP] alone."""
    xp, f64 = batch.xp, batch.xp.float64
    host = batch.host_masks()["sep"]  # [B, N]
    rows = np.flatnonzero(host.any(axis=0))
    picked = xp.astype(xp.take(batch.attn, batch.asarray(rows), axis=-2), f64)  # [B, L, H, R, N]
    on_sep = xp.sum(picked * xp.astype(batch.token_mask("sep"), f64)[:, None, None, None], axis=-1)
    return xp.sum(on_sep * batch.asarray(host[:, rows].astype(np.float64))[:, None, None], axis=-1)


@register
class Entropy(_Sums):
    """Entropy (nats) of the attention rows and the largest single weight (Fig. 4).

    Columns: ``entropy`` — mean over all rows (query tokens) of
    ``-sum_j a_ij log a_ij`` with ``0 log 0 = 0`` (Clark's code instead smooths
    the rows with 1e-4 uniform mass, which adds a little entropy);
    ``uniform_entropy`` — the mean of ``log n`` over the same rows, i.e. the
    entropy of uniform attention (equal for every head); ``cls_entropy`` — mean
    entropy of the [CLS] rows alone; ``max_weight`` — mean over rows of the
    largest weight in the row. Token-weighted across examples.
    """

    name = "entropy"
    _SUMS = ("_sums", "_uniform", "_n_rows", "_n_cls")

    def __init__(self, n_layers: int, n_heads: int):
        super().__init__(n_layers, n_heads)
        self._sums = np.zeros((3, n_layers, n_heads))  # entropy, cls entropy, max weight
        self._uniform = 0.0
        self._n_rows = 0
        self._n_cls = 0

    def reduce(self, batch: MapBatch) -> dict:
        xp, f64 = batch.xp, batch.xp.float64
        row_entropy = batch.row_entropy()  # [B, L, H, N], zero on padding rows
        cls = batch.token_mask("cls")[:, None, None]
        sums = [xp.sum(row_entropy, axis=-1, dtype=f64), xp.sum(row_entropy * cls, axis=-1, dtype=f64),
                xp.sum(batch.row_max(), axis=-1, dtype=f64)]
        return {"sums": xp.stack(sums, axis=2)}  # [B, L, 3, H]: entropy, [CLS] rows', largest weight

    def fold(self, batch: MapBatch, reduced: dict) -> None:
        self._sums += np.moveaxis(to_host(reduced["sums"]).sum(axis=0), 1, 0)
        self._uniform += sum(n * math.log(n) for n in batch.lengths.tolist())
        self._n_rows += int(batch.lengths.sum())
        self._n_cls += int(batch.host_masks()["cls"].sum())

    def result(self) -> Result:
        uniform = self._uniform / self._n_rows if self._n_rows else np.nan
        return Result({"heads": head_table(
            self.n_layers, self.n_heads,
            entropy=_ratio(self._sums[0], self._n_rows),
            uniform_entropy=np.full((self.n_layers, self.n_heads), uniform),
            cls_entropy=_ratio(self._sums[1], self._n_cls),
            max_weight=_ratio(self._sums[2], self._n_rows),
        )})


# What the three tables add to the head atlas (headatlas.report.atlas), by table name.
CLARK = "Clark et al. 2019"
ATLAS = {
    "relative_position": HeadColumns("relative position", f"{CLARK} §3.1", rank=10, columns=(
        Column("prev", "prev", "share", "mean attention to the previous token",
               "4 heads of BERT-base put >50% here (layers 2, 4, 7, 8)"),
        Column("self", "self", "share", "mean attention to the token itself"),
        Column("next", "next", "share", "mean attention to the next token",
               "5 heads of BERT-base put >50% here (layers 1, 2, 2, 3, 6)"),
    )),
    "special_tokens": HeadColumns("special tokens", f"{CLARK} §3.1 (norm rows: Kobayashi et al. 2020 §4)",
                                  rank=11, columns=(
        Column("cls", "cls", "share", "mean attention to [CLS]", "early layers favour [CLS] (BERT-base)"),
        Column("sep", "sep", "share", "mean attention to [SEP]",
               ">50% in layers 6-10 of BERT-base; collapses under the norm weighting (Kobayashi)"),
        Column("punct", "punct", "share", "mean attention to '.' and ','",
               "deep layers favour periods and commas (BERT-base)"),
        Column("sep_from_sep", "sep_from_sep", "share", "attention of [SEP] tokens to [SEP]",
               ">90% for heads that process [SEP] (Fig. 2)"),
        Column("sep_from_other", "sep_from_other", "share", "attention of other tokens to [SEP]"),
    )),
    "entropy": HeadColumns("entropy", f"{CLARK} §3.3", rank=12, columns=(
        Column("entropy", "entropy", "nats", "mean entropy of the attention rows",
               "early heads broad: at most ~10% on any single word"),
        Column("uniform_entropy", "uniform_entropy", "nats", "the same for uniform attention"),
        Column("cls_entropy", "cls_entropy", "nats", "entropy of the [CLS] row", "last layer 3.89 nats (BERT-base)"),
        Column("max_weight", "max_weight", "share", "mean largest weight of a row"),
    )),
}


def layer_means(table: pd.DataFrame, columns) -> pd.DataFrame:
    """Per-layer average over heads of ``columns`` (Fig. 2 top): one row per layer."""
    return table.groupby("layer", as_index=False)[list(columns)].mean()


def _merged(rel: pd.DataFrame, special: pd.DataFrame, entropy: pd.DataFrame) -> pd.DataFrame:
    """The three per-head tables side by side, keyed by (layer, head)."""
    return rel.merge(special, on=["layer", "head"]).merge(entropy, on=["layer", "head"])


def classify_heads(rel: pd.DataFrame, special: pd.DataFrame, entropy: pd.DataFrame) -> pd.DataFrame:
    """Label each head's behaviour with the thresholds of Clark's clustering code.

    Labels: ``broad`` (entropy > 3.8 nats), ``next``/``prev`` (> 0.5 of attention
    on the next/previous token), ``cls``/``sep``/``punct`` (> 0.6 on those
    tokens), else ``other``. When several apply, the code's last assignment
    wins, i.e. priority punct > sep > cls > broad > prev > next.

    Returns
    -------
    DataFrame with columns ``layer``, ``head``, ``behaviour``.
    """
    m = _merged(rel, special, entropy)
    rules = [  # highest priority first
        ("punct", m["punct"] > SPECIAL_TOKEN_THRESHOLD),
        ("sep", m["sep"] > SPECIAL_TOKEN_THRESHOLD),
        ("cls", m["cls"] > SPECIAL_TOKEN_THRESHOLD),
        ("broad", m["entropy"] > ENTROPY_THRESHOLD),
        ("prev", m["prev"] > POSITION_THRESHOLD),
        ("next", m["next"] > POSITION_THRESHOLD),
    ]
    labels = np.select([cond for _, cond in rules], [label for label, _ in rules], default="other")
    return pd.DataFrame({"layer": m["layer"], "head": m["head"], "behaviour": labels})


def pick_example_heads(rel: pd.DataFrame, special: pd.DataFrame,
                       entropy: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Choose Fig. 1's four heads from the data, one per behaviour.

    ``broad`` = highest ``entropy``, ``next`` = highest ``next``, ``sep`` = highest
    ``sep``, ``punct`` = highest ``punct``, picked in that order among heads not
    already chosen (so the four are distinct; ties go to the lower layer-head).

    Returns
    -------
    ``{behaviour: (layer, head)}``, 1-based.
    """
    m = _merged(rel, special, entropy).set_index(["layer", "head"])
    chosen: dict[str, tuple[int, int]] = {}
    for behaviour, column in (("broad", "entropy"), ("next", "next"), ("sep", "sep"),
                              ("punct", "punct")):
        free = m.drop(index=list(chosen.values()))
        layer, head = free[column].idxmax()
        chosen[behaviour] = (int(layer), int(head))
    return chosen


def example_heads(rel: pd.DataFrame, special: pd.DataFrame, entropy: pd.DataFrame, stores,
                  index: int | None = None, min_tokens: int = 24,
                  weighting: str = "attention") -> tuple[pd.DataFrame, dict[str, tuple[int, int]], Example]:
    """Fig. 1: four heads chosen from the data and the segment to draw them on.

    Parameters
    ----------
    rel, special, entropy : the three per-head tables of the store.
    stores : the store (path or shard paths), or the :class:`~headatlas.store.maps.Maps` of a
        fused run.
    index : corpus index of the segment to draw; by default the shortest with at
        least ``min_tokens`` tokens (Fig. 1 shows short excerpts).
    weighting : the view the tables were computed on; the segment is drawn under it too.

    Returns
    -------
    table : ``behaviour``, ``layer``, ``head``, one row per head
        (:func:`pick_example_heads`); ``attrs["caption"]``.
    heads : the same as ``{behaviour: (layer, head)}``.
    example : the segment.
    """
    heads = pick_example_heads(rel, special, entropy)
    maps = as_maps(stores)
    example = pick_example(maps, index, min_tokens=min_tokens, weighting=weighting)
    table = pd.DataFrame([(b, l, h) for b, (l, h) in heads.items()], columns=["behaviour", "layer", "head"])
    provenance = store_provenance(maps.records, weighting)
    table.attrs["caption"] = describe(provenance, 1, f"segment shown ({example.id}) of "
                                                     f"{provenance['n_examples']}")
    return table, heads, example


def _mean_in(table: pd.DataFrame, column: str, span: tuple[int, int]) -> float:
    return float(table.loc[table["layer"].between(*span), column].mean())


def _heads_over(table: pd.DataFrame, column: str, threshold: float) -> str:
    """'k (layers a, b, ...)' for the heads whose ``column`` exceeds ``threshold``."""
    layers = table.loc[table[column] > threshold, "layer"].sort_values().tolist()
    if not layers:
        return "0"
    return f"{len(layers)} (layer{'s' if len(layers) > 1 else ''} {', '.join(map(str, layers))})"


def _sep_peak(special: pd.DataFrame) -> pd.DataFrame:
    """Per-layer [SEP] means of the layers whose mean attention to [SEP] is > 50% (may be empty)."""
    layers = layer_means(special, ["sep", "sep_from_sep", "sep_from_other"])
    return layers[layers["sep"] > 0.5]


def _broad_early(entropy: pd.DataFrame, early: tuple[int, int]) -> pd.DataFrame:
    """The early heads above the broad-attention entropy threshold (may be empty)."""
    heads = entropy[entropy["layer"].between(*early)]
    return heads[heads["entropy"] > ENTROPY_THRESHOLD]


SINKS = {"cls": "[CLS]", "sep": "[SEP]", "punct": ". ,"}


def sink_tokens(special: pd.DataFrame) -> pd.DataFrame:
    """Per layer, the special token that takes the most attention (the layer's "sink").

    Returns ``layer``, ``sink`` (``[CLS]``, ``[SEP]`` or ``. ,``) and ``share``
    (its mean attention over the layer's heads, 0..1); layers whose shares are all
    undefined (NaN) are left out.
    """
    layers = layer_means(special, list(SINKS))
    layers = layers[layers[list(SINKS)].notna().any(axis=1)]  # a layer with no defined share has no sink
    kinds = layers[list(SINKS)]
    return pd.DataFrame({"layer": layers["layer"],
                         "sink": [SINKS[k] for k in kinds.idxmax(axis=1)],
                         "share": kinds.max(axis=1)})


def _sink_text(sinks: pd.DataFrame) -> str:
    """Runs of consecutive layers with the same sink: '[CLS] in layers 2-5 (36-42%); ...'."""
    parts, run = [], []
    rows = sinks.to_dict("records")
    for row in rows + [None]:
        if run and (row is None or row["sink"] != run[-1]["sink"]):
            lo, hi = min(r["share"] for r in run), max(r["share"] for r in run)
            share = pct(lo) if round(100 * lo) == round(100 * hi) else f"{100 * lo:.0f}-{pct(hi)}"
            parts.append(f"{run[0]['sink']} in {span_text((run[0]['layer'], run[-1]['layer']))} ({share})")
            run = []
        if row is not None:
            run.append(row)
    return "; ".join(parts)


CLARK_S3 = "Clark et al. 2019 §3"
# "Little" attention to the current token, and "at most ~10%" on one word: the thresholds used.
SELF_LITTLE = 0.10
MAX_WEIGHT = 0.10
# Clark's [CLS]-row entropy in the last layer, and uniform attention over 128 tokens.
PAPER_CLS_ENTROPY = 3.89
PAPER_UNIFORM_ENTROPY = math.log(128)
ENTROPY_TOLERANCE = 0.10


def paper_claims(rel: pd.DataFrame, special: pd.DataFrame, entropy: pd.DataFrame,
                 n_layers: int | None = None) -> list[Claim]:
    """Clark et al.'s §3 claims beside our measured values, each with a verdict and its rule.

    Layer ranges the paper states for BERT-base (12 layers) are read as relative
    depth (:func:`~headatlas.claims.depth_layers`); "early" and "deep" are the
    first and last thirds (layers 1-4 and 9-12 of 12). The [SEP]-from-[SEP]
    claim is judged on the layers whose mean attention to [SEP] exceeds 50%
    (not applicable when there are none), the max-weight claim on the early
    heads above the broad threshold (not applicable when there are none); like
    the paper's §3, all of it is per token (wordpiece).

    ``n_layers`` defaults to the deepest layer of the tables.

    Returns
    -------
    list[Claim]
        One :class:`~headatlas.claims.Claim` per claim
        (:func:`~headatlas.claims.claims_table` makes them a ``paper_claims.csv`` table).
    """
    n_layers = int(rel["layer"].max()) if n_layers is None else n_layers
    early, deep, middle = (depth_layers(a, b, n_layers) for a, b in ((1, 4), (9, 12), (6, 10)))
    depth = f"{n_layers} layers: " if n_layers != PAPER_LAYERS else ""
    early_deep = (f"{depth}early = {span_text(early)}, deep = {span_text(deep)} "
                  f"(the first and last thirds)")
    peak = _sep_peak(special)
    broad = _broad_early(entropy, early)
    last = entropy[entropy["layer"] == n_layers]
    sinks = sink_tokens(special)
    mid_sinks = sinks[sinks["layer"].between(*middle)]
    cls_early, cls_deep = _mean_in(special, "cls", early), _mean_in(special, "cls", deep)
    punct_deep, punct_early = _mean_in(special, "punct", deep), _mean_in(special, "punct", early)
    sep_middle = _mean_in(special, "sep", middle)
    cls_entropy, uniform = last["cls_entropy"].mean(), last["uniform_entropy"].mean()
    paper_ratio = PAPER_CLS_ENTROPY / PAPER_UNIFORM_ENTROPY
    n_prev, n_next = int((rel["prev"] > POSITION_THRESHOLD).sum()), int((rel["next"] > POSITION_THRESHOLD).sum())
    claims = [
        Claim("clark.s3.prev_heads", CLARK_S3 + ".1", "some heads attend to the previous token",
              "4 heads >50% on it (layers 2, 4, 7, 8 of 12)",
              _heads_over(rel, "prev", POSITION_THRESHOLD), verdict(n_prev >= 1),
              "at least one head puts > 50% of its attention on the previous token"),
        Claim("clark.s3.next_heads", CLARK_S3 + ".1", "some heads attend to the next token",
              "5 heads >50% on it (layers 1, 2, 2, 3, 6 of 12)",
              _heads_over(rel, "next", POSITION_THRESHOLD), verdict(n_next >= 1),
              "at least one head puts > 50% of its attention on the next token"),
        Claim("clark.s3.self_little", CLARK_S3 + ".1", "heads put little attention on the current token",
              "little, for most heads",
              f"median head {pct(rel['self'].median())}, max {pct(rel['self'].max())}",
              holds_if(rel["self"].median() < SELF_LITTLE, rel["self"].median()),
              f"the median head puts < {pct(SELF_LITTLE)} on the current token"),
        Claim("clark.s3.sink_token", CLARK_S3 + ".2", "the no-op attention sink is [SEP]",
              "[SEP] (over half of all attention in layers 6-10 of 12)", _sink_text(sinks),
              holds_if((mid_sinks["sink"] == SINKS["sep"]).all() if len(mid_sinks) else None),
              f"[SEP] takes more attention than [CLS] and than . , in every layer at {depth_text(6, 10)}",
              "per layer: the special token with the most attention (mean over heads)"),
        Claim("clark.s3.sep_middle", CLARK_S3 + ".2", "over half of the attention goes to [SEP] in the middle layers",
              ">50% in layers 6-10 of 12", f"{pct(sep_middle)} in {span_text(middle)}",
              holds_if(sep_middle > 0.5, sep_middle),
              f"mean attention to [SEP] over the heads at {depth_text(6, 10)} > 50%",
              f"{depth}{span_text(middle)}" if depth else ""),
        Claim("clark.s3.cls_early", CLARK_S3 + ".2", "early heads attend to [CLS] more than deep heads",
              "early heads attend to [CLS]", f"early {pct(cls_early)}, deep {pct(cls_deep)}",
              holds_if(cls_early > cls_deep, cls_early, cls_deep),
              "mean attention to [CLS] of the first third of the layers > that of the last third",
              early_deep),
        Claim("clark.s3.punct_deep", CLARK_S3 + ".2", "deep heads attend to periods and commas more than early heads",
              "deep heads attend to periods and commas", f"deep {pct(punct_deep)}, early {pct(punct_early)}",
              holds_if(punct_deep > punct_early, punct_deep, punct_early),
              "mean attention to . and , of the last third of the layers > that of the first third",
              early_deep),
        Claim("clark.s3.sep_from_sep", CLARK_S3 + ".2",
              "where attention to [SEP] is high, [SEP] tokens attend almost only to [SEP]", ">90%",
              (f"{pct(peak['sep_from_sep'].mean())} from [SEP] vs {pct(peak['sep_from_other'].mean())} "
               f"from other tokens (layers {', '.join(map(str, peak['layer']))})") if len(peak)
              else "no layer puts > 50% of its attention on [SEP]",
              holds_if(peak["sep_from_sep"].mean() > 0.9 if len(peak) else None,
                       peak["sep_from_sep"].mean() if len(peak) else None),
              "in the layers whose mean attention to [SEP] is > 50%: mean attention of [SEP] "
              "queries to [SEP] > 90% (not applicable if no layer is > 50%)"),
        Claim("clark.s3.cls_entropy_last", CLARK_S3 + ".3", "the [CLS] row of the last layer attends broadly",
              f"{PAPER_CLS_ENTROPY} nats ({PAPER_CLS_ENTROPY / PAPER_UNIFORM_ENTROPY:.2f} of uniform over 128 tokens)",
              f"{cls_entropy:.2f} nats ({cls_entropy / uniform:.2f} of uniform, {uniform:.2f} nats)",
              holds_if(abs(cls_entropy / uniform - paper_ratio) <= ENTROPY_TOLERANCE, cls_entropy, uniform),
              f"entropy / uniform entropy (mean log n) within ±{ENTROPY_TOLERANCE:.2f} of the paper's "
              f"{paper_ratio:.2f}", "the ratio to uniform makes inputs of other lengths comparable"),
        Claim("clark.s3.broad_max_weight", CLARK_S3 + ".3",
              "high-entropy early heads put at most ~10% on any single word", "at most ~10%",
              (f"{pct(broad['max_weight'].mean())} (mean row maximum; heads "
               f"{', '.join(map(head_name, broad['layer'], broad['head']))})") if len(broad)
              else f"no head of {span_text(early)} above {ENTROPY_THRESHOLD} nats",
              holds_if(broad["max_weight"].mean() <= MAX_WEIGHT if len(broad) else None,
                       broad["max_weight"].mean() if len(broad) else None),
              f"mean largest weight of the heads above {ENTROPY_THRESHOLD} nats in the first third "
              f"of the layers <= {pct(MAX_WEIGHT)} (not applicable if there are none)",
              f"{depth}{span_text(early)}" if depth else ""),
    ]
    return claims
