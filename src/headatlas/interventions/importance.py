"""Which heads matter to a task model: disabling heads, head importance, pruning.

Three experiments on a fine-tuned task model (a task of :data:`headatlas.tasks.TASKS`: the UPOS
tagger of :mod:`headatlas.tasks.upos`, or a SQuAD model), none of which retrains it:

* **Disabling single heads** (Kovaleva et al. 2019, §6; Michel et al. 2019,
  §3): each head's contribution to its layer's output is zeroed in turn and
  the task is scored on its test data; also every layer as a whole. The
  change against the intact model gets a *paired* bootstrap 95% interval over
  the evaluation units (sentences for tagging, questions for SQuAD): both
  scores are computed on the same resampled units, so the interval is that
  of the difference (:func:`headatlas.stats.bootstrap_ratio` of the summed
  per-unit differences over the summed units' sizes).
* **Head importance** (Michel et al. 2019, §4.1, Eq. 2):
  ``I_h = E_x |dL(x)/d xi_h|`` for a gate ``xi_h = 1`` multiplying head h's
  output (its attention-weighted values, before the output projection), one
  ``x`` per model input (a packed tagging input, a SQuAD window), ``L`` the
  task's training loss on it; then normalised per layer by the l2 norm of the
  layer's scores, as the paper does after Molchanov et al. (2017). The gates are
  :mod:`headatlas.interventions.ablation`'s attention function (``headatlas_gates``), one
  gate per input and head, so a single backward pass gives every input's
  gradient. (HuggingFace's ``bertology`` example sums |gradient| per *batch*;
  we follow the paper's per-example expectation.)
* **Pruning curves** (Michel et al. 2019, §4.2, Fig. 4): the task score after
  removing 0%, 10%, ..., 100% of the heads (rounded to whole heads), heads
  removed in order of increasing importance, of decreasing importance, and at
  random (several seeds). The largest share prunable for at most ``tolerance``
  points of loss is read off the importance order: the largest share such that
  it and every smaller share stay within the tolerance of the intact model.

A head is disabled by the same gate set to 0. For tagging, evaluation reuses
the intact model's hidden states below the first changed layer
(:class:`LayerCache`: exact, checked against a full forward pass on the first
batch; models whose layers cannot be run one by one fall back to full
forward passes).

Each registered task is scored by a :class:`HeadTask` (:data:`HEAD_TASKS`, keyed by the task's
name); :func:`run_experiments` returns one :class:`~headatlas.analyses.result.Result`, and
:data:`ATLAS` describes its per-head table's columns in the head atlas.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from headatlas.analyses.result import Result
from headatlas.claims import Claim, undefined, verdict
from headatlas.heads import INDEPENDENT, Column, HeadColumns, head_table
from headatlas.stats import bootstrap_ratio
from headatlas.tasks import TASKS, Task, get_task, select
from headatlas.encoders.lazy import inference_mode, lazy_import

torch = lazy_import("torch")  # the reading rules (claims, compare) never run a model

log = logging.getLogger(__name__)

ORDERS = ("importance", "reverse", "random")
# Michel et al. (2019): BERT-base on MNLI.
PAPER_PRUNABLE = 40.0  # "up to about ... 40% of heads ... without incurring any noticeable negative impact"
# The prunable-share claim's loss allowed, as a % of what attention gives (intact minus every head
# removed), not in points (issue 37): Michel et al.'s "no noticeable impact" on MNLI, about a
# point of BERT-base's ~84% above a chance floor of 33%, is ~2% of that gap; one point of a tagger
# that keeps 86% of its 96.6% without any head would be 10%.
CLAIM_TOLERANCE_PCT = 2.0


# ----------------------------------------------------------------------------
# scoring a task under head gates
# ----------------------------------------------------------------------------

@dataclass
class UnitScores:
    """Per evaluation unit: ``score`` (e.g. correct words) and ``size`` (e.g. words)."""

    score: np.ndarray
    size: np.ndarray

    @property
    def value(self) -> float:
        """The task score in % (sum of scores over sum of sizes)."""
        return 100.0 * float(self.score.sum()) / float(self.size.sum())


class HeadTask:
    """A task model scored under per-head gates; subclasses define the data and metric.

    ``scores(gates)`` gives per-unit scores with gates ``[layers, heads]``
    (1 keeps, 0 removes a head); ``importance()`` gives Michel et al.'s
    ``[layers, heads]`` raw importance on the task's importance data. ``definition`` is the
    registered task scored (:data:`headatlas.tasks.TASKS`; its headline metric, its unit and
    its untrained floor), None for a task made up by hand.

    A subclass that scores a registered task also builds itself from that task's records
    (:meth:`from_records`) with the run settings it names in ``settings``
    (:data:`headatlas.tasks.SETTINGS`) and the task's own options.
    """

    definition: Task | None = None
    metric: str = "score"
    unit: str = "units"
    description: str = ""
    settings: tuple[str, ...] = ()

    def __init__(self, model):
        self.model = model
        self.device = next(model.parameters()).device  # inputs go there; gates and scores stay on the host
        self.n_layers = model.config.num_hidden_layers
        self.n_heads = model.config.num_attention_heads

    def scores(self, gates: torch.Tensor) -> UnitScores:
        raise NotImplementedError

    def importance(self, progress: bool = False) -> np.ndarray:
        raise NotImplementedError

    def ones(self) -> torch.Tensor:
        return torch.ones(self.n_layers, self.n_heads)

    @classmethod
    def from_records(cls, model, tokenizer, records, **settings) -> "HeadTask":
        raise NotImplementedError


def _no_grad_params(model) -> None:
    for param in model.parameters():
        param.requires_grad_(False)


class LayerCache:
    """Run a BERT-style token classifier layer by layer, reusing intact hidden states.

    ``run(batch, gates, first)`` starts at encoder layer ``first`` from the
    cached input of that layer (computed once with every gate open). Works when
    the model has ``base_model.embeddings``, ``base_model.encoder.layer`` and a
    ``classifier`` head (BERT's token classifier); :meth:`check` compares the
    result with the model's own forward pass.
    """

    def __init__(self, model):
        from transformers.masking_utils import create_bidirectional_mask

        self.model = model
        base = model.base_model
        self.embeddings, self.layers = base.embeddings, base.encoder.layer
        self._mask = lambda emb, mask: create_bidirectional_mask(
            config=base.config, inputs_embeds=emb, attention_mask=mask)
        self._cache: dict[int, tuple[list[torch.Tensor], torch.Tensor]] = {}

    @staticmethod
    def supported(model) -> bool:
        base = getattr(model, "base_model", None)
        return (hasattr(base, "embeddings") and hasattr(getattr(base, "encoder", None), "layer")
                and hasattr(model, "classifier") and not getattr(base.config, "is_decoder", False))

    def _prefix(self, key: int, inputs: dict) -> tuple[list[torch.Tensor], torch.Tensor]:
        if key not in self._cache:
            ids = {k: inputs[k] for k in ("input_ids", "token_type_ids") if k in inputs}
            emb = self.embeddings(**ids)
            mask = self._mask(emb, inputs["attention_mask"])
            hidden = [emb]
            for layer in self.layers[:-1]:
                hidden.append(layer(hidden[-1], mask))
            self._cache[key] = (hidden, mask)
        return self._cache[key]

    def run(self, key: int, inputs: dict, gates: torch.Tensor, first: int) -> torch.Tensor:
        """Logits of batch ``key`` with ``gates``, recomputing encoder layers ``first`` onwards."""
        hidden, mask = self._prefix(key, inputs)
        h = hidden[first]
        for layer in self.layers[first:]:
            h = layer(h, mask, headatlas_gates=gates)
        return self.model.classifier(self.model.dropout(h) if hasattr(self.model, "dropout") else h)


class TaggingHeads(HeadTask):
    """The UPOS tagger on packed inputs: units are sentences, the score is word accuracy.

    ``evaluation`` are the packed inputs scored (test split), ``importance_data``
    those the importance is estimated on (dev split, so test stays unseen).
    """

    definition = TASKS["upos"]
    metric = definition.metric
    unit = definition.unit
    settings = ("corpus", "split", "importance_split", "max_examples", "max_length", "batch_size")

    def __init__(self, model, evaluation: Sequence, importance_data: Sequence,
                 batch_size: int = 32, cache: bool = True, description: str = ""):
        from headatlas.encoders.batching import to_device
        from headatlas.encoders.models import takes_token_types
        from headatlas.tasks.upos import IGNORE, collate

        super().__init__(model)
        self.description = description
        self.batch_size = batch_size
        pad = model.config.pad_token_id or 0
        segments = takes_token_types(model)  # DistilBERT, RoBERTa: no token-type table to index
        self._collate = lambda batch: collate(batch, pad, segments)
        self.importance_data = list(importance_data)
        # (inputs on the model's device; labels and unit ids [B, T], -1 where not scored, on the host)
        self.batches = []
        offset = 0
        for start in range(0, len(evaluation), batch_size):
            batch = evaluation[start:start + batch_size]
            inputs, sentence_ids = self._collate(batch)
            labels = inputs.pop("labels")
            inputs = to_device(inputs, self.device)
            per_example = torch.tensor([max(e.sentence_ids) + 1 for e in batch])
            starts = offset + torch.cumsum(per_example, 0) - per_example
            units = torch.where(labels != IGNORE, starts[:, None] + sentence_ids, -1)
            offset += int(per_example.sum())
            self.batches.append((inputs, labels, units))
        self.n_units = offset
        sizes = np.zeros(offset)
        for _, _, units in self.batches:
            np.add.at(sizes, units[units >= 0].numpy(), 1)
        self.sizes = sizes
        _no_grad_params(model)
        self.cache = LayerCache(model) if cache and LayerCache.supported(model) else None
        if self.cache is not None and not self.check_cache():
            log.warning("layer-by-layer evaluation differs from the model's forward pass; "
                        "falling back to full forward passes")
            self.cache = None

    @classmethod
    def from_records(cls, model, tokenizer, sentences, *, corpus: str = "", split: str = "test",
                     importance_split: str = "dev", max_examples: int | None = None,
                     max_length: int = 128, batch_size: int = 32) -> "TaggingHeads":
        """The tagger on a treebank's ``sentences``: the first ``max_examples`` sentences of
        ``split`` scored, packed as in fine-tuning; the importance estimated on ``importance_split``."""
        from headatlas.tasks.upos import pack_documents, split_sentences

        parts, _ = split_sentences(list(sentences))
        label2id = model.config.label2id
        stats = Counter()
        scored = pack_documents(tokenizer, parts[split][:max_examples], label2id, max_length, stats)
        estimate = pack_documents(tokenizer, parts[importance_split], label2id, max_length)
        words = sum(e.n_words for e in scored)
        described = (f"UPOS tagging, {corpus} {split} split ({words} words, "
                     f"{sum(max(e.sentence_ids) + 1 for e in scored)} sentences"
                     + (f", the first {max_examples} sentences" if max_examples else "")
                     + f"), importance on the {importance_split} split")
        return cls(model, scored, estimate, batch_size, description=described)

    @inference_mode
    def check_cache(self, tolerance: float = 1e-4) -> bool:
        """Whether the layer cache gives the model's own logits (intact, and with a head removed)."""
        inputs, _, _ = self.batches[0]
        gates = self.ones()
        gates[-1, 0] = 0
        for g in (self.ones(), gates):
            full = self.model(**inputs, headatlas_gates=g).logits
            cached = self.cache.run(0, inputs, g, 0)
            late = self.cache.run(0, inputs, g, self.n_layers - 1)
            if not (torch.allclose(full, cached, atol=tolerance) and torch.allclose(full, late, atol=tolerance)):
                return False
        return True

    @inference_mode
    def scores(self, gates: torch.Tensor) -> UnitScores:
        gates = gates.to(torch.float32)
        changed = torch.nonzero((gates != 1).any(dim=1))
        first = int(changed[0]) if len(changed) else self.n_layers
        correct = np.zeros(self.n_units)
        for key, (inputs, labels, units) in enumerate(self.batches):
            if self.cache is not None:
                logits = self.cache.run(key, inputs, gates, min(first, self.n_layers - 1))
            else:
                logits = self.model(**inputs, headatlas_gates=gates).logits
            scored = units >= 0
            hit = (logits.argmax(-1).cpu() == labels)[scored].to(torch.float64).numpy()
            np.add.at(correct, units[scored].numpy(), hit)
        return UnitScores(correct, self.sizes)

    def importance(self, progress: bool = False) -> np.ndarray:
        """Mean over packed inputs of |dL/d xi_h|, L the mean cross-entropy of the input's words."""
        from headatlas.encoders.batching import to_device
        from headatlas.tasks.upos import IGNORE

        total = torch.zeros(self.n_layers, self.n_heads, dtype=torch.float64)
        count = 0
        batches = range(0, len(self.importance_data), self.batch_size)
        for start in tqdm(batches, desc="importance", disable=not progress, mininterval=2):
            batch = self.importance_data[start:start + self.batch_size]
            inputs, _ = self._collate(batch)
            inputs = to_device(inputs, self.device)
            labels = inputs.pop("labels")
            # on the host: the attention moves them to its device, and the gradient comes back here
            gates = torch.ones(len(batch), self.n_layers, self.n_heads, requires_grad=True)
            logits = self.model(**inputs, headatlas_gates=gates).logits
            token_loss = torch.nn.functional.cross_entropy(
                logits.transpose(1, 2), labels, ignore_index=IGNORE, reduction="none")
            scored = (labels != IGNORE).sum(1).clamp_min(1)
            (token_loss.sum(1) / scored).sum().backward()
            total += gates.grad.abs().sum(0).to(torch.float64)
            count += len(batch)
        return (total / count).numpy()


class SquadHeads(HeadTask):
    """A SQuAD v1.1 model: units are questions, the score the official F1 (%).

    Importance is estimated on the same questions (SQuAD has no second labelled
    split here), with the span loss of the first gold answer (start + end
    cross-entropy / 2; windows without the answer point at ``[CLS]``).
    """

    definition = TASKS["squad"]  # its untrained floor: intact F1 below 20, never learnt SQuAD
    metric = definition.metric
    unit = definition.unit
    settings = ("source", "max_examples", "batch_size")

    def __init__(self, model, tokenizer, examples: Sequence, batch_size: int = 32,
                 max_length: int = 384, stride: int = 128, max_answer_length: int = 30,
                 description: str = ""):
        from headatlas.tasks.squad import squad_windows

        super().__init__(model)
        self.description = description
        self.examples = list(examples)
        self.windows = squad_windows(tokenizer, self.examples, max_length, stride)
        self.batch_size, self.max_answer_length = batch_size, max_answer_length
        self.sizes = np.ones(len(self.examples))
        _no_grad_params(model)

    @classmethod
    def from_records(cls, model, tokenizer, examples, *, source: str = "", max_examples: int | None = None,
                     batch_size: int = 32, max_length: int = 384, stride: int = 128,
                     max_answer_length: int = 30) -> "SquadHeads":
        """The QA model on the first ``max_examples`` SQuAD ``examples`` (of the file ``source``),
        windows shaped by the task's options (``ablation.squad``)."""
        examples = list(examples)[:max_examples]
        described = f"SQuAD v1.1 F1 on {len(examples)} questions of {source} (importance on the same)"
        return cls(model, tokenizer, examples, batch_size, max_length, stride, max_answer_length,
                   description=described)

    @inference_mode
    def scores(self, gates: torch.Tensor) -> UnitScores:
        from headatlas.tasks.squad import f1_score, metric_max_over_ground_truths, squad_predictions

        gates = gates.to(torch.float32)
        predictions = squad_predictions(self.model, self.windows, self.examples, self.batch_size,
                                        lambda _: {"headatlas_gates": gates}, self.max_answer_length)
        f1 = [metric_max_over_ground_truths(f1_score, predictions.get(e.id, ""), e.answers)
              for e in self.examples]
        return UnitScores(np.asarray(f1, dtype=float), self.sizes)

    def _positions(self, window) -> tuple[int, int]:
        example = self.examples[window.example]
        start = example.answer_starts[0]
        end = start + len(example.answers[0])
        first = last = 0
        for i, span in enumerate(window.spans):
            if span is None:
                continue
            if span[0] <= start < span[1] or (first == 0 and span[0] >= start and span[1] <= end):
                first = first or i
            if span[0] < end <= span[1]:
                last = i
        return (first, last) if first and last >= first else (0, 0)

    def importance(self, progress: bool = False) -> np.ndarray:
        from headatlas.encoders.batching import to_device
        from headatlas.encoders.models import takes_token_types
        from headatlas.tasks.squad import _pad_windows

        segments = takes_token_types(self.model)
        total = torch.zeros(self.n_layers, self.n_heads, dtype=torch.float64)
        pad = self.model.config.pad_token_id or 0
        starts = range(0, len(self.windows), self.batch_size)
        for start in tqdm(starts, desc="importance", disable=not progress, mininterval=2):
            batch = self.windows[start:start + self.batch_size]
            inputs, _ = _pad_windows(batch, pad)
            if not segments:  # as squad_predictions does
                inputs.pop("token_type_ids")
            inputs = to_device(inputs, self.device)
            positions = torch.tensor([self._positions(w) for w in batch], device=self.device)
            gates = torch.ones(len(batch), self.n_layers, self.n_heads, requires_grad=True)
            out = self.model(**inputs, headatlas_gates=gates)
            loss = (torch.nn.functional.cross_entropy(out.start_logits, positions[:, 0], reduction="none")
                    + torch.nn.functional.cross_entropy(out.end_logits, positions[:, 1], reduction="none")) / 2
            loss.sum().backward()
            total += gates.grad.abs().sum(0).to(torch.float64)
        return (total / len(self.windows)).numpy()


# The scorer of each registered task, by the task's name (headatlas.tasks.TASKS).
HEAD_TASKS: dict[str, type[HeadTask]] = {"upos": TaggingHeads, "squad": SquadHeads}


# ----------------------------------------------------------------------------
# the experiments
# ----------------------------------------------------------------------------

def normalise_by_layer(importance: np.ndarray) -> np.ndarray:
    """Each layer's scores divided by their l2 norm (Michel et al. after Molchanov et al. 2017)."""
    norm = np.sqrt((np.asarray(importance, dtype=float) ** 2).sum(axis=-1, keepdims=True))
    return np.divide(importance, norm, out=np.zeros_like(importance, dtype=float), where=norm > 0)


class Scorer:
    """Scores gate patterns once each (identical patterns are reused), with the intact score first."""

    def __init__(self, task: HeadTask):
        self.task = task
        self._done: dict[bytes, UnitScores] = {}
        self.evaluations = 0
        self.base = self(task.ones())

    def __call__(self, gates: torch.Tensor) -> UnitScores:
        key = gates.to(torch.float32).numpy().tobytes()
        if key not in self._done:
            self._done[key] = self.task.scores(gates)
            self.evaluations += 1
        return self._done[key]


def disable_heads(scorer: Scorer, n_boot: int = 1000, seed: int = 0,
                  progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every head, then every layer, disabled alone: the change in the task score.

    Returns
    -------
    heads : per head ``layer``, ``head``, ``score`` (%), ``delta`` (points, ablated
        minus intact), ``ci_low``, ``ci_high`` (paired bootstrap 95%), ``improves``
        (delta > 0), ``significant`` (the interval excludes 0).
    layers : the same per layer, every head of the layer disabled.
    """
    task, base = scorer.task, scorer.base
    single, whole = [], []
    grid = [(layer, head) for layer in range(task.n_layers) for head in range(task.n_heads)]
    for layer, head in tqdm(grid, desc="single heads", disable=not progress, mininterval=2):
        gates = task.ones()
        gates[layer, head] = 0
        single.append(scorer(gates))
    for layer in range(task.n_layers):
        gates = task.ones()
        gates[layer] = 0
        whole.append(scorer(gates))
    return (_delta_table(single, base, n_boot, seed, head_table(task.n_layers, task.n_heads)),
            _delta_table(whole, base, n_boot, seed,
                         pd.DataFrame({"layer": np.arange(1, task.n_layers + 1)})))


def _delta_table(variants: Sequence[UnitScores], base: UnitScores, n_boot: int, seed: int,
                 table: pd.DataFrame) -> pd.DataFrame:
    diff = np.stack([v.score - base.score for v in variants], axis=1)  # [units, variants]
    low, high = bootstrap_ratio(diff, base.size, n_boot=n_boot, seed=seed)
    table = table.copy()
    table["score"] = [v.value for v in variants]
    table["delta"] = table["score"] - base.value
    table["ci_low"], table["ci_high"] = 100 * np.asarray(low), 100 * np.asarray(high)
    table["improves"] = table["delta"] > 0
    table["significant"] = (table["ci_low"] > 0) | (table["ci_high"] < 0)
    return table


def pruning_order(importance: np.ndarray, order: str, seed: int = 0) -> np.ndarray:
    """Flat head indices (layer-major) in the order they are removed.

    ``importance``: least important first (ties: layer-major order);
    ``reverse``: most important first; ``random``: a seeded permutation.
    """
    flat = np.asarray(importance, dtype=float).ravel()
    if order == "importance":
        return np.argsort(flat, kind="stable")
    if order == "reverse":
        return np.argsort(-flat, kind="stable")
    if order == "random":
        return np.random.default_rng(seed).permutation(flat.size)
    raise ValueError(f"unknown pruning order {order!r}; use one of {ORDERS}")


def pruning_curves(scorer: Scorer, importance: np.ndarray, shares: Sequence[float],
                   seeds: Sequence[int] = (0, 1, 2), progress: bool = False) -> pd.DataFrame:
    """Task score after removing each share of the heads, in each order.

    One row per (order, seed, share): ``order``, ``seed`` (random order only,
    else -1), ``share_pct``, ``heads_removed``, ``score``, ``delta``.
    """
    task = scorer.task
    n = task.n_layers * task.n_heads
    runs = [("importance", -1), ("reverse", -1)] + [("random", s) for s in seeds]
    rows = []
    todo = [(order, seed, share) for order, seed in runs for share in shares]
    for order, seed, share in tqdm(todo, desc="pruning", disable=not progress, mininterval=2):
        removed = pruning_order(importance, order, max(seed, 0))[:int(round(share * n))]
        gates = task.ones().ravel()
        gates[torch.as_tensor(removed, dtype=torch.long)] = 0
        value = scorer(gates.view(task.n_layers, task.n_heads)).value
        rows.append({"order": order, "seed": seed, "share_pct": round(100 * share, 1),
                     "heads_removed": len(removed), "score": value,
                     "delta": value - scorer.base.value})
    return pd.DataFrame(rows)


def prunable_share(curves: pd.DataFrame, tolerance: float = 1.0, order: str = "importance") -> float:
    """Largest share (%) whose score, and that of every smaller share, is within ``tolerance`` points.

    For the random order, the mean curve over seeds is used.
    """
    curve = curves[curves["order"] == order].groupby("share_pct")["delta"].mean().sort_index()
    within = (curve >= -tolerance).to_numpy()
    if not within.size or not within[0]:
        return 0.0
    last = np.argmin(within) - 1 if not within.all() else len(within) - 1
    return float(curve.index[last])


def heads_table(importance: np.ndarray, single: pd.DataFrame) -> pd.DataFrame:
    """Per head: raw and layer-normalised importance, its rank (1 = most important), single-head change."""
    normalised = normalise_by_layer(importance)
    table = head_table(importance.shape[0], importance.shape[1], importance_raw=importance,
                       importance=normalised)
    table["rank"] = table["importance"].rank(ascending=False, method="first").astype(int)
    return table.merge(single, on=["layer", "head"])


# Heads dormant on at least this share of the inputs are "often dormant" (a head dormant on one
# input in a thousand is no dormant head: MiniLM's tagger's most important head is one such).
OFTEN = 0.1
DORMANT, AWAKE = f"dormant on >= {OFTEN:.0%} of inputs", "dormant less often or never"


def compare(heads: pd.DataFrame, types: pd.DataFrame | None, patterns: pd.DataFrame | None,
            top_share: float = 0.1, activations: pd.DataFrame | None = None) -> pd.DataFrame:
    """Importance and single-head change by Guan et al.'s head type, by Kovaleva et al.'s pattern
    and by whether the head is ever dormant (Guo et al.: attention on a sink, output near zero).

    One row per (``by``, ``group``): ``heads``, ``mean_importance`` (layer-normalised),
    ``mean_delta`` (points), ``significant_drops`` (heads whose removal lowers the score with
    an interval below 0), ``top_heads`` (of the ``top_share`` most important heads, how many
    are in the group). ``by`` is ``type`` (head types), ``pattern`` (each head's dominant pattern
    on the task's data) or ``output`` (:data:`DORMANT` if the activations table's
    ``dormant_rate`` is at least :data:`OFTEN`, else :data:`AWAKE`). Missing tables are skipped.
    """
    n_top = max(1, int(round(top_share * len(heads))))
    rows = []
    if activations is not None:
        activations = activations.assign(
            dormancy=np.where(activations["dormant_rate"] >= OFTEN, DORMANT, AWAKE))
    for by, table, column in (("type", types, "type"), ("pattern", patterns, "dominant"),
                              ("output", activations, "dormancy")):
        if table is None:
            continue
        for group, part in beside(heads, table, column, by).groupby(column, sort=True):
            rows.append({"by": by, "group": group, "heads": len(part),
                         "mean_importance": part["importance"].mean(),
                         "mean_delta": part["delta"].mean(),
                         "significant_drops": int((part["ci_high"] < 0).sum()),
                         "top_heads": int(part["rank"].le(n_top).sum()), "top_n": n_top})
    return pd.DataFrame(rows)


def output_rho(heads: pd.DataFrame, activations: pd.DataFrame) -> float:
    """Spearman ρ between each head's output norm relative to its layer's median head (rule
    activations' ``relative_output``) and its importance: > 0 when the heads that output little
    (dormant heads' mark) matter little."""
    merged = beside(heads, activations, "relative_output", "activations")
    return spearman(merged["relative_output"], merged["importance"])


def beside(heads: pd.DataFrame, table: pd.DataFrame, column: str, what: str) -> pd.DataFrame:
    """``heads`` with ``table``'s ``column`` joined by (layer, head); ValueError unless ``table``
    (named ``what``) covers every head."""
    merged = heads.merge(table[["layer", "head", column]], on=["layer", "head"], how="inner")
    if len(merged) != len(heads):
        raise ValueError(f"the {what} table covers {len(merged)} of {len(heads)} heads")
    return merged


def spearman(a: Iterable[float], b: Iterable[float]) -> float:
    """Spearman rank correlation (average ranks for ties)."""
    a, b = pd.Series(list(a)).rank(), pd.Series(list(b)).rank()
    return float(np.corrcoef(a, b)[0, 1])


def chance_gains(n: int, side: float = 0.025, alpha: float = 0.05) -> int:
    """The fewest significant gains among ``n`` single-head removals that chance alone reaches
    with probability below ``alpha``.

    With no real effect, each 95% interval lies above 0 with probability ``side`` (2.5%); taking
    the removals as independent, the count is Binomial(n, side), and the answer is the smallest
    k with P(X >= k) < alpha (72 heads: 5, as P(X >= 4) = 10.6% and P(X >= 5) = 3.4%).
    """
    from scipy.stats import binom

    k = 0
    while binom.sf(k - 1, n, side) >= alpha:
        k += 1
    return k


def paper_claims(heads: pd.DataFrame, layers: pd.DataFrame, curves: pd.DataFrame, base: float,
                 metric: str, tolerance: float, note: str, task: str | Task | None = None,
                 claim_tolerance: float = CLAIM_TOLERANCE_PCT) -> list[Claim]:
    """Kovaleva et al.'s and Michel et al.'s claims about disabling heads, beside ours.

    ``task``: the registered task scored; when the intact ``metric`` is below its
    :attr:`~headatlas.tasks.base.Task.untrained_floor` (SQuAD: F1 20) the task model never learnt
    its task, and every claim is not applicable, saying so, instead of a verdict on noise. Likewise when
    the intact score is less than :data:`headatlas.interventions.ablation.MIN_CONTRIBUTION` point above the
    score with every head removed (the pruning curves' 100%): attention contributes nothing
    measurable, so every head is "harmless" and "prunable" whatever the heads do (issue 23 item 1).
    The prunable share is judged within ``claim_tolerance`` % of what attention gives (intact minus
    every head removed; :data:`CLAIM_TOLERANCE_PCT`); ``tolerance`` (points) is printed beside it.

    Returns
    -------
    list[Claim]
        One :class:`~headatlas.claims.Claim` per finding
        (:func:`~headatlas.claims.claims_table` makes them a ``paper_claims.csv`` table).
    """
    from dataclasses import replace

    from headatlas.interventions.ablation import MIN_CONTRIBUTION, UNTRAINED, contribution_missing
    from headatlas.claims import NOT_APPLICABLE

    found = [replace(c, rule=f"{c.rule}; not applicable if the intact score is less than "
                     f"{MIN_CONTRIBUTION:g} point above every head removed (attention contributes "
                     "nothing measurable)") for c in _claims(heads, layers, curves, base, metric,
                                                              tolerance, note, claim_tolerance)]
    task = get_task(task) if task is not None else None
    low = task.untrained({metric: base}) if task is not None else []
    if low:
        why = f"{UNTRAINED} (intact {low[0]}: below {task.baseline_text([metric])})"
        return [replace(c, verdict=NOT_APPLICABLE, rule=f"{c.rule}; not applicable if the intact {metric} "
                        f"is below {task.untrained_floor[metric]:g} (untrained)", note=f"{why}; {c.note}")
                for c in found]
    missing = contribution_missing(base, all_removed(curves))
    if missing is None:
        return found
    return [replace(c, verdict=NOT_APPLICABLE, note=f"not applicable: {missing}; {c.note}") for c in found]


def all_removed(curves: pd.DataFrame) -> float:
    """The score with every head removed (the curves' 100% step), NaN if the curves stop short."""
    full = curves.loc[curves["share_pct"] == 100, "score"]
    return float(full.iloc[0]) if len(full) else float("nan")


def _claims(heads: pd.DataFrame, layers: pd.DataFrame, curves: pd.DataFrame, base: float,
            metric: str, tolerance: float, note: str, claim_tolerance: float) -> list[Claim]:
    n = len(heads)
    better = int(heads["improves"].sum())
    better_sig = int(((heads["ci_low"] > 0)).sum())
    drops = int((heads["ci_high"] < 0).sum())
    harmless = n - drops
    floor = all_removed(curves)
    # The claim's tolerance is a share of what attention gives: a tagger keeps most of its accuracy
    # without any head, so the same points are a larger share of a smaller contribution. Without
    # a measured floor, the points of ``tolerance`` decide.
    relative = not undefined(floor) and base - floor > 0
    points = claim_tolerance * (base - floor) / 100 if relative else tolerance
    prunable = prunable_share(curves, points)
    random_prunable = prunable_share(curves, points, "random")
    within = (f"{points:.2f} point(s) of {metric} = {claim_tolerance:g}% of what attention gives "
              f"(intact {base:.2f}, every head removed {floor:.2f}); within {tolerance:g} point(s): "
              f"{prunable_share(curves, tolerance):.0f}%" if relative else f"{points:g} point(s) of {metric}")
    mid = curves[(curves["share_pct"] > 0) & (curves["share_pct"] < 100)]
    by_order = mid.groupby("order")["score"].mean()
    gap = float(by_order.get("importance", np.nan) - by_order.get("random", np.nan))
    return [
        Claim("kovaleva.s6.disabling_improves", "Kovaleva et al. 2019 §6, Fig. 7",
              "disabling some single heads improves the fine-tuned model",
              "gains up to 3.2% on GLUE tasks when one head is disabled",
              f"{better} of {n} single-head removals raise {metric} (point estimate); {better_sig} "
              "with a paired 95% interval above 0", verdict(better_sig >= chance_gains(n)),
              f"at least {chance_gains(n)} removals raise the score with a bootstrap interval above 0 "
              f"(fewer happen by chance with probability >= 5% among {n} heads at 2.5% each)", note),
        Claim("michel.s3.single_heads_harmless", "Michel et al. 2019 §3, Table 2",
              "most heads can be removed alone without a significant drop",
              "most heads (BERT on MNLI: only a few significant changes)",
              f"{harmless} of {n} heads ({100 * harmless / n:.0f}%) without a significant drop",
              verdict(harmless / n > 0.5), "> 50% of single-head removals with an interval not below 0",
              note),
        Claim("michel.s4.prunable_share", "Michel et al. 2019 §4.2, Fig. 4",
              "a large share of heads can be pruned by importance with little loss",
              f"about {PAPER_PRUNABLE:.0f}% of BERT's heads on MNLI",
              f"{prunable:.0f}% prunable for <= {within} (random order: {random_prunable:.0f}%)",
              verdict(prunable >= PAPER_PRUNABLE - 10),
              f"largest share within {claim_tolerance:g}% of what attention gives (intact minus every "
              f"head removed; the paper's ~1 point of MNLI is ~2% of BERT's gap above chance), "
              f"importance order, >= {PAPER_PRUNABLE - 10:.0f}% (the paper's 40% less one 10% step)",
              note),
        Claim("michel.s4.importance_beats_random", "Michel et al. 2019 §4.1",
              "pruning by importance keeps more of the score than pruning at random",
              "importance order tracks the best order (pruning by accuracy difference)",
              f"mean {metric} over shares 10-90%: importance order {by_order.get('importance', np.nan):.1f}, "
              f"random {by_order.get('random', np.nan):.1f}, reverse {by_order.get('reverse', np.nan):.1f}",
              verdict(None if np.isnan(gap) else gap > 0),
              "mean score over the shares 10-90%: importance order > random order", note),
    ]


# ----------------------------------------------------------------------------
# the rule's job
# ----------------------------------------------------------------------------

def run_experiments(task: HeadTask, shares: Sequence[float], seeds: Sequence[int],
                    tolerance: float = 1.0, n_boot: int = 1000, seed: int = 0,
                    name: str = "", progress: bool = True,
                    claim_tolerance: float = CLAIM_TOLERANCE_PCT) -> Result:
    """Single-head and whole-layer disabling, importance, pruning curves; the claims and a caption.

    Returns
    -------
    Result
        ``tables``: ``heads`` (per head: importance, single-head change; :data:`ATLAS`),
        ``layers`` (per layer: whole-layer change), ``curves`` (pruning curves), ``summary``
        (``quantity, value``; the first row is the intact score); ``claims``; ``attrs``:
        ``metric``, ``task`` (the registered task's name, None for a hand-made one), ``caption``.
    """
    scorer = Scorer(task)
    log.info("intact %s: %.3f%%", task.metric, scorer.base.value)
    importance = task.importance(progress)
    single, layers = disable_heads(scorer, n_boot, seed, progress)
    heads = heads_table(importance, single)
    curves = pruning_curves(scorer, heads_matrix(heads, "importance", task), shares, seeds, progress)
    prunable = prunable_share(curves, tolerance)
    counts = Counter({"improves": int(heads["improves"].sum()),
                      "improves_significant": int((heads["ci_low"] > 0).sum()),
                      "drops_significant": int((heads["ci_high"] < 0).sum())})
    summary = pd.DataFrame({"quantity": [
        f"intact_{task.metric}", "units", "evaluations", "single_removals_improve",
        "single_removals_improve_significant", "single_removals_drop_significant",
        f"prunable_share_pct_within_{tolerance:g}", "prunable_share_pct_random_mean",
        "spearman_importance_vs_minus_delta", "max_single_gain", "max_single_drop",
        f"all_heads_removed_{task.metric}"],
        "value": [round(scorer.base.value, 4), task.sizes.size, scorer.evaluations, counts["improves"],
                  counts["improves_significant"], counts["drops_significant"], prunable,
                  prunable_share(curves, tolerance, "random"),
                  round(spearman(heads["importance"], -heads["delta"]), 4),
                  round(float(heads["delta"].max()), 4), round(float(heads["delta"].min()), 4),
                  round(all_removed(curves), 4)]})
    note = (f"{name}: {task.description}; deviations: Kovaleva et al. and Michel et al. used "
            "BERT-base on GLUE (MNLI)")
    caption = (f"Task model {name}, {task.description}; intact {task.metric} "
               f"{scorer.base.value:.2f}%. Heads disabled by a gate of 0 on their output (Michel et "
               f"al.'s xi_h); paired bootstrap 95% intervals over {task.sizes.size} {task.unit} "
               f"({n_boot} resamples); importance I_h = E|dL/dxi_h| normalised per layer (l2); "
               f"pruning in {len(shares)} steps, random order over seeds {list(seeds)}. Paper: "
               "Kovaleva et al. 2019 and Michel et al. 2019 on BERT-base fine-tuned on GLUE.")
    found = paper_claims(heads, layers, curves, scorer.base.value, task.metric, tolerance, note,
                         task.definition, claim_tolerance)
    return Result(tables={"heads": heads, "layers": layers, "curves": curves, "summary": summary},
                  claims=found, attrs={"task": task.definition.name if task.definition else None,
                                       "metric": task.metric, "caption": caption})


def heads_matrix(heads: pd.DataFrame, column: str, task: HeadTask) -> np.ndarray:
    """A per-head column as ``[layers, heads]`` (rows are layer-major)."""
    ordered = heads.sort_values(["layer", "head"])
    return ordered[column].to_numpy(dtype=float).reshape(task.n_layers, task.n_heads)


def build_task(task: str | Task, spec: dict, data, *, corpus: str = "", split: str = "test",
               importance_split: str = "dev", max_examples: int | None = None,
               max_length: int = 128, batch_size: int = 32,
               options: dict | None = None) -> HeadTask:
    """The task model of the ``ablation`` config as a :class:`HeadTask` (:data:`HEAD_TASKS`).

    ``task`` is a registered task or its name; ``data`` its data file (read by the task's
    reader); the settings go to the scorer that takes them (its ``settings``), ``options`` are
    the task's own (:attr:`~headatlas.tasks.base.Task.options`). upos: the first
    ``max_examples`` sentences of ``split`` are scored, packed as in fine-tuning, and the
    importance is estimated on ``importance_split``. squad: the first ``max_examples``
    questions serve both.
    """
    from headatlas.encoders.models import resolve
    from headatlas.interventions.grid import load_task_model

    task = get_task(task)
    if task.name not in HEAD_TASKS:
        raise NotImplementedError(f"no head scorer for task {task.name!r} (headatlas.interventions."
                                  f"importance.HEAD_TASKS has {sorted(HEAD_TASKS)})")
    kind = HEAD_TASKS[task.name]
    source, revision = resolve(spec)
    model, tokenizer = load_task_model(task, source, revision)
    settings = {"source": str(data), "corpus": corpus, "split": split, "importance_split": importance_split,
                "max_examples": max_examples, "max_length": max_length, "batch_size": batch_size}
    return kind.from_records(model, tokenizer, task.read(data, options),
                            **select(kind.settings, settings, task.code_options(options)))


# ----------------------------------------------------------------------------
# the head atlas
# ----------------------------------------------------------------------------

MICHEL = "Michel et al. 2019"
KOVALEVA = "Kovaleva et al. 2019"
# What the per-head table (heads.csv) adds to the head atlas (headatlas.report.atlas): a property
# of the head in the task model, the same under either weighting of the maps.
ATLAS = {
    "heads": HeadColumns("importance", f"{MICHEL}; {KOVALEVA} §6", rank=90, weighting=INDEPENDENT, columns=(
        Column("importance", "importance", "normalised per layer",
               "Michel et al.'s I_h = E|dL/dξ_h| on the task's dev data, l2-normalised per layer"),
        Column("importance_rank", "rank", "rank", "rank of I_h over all heads (1 = least important)"),
        Column("disable_score", "score", "task score", "the task score with this head disabled"),
        Column("disable_delta", "delta", "points", "change of the task score when this head alone "
               "is disabled", "Kovaleva: disabling single heads can raise the score"),
        Column("disable_ci_low", "ci_low", "points", "paired bootstrap 95% interval, low"),
        Column("disable_ci_high", "ci_high", "points", "paired bootstrap 95% interval, high"),
        Column("disable_significant", "significant", "bool", "the interval excludes 0"),
    )),
}
