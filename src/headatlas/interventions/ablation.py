"""Head-type ablation without re-training (Guan et al. 2020, §5, Tables 2 and 3).

The heads of one type (dense, diagonal, dense&vertical, vertical; from the
head-type table) are changed *inside* the task model, and the task is scored
again. The change is made on the attention probabilities by an attention
function registered with transformers' ``AttentionInterface`` under the name
:data:`IMPLEMENTATION`; the model code itself is not copied. Per head one of:

* ``keep``      the weights as computed;
* ``prune``     every weight set to 0 (the head's output is the zero vector);
* ``uniform``   every weight replaced by 1/L over the L real (non-padding)
  tokens of the input, ``[CLS]``/``[SEP]`` included (in a sliding-window layer,
  ModernBERT's, over the L real tokens of the query's window: what the head can see);
* ``no_intra``  weights between tokens of the same sentence set to 0;
* ``no_inter``  weights between tokens of different sentences set to 0.

Sentences: a packed tagging example's sentences, or a SQuAD question (one
sentence) and its context's sentences. ``[CLS]``/``[SEP]`` belong to no
sentence: attention between one of them and any *other* token is
inter-sentence, a token's attention to itself is always intra-sentence.
The paper does not say whether the remaining weights are renormalised; like
its pruning ("mask the attention value to 0") we do not renormalise by
default; ``renormalise=True`` rescales each ablated row to sum to 1 again
(equal to masking those keys before the softmax).

Usage: call :func:`register`, load the task model with
``attn_implementation=IMPLEMENTATION`` and pass
``headatlas_ablation=Ablation(actions, sentence_ids)`` (what
:func:`plan` returns per batch) to its forward call; without that argument
the function is exactly eager attention. The tasks scored this way are
:data:`headatlas.tasks.TASKS` (each a :class:`~headatlas.tasks.base.Task`: its evaluator takes
each batch's extra forward arguments, :func:`plan` builds them); the rule's runner is
:mod:`headatlas.interventions.grid`.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from headatlas.analyses.headtypes import NO_TYPES
from headatlas.claims import Claim, holds_if, undefined
from headatlas.errors import HeadAtlasError
from headatlas.stats import bootstrap_share
from headatlas.tasks import TASKS, Task, get_task, task_of_metric
from headatlas.tasks.base import UNITS
from headatlas.encoders.lazy import lazy_import

torch = lazy_import("torch")  # the reading rules (claims, compare) never run a model

log = logging.getLogger(__name__)

IMPLEMENTATION = "headatlas_ablate"
TYPES = ("dense", "diagonal", "dense&vertical", "vertical")
ACTIONS = ("keep", "prune", "uniform", "no_intra", "no_inter")
KEEP, PRUNE, UNIFORM, NO_INTRA, NO_INTER = range(len(ACTIONS))
# How an action is shown in the table (the paper's ✓, ✗, 1/L and its intra/inter columns).
MARKS = {"keep": "keep", "prune": "prune (0)", "uniform": "uniform (1/L)",
         "no_intra": "no intra", "no_inter": "no inter"}


# ----------------------------------------------------------------------------
# the intervention
# ----------------------------------------------------------------------------

def same_sentence(sentence_ids: torch.Tensor) -> torch.Tensor:
    """``[batch, T, T]`` bool: query and key lie in the same sentence.

    ``sentence_ids`` ``[batch, T]``: sentence index per token, negative for
    special and padding tokens, which match only themselves.
    """
    positions = torch.arange(sentence_ids.shape[-1], device=sentence_ids.device)
    ids = torch.where(sentence_ids < 0, -1 - positions, sentence_ids)
    return ids[:, :, None] == ids[:, None, :]


def ablate(weights: torch.Tensor, actions: torch.Tensor, allowed: torch.Tensor,
           same: torch.Tensor | None = None, renormalise: bool = False) -> torch.Tensor:
    """Apply one layer's per-head actions to its attention probabilities.

    Parameters
    ----------
    weights : ``[batch, heads, T, T]`` softmax attention (rows sum to 1).
    actions : ``[heads]`` action codes (``KEEP`` ... ``NO_INTER``).
    allowed : ``[batch, T]`` bool, False at padding; or ``[batch, T, T]``, per query the keys
        it may attend (padding and a sliding window: :func:`_allowed_keys`).
    same : ``[batch, T, T]`` bool from :func:`same_sentence`; needed only
        for ``NO_INTRA``/``NO_INTER``.
    renormalise : rescale rows changed by ``NO_INTRA``/``NO_INTER`` to sum to
        1 (a row left with nothing stays 0).

    Returns
    -------
    ``[batch, heads, T, T]`` new weights (the input is not modified).
    """
    act = actions.view(1, -1, 1, 1)
    out = weights.masked_fill(act == PRUNE, 0.0)
    if (actions == UNIFORM).any():
        real = (allowed[:, None, None, :] if allowed.dim() == 2 else allowed[:, None]).to(weights.dtype)
        out = torch.where(act == UNIFORM, real / real.sum(-1, keepdim=True).clamp_min(1), out)
    by_sentence = (act == NO_INTRA) | (act == NO_INTER)
    if by_sentence.any():
        if same is None:
            raise ValueError("intra/inter-sentence ablation needs sentence ids")
        same = same[:, None]
        out = out.masked_fill(((act == NO_INTRA) & same) | ((act == NO_INTER) & ~same), 0.0)
        if renormalise:
            total = out.sum(-1, keepdim=True)
            out = torch.where(by_sentence & (total > 0), out / total.clamp_min(1e-30), out)
    return out


@dataclass
class Ablation:
    """The per-forward-call state: what every head does, and the batch's sentences.

    ``actions`` ``[layers, heads]`` codes; ``sentence_ids`` ``[batch, T]``
    (see :func:`same_sentence`) or None when no head uses ``no_intra``/``no_inter``.
    """

    actions: torch.Tensor
    sentence_ids: torch.Tensor | None = None
    renormalise: bool = False
    _same: torch.Tensor | None = field(default=None, init=False, repr=False)

    def apply(self, layer: int, weights: torch.Tensor, attention_mask: torch.Tensor | None):
        if layer >= self.actions.shape[0] or weights.shape[1] != self.actions.shape[1]:
            raise ValueError(f"ablation plan is {tuple(self.actions.shape)} (layers, heads) but "
                             f"layer {layer} has {weights.shape[1]} heads")
        actions = self.actions[layer].to(weights.device)
        if bool((actions == KEEP).all()):
            return weights
        return ablate(weights, actions, _allowed_keys(attention_mask, weights), self.same(),
                      self.renormalise)

    def same(self) -> torch.Tensor | None:
        if self._same is None and self.sentence_ids is not None:
            self._same = same_sentence(self.sentence_ids)
        return self._same


def _allowed_keys(attention_mask: torch.Tensor | None, weights: torch.Tensor) -> torch.Tensor:
    """``[batch, Q, K]`` (or ``[batch, K]`` without a mask) bool from the additive eager mask
    ``[batch, 1, Q, K]`` (0 = attend): padding, and a sliding window where the layer has one."""
    if attention_mask is None:
        return torch.ones(weights.shape[0], weights.shape[-1], dtype=torch.bool, device=weights.device)
    return attention_mask[:, 0] > torch.finfo(attention_mask.dtype).min / 2


def ablated_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                      headatlas_ablation: Ablation | None = None,
                      headatlas_gates: torch.Tensor | None = None, **kwargs):
    """Eager attention with the ablation applied to the probabilities (AttentionInterface signature).

    ``query``/``key``/``value`` ``[batch, heads, T, d]``; returns the context
    ``[batch, T, heads, d]`` and the (ablated) weights ``[batch, heads, T, T]``.
    ``headatlas_gates`` (``[layers, heads]`` or ``[batch, layers, heads]``)
    multiplies each head's context: Michel et al.'s gate xi_h, differentiable
    (1 = unchanged, 0 = the head's contribution removed).
    """
    scaling = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    weights = torch.nn.functional.softmax(scores, dim=-1)
    if headatlas_ablation is not None:
        weights = headatlas_ablation.apply(module.layer_idx, weights, attention_mask)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    context = torch.matmul(weights, value).transpose(1, 2)
    if headatlas_gates is not None:
        # [heads] or [batch, heads]; gates may live on the host (a scorer's keys), the context on a GPU
        gates = headatlas_gates[..., module.layer_idx, :].to(context)
        context = context * (gates[:, None, :, None] if gates.dim() == 2 else gates[:, None])
    return context.contiguous(), weights


@functools.cache
def register() -> None:
    """Register :func:`ablated_attention` (and the eager padding mask) as :data:`IMPLEMENTATION`.

    The mask must be registered too: for an implementation without one,
    transformers builds no padding mask at all.
    """
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import eager_mask

    AttentionInterface.register(IMPLEMENTATION, ablated_attention)
    AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)


def plan(actions: torch.Tensor, renormalise: bool = False) -> Callable[[torch.Tensor], dict]:
    """Forward keyword arguments for one batch: ``sentence_ids -> {"headatlas_ablation": ...}``.

    Task code calls this with each batch's ``[batch, T]`` sentence ids and
    passes the result to the model's forward call.
    """
    return lambda sentence_ids: {"headatlas_ablation": Ablation(actions, sentence_ids, renormalise)}


# ----------------------------------------------------------------------------
# head types and variants
# ----------------------------------------------------------------------------

def read_head_types(path: str | Path, n_layers: int, n_heads: int) -> np.ndarray:
    """``[layers, heads]`` type names from a CSV with columns layer, head (1-based), type.

    Every head may be :data:`NO_TYPES` (the clusters were not distinct): the grid then scores
    only the unablated model and the floors (:func:`variants`).
    """
    table = pd.read_csv(path)
    missing = {"layer", "head", "type"} - set(table.columns)
    if missing:
        raise HeadAtlasError(f"{path}: head-type table lacks column(s) {sorted(missing)}")
    unknown = set(table["type"]) - set(TYPES) - {NO_TYPES}
    if unknown:
        raise HeadAtlasError(f"{path}: unknown head type(s) {sorted(unknown)}; expected {TYPES}"
                             "\n  how to fix: cluster with k = 4 so that the types are named")
    layers, heads = table["layer"].to_numpy() - 1, table["head"].to_numpy() - 1
    if len(table) != n_layers * n_heads or table[["layer", "head"]].duplicated().any() \
            or layers.min() < 0 or heads.min() < 0 or layers.max() >= n_layers or heads.max() >= n_heads:
        raise HeadAtlasError(f"{path}: expected each of {n_layers} x {n_heads} heads once (1-based "
                             f"layer/head), got {len(table)} rows.\n  how to fix: use the head types "
                             "of a model with the task model's shape")
    types = np.empty((n_layers, n_heads), dtype=object)
    types[layers, heads] = table["type"].to_numpy()
    return types


@dataclass(frozen=True)
class Variant:
    """One row of the table: an action per head type (types not named are kept)."""

    name: str
    group: str
    actions: tuple[tuple[str, str], ...] = ()
    paper_id: str = ""  # the row number in Guan et al.'s Tables 2/3, if they have this row

    def action(self, head_type: str) -> str:
        return dict(self.actions).get(head_type, "keep")


# The floors every effect is measured against (issue 23 item 1): a tagger keeps most of its
# accuracy with no attention at all (its embeddings and feed-forward layers tag most words), so
# shares of the unablated score hide what the heads do. Claims about inter-sentence attention are
# judged above the model without any (issue 37): a tagger of single sentences needs none, and
# there every "no inter" variant keeps ~100% whichever heads keep it. Action -> variant name.
FLOORS = {"prune": "prune all", "uniform": "uniform all", "no_inter": "no inter all"}
# What the model loses at each floor, in a claim's words.
FLOOR_GIVES = {"prune": "attention", "uniform": "attention beyond uniform",
               "no_inter": "inter-sentence attention"}


def variants(named: bool = True) -> list[Variant]:
    """The grid: Tables 2 and 3 of the paper, extended to every type (``named`` False: the head
    types are not distinct, and only the unablated model and the floors are scored).

    Unablated; the floors (every head pruned, every head uniform: what
    the model scores without what attention gives; every head without
    inter-sentence attention: :data:`FLOORS`); prune
    one type (paper rows 2-5); prune two types, diagonal and one other kept
    (6-7); keep only one type (others pruned); substitute one type with
    uniform attention (8-11); remove intra- or inter-sentence attention of
    one type (12-15 for diagonal and dense&vertical); only one type keeps
    intra-sentence (16, 18) or inter-sentence (17, 19) attention.
    """
    rows = [Variant("unablated", "baseline", (), "1")]
    # The floors change every head, typed or not (NO_TYPES: the clusters were not distinct).
    rows += [Variant(name, "floor", tuple((t, action) for t in (*TYPES, NO_TYPES)))
             for action, name in FLOORS.items()]
    if not named:
        return rows
    ids = dict(zip(TYPES, range(2, 6)))
    rows += [Variant(f"prune {t}", "prune one", ((t, "prune"),), str(ids[t])) for t in TYPES]
    rows += [Variant("prune dense + vertical", "prune two", (("dense", "prune"), ("vertical", "prune")), "6"),
             Variant("prune dense&vertical + vertical", "prune two",
                     (("dense&vertical", "prune"), ("vertical", "prune")), "7")]
    rows += [Variant(f"keep only {t}", "keep only", tuple((o, "prune") for o in TYPES if o != t))
             for t in TYPES]
    ids = dict(zip(TYPES, range(8, 12)))
    rows += [Variant(f"uniform {t}", "substitute", ((t, "uniform"),), str(ids[t])) for t in TYPES]
    ids = {("diagonal", "no_intra"): "12", ("diagonal", "no_inter"): "13",
           ("dense&vertical", "no_intra"): "14", ("dense&vertical", "no_inter"): "15"}
    rows += [Variant(f"{t}: {MARKS[a]}", "remove one", ((t, a),), ids.get((t, a), ""))
             for t in TYPES for a in ("no_intra", "no_inter")]
    ids = {("diagonal", "intra"): "16", ("diagonal", "inter"): "17",
           ("dense&vertical", "intra"): "18", ("dense&vertical", "inter"): "19"}
    rows += [Variant(f"only {t} keeps {part}", f"only one keeps {part}",
                     tuple((o, f"no_{part}") for o in TYPES if o != t), ids.get((t, part), ""))
             for part in ("intra", "inter") for t in TYPES]
    return rows


def head_actions(types: np.ndarray, variant: Variant) -> torch.Tensor:
    """``[layers, heads]`` action codes of ``variant`` for heads typed ``types``."""
    codes = np.vectorize(lambda t: ACTIONS.index(variant.action(t)), otypes=[np.int64])(types)
    return torch.from_numpy(codes)


# Guan et al. (2020), BERT-large-wwm fine-tuned on SQuAD v1.1, dev set, EM ("Acc.") / F1.
# Only what can be read reliably (METHODS.md, or stated in the paper's prose) is given as a
# number; the printed tables are garbled in the text we have, so other cells are None (n/a).
PAPER = {
    "1": {"em": None, "f1": 89.68, "note": ""},
    "3": {"em": 4.59, "f1": 7.55, "note": "text: 'makes the model totally inoperative'"},
    "5": {"em": None, "f1": None, "note": "text: costs < 1.5%"},
    "8": {"em": None, "f1": None, "note": "text: costs < 10%"},
    "10": {"em": None, "f1": None, "note": "text: 'significant accuracy loss'"},
    "11": {"em": None, "f1": None, "note": "text: accuracy over 50%"},
    "12": {"em": None, "f1": None, "note": "text: 'poor accuracy of 19.96%' (table: 16.96)"},
    "13": {"em": None, "f1": None, "note": "text: 'little interference'"},
    "16": {"em": 71.80, "f1": None, "note": "text: 'decent accuracy of 71.80%'"},
    "19": {"em": 75.54, "f1": None, "note": "text: 'accuracy of 75.54%'"},
}
PAPER_MODEL = "bert-large-uncased-whole-word-masking-finetuned-squad (24 x 16 heads), SQuAD v1.1 dev"


# ----------------------------------------------------------------------------
# the grid
# ----------------------------------------------------------------------------

def run_grid(evaluate: Callable[[torch.Tensor], dict[str, float]], types: np.ndarray,
             main: str, grid: Sequence[Variant] | None = None, progress: bool = True,
             units: dict | None = None) -> pd.DataFrame:
    """Score every variant: one row per variant, our metrics beside the paper's numbers.

    ``evaluate(actions)`` scores the task under the ``[layers, heads]`` plan;
    ``main`` names its headline metric, also given as a share (%) of the
    unablated score (``<main>_pct_of_unablated``) and as the share of what
    attention gives (:func:`share_of_attention`) above each floor of
    :data:`FLOORS`: ``<main>_pct_of_attention`` (every head pruned, the
    reference of the claims) and ``<main>_pct_of_attention_vs_uniform`` (every
    head uniform). Variants that change the same heads in the same way (a type
    with no heads) are scored once. Per-unit scores an evaluation returns
    (:data:`~headatlas.tasks.base.UNITS`) go to ``units`` (variant name -> ``(numerator,
    denominator)``) when it is given, not into the table.
    """
    grid = variants(named=bool(np.isin(types, TYPES).any())) if grid is None else grid
    if grid[0].actions:
        raise ValueError("the first variant must be the unablated model (the reference)")
    done: dict[bytes, dict[str, float]] = {}
    per_unit: dict[bytes, tuple | None] = {}
    rows = []
    for variant in tqdm(grid, desc="ablation", unit="variant", disable=not progress):
        actions = head_actions(types, variant)
        key = actions.numpy().tobytes()
        if key not in done:
            scores = dict(evaluate(actions))
            per_unit[key] = scores.pop(UNITS, None)
            done[key] = scores
            log.info("%s: %s", variant.name, done[key])
        if units is not None and per_unit[key] is not None:
            units[variant.name] = per_unit[key]
        paper = PAPER.get(variant.paper_id, {})
        rows.append({"paper_id": variant.paper_id, "group": variant.group, "variant": variant.name,
                     **{t: MARKS[variant.action(t)] for t in TYPES},
                     "heads_changed": int((actions != KEEP).sum()), **done[key],
                     "paper_em": paper.get("em"), "paper_f1": paper.get("f1"),
                     "paper_note": paper.get("note", "")})
    table = pd.DataFrame(rows)
    table[["paper_em", "paper_f1"]] = table[["paper_em", "paper_f1"]].apply(pd.to_numeric)
    reference = table[main].iloc[0]  # a model scoring 0 unablated has no meaningful share
    table[f"{main}_pct_of_unablated"] = 100 * table[main] / reference if reference else np.nan
    for action, column in SHARE_COLUMNS.items():
        floor = floor_score(table, main, action)
        table[f"{main}_{column}"] = [share_of_attention(x, reference, floor) for x in table[main]]
    table["paper_f1_pct_of_unablated"] = 100 * table["paper_f1"] / PAPER["1"]["f1"]
    return table


# Share columns of the table (suffixes after the metric), by the floor they are measured from.
SHARE_COLUMNS = {"prune": "pct_of_attention", "uniform": "pct_of_attention_vs_uniform",
                 "no_inter": "pct_of_inter_attention"}
# Below this gap (points of the task metric, in %) between the unablated model and a floor,
# attention contributes nothing measurable and shares of it are ratios of noise: scored on a few
# thousand words (or questions), a paired difference of about a point has a standard error of
# 0.1-0.2 points (sqrt(discordant share / units)), so a smaller gap cannot carry 50% or 10% of itself.
MIN_CONTRIBUTION = 1.0


def floor_score(table: pd.DataFrame, metric: str, action: str = "prune") -> float:
    """``metric`` with every head under ``action`` (:data:`FLOORS`), NaN if the table lacks that row."""
    row = table.loc[table["variant"] == FLOORS[action], metric]
    return float(row.iloc[0]) if len(row) else float("nan")


def contribution_missing(intact: float, floor: float, what: str = "attention") -> str | None:
    """Why ``intact - floor`` (what ``what`` gives, points) cannot carry shares, or None."""
    if np.isnan(floor):
        return "no floor row in the table (run the ablation rule again)"
    gap = intact - floor
    if gap < MIN_CONTRIBUTION:
        return (f"{what} contributes nothing measurable (unablated {intact:.2f}, floor "
                f"{floor:.2f}: a gap of {gap:.2f} < {MIN_CONTRIBUTION:g} point)")
    return None


def share_of_attention(score: float, intact: float, floor: float) -> float:
    """``100 (score - floor) / (intact - floor)``: the % of what attention gives that ``score`` keeps.

    0 = the floor (no attention), 100 = the unablated model; NaN when the gap is not
    measurable (:func:`contribution_missing`).
    """
    if contribution_missing(intact, floor):
        return float("nan")
    return 100.0 * (score - floor) / (intact - floor)


def type_counts(types: np.ndarray) -> dict[str, int]:
    """How many heads each type has (0 for absent types)."""
    return {t: int((types == t).sum()) for t in TYPES}


# ----------------------------------------------------------------------------
# the paper's claims
# ----------------------------------------------------------------------------

GUAN_ABLATION = "Guan et al. 2020 §5, Tables 2-3"
# A task model whose *unablated* score is below its task's floor never learnt the task
# (Task.untrained_floor: SQuAD's EM 10 / F1 20, below the word-overlap baseline), and shares of
# its score are shares of noise: its ablation claims are not applicable.
UNTRAINED = "not applicable: task model untrained"


def untrained_reason(scores: dict, task: str | Task | None = None) -> str | None:
    """Why the unablated ``scores`` (metric -> %) show a model that never learnt ``task``
    (its :attr:`~headatlas.tasks.base.Task.untrained_floor`), or None (trained, or no floor).

    ``task`` None: the task whose headline metric is among the scores
    (:func:`headatlas.tasks.task_of_metric`; a grid table names no task).
    """
    task = get_task(task) if task is not None else \
        next((t for t in map(task_of_metric, scores) if t is not None), None)
    low = task.untrained(scores) if task is not None else []
    if not low:
        return None
    return (f"{UNTRAINED} (unablated {', '.join(low)}: below {task.baseline_text()}; "
            f"the floor is {task.floor_text()})")


def _untrained_rule() -> str:
    """The claims' rule on untrained models, one clause per task with a floor."""
    return "".join(f", or if the unablated {t.label} model scores below {t.floor_text()}: untrained"
                   for t in TASKS.values() if t.untrained_floor)


BREAKS = 50.0  # "breaks the model" / "inoperative": below this share (%) of what attention gives
# (paper row, claim, the paper's number or words, rule: "below" or "at least" a share (%) of what
# the floor's part of attention gives: (score - floor) / (unablated - floor), share_of_attention;
# the floor (:data:`FLOORS`): every head pruned, or for inter-sentence claims every head without it)
CLAIMS = (
    ("3", "prune_diagonal", "pruning the diagonal heads makes the model inoperative",
     "F1 7.55 of 89.68 (8%)", "below", BREAKS, "prune"),
    ("5", "prune_vertical", "pruning the vertical heads costs little", "< 1.5% lost", "at least", 98.5,
     "prune"),
    ("8", "uniform_dense", "uniform attention in place of the dense heads costs little", "< 10% lost",
     "at least", 90.0, "prune"),
    ("12", "diagonal_no_intra", "the diagonal heads carry local information: without their "
     "intra-sentence attention the model fails", "EM 19.96%", "below", BREAKS, "prune"),
    ("13", "diagonal_no_inter", "the diagonal heads' inter-sentence attention hardly matters",
     "'little interference'", "at least", 98.5, "no_inter"),
    ("16", "only_diagonal_intra", "keeping only the diagonal heads' intra-sentence attention keeps "
     "the model usable", "EM 71.80%", "at least", BREAKS, "prune"),
    ("19", "only_dense_vertical_inter", "keeping only the dense&vertical heads' inter-sentence "
     "attention keeps the model usable", "EM 75.54%", "at least", BREAKS, "no_inter"),
)


NOT_DISTINCT = ("the head types are not distinct (headtypes' type_shares.csv gives the separation "
                "test), so the grid scored only the unablated model and the floors")
# How the paper's numbers read as shares of what attention gives (the note of every claim).
PAPER_READING = ("the paper's shares are of the unablated SQuAD score; a SQuAD model without attention "
                 "cannot see the question, so its floor is near 0 (Guan et al. did not measure it) and "
                 "those shares are nearly shares of what attention gives; ours are taken above the "
                 "floor measured with every head pruned")


# Head types must be stable to be ablated as types (issue 37): Guan et al.'s fine-tuned models keep
# 94-96% of heads in their cluster across refits on half the heads; below this share, one head in
# five or more changes type between refits, and "the vertical heads" names a different set each time.
MIN_TYPE_STABILITY = 80.0
UNSTABLE = "not applicable: head types unstable"


def type_stability(table: pd.DataFrame) -> float:
    """The share (%) of heads that keep their type across refits, by the paper's procedure (the
    ``heads`` row of :func:`headatlas.analyses.headtypes.stability_table`), NaN without that row."""
    row = table.loc[table["resample"] == "heads", "consistent_pct"]
    return float(row.iloc[0]) if len(row) else float("nan")


def unstable_types(claims: list[Claim], stability: float, minimum: float = MIN_TYPE_STABILITY) -> list[Claim]:
    """``claims`` with every verdict not applicable, saying why, when the head types they ablate are
    less stable than ``minimum`` (% of heads keeping their type across refits); as they are
    otherwise (NaN stability: types given by hand, nothing to check)."""
    from dataclasses import replace

    if np.isnan(stability) or stability >= minimum:
        return claims
    why = (f"{UNSTABLE}: {stability:.1f}% of heads keep their type across refits on half the heads "
           f"(the paper's procedure; Guan et al.: 94-96%), below {minimum:g}%, so each type names a "
           "different set of heads from fit to fit")
    return [replace(c, verdict=holds_if(None), note=f"{why}; {c.note}",
                    rule=f"{c.rule}; not applicable if fewer than {minimum:g}% of heads keep their type "
                    "across refits") for c in claims]


def saved_units(arrays: dict, attrs: dict) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Variant name -> ``(correct, total)`` per unit, from the grid's saved result
    (:func:`headatlas.interventions.grid.unit_arrays`); empty when it has none."""
    if "unit_correct" not in arrays:
        return {}
    return {name: (arrays["unit_correct"][i], arrays["unit_total"])
            for i, name in enumerate(attrs.get("unit_variants", []))}


def decide(how: str, threshold: float, low: float, high: float) -> bool | None:
    """A claim's verdict from the interval of its share: True when the whole interval is on the
    claim's side of ``threshold`` (``how``: "below" or "at least"), False when it is wholly on the
    other, None (undecided) when it straddles it."""
    above, under = low >= threshold, high < threshold
    if how == "below":
        above, under = under, above
    return True if above else False if under else None


def paper_claims(table: pd.DataFrame, task: str | Task | None = None,
                 units: dict | None = None, n_boot: int = 1000, seed: int = 0) -> list[Claim]:
    """Guan et al.'s ablation findings judged on our grid (:class:`~headatlas.claims.Claim` records).

    ``table`` is :func:`run_grid` (as read back from ``ablation.csv``). Each
    claim is judged on the share of what attention gives that the variant keeps,
    (score - all heads pruned) / (unablated - all heads pruned)
    (:func:`share_of_attention`; the share above the uniform-attention floor is
    printed beside it): "breaks" means below :data:`BREAKS` %, "costs little"
    at least the stated share. Not applicable: a variant that changes no head
    (the type has no heads in this model), a gap between the unablated model and
    the floor below :data:`MIN_CONTRIBUTION` (attention contributes nothing
    measurable: any share of it is noise), a model below its task's untrained floor
    (``task``, default: the task of the table's headline metric,
    :func:`headatlas.tasks.task_of_metric`).

    With ``units`` (:func:`saved_units`: per-unit scores of the variant, the unablated model and
    the floor), each verdict is taken on the paired bootstrap 95% interval of the share
    (:func:`headatlas.stats.bootstrap_share`, ``n_boot`` resamples of the units, ``seed``) by
    :func:`decide`: an interval that straddles the threshold is undecided (not applicable, with
    the interval), so no verdict rests on a difference smaller than the noise of the test set.

    Returns
    -------
    list[Claim]
        One :class:`~headatlas.claims.Claim` per finding
        (:func:`~headatlas.claims.claims_table` makes them a ``paper_claims.csv`` table).
    """
    metric = next(c for c in table.columns if c.endswith("_pct_of_unablated")
                  and not c.startswith("paper_")).removesuffix("_pct_of_unablated")
    rows = table.assign(paper_id=table["paper_id"].astype(str).str.replace(r"\.0$", "", regex=True)) \
        .set_index("paper_id")
    unablated = float(rows.at["1", metric]) if "1" in rows.index else float("nan")
    task = get_task(task) if task is not None else task_of_metric(metric)
    floor = task.untrained_floor if task is not None else {}
    untrained = untrained_reason({m: rows.at["1", m] for m in floor if m in rows.columns}, task) \
        if "1" in rows.index and task is not None else None
    floors = {action: floor_score(table, metric, action) for action in FLOORS}
    only_floors = set(table["variant"]) <= {"unablated", *FLOORS.values()}
    claims = []
    for paper_id, key, claim, paper, how, threshold, floor_action in CLAIMS:
        if paper_id not in rows.index and only_floors:  # the types are not distinct
            claims.append(Claim(
                f"guan.ablation.{key}", GUAN_ABLATION, claim, f"{paper} (row {paper_id})", "n/a",
                holds_if(None), f"paper row {paper_id} of the grid",
                "; ".join(filter(None, [untrained, f"not applicable: {NOT_DISTINCT}", PAPER_READING]))))
            continue
        if paper_id not in rows.index:
            continue
        row = rows.loc[paper_id]
        score, changed = float(row[metric]), int(row["heads_changed"])
        gives, floor = FLOOR_GIVES[floor_action], FLOORS[floor_action]
        missing = contribution_missing(unablated, floors[floor_action], gives)
        share = share_of_attention(score, unablated, floors[floor_action])
        judged = not (changed == 0 or untrained or missing)
        holds = None if not judged else (share < threshold if how == "below" else share >= threshold)
        paired = units and all(v in units for v in (row["variant"], "unablated", floor))
        interval, undecided = None, ""
        if judged and paired:
            interval = bootstrap_share(np.stack([units[v][0] for v in (row["variant"], "unablated", floor)],
                                                axis=1), units["unablated"][1], n_boot, seed)
            if not np.isnan(interval).any():
                holds = decide(how, threshold, *interval)
                undecided = holds is None and (
                    f"not applicable: undecided, the 95% interval of the share ({interval[0]:.1f}% to "
                    f"{interval[1]:.1f}%) straddles {threshold:g}%")
        unit = task.unit if task is not None else "units"
        judge = (f"; judged on the paired bootstrap 95% interval of that share over {unit} ({n_boot} "
                 f"resamples: the variant, the unablated model and the floor on the same {unit}): holds "
                 "when the whole interval is on the claim's side, not applicable (undecided) when it "
                 "straddles the threshold" if paired else "")
        claims.append(Claim(
            f"guan.ablation.{key}", GUAN_ABLATION, claim,
            f"{paper} (row {paper_id}; read as a share of what {gives} gives)",
            _measured(metric, score, unablated, floors, changed, floor_action, interval), holds_if(holds),
            f"{row['variant']}: score {how} {threshold:g}% of what {gives} gives, (score - {floor}) / "
            f"(unablated - {floor}){judge} (not applicable if no head has that type"
            f"{',' if _untrained_rule() else ' or'} if that gap is below {MIN_CONTRIBUTION:g} point: "
            f"{gives} contributes nothing measurable{_untrained_rule()})",
            "; ".join(filter(None, [untrained, missing and f"not applicable: {missing}", undecided,
                                    PAPER_READING, f"no re-training; paper: {PAPER_MODEL}"]))))
    return claims


def _measured(metric: str, score: float, unablated: float, floors: dict[str, float], changed: int,
              floor_action: str = "prune", interval: tuple[float, float] | None = None) -> str:
    """A claim's ``ours``: the score, its share of what attention gives above each floor, of the unablated
    (a claim judged above the inter-sentence floor, ``floor_action`` ``no_inter``, starts with that share).

    Undefined numbers print as ``n/a``, never ``nan`` (which would make the claim undefined even
    when only the side reading, the uniform floor, is missing).
    """
    def number(x: float, unit: str = "") -> str:
        return "n/a" if undefined(x) else f"{x:.{1 if unit else 2}f}{unit}"

    shares = {a: share_of_attention(score, unablated, f) for a, f in floors.items()}
    ci = {floor_action: f" [{number(interval[0], '%')} to {number(interval[1], '%')}, 95% interval]"} \
        if interval else {}
    inter = (f"{number(shares['no_inter'], '%')}{ci.get('no_inter', '')} of what inter-sentence attention "
             f"gives (every head without it {number(floors['no_inter'])}); " if floor_action == "no_inter" else "")
    return (f"{metric} {number(score)}: {inter}{number(shares['prune'], '%')}{ci.get('prune', '')} of what "
            "attention gives "
            f"(unablated {number(unablated)}, all heads pruned {number(floors['prune'])}; "
            f"{number(shares['uniform'], '%')} above uniform attention, {number(floors['uniform'])}), "
            f"{number(100 * score / unablated if unablated else float('nan'), '%')} of the unablated "
            f"score, {changed} heads changed")
