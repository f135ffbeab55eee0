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
from headatlas.heads import head_name, head_table
from headatlas.store import Example, pick_example

# Thresholds of Clark's published clustering code (General_Analysis.ipynb).
ENTROPY_THRESHOLD = 3.8
POSITION_THRESHOLD = 0.5
SPECIAL_TOKEN_THRESHOLD = 0.6
# Clark's published model depth; the paper's layer ranges are scaled from it.
PAPER_LAYERS = 12


def _ratio(total: np.ndarray, count: float) -> np.ndarray:
    """``total / count``, NaN when nothing was counted (e.g. no [SEP] seen)."""
    return total / count if count else np.full_like(total, np.nan)


@register
class RelativePosition(Analysis):
    """Average attention to the previous token, the token itself, the next token.

    Columns ``prev``, ``self``, ``next`` (plus ``layer``, ``head``). Token-weighted:
    ``prev`` sums ``attn[i, i-1]`` over every query ``i >= 1`` of every example and
    divides by the number of such queries (n - 1 per example); ``next`` likewise
    over ``i <= n-2``; ``self`` over all n queries.
    """

    name = "relative_position"

    def __init__(self, n_layers: int, n_heads: int, **params):
        super().__init__(n_layers, n_heads, **params)
        self._sums = np.zeros((3, n_layers, n_heads))  # prev, self, next
        self._counts = np.zeros(3)

    def update(self, example: Example) -> None:
        attn, n = example.attn, example.n_tokens
        # offset -1 are the entries [i, i-1] (previous key), +1 are [i, i+1] (next key).
        for k, offset in enumerate((-1, 0, 1)):
            diag = np.diagonal(attn, offset=offset, axis1=2, axis2=3)  # [L, H, n - |offset|]
            self._sums[k] += diag.sum(axis=-1, dtype=np.float64)
            self._counts[k] += n - abs(offset)

    def result(self) -> pd.DataFrame:
        prev, self_, next_ = (_ratio(s, c) for s, c in zip(self._sums, self._counts))
        return head_table(self.n_layers, self.n_heads, prev=prev, self=self_, next=next_)


@register
class SpecialTokens(Analysis):
    """Average attention mass on ``[CLS]``, ``[SEP]`` and ``.``/``,`` (Fig. 2).

    Columns: ``cls``, ``sep`` (all [SEP]s together), ``punct`` — mass per query
    token averaged over all query tokens; ``sep_from_sep`` — mass on [SEP]s
    averaged over the [SEP] query tokens only; ``sep_from_other`` — the same
    over every other query token ([CLS] included, as in Clark's code).
    Token-weighted across examples; NaN if no query of that kind was seen.
    """

    name = "special_tokens"

    def __init__(self, n_layers: int, n_heads: int, **params):
        super().__init__(n_layers, n_heads, **params)
        self._to_kind = np.zeros((n_layers, n_heads, 3))  # mass on cls, sep, punct
        self._sep_from = np.zeros((2, n_layers, n_heads))  # from [SEP], from others
        self._n_queries = 0
        self._n_sep_queries = 0

    def update(self, example: Example) -> None:
        sep = example.sep_mask
        kinds = np.stack([example.cls_mask, sep, example.punct_mask], axis=1).astype(np.float32)
        mass = example.attn @ kinds  # [L, H, n, 3]: each query's mass on each kind of key
        self._to_kind += mass.sum(axis=2, dtype=np.float64)
        self._sep_from[0] += mass[:, :, sep, 1].sum(axis=-1, dtype=np.float64)
        self._sep_from[1] += mass[:, :, ~sep, 1].sum(axis=-1, dtype=np.float64)
        self._n_queries += example.n_tokens
        self._n_sep_queries += int(sep.sum())

    def result(self) -> pd.DataFrame:
        to_kind = _ratio(self._to_kind, self._n_queries)
        return head_table(
            self.n_layers, self.n_heads,
            cls=to_kind[..., 0], sep=to_kind[..., 1], punct=to_kind[..., 2],
            sep_from_sep=_ratio(self._sep_from[0], self._n_sep_queries),
            sep_from_other=_ratio(self._sep_from[1], self._n_queries - self._n_sep_queries),
        )


@register
class Entropy(Analysis):
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

    def __init__(self, n_layers: int, n_heads: int, **params):
        super().__init__(n_layers, n_heads, **params)
        self._sums = np.zeros((3, n_layers, n_heads))  # entropy, cls entropy, max weight
        self._uniform = 0.0
        self._n_rows = 0
        self._n_cls = 0

    def update(self, example: Example) -> None:
        attn, cls = example.attn, example.cls_mask
        # Clamping zeros to the smallest float makes 0 * log(tiny) exactly 0, i.e. 0 log 0 = 0,
        # and keeps numpy's fast log path (a masked log is ~1.5x slower).
        logs = np.maximum(attn, np.finfo(attn.dtype).tiny)
        np.log(logs, out=logs)
        row_entropy = -np.einsum("lhqk,lhqk->lhq", attn, logs)  # [L, H, n]
        self._sums[0] += row_entropy.sum(axis=-1, dtype=np.float64)
        self._sums[1] += row_entropy[:, :, cls].sum(axis=-1, dtype=np.float64)
        self._sums[2] += attn.max(axis=-1).sum(axis=-1, dtype=np.float64)
        n = example.n_tokens
        self._uniform += n * math.log(n)
        self._n_rows += n
        self._n_cls += int(cls.sum())

    def result(self) -> pd.DataFrame:
        uniform = self._uniform / self._n_rows if self._n_rows else np.nan
        return head_table(
            self.n_layers, self.n_heads,
            entropy=_ratio(self._sums[0], self._n_rows),
            uniform_entropy=np.full((self.n_layers, self.n_heads), uniform),
            cls_entropy=_ratio(self._sums[1], self._n_cls),
            max_weight=_ratio(self._sums[2], self._n_rows),
        )


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
    stores : the store (path or shard paths).
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
    example = pick_example(stores, index, min_tokens=min_tokens, weighting=weighting)
    table = pd.DataFrame([(b, l, h) for b, (l, h) in heads.items()], columns=["behaviour", "layer", "head"])
    provenance = store_provenance(stores, weighting)
    table.attrs["caption"] = describe(provenance, 1, f"segment shown ({example.id}) of "
                                                     f"{provenance['n_examples']}")
    return table, heads, example


def scale_layers(first: int, last: int, n_layers: int) -> tuple[int, int]:
    """Map the paper's layer range ``first..last`` (of 12) proportionally onto ``n_layers``."""
    lo = max(1, math.floor(first * n_layers / PAPER_LAYERS + 0.5))
    hi = min(n_layers, max(lo, math.floor(last * n_layers / PAPER_LAYERS + 0.5)))
    return lo, hi


def _span(span: tuple[int, int]) -> str:
    return f"layer {span[0]}" if span[0] == span[1] else f"layers {span[0]}-{span[1]}"


def _mean_in(table: pd.DataFrame, column: str, span: tuple[int, int]) -> float:
    return float(table.loc[table["layer"].between(*span), column].mean())


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _heads_over(table: pd.DataFrame, column: str, threshold: float) -> str:
    """'k (layers a, b, ...)' for the heads whose ``column`` exceeds ``threshold``."""
    layers = table.loc[table[column] > threshold, "layer"].sort_values().tolist()
    if not layers:
        return "0"
    return f"{len(layers)} (layer{'s' if len(layers) > 1 else ''} {', '.join(map(str, layers))})"


def _sep_peak(special: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Per-layer [SEP] means of the layers where attention to [SEP] is high, and the rule used."""
    layers = layer_means(special, ["sep", "sep_from_sep", "sep_from_other"])
    high = layers[layers["sep"] > 0.5]
    if high.empty:
        return layers.loc[[layers["sep"].idxmax()]], "no layer puts >50% on [SEP]: the peak layer"
    return high, "layers whose mean attention to [SEP] is >50% (the paper's criterion)"


def _broad_early(entropy: pd.DataFrame, early: tuple[int, int]) -> tuple[pd.DataFrame, str]:
    """The high-entropy heads of the early layers, and the rule used."""
    heads = entropy[entropy["layer"].between(*early)]
    broad = heads[heads["entropy"] > ENTROPY_THRESHOLD]
    if broad.empty:
        return heads.loc[[heads["entropy"].idxmax()]], \
            f"no early head above {ENTROPY_THRESHOLD} nats: the highest-entropy one"
    return broad, f"early heads above {ENTROPY_THRESHOLD} nats"


def paper_claims(rel: pd.DataFrame, special: pd.DataFrame, entropy: pd.DataFrame,
                 n_layers: int | None = None) -> pd.DataFrame:
    """Clark et al.'s §3 claims beside our measured values.

    Layer ranges the paper states for BERT-base (12 layers) are scaled
    proportionally to ``n_layers`` (:func:`scale_layers`) and the ``note`` says
    so; "early" and "deep" are the first and last thirds (layers 1-4 and 9-12
    of 12). The [SEP]-from-[SEP] value is averaged over the layers whose mean
    attention to [SEP] exceeds 50% (else the peak layer); the max-weight value
    over the early heads above the broad threshold (else the highest-entropy
    early head); like the paper's §3, all of it is per token (wordpiece).

    ``n_layers`` defaults to the deepest layer of the tables.

    Returns
    -------
    DataFrame with string columns ``claim``, ``paper``, ``ours``, ``note``.
    """
    n_layers = int(rel["layer"].max()) if n_layers is None else n_layers
    early, deep, middle = (scale_layers(a, b, n_layers) for a, b in ((1, 4), (9, 12), (6, 10)))
    scaled = n_layers != PAPER_LAYERS

    def note(*parts: str) -> str:
        depth = f"model has {n_layers} layers, BERT-base {PAPER_LAYERS}" if scaled else ""
        return "; ".join(p for p in (depth, *parts) if p)

    def scaled_to(paper: str, span: tuple[int, int]) -> str:
        return f"paper's {paper} scaled to {_span(span)}" if scaled else ""

    peak, peak_rule = _sep_peak(special)
    broad, broad_rule = _broad_early(entropy, early)
    last = entropy[entropy["layer"] == n_layers]
    early_deep = f"early = {_span(early)}, deep = {_span(deep)}" + \
        (" (the first and last thirds, scaled)" if scaled else " (the first and last thirds)")
    rows = [
        ("heads with >50% attention on the previous token", "4 (layers 2, 4, 7, 8)",
         _heads_over(rel, "prev", POSITION_THRESHOLD), note()),
        ("heads with >50% attention on the next token", "5 (layers 1, 2, 2, 3, 6)",
         _heads_over(rel, "next", POSITION_THRESHOLD), note()),
        ("attention to the current token", "little, for most heads",
         f"median head {_pct(rel['self'].median())}, max {_pct(rel['self'].max())}", ""),
        ("share of attention to [SEP] in the middle layers", ">50% in layers 6-10",
         f"{_pct(_mean_in(special, 'sep', middle))} in {_span(middle)}",
         note(scaled_to("layers 6-10", middle))),
        ("attention to [CLS], early vs deep layers", "early heads attend to [CLS]",
         f"early {_pct(_mean_in(special, 'cls', early))}, deep {_pct(_mean_in(special, 'cls', deep))}",
         note(early_deep)),
        ("attention to . and , in deep vs early layers", "deep heads attend to periods and commas",
         f"deep {_pct(_mean_in(special, 'punct', deep))}, early {_pct(_mean_in(special, 'punct', early))}",
         note(early_deep)),
        ("attention to [SEP] from [SEP] tokens where [SEP] attention is high", ">90%",
         f"{_pct(peak['sep_from_sep'].mean())} from [SEP] vs {_pct(peak['sep_from_other'].mean())} "
         f"from other tokens (layers {', '.join(map(str, peak['layer']))})", peak_rule),
        ("entropy of the [CLS] row in the last layer", "3.89 nats", f"{last['cls_entropy'].mean():.2f} nats",
         f"uniform attention: {last['uniform_entropy'].mean():.2f} nats (mean log n)"),
        ("largest single weight of the high-entropy early heads", "at most ~10%",
         f"{_pct(broad['max_weight'].mean())} (mean row maximum; heads "
         f"{', '.join(map(head_name, broad['layer'], broad['head']))})",
         note(broad_rule, scaled_to("layers 1-4", early))),
    ]
    return pd.DataFrame(rows, columns=["claim", "paper", "ours", "note"])
