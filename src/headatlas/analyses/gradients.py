"""Gradient-based importance of attention to [SEP], punctuation and other tokens (Clark §3.2, Fig. 3).

For every attention weight a_ij (the post-softmax probability of query i on
key j, in every head), we take |dL/da_ij|: how much the model's own training
loss L would change if that single weight changed, holding the others fixed.
These are averaged per head and per layer, separately for keys that are
``[SEP]``, ``.``/``,`` and every other token — "other" is every real
(unmasked, i.e. non-padding) key that is neither, ``[CLS]`` included, as in the
paper's Fig. 3; ``[CLS]`` keys are also reported on their own. Clark et al.
find the [SEP] gradients very small from layer 5 on, where attention to [SEP]
is high: attending to [SEP] would be a "no-op".

The same forward passes also give the attention itself, averaged the same way
(``attn_sep``, ...: mean mass per query token on keys of each kind), so the
claim that the [SEP] gradient is small *where attention to [SEP] is high*
compares gradients and attention of the very same inputs. (With the
contrastive loss those inputs are ``[CLS] A [SEP]`` and ``[CLS] B [SEP]``, not
the two-segment inputs of the attention store.)

This needs gradients, so the model is re-run on the corpus (the attention
store cannot be used). The loss is the model's pretraining objective:

* ``mlm`` (a checkpoint with a masked-LM head, e.g. bert-base-cased): BERT's
  masking — 15% of the non-special wordpieces of each ``[CLS] A [SEP] B [SEP]``
  segment (at least one), of which 80% become ``[MASK]``, 10% a random
  token, 10% stay — seeded per example. The loss of a segment is the mean
  cross-entropy over its masked tokens.
* ``contrastive`` (a sentence-embedding model without that head, e.g. MiniLM
  from sentence-transformers): each segment's halves A and B are encoded
  separately as ``[CLS] A [SEP]`` and ``[CLS] B [SEP]``, mean-pooled (padding
  excluded), and the in-batch cross-entropy over scaled cosine similarities
  (scale 20, as in sentence-transformers' MultipleNegativesRankingLoss) is
  taken in both directions (A->B and B->A, averaged), so A and B inputs are
  treated alike.

Batch-size choices: both losses are *summed* over the examples (segments or
pairs) of a batch rather than averaged, so a weight's gradient does not
shrink with the batch size; with ``mlm`` the examples of a batch do not
interact, so the result equals running one segment at a time. The model is in
eval mode (no dropout), so gradients are deterministic.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from headatlas.analyses.base import describe, length_text
from headatlas.analyses.result import Result
from headatlas.claims import PAPER_LAYERS, Claim, against, depth_layers, depth_text, holds_if, span_text
from headatlas.corpora.records import Sentence
from headatlas.errors import ModelError
from headatlas.heads import ATTENTION_ONLY, Column, HeadColumns, head_table
from headatlas.io import atomic_open
from headatlas.encoders.lazy import lazy_import
from headatlas.store.example import token_masks

if TYPE_CHECKING:
    from headatlas.encoders.inputs import Encoded
    from headatlas.encoders.models import LoadedModel

# Used only by gradients_importance (the encoders too, imported where it runs them): the
# figure's and the claims' rules read tables and need none of it.
torch = lazy_import("torch")
F = lazy_import("torch.nn.functional")

LOSSES = ("auto", "mlm", "contrastive")
# Key token kinds: sep, punct and other partition the real keys ([CLS] is part of other, as in
# the paper's Fig. 3); cls is also kept on its own.
KINDS = ("sep", "punct", "cls", "other")
ATTENTION = tuple(f"attn_{kind}" for kind in KINDS)  # mean attention on each kind, same inputs
MASK_RATE = 0.15  # BERT: share of wordpieces to predict ...
MASK_SPLIT = (0.8, 0.1)  # ... of which 80% [MASK], 10% random, 10% unchanged
SCALE = 20.0  # sentence-transformers' MultipleNegativesRankingLoss scale
PAPER_FROM_LAYER = 5  # "starting in layer 5 ... the gradients for attention to [SEP] become very small"
_HEAD_ARCHITECTURES = ("ForMaskedLM", "ForPreTraining")
LOSS_TEXT = {
    "mlm": "loss: masked-LM with BERT's 15% masking (80/10/10), seed {seed}",
    "contrastive": "loss: in-batch contrastive (scale 20, symmetric, mean-pooled [CLS] A [SEP] vs "
                   "[CLS] B [SEP], batches of ~{batch_size} pairs); deviation: the paper used BERT's "
                   "masked-LM loss, this model has no masked-LM head",
}


def choose_loss(config, loss: str = "auto", masked_lm_head: bool | None = None) -> str:
    """``mlm`` or ``contrastive`` for a model config; ``auto`` asks whether the checkpoint has
    a trained masked-LM head.

    ``masked_lm_head``: whether its tensors include masked-LM head weights
    (:attr:`headatlas.encoders.capabilities.Capabilities.masked_lm_head`), which decides
    whatever ``architectures`` says (all-mpnet-base-v2's names ``MPNetForMaskedLM``
    and has no head). Only when the tensors could not be read (None) does ``auto``
    fall back to the class the checkpoint was saved from: ``...ForMaskedLM`` /
    ``...ForPreTraining`` means a head.
    """
    if loss not in LOSSES:
        raise ValueError(f"gradients loss {loss!r}: choose one of {LOSSES}")
    if loss != "auto":
        return loss
    if masked_lm_head is not None:
        return "mlm" if masked_lm_head else "contrastive"
    names = config.architectures or []
    return "mlm" if any(name.endswith(_HEAD_ARCHITECTURES) for name in names) else "contrastive"


def load_for_loss(name: str, spec: dict, loss: str = "auto",
                  device: str | None = None) -> tuple[LoadedModel, str]:
    """Load the model for ``loss``; for ``mlm`` the returned model is the ``...ForMaskedLM``.

    The encoder always comes from :func:`headatlas.encoders.models.load_model` (so
    ``random_init`` and the provenance work as in extraction); for ``mlm`` it
    replaces the base model inside the checkpoint's masked-LM model.

    Raises :class:`~headatlas.errors.ModelError` when ``mlm`` is asked for but
    the checkpoint has no trained masked-LM head.
    """
    from headatlas.encoders.capabilities import capabilities

    from headatlas.encoders.models import LoadedModel, load_masked_lm, load_model

    loaded = load_model(name, spec, device)
    loss = choose_loss(loaded.model.config, loss, capabilities(spec).masked_lm_head)
    if loss == "contrastive":
        return loaded, loss
    # The project's one loading door: the checkpoint checks, trust_remote_code=False, and a
    # ModelError naming the head weights the checkpoint lacks.
    mlm = load_masked_lm(name, spec, encoder=loaded.model)
    return LoadedModel(mlm, loaded.tokenizer, loaded.info), loss


def mask_tokens(input_ids: np.ndarray, candidates: np.ndarray, rng: np.random.Generator,
                vocab_size: int, mask_id: int) -> tuple[np.ndarray, np.ndarray]:
    """BERT's masking of one example.

    Parameters
    ----------
    input_ids : int array, shape [n]
    candidates : bool array, shape [n]
        Maskable positions (not ``[CLS]``/``[SEP]``).
    rng : the example's generator (seed it per example for batch-independent masks).

    Returns
    -------
    ids : int array [n]
        ``max(1, round(0.15 * #candidates))`` chosen positions: 80% ``mask_id``,
        10% a uniformly random id, 10% unchanged.
    labels : int array [n]
        The original id at the chosen positions, -100 (ignored) elsewhere.
    """
    where = np.flatnonzero(candidates)
    if where.size == 0:
        raise ValueError("no maskable token (the example has only special tokens)")
    chosen = rng.choice(where, size=max(1, round(MASK_RATE * where.size)), replace=False)
    ids, labels = input_ids.copy(), np.full_like(input_ids, -100)
    labels[chosen] = input_ids[chosen]
    u = rng.random(chosen.size)
    ids[chosen[u < MASK_SPLIT[0]]] = mask_id
    swap = chosen[(u >= MASK_SPLIT[0]) & (u < sum(MASK_SPLIT))]
    ids[swap] = rng.integers(0, vocab_size, swap.size)
    return ids, labels


def key_kinds(tokens: Sequence[str], cls_token: str = "[CLS]", sep_token: str = "[SEP]") -> np.ndarray:
    """``[n, 4]`` bool: which of :data:`KINDS` each token is as a key.

    ``sep``, ``punct`` and ``other`` partition the tokens (``other`` = neither
    [SEP] nor . or ,, so [CLS] included); ``cls`` marks [CLS] again. Uses the
    store's definitions (:func:`~headatlas.store.example.token_masks`), so
    "punctuation" means the same as in the surface analyses.
    """
    cls, sep, punct = token_masks(tokens, cls_token, sep_token)
    return np.stack([sep, punct, cls, ~(sep | punct)], axis=1)


def attention_gradients(model: torch.nn.Module, inputs: dict[str, torch.Tensor], loss_fn: Callable
                        ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """The loss, ``dL/d attention`` of every layer and the attention itself (each ``[batch, heads, T, T]``).

    ``loss_fn(outputs)`` maps the model's outputs (with ``attentions``) to a
    scalar. ``torch.autograd.grad`` on the returned attention tensors (the
    post-softmax probabilities that multiply the values under eager attention)
    gives the same as ``retain_grad()`` without accumulating parameter
    gradients. A layer the loss does not depend on gets zeros.
    """
    with torch.enable_grad():
        out = model(**inputs, output_attentions=True, return_dict=True)
        if not out.attentions or any(a is None or not a.requires_grad for a in out.attentions):
            raise ModelError("the model returned no differentiable attentions; load it with "
                             "attn_implementation='eager'")
        loss = loss_fn(out)
        grads = torch.autograd.grad(loss, out.attentions, allow_unused=True, materialize_grads=True)
    return loss.detach(), list(grads), [a.detach() for a in out.attentions]


def mlm_loss(out, labels: torch.Tensor) -> torch.Tensor:
    """Sum over examples of each example's mean cross-entropy on its masked tokens."""
    token_loss = F.cross_entropy(out.logits.transpose(1, 2), labels, ignore_index=-100,
                                 reduction="none")  # [batch, T], 0 where ignored
    counts = (labels != -100).sum(dim=1).clamp(min=1)
    return (token_loss.sum(dim=1) / counts).sum()


def contrastive_loss(out, attention_mask: torch.Tensor, scale: float = SCALE) -> torch.Tensor:
    """Symmetric in-batch InfoNCE of mean-pooled embeddings, summed over pairs.

    The batch holds the A inputs in its first half and their B partners in the
    second; pair i's positive is the other half's i-th row, the rest of that
    half are negatives.
    """
    mask = attention_mask.unsqueeze(-1).to(out.last_hidden_state.dtype)
    pooled = (out.last_hidden_state * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
    a, b = F.normalize(pooled, dim=-1).chunk(2)
    scores = scale * a @ b.T
    target = torch.arange(len(a), device=scores.device)
    return (F.cross_entropy(scores, target, reduction="sum")
            + F.cross_entropy(scores.T, target, reduction="sum")) / 2


class GradientSums:
    """Running sums of |gradient| and of attention per head and key kind; memory independent of the corpus.

    Its :meth:`state` (the four sums as numpy arrays) merges into another instance's
    (:meth:`merge`), as an analysis's does (:mod:`headatlas.analyses.base`): batches, or
    parts of a corpus run apart, add up to the sums of one run over all of them.
    """

    STATE = ("sums", "counts", "attention", "queries")

    def __init__(self, n_layers: int, n_heads: int):
        self.n_layers, self.n_heads = n_layers, n_heads
        self.sums = np.zeros((n_layers, n_heads, len(KINDS)))
        self.counts = np.zeros(len(KINDS))  # weights per head of each kind (same for every head)
        self.attention = np.zeros((n_layers, n_heads, len(KINDS)))  # attention mass on each kind
        self.queries = 0.0

    def add(self, grads: Sequence[torch.Tensor], queries: torch.Tensor, kinds: torch.Tensor,
            attentions: Sequence[torch.Tensor] | None = None) -> None:
        """Fold in one batch.

        Parameters
        ----------
        grads : per layer, ``[batch, heads, T, T]``
        queries : ``[batch, T]`` 1 for real (non-padding) query tokens
        kinds : ``[batch, T, 4]`` key kinds (:func:`key_kinds`), all 0 for padding keys
        attentions : per layer, ``[batch, heads, T, T]``, the attention of the same forward pass
        """
        q, k = queries.to(grads[0].dtype), kinds.to(grads[0].dtype)
        for layer, grad in enumerate(grads):
            self.sums[layer] += torch.einsum("bhqk,bq,bkc->hc", grad.abs(), q, k).double().cpu().numpy()
        self.counts += torch.einsum("bq,bkc->c", q, k).double().cpu().numpy()
        for layer, attn in enumerate(attentions or ()):
            self.attention[layer] += torch.einsum("bhqk,bq,bkc->hc", attn.to(q.dtype), q, k).double().cpu().numpy()
        self.queries += float(q.sum())

    def state(self) -> dict[str, np.ndarray]:
        """The sums so far: ``sums`` and ``attention`` ``[L, H, len(KINDS)]``, ``counts``
        ``[len(KINDS)]``, ``queries`` (a 0-d array)."""
        return {name: np.asarray(getattr(self, name), np.float64) for name in self.STATE}

    def merge(self, state: dict[str, np.ndarray]) -> "GradientSums":
        """Add another instance's :meth:`state` (same model shape) to this one's sums."""
        for name in self.STATE:
            setattr(self, name, getattr(self, name) + state[name])
        self.queries = float(self.queries)
        return self

    def result(self) -> Result:
        """``heads``, per head: mean |dL/da| over the weights on each kind of key (NaN if none
        seen), and ``attn_<kind>``: the mean attention mass a query puts on keys of that kind."""
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(self.counts > 0, self.sums / self.counts, np.nan)
            attention = self.attention / self.queries if self.queries else np.full_like(self.attention, np.nan)
        return Result({"heads": head_table(self.n_layers, self.n_heads,
                                           **{kind: means[..., c] for c, kind in enumerate(KINDS)},
                                           **{name: attention[..., c] for c, name in enumerate(ATTENTION)})})


def _batches(examples: list, batch_size: int, max_tokens: int | None = None, rows: int = 1,
             min_size: int = 1) -> list[list]:
    """Length-sorted batches of near-equal size (never a lone last example: the
    contrastive loss of a single pair has no negatives and is identically 0).

    ``max_tokens`` bounds what one forward and backward pass holds: a batch whose
    padded tokens (examples x ``rows`` input rows each, 2 for the contrastive halves, x
    the longest example's length) exceed ``max_tokens`` is split into the fewest
    near-equal parts that fit, each of at least ``min_size`` examples. Batches within
    the budget are left as they are, so a budget that never binds changes nothing.
    """
    ordered = sorted(examples, key=len)
    parts = np.array_split(np.arange(len(ordered)), math.ceil(len(ordered) / batch_size))
    batches = [[ordered[i] for i in part] for part in parts]
    if max_tokens is None:
        return batches
    out = []
    for batch in batches:
        width = max(len(e) for e in batch)
        fits = max(min_size, max_tokens // (rows * width))  # examples per pass within the budget
        pieces = min(math.ceil(len(batch) / fits), max(1, len(batch) // min_size))
        out += [[batch[i] for i in part] for part in np.array_split(np.arange(len(batch)), pieces)]
    return out


def _half(example: Encoded, sentence: Sentence, tokenizer, second: bool) -> Encoded:
    from headatlas.encoders.inputs import encode

    words = sentence.words_b if second else sentence.words
    return encode(tokenizer, Sentence(id=sentence.id, words=words), example.index)


def _kinds(batch: Sequence[Encoded], tokenizer, width: int) -> torch.Tensor:
    kinds = torch.zeros((len(batch), width, len(KINDS)), dtype=torch.bool)
    for row, example in enumerate(batch):
        tokens = tokenizer.convert_ids_to_tokens(example.input_ids)
        kinds[row, :len(example)] = torch.from_numpy(key_kinds(tokens, tokenizer.cls_token,
                                                               tokenizer.sep_token))
    return kinds


def _mlm_batch(batch, tokenizer, device, seed: int, vocab_size: int):
    from headatlas.encoders.inputs import collate

    inputs = collate(batch, tokenizer.pad_token_id or 0, device)
    labels = torch.full_like(inputs["input_ids"], -100)
    for row, example in enumerate(batch):
        ids = np.asarray(example.input_ids)
        rng = np.random.default_rng([seed, example.index])
        masked, targets = mask_tokens(ids, np.asarray(example.word_ids) >= 0, rng, vocab_size,
                                      tokenizer.mask_token_id)
        inputs["input_ids"][row, :len(ids)] = torch.from_numpy(masked)
        labels[row, :len(ids)] = torch.from_numpy(targets)
    return inputs, batch, lambda out: mlm_loss(out, labels.to(device))


def _contrastive_batch(batch, sentences, tokenizer, device):
    from headatlas.encoders.inputs import collate

    halves = [_half(e, sentences[e.index], tokenizer, second) for second in (False, True) for e in batch]
    inputs = collate(halves, tokenizer.pad_token_id or 0, device)
    return inputs, halves, lambda out: contrastive_loss(out, inputs["attention_mask"])


def gradient_importance(loaded: LoadedModel, loss: str, sentences: Sequence[Sentence], *,
                        corpus: str = "", loss_asked: str | None = None, max_length: int = 128,
                        batch_size: int = 16, max_examples: int | None = None, seed: int = 0,
                        max_batch_tokens: int | None = None, progress: bool = True) -> Result:
    """Mean |dL/d attention| per head and key kind over a corpus of segments.

    Parameters
    ----------
    loaded : the model from :func:`load_for_loss` (a ``...ForMaskedLM`` for ``mlm``).
    loss : ``mlm`` or ``contrastive`` (as returned by :func:`load_for_loss`).
    sentences : the corpus; ``contrastive`` needs segment pairs (``words_b``).
    corpus : the corpus's name, for the run record and the caption.
    loss_asked : the loss the config asked for (``auto``, ...), for the run record; default ``loss``.
    max_length : segments whose ``[CLS] A [SEP] B [SEP]`` encoding is longer are
        skipped (counted), exactly as in extraction, so N matches the store.
    max_examples : use the first this many (in corpus order) of the segments kept.
    seed : the masking seed (``mlm``); per example, so batches do not matter.
    max_batch_tokens : the memory budget, in padded tokens per forward and backward pass
        (``gradients.max_batch_tokens``): larger batches are split (:func:`_batches`).
        Peak memory grows with it (activations and the ``[batch, heads, T, T]``
        attentions and their gradients of every layer). ``mlm``: the result does not
        depend on it (examples do not interact); ``contrastive``: a split batch has
        fewer in-batch negatives.

    Returns
    -------
    :class:`~headatlas.analyses.result.Result` with one table, ``heads``, one row per
    head: ``layer``, ``head``, the mean |dL/da| on keys of each kind in :data:`KINDS`,
    and the mean attention on them (:data:`ATTENTION`) on the same inputs. Its ``attrs``
    are the run record (:func:`run_record`: model provenance, ``corpus``, ``lengths``,
    shape, ``loss``, ``loss_asked``, ``n_examples``, the options, ``mean_loss``,
    ``n_skipped_too_long``), then ``stats`` (kept and skipped examples, batches, the
    summed loss) and ``caption`` (:func:`caption`).
    """
    from headatlas.encoders.inputs import encode_corpus

    if loss not in ("mlm", "contrastive"):
        raise ValueError(f"loss must be 'mlm' or 'contrastive' here, got {loss!r}")
    tokenizer, model = loaded.tokenizer, loaded.model
    stats: Counter = Counter()
    kept, _ = encode_corpus(tokenizer, enumerate(sentences), max_length, stats)
    kept = kept[:max_examples]  # encode_corpus keeps corpus order
    if loss == "contrastive" and any(not sentences[e.index].words_b for e in kept):
        raise ValueError("the contrastive loss needs segment pairs (A and B); this corpus has "
                         "single sentences. Use a `kind: segments` corpus or loss: mlm")
    if len(kept) < (2 if loss == "contrastive" else 1):
        raise ValueError(f"{len(kept)} usable segments: too few for the {loss} loss")
    device = next(model.parameters()).device
    config = model.config
    sums = GradientSums(config.num_hidden_layers, config.num_attention_heads)
    batches = _batches(kept, batch_size, max_batch_tokens, rows=2 if loss == "contrastive" else 1,
                       min_size=2 if loss == "contrastive" else 1)
    for batch in tqdm(batches, desc=f"gradients ({loss})", disable=not progress, mininterval=2):
        if loss == "mlm":
            inputs, rows, loss_fn = _mlm_batch(batch, tokenizer, device, seed, config.vocab_size)
        else:
            inputs, rows, loss_fn = _contrastive_batch(batch, sentences, tokenizer, device)
        value, grads, attentions = attention_gradients(model, inputs, loss_fn)
        kinds = _kinds(rows, tokenizer, inputs["input_ids"].shape[1]).to(device)
        sums.add(grads, inputs["attention_mask"], kinds, attentions)
        stats["loss_sum"] += float(value)
        del value, grads, attentions, inputs, kinds  # freed before the next batch's forward pass
    stats["used"] = len(kept)
    stats["batches"] = len(batches)
    # What run.json records, in its order.
    n = len(kept)
    record = {**loaded.info, "corpus": corpus, "lengths": length_text([len(e) for e in kept]),
              "n_layers": config.num_hidden_layers, "n_heads": config.num_attention_heads,
              "loss": loss, "loss_asked": loss if loss_asked is None else loss_asked,
              "n_examples": n, "batch_size": batch_size, "seed": seed, "max_length": max_length,
              "max_batch_tokens": max_batch_tokens,
              "model_class": type(getattr(model, "base_model", model)).__name__,
              "lowercase": getattr(tokenizer, "do_lower_case", None),
              "mean_loss": stats["loss_sum"] / n, "n_skipped_too_long": stats["too_long"]}
    result = sums.result()
    result.attrs = {**record, "stats": dict(stats), "caption": caption(record)}
    return result


RESULT_ATTRS = ("stats", "caption")  # the attrs of gradient_importance's result not in run.json


def run_record(result: Result) -> dict:
    """What a :func:`gradient_importance` run used and gave (``run.json``): the model's
    provenance, the corpus, the shape, the loss (and the one asked for), N, the
    options, the mean loss per example and the segments skipped for length: its
    result's ``attrs`` but ``stats`` and ``caption``."""
    return {k: v for k, v in result.attrs.items() if k not in RESULT_ATTRS}


def write_run(record: dict, path: str | Path) -> None:
    """Write a :func:`run_record` as JSON, atomically."""
    with atomic_open(path) as handle:
        json.dump(record, handle, indent=1)


def read_run(path: str | Path) -> dict:
    """A :func:`run_record` written by :func:`write_run`."""
    with open(path) as handle:
        return json.load(handle)


def caption(record: dict) -> str:
    """Figure footnote of a run (:func:`run_record`): model, corpus, N, the loss and how it deviates."""
    return (f"{describe(record, record['n_examples'])}; {LOSS_TEXT[record['loss']].format(**record)}; "
            "mean |dL/da| per attention weight (eval mode, no dropout); 'other' = every real key but "
            "[SEP] and . , ([CLS] included, as in the paper), [CLS] also shown alone")


def layer_table(heads: pd.DataFrame) -> pd.DataFrame:
    """Per layer: mean over heads of each kind's |gradient|, ratios to 'other', attention to each sink.

    ``attention_to_<kind>`` (for the special kinds in :data:`SINK_KINDS`) is the
    layer's mean attention to that kind on the inputs the gradients came from
    (``attn_<kind>`` of :func:`gradient_importance`); ``sink`` is the kind that
    draws the most of it in the layer (the model's dominant sink there),
    ``sink_vs_other`` the gradient ratio of that kind. The ``paper`` column
    states the claim for the layers it covers (layer 5 of 12 onwards, by
    relative depth).
    """
    layers = heads.groupby("layer", as_index=False)[list(KINDS)].mean()
    for kind in ("sep", "punct", "cls"):
        layers[f"{kind}_vs_other"] = layers[kind] / layers["other"]
    for kind in SINK_KINDS:
        if f"attn_{kind}" in heads:
            layers[f"attention_to_{kind}"] = heads.groupby("layer")[f"attn_{kind}"].mean().to_numpy()
    _add_sink(layers)
    n_layers = int(layers["layer"].max())
    start, _ = depth_layers(PAPER_FROM_LAYER, PAPER_LAYERS, n_layers)
    layers["paper"] = np.where(layers["layer"] >= start, "[SEP] gradient very small (no-op)",
                               "[SEP] gradient not (yet) small")
    return layers


def _add_sink(layers: pd.DataFrame) -> None:
    """``sink`` and ``sink_vs_other`` from the ``attention_to_<kind>`` columns there are (in place)."""
    kinds = [k for k in SINK_KINDS if f"attention_to_{k}" in layers]
    if not kinds:
        layers["sink"], layers["sink_vs_other"] = "", np.nan
        return
    attention = layers[[f"attention_to_{k}" for k in kinds]].to_numpy(float)
    top = np.where(np.isnan(attention).all(axis=1), -1,
                   np.argmax(np.nan_to_num(attention, nan=-np.inf), axis=1))
    layers["sink"] = [kinds[i] if i >= 0 else "" for i in top]
    layers["sink_vs_other"] = [layers.at[r, f"{k}_vs_other"] if k else np.nan
                               for r, k in zip(layers.index, layers["sink"])]


CLARK_S32 = "Clark et al. 2019 §3.2"
SMALL_RATIO = 0.5  # "very small": the sink's gradient at most half that of other tokens
RHO_THRESHOLD = -0.5  # "small where attention to the sink is high": clearly negative rank correlation
RHO_ALPHA = 0.05  # ... and more negative than chance over so few layers (one-sided permutation p)


def knife_edge(p: float, n_layers: int) -> str:
    """A note when ``p`` sits near :data:`RHO_ALPHA` (within a factor of 2): over so few layers one
    layer's rank moved crosses the line, so the verdict is not robust."""
    if np.isnan(p) or not RHO_ALPHA / 2 <= p <= 2 * RHO_ALPHA:
        return ""
    return (f"; knife edge: p = {p:.4g} against {RHO_ALPHA} over {n_layers} layers, one layer's rank "
            "moved crosses it")


def spearman_less(x, y) -> tuple[float, float]:
    """Spearman rho of ``x`` and ``y`` and its one-sided p-value for rho < 0.

    Exact over all orderings of ``y`` up to 8 pairs (a few layers: the normal
    approximation is poor there), scipy's t approximation beyond; NaN when rho
    is undefined (fewer than 3 pairs, or a constant side).
    """
    import itertools

    from scipy.stats import rankdata, spearmanr

    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    rho = float(spearmanr(x, y).statistic)
    if len(x) > 8:
        return rho, float(spearmanr(x, y, alternative="less").pvalue)
    rx, ry = rankdata(x), rankdata(y)
    null = np.array([np.corrcoef(rx, np.array(p))[0, 1] for p in itertools.permutations(ry)])
    return rho, float(np.mean(null <= rho + 1e-12))
# Special kinds that can be a layer's sink, and how they are printed.
SINK_KINDS = ("sep", "cls", "punct")
SINK_LABELS = {"sep": "[SEP]", "cls": "[CLS]", "punct": ". ,"}


def paper_claims(layers: pd.DataFrame, loss: str) -> list[Claim]:
    """Clark §3.2's gradient claims beside ours, with verdicts (:class:`~headatlas.claims.Claim` records).

    "The sink" is the model's own, per layer (issue 23 item 4): the special kind
    ([SEP], [CLS], . ,) that draws the most attention in that layer
    (``sink`` of :func:`layer_table`); the paper's token, [SEP], is reported
    beside it.

    * ``sink_gradient_small`` — the sink's gradient is very small from layer 5
      of 12 on: over the layers from that relative depth on, the mean gradient
      on each layer's sink divided by the mean gradient on other keys is at most
      :data:`SMALL_RATIO` (the ratio printed is the ratio of the two means printed
      beside it);
    * ``sep_gradient_small`` — the same for [SEP], the paper's token, judged on
      the layers from layer 5 of 12 on where [SEP] is the sink; not applicable
      when it is the sink in none of them (the model's sink is named);
    * ``sink_gradient_where_attended`` (``sep_gradient_where_attended`` before 0.4: it tests the
      model's own sink) — the sink's gradient is small where
      attention to it is high: the Spearman correlation over layers between
      attention to the layer's sink and that sink's gradient ratio, both on the
      same inputs, is at most :data:`RHO_THRESHOLD`, with a one-sided p below
      :data:`RHO_ALPHA` (:func:`spearman_less`): over 3 layers rho = -0.5 comes
      from half of all orderings.

    Returns
    -------
    list[Claim]
        One :class:`~headatlas.claims.Claim` per finding
        (:func:`~headatlas.claims.claims_table` makes them a ``paper_claims.csv`` table).
    """
    layers = layers.copy()
    if "sink" not in layers:
        _add_sink(layers)
    n_layers = int(layers["layer"].max())
    start, _ = depth_layers(PAPER_FROM_LAYER, PAPER_LAYERS, n_layers)
    late, early = layers[layers["layer"] >= start], layers[layers["layer"] < start]

    def sink_gradient(part: pd.DataFrame) -> pd.Series:
        return pd.Series([part.at[r, k] if k else np.nan for r, k in zip(part.index, part["sink"])],
                         index=part.index, dtype=float)

    def ratio(part: pd.DataFrame, kind: str | None = None) -> str:
        if part.empty:
            return "no such layers"
        grad = sink_gradient(part) if kind is None else part[kind]
        name = sinks_text(part) if kind is None else SINK_LABELS[kind]
        return (f"{name} {grad.mean():.3g} vs other tokens {part['other'].mean():.3g} "
                f"(ratio {grad.mean() / part['other'].mean():.2f})")

    def sinks_text(part: pd.DataFrame) -> str:
        found = [SINK_LABELS.get(k, "?") for k in pd.unique(part["sink"])]
        return ("sink " + "/".join(found)) if found else "sink"

    late_ratio = sink_gradient(late).mean() / late["other"].mean() if len(late) else None
    note = f"{loss} loss" + (f"; {n_layers} layers: from layer {start}" if n_layers != PAPER_LAYERS else "")
    per_layer = ", ".join(f"{int(l)} {SINK_LABELS.get(k, 'n/a')}" for l, k in zip(layers["layer"], layers["sink"]))
    sep_late = late[late["sink"] == "sep"]
    sep_ratio = sep_late["sep"].mean() / sep_late["other"].mean() if len(sep_late) else None
    attention_to_sink = pd.Series([layers.at[r, f"attention_to_{k}"] if k else np.nan
                                   for r, k in zip(layers.index, layers["sink"])], index=layers.index)
    rho, rho_p = spearman_less(attention_to_sink, layers["sink_vs_other"])
    sep_beside = f"; the paper's [SEP] there: {ratio(late, 'sep')}" if len(late) else ""
    claims = [
        Claim("clark.s3_2.sink_gradient_small", CLARK_S32, "the gradient for attention to the sink is "
              "very small from layer 5 on (attending to the sink is a no-op)",
              "[SEP]: very small from layer 5 of 12 (Fig. 3)",
              f"{span_text((start, n_layers))}: {ratio(late)}; earlier: {ratio(early)}{sep_beside}",
              holds_if(None if late_ratio is None else late_ratio <= SMALL_RATIO, late_ratio),
              f"mean |dL/da| on each layer's sink (the special token it attends to most) over the layers "
              f"from {depth_text(5, 5)} on / the same mean on other keys <= {SMALL_RATIO}",
              f"{note}; sink per layer: {per_layer}"),
        Claim("clark.s3_2.sep_gradient_small", CLARK_S32, "the gradient for attention to [SEP] is very "
              "small from layer 5 on (attending to [SEP] is a no-op)", "very small from layer 5 of 12 (Fig. 3)",
              (f"{span_text((start, n_layers))}, where [SEP] is the sink ({_layers_list(sep_late)}): "
               f"{ratio(sep_late, 'sep')}") if len(sep_late) else
              f"[SEP] is the sink in no layer from layer {start} on (there: {ratio(late, 'sep')})",
              holds_if(None if sep_ratio is None else sep_ratio <= SMALL_RATIO, sep_ratio),
              f"mean |dL/da| on [SEP] / on other keys over the layers from {depth_text(5, 5)} on where "
              f"[SEP] draws more attention than [CLS] and . , <= {SMALL_RATIO} (not applicable where it "
              "never does)", f"{note}; sink per layer: {per_layer}"),
        Claim("clark.s3_2.sink_gradient_where_attended", CLARK_S32,
              "the sink's gradient is small where attention to it is high",
              "[SEP]: both change at layer 5 of 12",
              f"Spearman rho = {against(rho, RHO_THRESHOLD)} over {n_layers} layers (one-sided p = "
              f"{against(rho_p, RHO_ALPHA, 3, significant=True)})",
              holds_if(None if np.isnan(rho) else rho <= RHO_THRESHOLD and rho_p < RHO_ALPHA, rho_p),
              "Spearman rho over layers between attention to the layer's sink and that sink's "
              f"gradient ratio to other keys, both on the same inputs, <= {RHO_THRESHOLD} with a one-sided "
              f"p < {RHO_ALPHA} (exact over the layers' orderings up to 8 layers)",
              f"{note}; sink per layer: {per_layer}{knife_edge(rho_p, n_layers)}"),
    ]
    return claims


def _layers_list(part: pd.DataFrame) -> str:
    layers = [int(x) for x in part["layer"]]
    return ("layer " if len(layers) == 1 else "layers ") + ", ".join(map(str, layers))


# What the per-head gradients (heads.csv) add to the head atlas (headatlas.report.atlas).
ATLAS = {
    "heads": HeadColumns("gradients", CLARK_S32, rank=70, weighting=ATTENTION_ONLY, columns=(
        Column("grad_sep", "sep", "|dL/dα|", "gradient magnitude of the loss w.r.t. attention to [SEP]",
               "very small from layer 5 on (BERT-base)"),
        Column("grad_punct", "punct", "|dL/dα|", "... to '.' and ','"),
        Column("grad_cls", "cls", "|dL/dα|", "... to [CLS]"),
        Column("grad_other", "other", "|dL/dα|", "... to other tokens"),
    )),
}
