"""Which view of attention tells the truth (issue 35): token-to-token context mixing measures,
scored against what the model actually does when a token is blanked out.

Every measure gives, per sentence, a matrix ``M[i, j]``: how much input token ``j`` makes up the
model's representation of token ``i``. Per layer ``l`` (input ``x``, attention ``α^h``, value
vectors ``v_j^h = x_j W_V^h + b_V^h``, output projection ``W_O^h`` and bias ``b_O``, the
post-attention LayerNorm with gain ``γ`` and bias ``β``), the attention block's output for token
``i`` plus its residual decomposes exactly into one vector per input token (Kobayashi et al. 2020,
2021)::

    T_ij = Σ_h α^h_ij f_h(x_j) + δ_ij x_i,        f_h(x_j) = v_j^h W_O^h
    z_i  = Σ_j T_ij + b_O                          (the LayerNorm's input, checked)
    LN(z_i) = Σ_j g_i(T_ij) + g_i(b_O) + β,        g_i(t) = γ ⊙ (t - mean(t)) / σ(z_i)

with ``σ(z_i) = sqrt(var(z_i) + ε)``, so that the LayerNorm is linear in each part. From it:

* ``attention``: α averaged over heads (Clark et al.; Abnar & Zuidema's input);
* ``norm``: ``‖Σ_h α^h_ij f_h(x_j)‖`` (Kobayashi et al. 2020), no residual;
* ``globenc``: ``‖g'_i(g_i(T_ij))‖`` (Modarressi et al. 2022's N_Enc: attention, residual, the
  first LayerNorm, and the second LayerNorm ``g'_i`` with gain ``γ'`` and the scale of its own
  input ``z'_i``, the FFN's output plus its residual; the FFN itself is not decomposed, as in the
  authors' code), rows normalised (the authors' code rolls the raw norms out);
* ``alti``: ``max(0, ‖y_i‖₁ - ‖y_i - g_i(T_ij)‖₁)`` with ``y_i = LN(z_i)``, rows normalised
  (Ferrando et al. 2022: the Manhattan proximity of each part to the output);
* ``value_zeroing``: ``1 - cos(x̃_i^{¬j}, x̃_i)``, the cosine distance between token ``i``'s output
  of the whole layer and that output when token ``j``'s value vectors are zeroed in every head,
  rows normalised (Mohebbi et al. 2023; computed by the model, :mod:`headatlas.interventions.mixing`);
* ``grad_input``: ``‖∇_{e_j} log p(ŷ_i) ⊙ e_j‖₂`` at the word embeddings ``e_j``, for the tagger's
  predicted tag ``ŷ_i`` (gradient × input; an output-level measure, no layers).

Across layers: α and the norm map roll out as Abnar & Zuidema do (``½A + ½I``, the residual
modelled; :func:`headatlas.analyses.rollout.rollout`); GlobEnc, ALTI and value zeroing already
hold the residual and roll out as the plain product ``R_l = M_l R_{l-1}`` (as their authors do).
A measure's **final reading** is its last layer's matrix, rolled out where the method rolls out.

The reference is **blank-out**: the fall in the probability of the tagger's predicted tag at
token ``i`` when input token ``j`` is replaced by the mask token (``mask``), or removed (``remove``),
read as the fall in log p (the same order over ``j``, and still exact where p rounds to 1).
For each target token (a word's first wordpiece, where its tag sits), Spearman's ρ between a
measure's row ``i`` and the reference's row ``i`` over the sentence's wordpieces ``j`` other than
``i`` itself and the special tokens (blanking the target itself, or [CLS]/[SEP], says little of
mixing); targets whose reference row is constant are not scored. A measure's row that is
constant ranks nothing: ρ = 0. Sentences are the units of every bootstrap interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from headatlas.analyses.result import Result
from headatlas.analyses.rollout import rollout
from headatlas.claims import Claim, above, holds_if
from headatlas.heads import INDEPENDENT, Column, HeadColumns, head_table
from headatlas.weightings import row_normalised

MOHEBBI, FERRANDO, MODARRESSI, KOBAYASHI, ABNAR = ("Mohebbi et al. 2023", "Ferrando et al. 2022",
                                                    "Modarressi et al. 2022", "Kobayashi et al. 2020",
                                                    "Abnar & Zuidema 2020")
# Per-layer measures, in the order of the tables.
LAYERED = ("attention", "norm", "globenc", "alti", "value_zeroing")
# Each measure's final reading: (per-layer source, rollout residual or None for the last layer alone).
READINGS = {
    "attention": ("attention", None),
    "attention_rollout": ("attention", 0.5),
    "norm": ("norm", None),
    "norm_rollout": ("norm", 0.5),
    "globenc": ("globenc", 0.0),
    "alti": ("alti", 0.0),
    "value_zeroing": ("value_zeroing", 0.0),
    "grad_input": (None, None),
}
MEASURES = tuple(READINGS)
MIXING = tuple(m for m in MEASURES if m != "grad_input")  # context mixing measures (not gradients)
LABELS = {
    "attention": "α, mean over heads, last layer",
    "attention_rollout": f"rollout of α, ½A + ½I ({ABNAR})",
    "norm": f"‖Σ_h αf(x)‖, last layer ({KOBAYASHI})",
    "norm_rollout": "rollout of ‖Σ_h αf(x)‖, ½A + ½I",
    "globenc": f"GlobEnc, rolled out ({MODARRESSI})",
    "alti": f"ALTI, rolled out ({FERRANDO})",
    "value_zeroing": f"value zeroing, rolled out ({MOHEBBI})",
    "grad_input": "gradient × input at the word embeddings",
}
REFERENCES = ("mask", "remove")
HEADS = ("head_attention", "head_norm")  # each head's own map: α^h, and α^h weighted by ‖f_h(x)‖


# --- one layer's decomposition ------------------------------------------------------------------

@dataclass
class LayerParts:
    """What one layer's decomposition needs, for one sentence of ``n`` tokens (float64 numpy).

    ``x [n, D]`` the layer's input; ``alpha [H, n, n]``; ``values [n, H·dh]`` the value
    projection's output (bias included); ``w_o [D, H·dh]`` the output projection's weight (torch's
    ``Linear.weight``) and ``b_o [D]`` its bias; ``gamma, beta [D]`` and ``eps`` the
    post-attention LayerNorm's; ``gamma2 [D]``, ``eps2`` the post-FFN LayerNorm's and ``ffn_sum
    [n, D]`` its input (GlobEnc's second step; without them ``globenc`` is N_ResLN).
    """

    x: np.ndarray
    alpha: np.ndarray
    values: np.ndarray
    w_o: np.ndarray
    b_o: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    eps: float
    gamma2: np.ndarray | None = None
    eps2: float = 1e-12
    ffn_sum: np.ndarray | None = None

    @property
    def n_heads(self) -> int:
        return self.alpha.shape[0]


def transformed_values(parts: LayerParts) -> np.ndarray:
    """``f_h(x_j) = v_j^h W_O^h`` ``[H, n, D]``: each head's value vector through its block of
    the output projection."""
    n, inner = parts.values.shape
    heads = parts.n_heads
    per_head = parts.values.reshape(n, heads, inner // heads)  # [n, H, dh]
    blocks = parts.w_o.reshape(parts.w_o.shape[0], heads, inner // heads)  # [D, H, dh]
    return np.einsum("jhd,ehd->hje", per_head, blocks)


def mixed_parts(parts: LayerParts, f: np.ndarray | None = None) -> np.ndarray:
    """``[n, n, D]``: ``Σ_h α^h_ij f_h(x_j)``, each input token's part of the attention output."""
    return np.einsum("hij,hje->ije", parts.alpha, transformed_values(parts) if f is None else f)


def residual_parts(parts: LayerParts, mixed: np.ndarray | None = None) -> np.ndarray:
    """``T [n, n, D]``: the mixed parts plus the residual ``x_i`` on the diagonal."""
    mixed = mixed_parts(parts) if mixed is None else mixed
    out = mixed.copy()
    idx = np.arange(len(parts.x))
    out[idx, idx] += parts.x
    return out


def layer_norm_input(parts: LayerParts, terms: np.ndarray) -> np.ndarray:
    """``z [n, D] = Σ_j T_ij + b_O``: what the post-attention LayerNorm receives."""
    return terms.sum(axis=1) + parts.b_o


def normalised_parts(parts: LayerParts, terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``g_i(T_ij) [n, n, D]`` and ``y_i = LN(z_i) [n, D]``: each part through the LayerNorm, with
    the scale ``σ(z_i)`` of the whole sum (so ``Σ_j g_i(T_ij) + g_i(b_O) + β = y_i``)."""
    z = layer_norm_input(parts, terms)
    sigma = np.sqrt(z.var(axis=-1) + parts.eps)  # [n]
    centred = terms - terms.mean(axis=-1, keepdims=True)
    g = parts.gamma * centred / sigma[:, None, None]
    y = parts.gamma * (z - z.mean(axis=-1, keepdims=True)) / sigma[:, None] + parts.beta
    return g, y


def decompose(parts: LayerParts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(f, mixed, terms)``: :func:`transformed_values`, :func:`mixed_parts` and
    :func:`residual_parts` of one layer, each computed once."""
    f = transformed_values(parts)
    mixed = mixed_parts(parts, f)
    return f, mixed, residual_parts(parts, mixed)


def layer_measures(parts: LayerParts, decomposed: tuple | None = None) -> dict[str, np.ndarray]:
    """One layer's ``[n, n]`` maps: ``attention`` (mean α), ``norm``, ``globenc``, ``alti``; the
    last three rows normalised (``norm`` as :mod:`headatlas.analyses.rollout` takes it). And each
    head's own ``[H, n, n]``: ``head_attention`` (α^h) and ``head_norm`` (α^h_ij ‖f_h(x_j)‖).
    ``decomposed``: the layer's :func:`decompose`, when the caller has it already."""
    f, mixed, terms = decompose(parts) if decomposed is None else decomposed
    g, y = normalised_parts(parts, terms)
    distance = np.abs(y[:, None, :] - g).sum(axis=-1)  # ‖y_i - g_i(T_ij)‖₁
    proximity = np.maximum(0.0, np.abs(y).sum(axis=-1)[:, None] - distance)
    return {"attention": parts.alpha.mean(axis=0),
            "norm": row_normalised(np.linalg.norm(mixed, axis=-1)),
            "globenc": row_normalised(np.linalg.norm(second_norm(parts, g), axis=-1)),
            "alti": row_normalised(proximity),
            "head_attention": parts.alpha,
            "head_norm": parts.alpha * np.linalg.norm(f, axis=-1)[:, None, :]}


def second_norm(parts: LayerParts, g: np.ndarray) -> np.ndarray:
    """GlobEnc's step through the post-FFN LayerNorm: ``γ' ⊙ (g - mean(g)) / σ(z'_i)`` (``g``
    itself when the parts lack that LayerNorm)."""
    if parts.gamma2 is None or parts.ffn_sum is None:
        return g
    sigma = np.sqrt(parts.ffn_sum.var(axis=-1) + parts.eps2)
    return parts.gamma2 * (g - g.mean(axis=-1, keepdims=True)) / sigma[:, None, None]


def cosine_distances(zeroed: np.ndarray, original: np.ndarray) -> np.ndarray:
    """Value zeroing's ``[n_i, n_j]`` from the layer outputs ``zeroed [n_j, n_i, D]`` (variant ``j``:
    token ``j``'s values zeroed) and ``original [n_i, D]``: ``1 - cos``, rows (over ``j``) normalised."""
    dot = np.einsum("jid,id->ij", zeroed, original)
    norms = np.linalg.norm(zeroed, axis=-1).T * np.linalg.norm(original, axis=-1)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(norms > 0, dot / norms, 1.0)
    return row_normalised(np.clip(1.0 - cos, 0.0, None))


def readings(layers: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each layered measure's rolled-out maps ``[L, n, n]`` (its rollout per :data:`READINGS`; the
    layer maps themselves for a measure read at its last layer alone), keyed by measure."""
    out = {}
    for measure, (source, residual) in READINGS.items():
        if source is None or source not in layers:
            continue
        maps = layers[source]
        out[measure] = maps if residual is None else rollout(maps, residual)
    return out


# --- scoring against the reference --------------------------------------------------------------

def rank_rows(x: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank), as Spearman's ρ takes them."""
    from scipy.stats import rankdata

    return rankdata(x, axis=-1)


def spearman_rows(measure: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Row-wise Spearman ρ ``[..., T]`` of ``measure`` and ``reference`` ``[..., T, K]`` (each row
    one target's K context tokens). A reference row that is constant gives NaN (nothing to agree
    with: the target is not scored); a measure row that is constant ranks nothing: 0."""
    a, b = rank_rows(measure), rank_rows(reference)
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    na, nb = np.sqrt((a * a).sum(axis=-1)), np.sqrt((b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (a * b).sum(axis=-1) / (na * nb)
    rho = np.where(na > 0, rho, 0.0)
    return np.where(nb > 0, rho, np.nan)


def context_positions(special: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """``[T, K - 1]``: per target, the positions its row is scored over (not special, not the
    target itself; every target is one of the ``K`` positions that are not special)."""
    positions = np.flatnonzero(~np.asarray(special, dtype=bool))
    return np.stack([positions[positions != t] for t in targets]).reshape(len(targets), len(positions) - 1)


def context_rho(maps: np.ndarray, reference: np.ndarray, targets: np.ndarray, contexts: np.ndarray) -> np.ndarray:
    """Spearman ρ ``[X, T]`` of each map's target rows (``maps [X, n, n]``) with the reference's
    (``reference [T, n]``) over each target's context positions (``contexts [T, K]``); NaN for a
    target with fewer than 3 context tokens."""
    if contexts.shape[1] < 3:
        return np.full((len(maps), len(targets)), np.nan)
    rows = maps[:, targets[:, None], contexts]  # [X, T, K]
    return spearman_rows(rows, reference[np.arange(len(targets))[:, None], contexts][None])


# --- the benchmark's tables and claims ------------------------------------------------------------

def unit_sums(rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A sentence's ``(Σ_t ρ_t, number of scored targets)`` over its last axis (NaN: not scored)."""
    scored = ~np.isnan(rho)
    return np.where(scored, rho, 0.0).sum(axis=-1), scored.sum(axis=-1).astype(float)


def mean_and_interval(sums: np.ndarray, counts: np.ndarray, n_boot: int, seed: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over targets ``Σ sums / Σ counts`` per system, and its 95% interval resampling
    sentences: ``sums [U, S]``, ``counts [U]`` or ``[U, S]``."""
    from headatlas.stats import bootstrap_ratio

    counts = np.broadcast_to(counts[:, None] if counts.ndim == 1 else counts, sums.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums.sum(axis=0) / counts.sum(axis=0)
    low, high = bootstrap_ratio(sums, counts, n_boot, seed)
    return mean, np.atleast_1d(low), np.atleast_1d(high)


@dataclass
class MixingTotals:
    """Per sentence (the bootstrap's units): each reading's summed ρ and the scored targets, and the
    deletion curves' summed drops; :meth:`result` makes the tables and claims.

    ``final [U, R, M]`` with ``final_n [U, R]``; ``layers``/``rolled [U, R, Lm, L]``; ``deletion
    [U, O, K]`` with ``deletion_n [U, K]`` and ``aopc [U, O]`` with ``aopc_n [U]`` (a target's
    AOPC: its mean drop over the steps its context allows).
    """

    final: np.ndarray
    final_n: np.ndarray
    layers: np.ndarray
    rolled: np.ndarray
    deletion: np.ndarray
    deletion_n: np.ndarray
    aopc: np.ndarray
    aopc_n: np.ndarray
    heads: np.ndarray

    @classmethod
    def of(cls, sentences: list) -> "MixingTotals":
        """Totals of :class:`~headatlas.interventions.mixing.SentenceScores`, one per sentence."""
        if not sentences:
            raise ValueError("no sentence was scored: the benchmark has nothing to report")
        final, final_n = zip(*(unit_sums(s.final) for s in sentences))  # [R, M] each
        layers = [unit_sums(s.layers)[0] for s in sentences]
        rolled = [unit_sums(s.rolled)[0] for s in sentences]
        deletion = [np.nan_to_num(s.deletion).sum(axis=-1) for s in sentences]
        deletion_n = [(~np.isnan(s.deletion[0])).sum(axis=-1) for s in sentences]
        with np.errstate(invalid="ignore", divide="ignore"):  # a target without context: no AOPC
            per_target = [np.nansum(s.deletion, axis=1) / (~np.isnan(s.deletion)).sum(axis=1) for s in sentences]
        aopc = [np.nan_to_num(p).sum(axis=-1) for p in per_target]  # [O]
        aopc_n = [float((~np.isnan(p[0])).sum()) for p in per_target]
        stack = lambda xs: np.stack(xs).astype(float)  # noqa: E731
        heads = [unit_sums(s.heads)[0] for s in sentences]  # [2, L, H] each
        return cls(stack(final), stack([n[:, 0] for n in final_n]), stack(layers), stack(rolled),
                   stack(deletion), stack(deletion_n), stack(aopc), np.array(aopc_n), stack(heads))

    def result(self, orders: tuple[str, ...], n_layers: int, n_boot: int = 1000, seed: int = 0):
        """The benchmark's :class:`~headatlas.analyses.result.Result`: tables ``measures`` (each
        measure's final reading against each reference, ranked), ``layers`` (each layered measure
        per layer, alone and rolled out), ``deletion`` and ``aopc`` (the deletion curves of
        ``orders``), ``comparisons`` (the claims' paired differences), and the claims."""
        boot = dict(n_boot=n_boot, seed=seed)
        rows = []
        for r, reference in enumerate(REFERENCES):
            mean, low, high = mean_and_interval(self.final[:, r], self.final_n[:, r], **boot)
            rank = pd.Series(mean).rank(ascending=False, method="min").fillna(-1).astype(int).to_numpy()
            rows += [{"reference": reference, "measure": m, "label": LABELS[m], "rho": mean[k],
                      "low": low[k], "high": high[k], "rank": rank[k],
                      "targets": int(self.final_n[:, r].sum())} for k, m in enumerate(MEASURES)]
        layer_rows = []
        for r, reference in enumerate(REFERENCES):
            for reading, sums in (("layer", self.layers), ("rolled out", self.rolled)):
                flat = sums[:, r].reshape(len(sums), -1)
                mean, low, high = mean_and_interval(flat, self.final_n[:, r], **boot)
                for k, (m, layer) in enumerate(np.ndindex(len(LAYERED), n_layers)):
                    layer_rows.append({"reference": reference, "measure": LAYERED[m], "layer": layer + 1,
                                       "reading": reading, "rho": mean[k], "low": low[k], "high": high[k]})
        steps = self.deletion.shape[2]
        counts = np.broadcast_to(self.deletion_n[:, None, :], self.deletion.shape).reshape(len(self.deletion), -1)
        mean, low, high = mean_and_interval(self.deletion.reshape(len(self.deletion), -1), counts, **boot)
        deletion = [{"order": o, "k": k + 1, "drop": mean[i], "low": low[i], "high": high[i],
                     "targets": int(self.deletion_n[:, k].sum())}
                    for i, (o, k) in enumerate((o, k) for o in orders for k in range(steps))]
        mean, low, high = mean_and_interval(self.aopc, self.aopc_n, **boot)
        aopc = [{"order": o, "aopc": mean[i], "low": low[i], "high": high[i], "targets": int(self.aopc_n.sum())}
                for i, o in enumerate(orders)]
        tables = {"measures": pd.DataFrame(rows), "layers": pd.DataFrame(layer_rows),
                  "deletion": pd.DataFrame(deletion), "aopc": pd.DataFrame(aopc),
                  "comparisons": pd.DataFrame(self.comparisons(n_boot, seed)),
                  "heads": self.heads_table(n_boot, seed)}
        return Result(tables, claims=claims(tables["comparisons"], tables["measures"]))

    def heads_table(self, n_boot: int, seed: int):
        """Per head: the mean ρ of its own α (``rho_attention``) and of its α weighted by the value
        norms ``‖f_h(x_j)‖`` (``rho_norm``) with blank-out by masking, each with its interval."""
        _, n_layers, n_heads = self.heads.shape[1:]
        mean, low, high = mean_and_interval(self.heads.reshape(len(self.heads), -1), self.final_n[:, 0],
                                            n_boot, seed)
        columns = {}
        for k, name in enumerate(("rho_attention", "rho_norm")):
            part = slice(k * n_layers * n_heads, (k + 1) * n_layers * n_heads)
            columns.update({name: mean[part], f"{name}_low": low[part], f"{name}_high": high[part]})
        return head_table(n_layers, n_heads, **columns)

    def comparisons(self, n_boot: int, seed: int) -> list[dict]:
        """The claims' pairs: each ``(a, b)`` of :data:`PAIRS` per reference, the mean over targets of
        ``ρ_a - ρ_b`` and its paired 95% interval (both on the same resampled sentences)."""
        index = {m: k for k, m in enumerate(MEASURES)}
        out = []
        for r, reference in enumerate(REFERENCES):
            diffs = np.stack([self.final[:, r, index[a]] - self.final[:, r, index[b]] for a, b in PAIRS], axis=1)
            mean, low, high = mean_and_interval(diffs, self.final_n[:, r], n_boot, seed)
            out += [{"reference": reference, "a": a, "b": b, "difference": mean[k], "low": low[k],
                     "high": high[k]} for k, (a, b) in enumerate(PAIRS)]
        return out


# The claims' comparisons: value zeroing against every other mixing measure (Mohebbi et al.), ALTI
# against attention rollout (Ferrando et al.), the norm against α (Kobayashi et al.).
PAIRS = tuple(("value_zeroing", m) for m in MIXING if m != "value_zeroing") + (
    ("alti", "attention_rollout"), ("norm", "attention"))
CLAIM_REFERENCE = "mask"


def _difference(comparisons, a: str, b: str) -> tuple[float, float, float]:
    row = comparisons[(comparisons.reference == CLAIM_REFERENCE) & (comparisons.a == a) & (comparisons.b == b)]
    return tuple(float(row[c].iloc[0]) for c in ("difference", "low", "high"))


def _rho(measures, measure: str) -> str:
    row = measures[(measures.reference == CLAIM_REFERENCE) & (measures.measure == measure)].iloc[0]
    return f"ρ {row.rho:.3f} [{row.low:.3f}, {row.high:.3f}]"


def _text(difference: float, low: float, high: float) -> str:
    return f"{difference:+.3f} [{low:+.3f}, {high:+.3f}]"


def claims(comparisons, measures) -> list:
    """The three claims of the issue, each decided on paired bootstrap intervals of ρ differences
    against blank-out by masking: holds when the interval is above 0, does not hold when it is at
    or below 0 (for Mohebbi's: when any other measure is clearly ahead), otherwise not applicable
    (undecided at this sample)."""
    reference = "blank-out by the mask token"
    rule_pair = "paired bootstrap 95% interval of the mean difference in ρ (resampling sentences) above 0"
    others = [b for a, b in PAIRS if a == "value_zeroing"]
    diffs = {b: _difference(comparisons, "value_zeroing", b) for b in others}
    behind = any(high < 0 for _, _, high in diffs.values())
    ahead = all(above(low, high, 0.0) is True for _, low, high in diffs.values())
    worst = min(diffs, key=lambda b: diffs[b][1])
    out = [Claim(
        "mohebbi.mixing.value_zeroing_best", f"{MOHEBBI} (EACL)",
        "value zeroing agrees with blank-out better than the other context mixing measures",
        "value zeroing ranks first against blank-out (BERT, RoBERTa, ELECTRA)",
        f"value zeroing {_rho(measures, 'value_zeroing')}; against its closest rival, {worst}: "
        f"{_text(*diffs[worst])}",
        holds_if(False if behind else True if ahead else None, *[x for d in diffs.values() for x in d]),
        f"value zeroing minus each of {', '.join(others)}: every {rule_pair}; does not hold when any "
        f"interval lies below 0; against {reference}",
        "ρ over each target's context tokens (itself and [CLS]/[SEP] left out), the tagger's predicted tag")]
    for claim_id, source, text, paper, a, b in (
            ("ferrando.mixing.alti_beats_rollout", f"{FERRANDO} (EMNLP)",
             "ALTI agrees with blank-out better than attention rollout", "ALTI above rollout", "alti",
             "attention_rollout"),
            ("kobayashi.mixing.norm_beats_attention", f"{KOBAYASHI} (EMNLP)",
             "‖αf‖ reflects the mixing better than α", "the norm view above α", "norm", "attention")):
        difference, low, high = _difference(comparisons, a, b)
        out.append(Claim(claim_id, source, text, paper,
                         f"{a} {_rho(measures, a)}, {b} {_rho(measures, b)}; difference {_text(difference, low, high)}",
                         holds_if(above(low, high, 0.0), difference, low, high),
                         f"{a} minus {b}: {rule_pair}; does not hold when the interval lies at or below 0; "
                         f"against {reference}",
                         "final layer for both" if a == "norm" else "both rolled out over every layer"))
    return out


# What the per-head table (heads.csv) adds to the head atlas (headatlas.report.atlas): a property of
# the tagger's head against its own predictions, the same in both weightings' rows.
ATLAS = {"heads": HeadColumns("mixing vs blank-out", f"{MOHEBBI}; {KOBAYASHI}", rank=95, weighting=INDEPENDENT,
                              columns=(
    Column("mixing_rho_attention", "rho_attention", "ρ",
           "Spearman ρ of the head's α row with blank-out (the tagger's p(predicted tag) when a context "
           "token is masked), mean over target words"),
    Column("mixing_rho_norm", "rho_norm", "ρ",
           "the same for the head's α weighted by the value norms ‖f_h(x_j)‖ (Kobayashi et al.)"),
))}
