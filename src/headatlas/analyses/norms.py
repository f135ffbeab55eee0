"""Attention weighted by value-vector norms (Kobayashi et al. 2020 §4): where does it go?

Head *h* adds ``α_ij f_h(x_j)`` to token *i*'s output (``f_h(x_j)``: the
transformed value vector, :mod:`headatlas.encoders.valuenorms`). Kobayashi et al. show
that the tokens that draw much attention in BERT (``[CLS]``, ``[SEP]``, periods
and commas) have value vectors of small norm, so what the heads actually pass on
from them is small: "BERT pays poor attention to special tokens".

One pass over a store with value norms (:class:`NormShares`) gives, per layer
and token class (``[CLS]``, ``[SEP]``, ``.``/``,``, other), the share of each
query's row that goes to the class under three views:

* ``attention``: the weights α (averaged over heads);
* ``norm``: α_ij‖f_h(x_j)‖, renormalised per row (per head, then averaged over heads);
* ``layer_norm``: ‖Σ_h α^h_ij f_h(x_j)‖, renormalised per row (the whole layer);

plus the mean ‖f_h(x)‖ of each class, and the rank correlation (Spearman) of
α_ij with ‖f_h(x_j)‖ over (head, query, key) pairs whose key is in the class.
:func:`paper_claims` judges Kobayashi et al.'s claims on the two tables (the result's
``claims``). Averages are token-weighted (every query of every example counts once), as in
:mod:`headatlas.analyses.surface`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from headatlas.analyses.base import Analysis, describe, register
from headatlas.analyses.batch import MapBatch, row_normalised, to_host
from headatlas.analyses.result import Result
from headatlas.analyses.sample import ExampleSample
from headatlas.claims import Claim, against, holds_if, verdict
from headatlas.store.example import TOKEN_CLASSES
from headatlas.store.halves import exact_halves

CLASSES = TOKEN_CLASSES
CLASS_LABELS = {"cls": "[CLS]", "sep": "[SEP]", "punct": ". or ,", "other": "other"}
VIEWS = ("attention", "norm", "layer_norm")
VIEW_LABELS = {"attention": "α", "norm": "‖αf(x)‖ (per head)", "layer_norm": "‖Σ_h αf(x)‖ (layer)"}
# A special token class is an attention sink in a layer when it draws at least this share of α.
SINK_SHARE = 0.2
# ... and its attention has collapsed when the norm view gives it at most this fraction of that.
COLLAPSE_FACTOR = 0.5
# "α and ‖f(x)‖ cancel out" where the sink is: Spearman ρ at most this in every sink layer. The
# pairs number thousands per layer, so any ρ a hair below 0 is "significant"; the effect size
# decides: |ρ| >= 0.3 is the usual "moderate" correlation. Judged per layer, since a pooled ρ
# mixes layers (layers with big α and small norms beside layers with the reverse give a
# negative pooled ρ when no layer has one: issue 23 item 6, -0.53 pooled, about 0 per layer).
RHO_NEGATIVE = -0.3
SOURCE = "Kobayashi et al. 2020 §4"


class Drawn(NamedTuple):
    """A batch's sampled (head, query, key) pairs (:meth:`NormShares._drawn`): ``index``
    ``[3, R, L, P]`` (head, query, key; each layer's pairs class by class, P the most pairs a row
    has, the rest 0) of the batch's ``rows`` ``[R]`` that drew pairs, and each such row's pairs
    per class ``per_class`` (``[C]`` each)."""

    index: np.ndarray
    rows: np.ndarray
    per_class: list[np.ndarray]


def class_major(by_layer: np.ndarray, per_class: np.ndarray) -> np.ndarray:
    """An example's sampled values ``[L, ≥ P]`` (each layer's, class by class, then padding) in
    the state's order: class by class, each class's layer by layer."""
    bounds = np.cumsum([0, *per_class])
    return np.concatenate([by_layer[:, a:b].ravel() for a, b in zip(bounds[:-1], bounds[1:])])


@register
class NormShares(Analysis):
    """Kobayashi et al.'s shares of [CLS], [SEP], ./, and other tokens under α and ‖αf(x)‖.

    Parameters
    ----------
    pairs_per_example : int
        The correlation of α and ‖f(x)‖ is computed on at most this many
        (head, query, key) pairs per example, layer and token class, drawn
        uniformly with replacement in one draw per example (all of them, once each, when
        there are no more than that).
    seed : int
        Seed of that draw (with the example's corpus position: the sample does not depend on
        the order examples arrive in).
    sample_examples : int or None
        The pairs of at most this many examples are kept (:class:`ExampleSample`: seeded by
        the corpus positions, the same however the corpus is sharded), so the state stays a
        fixed size on any corpus; None keeps every example's. The shares use every example.

    The result's tables, in this order:

    ``shares``, one row per (layer, class)
        ``layer`` (1-based), ``class`` (cls, sep, punct, other), ``label``, the shares
        ``attention``, ``norm``, ``layer_norm`` (each class's shares of a layer sum to 1),
        and ``value_norm`` (mean ‖f_h(x_j)‖ over heads and the class's tokens).
    ``correlation``, one row per class
        ``class``, ``label``, ``spearman`` (all layers pooled), ``n_pairs``, and
        ``layer_<l>`` (Spearman within layer l).

    Its ``claims`` are :func:`paper_claims` of the two.

    State: the sums ``shares [3, L, C]``, ``norm_sums [L, C]``, ``class_tokens [C]``,
    ``n_queries`` (merging adds them), and the sampled pairs: ``pair_alpha``, ``pair_norm``
    (every example's sample, class-major then layer within an example; float16, exactly the
    store's values, unless a value is not a float16's: :func:`compact`),
    ``pair_counts [E, C, L]`` (pairs of each example, class and layer) and ``pair_example [E]``
    (the sampled examples' corpus positions, ascending; merging keeps the sample of the union).
    """

    name = "norm_shares"
    bounded = True  # sums and a capped sample of examples
    needs_norms = True

    def __init__(self, n_layers: int, n_heads: int, pairs_per_example: int = 256, seed: int = 0,
                 sample_examples: int | None = 2000):
        super().__init__(n_layers, n_heads)
        if pairs_per_example < 1:
            raise ValueError(f"pairs_per_example must be >= 1, got {pairs_per_example}")
        self.pairs_per_example = pairs_per_example
        self.seed = seed
        self.sample_examples = sample_examples
        self._shares = np.zeros((len(VIEWS), n_layers, len(CLASSES)))
        self._norm_sums = np.zeros((n_layers, len(CLASSES)))
        self._class_tokens = np.zeros(len(CLASSES))
        self._n_queries = 0
        # per sampled example (by corpus position): its sampled alpha and ||f(x)|| values, and
        # how many of them fall in each (class, layer)
        self._pairs_kept = ExampleSample(sample_examples, seed)

    def reduce(self, batch: MapBatch) -> dict:
        if batch.value_norms is None or batch.norm_map is None:
            raise ValueError(f"examples {[e.id for e in batch.examples][:3]} have no value norms: {self.name} "
                             "reads a store opened with norms=True (run_analysis does this)")
        xp, f64 = batch.xp, batch.xp.float64
        onehot, norms = batch.token_classes(), batch.value_norms  # [B, N, C]
        # the mass per key class, summed over the queries, under α and under the per-head norm
        # view: each key column's mass by class (the norm view's own batch where the extraction
        # made one, and its column masses, which other analyses share)
        by_class = xp.astype(onehot, f64)[:, None]  # [B, 1, N, C]
        shares = [xp.mean(xp.matmul(batch.column_mass(), by_class), axis=2),
                  xp.mean(xp.matmul(batch.view("norm").column_mass(), by_class), axis=2),
                  xp.sum(xp.matmul(row_normalised(batch.norm_map), onehot[:, None]), axis=2, dtype=f64)]
        return {"shares": xp.stack(shares, axis=2),  # [B, L, 3, C]
                "norm_sums": xp.sum(xp.matmul(norms, onehot[:, None]), axis=2, dtype=f64),  # [B, L, C]
                **self._gather_pairs(batch)}

    def fold(self, batch: MapBatch, reduced: dict) -> None:
        self._shares += np.moveaxis(to_host(reduced["shares"]).sum(axis=0), 1, 0)
        self._norm_sums += to_host(reduced["norm_sums"]).sum(axis=0)
        self._class_tokens += batch.host_classes().sum(axis=(0, 1))
        self._n_queries += int(batch.lengths.sum())
        alpha, norm = to_host(reduced["alpha"]), to_host(reduced["norm"])  # [R, L, P]: the drawn rows
        drawn = self._drawn(batch)
        for r, (b, per_class) in enumerate(zip(drawn.rows.tolist(), drawn.per_class)):
            example = batch.examples[b]
            if not self._pairs_kept.admits(example.index):
                continue  # evicted by an example before it in this batch
            self._pairs_kept.add(example.index, (compact(class_major(alpha[r], per_class)),
                                                 compact(class_major(norm[r], per_class)),
                                                 np.repeat(per_class[:, None], self.n_layers, axis=1)))

    def _drawn(self, batch: MapBatch) -> Drawn:
        """The batch's sampled pairs (:class:`Drawn`), drawn once for every layer and view of its
        examples. Only the examples the sample of examples admits draw any: once it is full, few
        do, and an example it does not admit now it never will (:class:`ExampleSample`)."""
        rows = np.array([b for b, e in enumerate(batch.examples) if self._pairs_kept.admits(e.index)], np.int64)

        def compute():
            onehots, lengths = batch.host_classes(), batch.lengths
            drawn = []
            for b in rows.tolist():
                # One generator per example, seeded by its corpus position: the sample does not
                # depend on the order the store (or its shards) yields examples in.
                rng = np.random.default_rng([self.seed, batch.examples[b].index])
                drawn.append(self._sample_pairs(onehots[b, :lengths[b]].astype(bool), rng))
            width = max((d[0].shape[1] for d in drawn), default=0)
            index = np.zeros((3, len(drawn), self.n_layers, width), np.int64)
            for r, (*head_query_key, _) in enumerate(drawn):
                for i, x in enumerate(head_query_key):
                    index[i, r, :, :x.shape[1]] = x
            return Drawn(index, rows, [d[3] for d in drawn])
        return batch.shared(f"norm_pairs:{self.seed}:{self.pairs_per_example}:{rows.tobytes().hex()}", compute)

    def _sample_pairs(self, onehot: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """One example's sampled (head, query, key) pairs, the same for every layer's count:
        ``head, query, key`` ``[L, P]`` (each layer's pairs, class by class) and the pairs per
        class ``[C]``. One draw of the generator for every class and layer (its sequence
        fixes the sample)."""
        n_heads, n, layers, budget = self.n_heads, len(onehot), self.n_layers, self.pairs_per_example
        keys = [np.flatnonzero(onehot[:, c]) for c in range(len(CLASSES))]
        sizes = np.array([n_heads * n * len(k) for k in keys])
        drawn = sizes > budget
        # uniform integers in [0, size) from uniform floats (numpy's integers() with an array
        # of bounds took ~3x as long: 91 vs 30 µs for 12 x 12 heads; the floats' 53 bits leave
        # no bias a sample of 256 could see)
        picks = iter((rng.random((int(drawn.sum()), layers, budget)) * sizes[drawn][:, None, None]).astype(np.int64))
        columns = []
        for c, size in enumerate(sizes):
            if size == 0:
                continue
            chosen = next(picks) if drawn[c] else np.broadcast_to(np.arange(size), (layers, size))
            head, query, k = np.unravel_index(chosen, (n_heads, n, len(keys[c])))
            columns.append((head, query, keys[c][k]))
        empty = np.zeros((layers, 0), np.int64)
        head, query, key = (np.concatenate(x, axis=1) for x in zip(*columns)) if columns else (empty,) * 3
        return head, query, key, np.minimum(sizes, budget)

    def _gather_pairs(self, batch: MapBatch) -> dict:
        """The sampled pairs of the batch's layers: their α and ‖f(x)‖ ``[R, L, P]`` (the rows
        that drew pairs, :class:`Drawn`) gathered where the batch is (one gather per array, one
        copy to the host each)."""
        xp, width, n_heads = batch.xp, batch.width, self.n_heads
        drawn = self._drawn(batch)
        head, query, key = drawn.index[:, :, batch.layers.start:batch.layers.stop]
        layers = len(batch.layers)
        plane = (drawn.rows[:, None, None] * layers + np.arange(layers)[None, :, None]) * n_heads + head
        alpha = xp.take(xp.reshape(batch.attn, (-1,)), batch.asarray(((plane * width + query) * width + key).ravel()))
        norm = xp.take(xp.reshape(batch.value_norms, (-1,)), batch.asarray((plane * width + key).ravel()))
        return {"alpha": xp.reshape(alpha, head.shape), "norm": xp.reshape(norm, head.shape)}

    def _state(self) -> dict[str, np.ndarray]:
        empty = np.zeros(0, np.float16)  # float16 while every example's pairs are
        kept = self._pairs_kept.items()
        alpha, norm, counts = zip(*(record for _, record in kept)) if kept else ((), (), ())
        return {"shares": self._shares, "norm_sums": self._norm_sums, "class_tokens": self._class_tokens,
                "n_queries": np.asarray(self._n_queries, np.int64),
                "pair_example": np.asarray([i for i, _ in kept], np.int64),
                "pair_alpha": np.concatenate([empty, *alpha]),
                "pair_norm": np.concatenate([empty, *norm]),
                "pair_counts": np.asarray(counts, np.int64).reshape(-1, len(CLASSES), self.n_layers)}

    def _merge(self, state: dict[str, np.ndarray]) -> None:
        self._shares = self._shares + state["shares"]
        self._norm_sums = self._norm_sums + state["norm_sums"]
        self._class_tokens = self._class_tokens + state["class_tokens"]
        self._n_queries += int(state["n_queries"])
        counts = np.asarray(state["pair_counts"]).reshape(-1, len(CLASSES), self.n_layers)
        bounds = np.cumsum([0, *counts.sum(axis=(1, 2))])  # each example's pairs
        self._pairs_kept.extend(
            (int(index), (state["pair_alpha"][a:b], state["pair_norm"][a:b], per_example))
            for index, a, b, per_example in zip(state["pair_example"], bounds[:-1], bounds[1:], counts))

    def result(self) -> Result:
        shares = self._shares / self._n_queries if self._n_queries else np.full_like(self._shares, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            value_norm = self._norm_sums / (self.n_heads * self._class_tokens)
        rows = [{"layer": layer + 1, "class": name, "label": CLASS_LABELS[name],
                 **{view: shares[v, layer, c] for v, view in enumerate(VIEWS)},
                 "value_norm": value_norm[layer, c]}
                for layer in range(self.n_layers) for c, name in enumerate(CLASSES)]
        shares, correlation = pd.DataFrame(rows), self._correlation()
        return Result({"shares": shares, "correlation": correlation},
                      claims=paper_claims(shares, correlation, self.n_layers))

    def _pairs(self) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        """``[class][layer]``: the sampled (α, ‖f(x)‖) values, examples in corpus order."""
        state = self._state()
        counts = state["pair_counts"].reshape(-1, len(CLASSES) * self.n_layers)  # [E, C * L]
        cells = np.repeat(np.tile(np.arange(counts.shape[1]), len(counts)), counts.ravel())
        example = np.repeat(state["pair_example"], counts.sum(axis=1))
        # by cell, then corpus position; lexsort is stable: an example's values keep their order
        order = np.lexsort((example, cells))
        ends = np.cumsum(counts.sum(axis=0))[:-1]
        alphas, fx = (np.split(state[name][order], ends) for name in ("pair_alpha", "pair_norm"))
        return [[(alphas[c * self.n_layers + layer], fx[c * self.n_layers + layer])
                 for layer in range(self.n_layers)] for c in range(len(CLASSES))]

    def _correlation(self) -> pd.DataFrame:
        rows = []
        for name, per_layer in zip(CLASSES, self._pairs()):
            alphas = np.concatenate([a for a, _ in per_layer])
            fx = np.concatenate([f for _, f in per_layer])
            rows.append({"class": name, "label": CLASS_LABELS[name], "spearman": spearman(alphas, fx),
                         "n_pairs": len(alphas),
                         **{f"layer_{layer + 1}": spearman(*per_layer[layer])
                            for layer in range(self.n_layers)}})
        return pd.DataFrame(rows)

    def caption(self, result: Result, provenance: dict) -> str:
        return (f"{describe(provenance, provenance['n_examples'])}; share of each query's row on "
                "[CLS], [SEP], ./, and other tokens under α, under α‖f(x)‖ (Kobayashi et al. 2020, "
                "per head, renormalised per row) and under ‖Σ_h αf(x)‖ (whole layer, renormalised per "
                f"row), token-weighted means; Spearman ρ of α and ‖f(x)‖ on at most "
                f"{self.pairs_per_example} random (head, query, key) pairs per segment, layer and "
                f"token class (seed {self.seed}){self._sample_text(provenance['n_examples'])}; "
                "deviation: paper used BERT-base on Clark et al.'s Wikipedia segments")

    def _sample_text(self, n_examples: int) -> str:
        kept = len(self._pairs_kept)
        return "" if kept >= n_examples else (f", from a seeded sample of {kept:,} of the "
                                              f"{n_examples:,} segments (sample_examples)")


def compact(values: np.ndarray) -> np.ndarray:
    """``values`` as float16 when that loses nothing (:func:`~headatlas.store.halves.exact_halves`:
    half the memory a shard's samples take), else float32."""
    half = exact_halves(values)
    return values.astype(np.float32, copy=False) if half is None else half


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN with < 3 pairs or a constant side."""
    from scipy.stats import spearmanr  # here: its import is 1.2 CPU-s, more than a small job's updates

    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


# ---------------------------------------------------------------------------------------------
# claims

def _layers_text(layers) -> str:
    layers = sorted(int(x) for x in layers)
    if not layers:
        return "no layer"
    runs, start = [], layers[0]
    for a, b in zip(layers, layers[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    return ("layer " if len(layers) == 1 else "layers ") + ", ".join(runs)


def _range(values) -> str:
    values = [100 * float(v) for v in values if not np.isnan(float(v))]
    if not values:
        return "n/a (undefined)"
    low, high = min(values), max(values)
    return f"{low:.0f}%" if round(low) == round(high) else f"{low:.0f}-{high:.0f}%"


def sink(shares: pd.DataFrame) -> pd.DataFrame:
    """The model's sink per layer: the special-token class with the most α in each layer.

    Returns the rows of ``shares`` (one per layer, ``class`` = that layer's
    dominant special class) of the sink layers: those where it draws at least
    :data:`SINK_SHARE` of α (the single peak row if no layer does). Each layer
    has its own sink (issue 23 item 4): a model may sink into [CLS] early and
    into [SEP] later, and a class is only "the sink" where it dominates.
    """
    special = shares[shares["class"] != "other"]
    ranked = special.assign(_a=special["attention"].astype(float).fillna(-np.inf))
    top = special.loc[ranked.groupby("layer")["_a"].idxmax()]
    high = top[top["attention"] >= SINK_SHARE]
    if len(high):
        return high
    return top.loc[[top["attention"].astype(float).fillna(-np.inf).idxmax()]]


def _sink_label(rows: pd.DataFrame, name: str | None = None) -> str:
    """``[CLS]`` for one class, ``[CLS] (layer 1) / [SEP] (layers 2-3)`` for several."""
    classes = list(pd.unique(rows["class"])) if "class" in rows else [name]
    if len(classes) == 1:
        return CLASS_LABELS[classes[0]]
    return " / ".join(f"{CLASS_LABELS[c]} ({_layers_text(rows.loc[rows['class'] == c, 'layer'])})"
                      for c in classes)


def _collapse_claim(claim_id: str, name: str | None, rows: pd.DataFrame, view: str, claim: str,
                    paper: str, note: str) -> Claim:
    """Collapse of α once weighted, in every row (a layer and its sink class, :func:`sink`)."""
    label = _sink_label(rows, name)
    # Undefined shares (NaN) or no layer at all: not applicable, never "does not hold".
    collapsed = holds_if((rows[view] <= COLLAPSE_FACTOR * rows["attention"]).all() if len(rows) else None,
                         *rows[view], *rows["attention"])
    ours = (f"{label}: α {_range(rows['attention'])} in {_layers_text(rows['layer'])} -> "
            f"{VIEW_LABELS[view]} {_range(rows[view])}")
    single = "class" not in rows or rows["class"].nunique() <= 1
    where = f"{label} draws" if single else "the layer's sink draws"
    rule = (f"in every layer where {where} >= {SINK_SHARE:.0%} of α, its share under "
            f"{VIEW_LABELS[view]} is at most {COLLAPSE_FACTOR:g} x its share of α")
    return Claim(claim_id, SOURCE, claim, paper, ours, collapsed, rule, note)


def _rho_text(rho) -> str:
    return "n/a" if rho is None or np.isnan(rho) else f"{rho:.2f}"


def _correlation_claim(correlation: pd.DataFrame, rows: pd.DataFrame) -> Claim:
    """α-‖f(x)‖ cancellation judged per sink layer (``rows``: :func:`sink`, a class per layer).

    ``correlation`` is indexed by class, with ``layer_<l>`` columns (the
    within-layer ρ). Holds when ρ <= :data:`RHO_NEGATIVE` in every sink layer, on
    that layer's sink class; not applicable when a sink layer's ρ is undefined or
    missing. The pooled ρ (all layers) is printed beside, for reference only.
    """
    label = _sink_label(rows)
    layers = [int(x) for x in rows["layer"]]
    per_layer = [float(correlation.at[c, f"layer_{l}"]) if f"layer_{l}" in correlation.columns
                 else float("nan") for c, l in zip(rows["class"], layers)]
    pooled = "; ".join(f"{CLASS_LABELS[c]} {_rho_text(correlation.at[c, 'spearman'])} "
                       f"({int(correlation.at[c, 'n_pairs'])} sampled (head, query, key) pairs)"
                       for c in pd.unique(rows["class"]))
    ours = (f"{label} in {_layers_text(layers)}: Spearman ρ within each layer "
            f"{', '.join(against(r, RHO_NEGATIVE) for r in per_layer)}; pooled over all layers {pooled}; "
            f"other tokens pooled {_rho_text(correlation.at['other', 'spearman'])}")
    result = holds_if(all(r <= RHO_NEGATIVE for r in per_layer) if per_layer else None, *per_layer)
    return Claim(
        "kobayashi.s4.alpha_fx_negative", SOURCE,
        "α and ‖f(x)‖ cancel out: large weights go to value vectors of small norm",
        "negative correlation between α and ‖f(x)‖, clearest on the special tokens", ours, result,
        f"Spearman ρ of α and ‖f(x)‖ on the sink's keys <= {RHO_NEGATIVE:g} within every layer whose "
        f"sink (its special token with the most α) draws >= {SINK_SHARE:.0%} of α (the pooled ρ mixes "
        "layers and is not judged)",
        f"tested per layer on that layer's sink: {label}")


def paper_claims(shares: pd.DataFrame, correlation: pd.DataFrame, n_layers: int | None = None) -> list[Claim]:
    """Kobayashi et al.'s claims about special tokens beside our values (:mod:`headatlas.claims`),
    judged on :class:`NormShares`'s ``shares`` and ``correlation`` tables.

    "The sink" is the model's own, per layer (:func:`sink`: the special token
    each layer sinks most attention in); the paper's own token, [SEP], gets its
    row too, which is "not applicable" when [SEP] never draws
    :data:`SINK_SHARE` of α in any layer. ``n_layers`` defaults to the deepest layer of ``shares``.

    Returns
    -------
    list[Claim]
        One :class:`~headatlas.claims.Claim` per finding
        (:func:`~headatlas.claims.claims_table` makes them a ``paper_claims.csv`` table).
    """
    correlation = correlation.set_index("class")
    n_layers = int(shares["layer"].max()) if n_layers is None else n_layers
    rows = sink(shares)
    label = _sink_label(rows)
    name = rows["class"].iloc[0] if rows["class"].nunique() == 1 else None
    depth = f"model has {n_layers} layers, BERT-base 12"
    paper = ("BERT-base: [SEP] and . , draw much attention (Clark et al.: >50% on [SEP] in "
             "layers 6-10) but little once weighted by ‖f(x)‖; 'BERT pays poor attention to special "
             "tokens'")
    claims = [
        _collapse_claim("kobayashi.s4.special_collapse", name, rows, "norm",
                        "attention to special tokens collapses once weighted by ‖f(x)‖", paper,
                        f"tested per layer on the special token that layer sinks most α in: {label}; {depth}"),
        _collapse_claim("kobayashi.s4.special_collapse_layer", name, rows, "layer_norm",
                        "... and so does the whole layer's ‖Σ_h αf(x)‖", paper + " (per head; the "
                        "layer-level norm is their §3 definition, applied here to BERT)",
                        f"tested on {label}; {depth}"),
    ]
    claims.append(_correlation_claim(correlation, rows))
    sep = shares[shares["class"] == "sep"]
    sep_rows = sep[sep["attention"] >= SINK_SHARE]
    if len(sep_rows):
        claims.append(_collapse_claim("kobayashi.s4.sep_collapse", "sep", sep_rows, "norm",
                                      "attention to [SEP] collapses once weighted by ‖f(x)‖", paper,
                                      depth))
    else:
        claims.append(Claim(
            "kobayashi.s4.sep_collapse", SOURCE, "attention to [SEP] collapses once weighted by ‖f(x)‖",
            paper, f"[SEP] draws at most {_range([sep['attention'].max()])} of α in any layer "
                   f"(under ‖αf(x)‖: at most {_range([sep['norm'].max()])})", verdict(None),
            f"applies where [SEP] draws >= {SINK_SHARE:.0%} of α", f"this model does not sink "
            f"attention in [SEP]; its sink is {label}"))
    return claims
