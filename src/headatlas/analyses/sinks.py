"""Attention sinks (Gu et al. 2025, "When Attention Sink Emerges in Language Models").

Gu et al. measure a sink with each key token's **importance** in a head: the mean over the
queries of the attention it receives, ``a_k = (1/n) Σ_q α[q, k]`` (their code divides by the
number of queries that can see k; in an encoder every query sees every key, so it is n). A head
*has a sink on k* in an example when ``a_k > ε`` (ε = 0.3, their default), and the **sink rate**
is the share of (example, head) pairs with a sink, averaged over layers and heads. Their models
are decoders, whose sink is the first token; an encoder's candidates are its special tokens, so
:class:`SinkRate` counts the sinks per **role** of the key token:

* ``cls``: the tokenizer's ``[CLS]`` (``<s>``); ``sep``: every ``[SEP]`` (``</s>``);
* ``punct``: a period or comma (the token classes every analysis shares,
  :func:`headatlas.store.example.token_masks`);
* ``first``: the first token that is none of these (the first word piece: a decoder's sink
  position once the special tokens are set apart);
* ``other``: every other token.

Under the norm weighting (Kobayashi et al. 2020: α_ij‖f(x_j)‖ renormalised per row) the same
count says whether the sink survives once the values are weighed: Kobayashi found the [SEP]
attention of BERT carries little, since those tokens' values are small. Each (example, head)
with a sink counts once for ``any`` and once for each role it has a sink on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from headatlas.analyses.base import Analysis, describe, register
from headatlas.analyses.batch import MapBatch, to_host
from headatlas.analyses.result import Result
from headatlas.claims import Claim, above, holds_if, pct
from headatlas.heads import Column, HeadColumns, head_table
from headatlas.stats import bootstrap_ratio
from headatlas.store.example import token_masks

ROLES = ("cls", "sep", "punct", "first", "other")
ROLE_LABELS = {"cls": "[CLS]", "sep": "[SEP]", "punct": ". ,", "first": "first word piece",
               "other": "other tokens"}
EPSILON = 0.3  # Gu et al.'s threshold on a key's mean attention
GU = "Gu et al. 2025"


def role_masks(tokens, cls_token: str, sep_token: str, width: int | None = None) -> np.ndarray:
    """``[len(ROLES), width]`` boolean masks (``width``: the tokens' count by default; False
    past it), one role per token (the first that applies in ROLES' order for a token that is two
    things, e.g. a [SEP] that is also the first token)."""
    cls, sep, punct = token_masks(tokens, cls_token, sep_token)
    roles = roles_of(cls, sep, punct, np.ones_like(cls))
    pad = (width or len(tokens)) - len(tokens)
    return np.pad(roles, ((0, 0), (0, pad))) if pad > 0 else roles


def roles_of(cls: np.ndarray, sep: np.ndarray, punct: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """:func:`role_masks` of token masks ``[..., N]`` (:func:`~headatlas.store.example.token_masks`;
    ``valid``: the positions within each input, no role past its length): ``[..., len(ROLES), N]``."""
    sep = sep & ~cls
    punct = punct & ~(cls | sep)
    content = valid & ~(cls | sep | punct)
    first = content & (np.cumsum(content, axis=-1) == 1)
    return np.stack([cls, sep, punct, first, content & ~first], axis=-2)


def key_importance(attn: np.ndarray) -> np.ndarray:
    """``[..., n]`` mean over the queries of the attention each key receives: ``attn [..., q, k]``."""
    return attn.mean(axis=-2, dtype=np.float64)


@register
class SinkRate(Analysis):
    """Which heads have an attention sink, on which kind of token, how often (Gu et al.).

    Parameters
    ----------
    epsilon : float
        A key is a sink of a head in an example when its mean attention over the queries
        exceeds ``epsilon`` (Gu et al.: 0.3).

    The result's tables:

    ``heads``, one row per head
        ``sink_rate``: share of the examples in which the head has a sink on any token;
        ``sink_<role>`` for each role of :data:`ROLES`: the share with a sink on a token of that
        role; ``top_importance``: the mean over examples of the largest key importance.
    ``layers``, one row per (layer, role) and ``any``: ``sink_rate``, the mean over the layer's
        heads (Gu et al.'s metric restricted to one layer).

    The claims' verdicts come from percentile bootstrap intervals over segments (1,000
    resamples, :func:`headatlas.stats.bootstrap_ratio`): a rate holds above 50% when the whole
    interval is, fails when the interval's top is at most 50%, and is undecided (not applicable,
    with the interval) in between.

    State: ``sinks [R + 2, L, H]`` (examples with a sink: on any key, on a key of each role,
    on [CLS] or [SEP]), ``top [L, H]`` (sum of the largest importance), ``segments [N, 3]``
    (per example its corpus index and how many heads have a sink, and one on [CLS] or [SEP]:
    the bootstrap's units, sorted by index so that any order of merging resamples the same) and
    the base class's example count.
    """

    name = "sink_rate"
    unit = "segments"

    def __init__(self, n_layers: int, n_heads: int, epsilon: float = EPSILON):
        super().__init__(n_layers, n_heads)
        if not 0 < epsilon < 1:
            raise ValueError(f"epsilon must lie in (0, 1), got {epsilon}")
        self.epsilon = epsilon
        self._sinks = np.zeros((len(ROLES) + 2, n_layers, n_heads))
        self._top = np.zeros((n_layers, n_heads))
        self._segments: list[tuple[int, int, int]] = []  # a list: appending is the hot path

    def reduce(self, batch: MapBatch) -> dict:
        # Key importance, [B, L, H, N]: a column's mass over the example's own query count (0 on
        # padding keys, never above epsilon). Only [B, L, H] maxima and [B, L, H, N] booleans'
        # reductions leave the device.
        xp = batch.xp
        importance = batch.column_mass() / batch.n_tokens()[:, None, None, None]
        over = importance > self.epsilon
        def batch_roles():  # [B, R, N], once for every layer and view of the examples
            masks = batch.host_masks()
            return batch.asarray(roles_of(masks["cls"], masks["sep"], masks["punct"], masks["valid"]))
        roles = batch.shared("sink_roles", batch_roles)
        return {"any_key": xp.any(over, axis=-1),  # [B, L, H]
                "per_role": xp.any(over[:, :, None] & roles[:, None, :, None], axis=-1),  # [B, L, R, H]
                "top": xp.max(importance, axis=-1)}  # [B, L, H]

    def fold(self, batch: MapBatch, reduced: dict) -> None:
        any_key = to_host(reduced["any_key"])
        per_role = np.moveaxis(to_host(reduced["per_role"]), 2, 1)  # [B, R, L, H]
        special = per_role[:, 0] | per_role[:, 1]
        self._sinks[0] += any_key.sum(axis=0)
        self._sinks[1:-1] += per_role.sum(axis=0)
        self._sinks[-1] += special.sum(axis=0)
        self._top += to_host(reduced["top"]).sum(axis=0)
        self._segments += [(e.index, int(a.sum()), int(s.sum())) for e, a, s in zip(batch.examples, any_key, special)]

    def _state(self) -> dict[str, np.ndarray]:
        return {"sinks": self._sinks, "top": self._top,
                "segments": np.array(self._segments, dtype=np.int64).reshape(-1, 3)}

    def _merge(self, state: dict[str, np.ndarray]) -> None:
        self._sinks = self._sinks + state["sinks"]
        self._top = self._top + state["top"]
        self._segments += [tuple(row) for row in np.asarray(state["segments"], np.int64).tolist()]

    def result(self) -> Result:
        n = self.n_examples
        rates = self._sinks / n if n else np.full_like(self._sinks, np.nan)
        top = self._top / n if n else np.full_like(self._top, np.nan)
        heads = head_table(self.n_layers, self.n_heads, sink_rate=rates[0],
                           **{f"sink_{role}": rates[r + 1] for r, role in enumerate(ROLES)},
                           top_importance=top)
        layers = pd.DataFrame([{"layer": layer + 1, "role": role, "sink_rate": rates[r, layer].mean()}
                               for layer in range(self.n_layers)
                               for r, role in enumerate(("any",) + ROLES + ("special",))])
        segments = np.array(sorted(self._segments), dtype=np.int64).reshape(-1, 3)
        return Result({"heads": heads, "layers": layers},
                      claims=paper_claims(segments[:, 1:], self.n_layers * self.n_heads, self.epsilon))

    def caption(self, result: Result, provenance: dict) -> str:
        return (f"{describe(provenance, provenance['n_examples'])}; attention sinks (Gu et al. 2025): a head "
                f"has a sink on a key when the key's mean attention over the queries exceeds "
                f"ε = {self.epsilon:g}; sink rate = share of (segment, head) pairs with one; key roles "
                + ", ".join(ROLE_LABELS.values()))


def paper_claims(segments: np.ndarray, n_heads: int, epsilon: float) -> list[Claim]:
    """Gu et al.'s finding read on an encoder: sinks in most heads, and on the special tokens.

    ``segments [N, 2]``: per segment, the heads (of ``n_heads``) with a sink on any key, and
    with one on [CLS] or [SEP]; the rates are ratios of their sums, the intervals resample the
    segments."""
    any_key, special = segments[:, 0].astype(float), segments[:, 1].astype(float)
    total = np.full(len(segments), float(n_heads))
    overall = any_key.sum() / total.sum() if len(segments) else float("nan")
    on_special = special.sum() / any_key.sum() if any_key.sum() else float("nan")
    (low, high), (s_low, s_high) = bootstrap_ratio(any_key, total), bootstrap_ratio(special, any_key)
    most_heads, on_special_tokens = above(low, high, 0.5), above(s_low, s_high, 0.5)
    undecided = "undecided: the 95% interval over segments straddles 50%"
    return [
        Claim("gu.sinks.most_heads", f"{GU} §3", "attention sinks appear in most heads of a trained model",
              "first-token sink rate 92-99% (7-8B decoders), 18% (their 60M model); ε = 0.3",
              f"{pct(overall, 1)} [{pct(low, 1)}, {pct(high, 1)}]",
              holds_if(most_heads, overall),
              f"sink rate > 50% over its whole 95% interval (ε = {epsilon:g}; (segment, head) pairs, any key)",
              undecided if most_heads is None and len(segments) else ""),
        Claim("gu.sinks.on_special_tokens", f"{GU} §3 (Clark et al. 2019 §3.2 for encoders)",
              "the sinks sit on the special tokens", "the first token (decoders); [SEP] (Clark)",
              f"{pct(on_special, 1)} [{pct(s_low, 1)}, {pct(s_high, 1)}] of the sinks" if any_key.sum()
              else "no sink in any (segment, head) pair",
              holds_if(on_special_tokens, on_special),
              f"> 50% of the (segment, head) pairs with a sink have it on [CLS] or [SEP], over the whole "
              f"95% interval (ε = {epsilon:g})",
              undecided if on_special_tokens is None and any_key.sum() else ""),
    ]


ATLAS = {"sink_rate": HeadColumns("attention sinks", f"{GU} §3", rank=13, columns=(
    Column("sink_rate", "sink_rate", "share", "share of segments in which a key gets > ε mean attention",
           "92-99% of heads on the first token in 7-8B decoders (Gu et al.)"),
    Column("sink_cls", "sink_cls", "share", "the same with the sink on [CLS]"),
    Column("sink_sep", "sink_sep", "share", "the same on [SEP]"),
    Column("sink_punct", "sink_punct", "share", "the same on '.' or ','"),
    Column("sink_first", "sink_first", "share", "the same on the first word piece"),
    Column("sink_other", "sink_other", "share", "the same on any other token"),
    Column("top_importance", "top_importance", "share", "mean largest mean attention a key gets"),
))}
