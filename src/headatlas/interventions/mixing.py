"""The context mixing benchmark's forward passes (issue 35): one sentence at a time through the
fine-tuned tagger, every measure of :mod:`headatlas.analyses.mixing` and the blank-out reference.

Per sentence of ``n`` wordpieces (``[CLS] s [SEP]``, no padding):

* one forward with hooks on each layer's value projection and post-attention LayerNorm gives α,
  the values, the layer inputs and the LayerNorm inputs: ``attention``, ``norm``, ``globenc``,
  ``alti`` (the decomposition is checked: ``Σ_j T_ij + b_O`` equals the LayerNorm's input);
* value zeroing: for each layer ``l``, ``n`` variants of the sentence, variant ``j`` with token
  ``j``'s value vectors zeroed at layer ``l`` (a hook on the value projection), run up to layer
  ``l``'s output and stopped there (the next layer's value projection raises): ``L·n`` variants,
  in batches;
* blank-out: ``n`` variants with token ``j`` replaced by the mask token, and ``n`` with it removed;
* gradient × input: one copy of the sentence per target token, one backward pass;
* deletion curves: per measure and target, the top ``k`` context tokens by the measure masked,
  ``k = 1..K`` (and a seeded random order, and blank-out's own order as the ceiling).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import torch

from headatlas.analyses.mixing import (HEADS, LAYERED, MEASURES, LayerParts, context_positions,
                                       context_rho, cosine_distances, decompose, layer_measures,
                                       layer_norm_input, readings)
from headatlas.errors import ModelError

log = logging.getLogger(__name__)
CHECK_TOLERANCE = 1e-3  # relative error of the rebuilt LayerNorm input: the layout does not hold
ORDERS = MEASURES + ("random", "blank_out")  # deletion orders: each measure, chance, the reference


class _Stop(Exception):
    """Raised by a hook once the layer a variant batch needs has run."""


@dataclass
class _Taps:
    """Hooks on every layer's value projection (its input and output) and LayerNorm (its input),
    counted in call order (a block shared across depth, ALBERT's, runs once per layer)."""

    record: bool = True
    zero_layer: int | None = None  # the layer whose value vectors the variants zero ...
    zero_tokens: torch.Tensor | None = None  # ... variant b zeroing token zero_tokens[b]
    stop_layer: int | None = None  # raise _Stop at this layer's value projection (its input kept)
    calls: int = 0
    norm_calls: int = 0
    inputs: list = field(default_factory=list)
    values: list = field(default_factory=list)
    norm_inputs: list = field(default_factory=list)
    ffn_sums: list = field(default_factory=list)
    stopped: torch.Tensor | None = None

    def reset(self, record: bool) -> None:
        self.record, self.calls, self.norm_calls, self.stopped = record, 0, 0, None
        self.inputs, self.values, self.norm_inputs, self.ffn_sums = [], [], [], []

    def before_value(self, module, args):
        if self.stop_layer is not None and self.calls == self.stop_layer:
            self.stopped = args[0]
            raise _Stop
        if self.record:
            self.inputs.append(args[0][0].detach())

    def after_value(self, module, args, output):
        layer, self.calls = self.calls, self.calls + 1
        if layer == self.zero_layer:
            output = output.clone()
            output[torch.arange(len(output), device=output.device), self.zero_tokens] = 0
        if self.record:
            self.values.append(output[0].detach())
        return output

    def before_norm(self, module, args):
        if self.record:
            self.norm_inputs.append(args[0][0].detach())

    def before_output_norm(self, module, args):
        if self.record:
            self.ffn_sums.append(args[0][0].detach())


@dataclass
class SentenceScores:
    """One sentence's agreement with blank-out: per reference ``[R, ...]`` Spearman ρ of each
    measure's final reading ``[R, M, T]``, of each layered measure's single layers and rollouts
    ``[R, Lm, L, T]`` (NaN where a target is not scored), the deletion curves' probability
    drops ``[O, K, T]`` (NaN where the target has fewer than k context tokens), and each head's
    α and ‖αf‖ against blank-out by masking ``[2, L, H, T]``."""

    final: np.ndarray
    layers: np.ndarray
    rolled: np.ndarray
    deletion: np.ndarray
    heads: np.ndarray


class MixingRunner:
    """The tagger with its hooks; :meth:`sentence` scores one sentence."""

    def __init__(self, model, tokenizer, *, batch_size: int = 64, deletion_steps: int = 3):
        from headatlas.encoders.models import takes_token_types
        from headatlas.encoders.valuenorms import attention_layers, norms_support

        why = norms_support(model)
        if why is not None:
            raise ModelError(f"the context mixing measures need each head's value and output projection: {why}")
        self.blocks = attention_layers(model)
        if any(block.layer_norm is None or block.output_norm is None or block.value_columns is not None
               for block in self.blocks):
            raise ModelError(f"GlobEnc and ALTI decompose the post-attention and post-FFN LayerNorms, "
                             f"which {type(model).__name__} does not have where its family's layout puts "
                             "them (a pre-LayerNorm model?): the benchmark cannot run on it")
        self.model, self.tokenizer = model, tokenizer
        self.n_layers = model.config.num_hidden_layers
        self.batch_size, self.steps = batch_size, deletion_steps
        self.device = next(model.parameters()).device
        self.token_types = takes_token_types(model)
        self.mask_id = tokenizer.mask_token_id
        if self.mask_id is None:
            raise ModelError(f"{type(tokenizer).__name__} has no mask token: blank-out needs one")
        self.taps = _Taps()
        unique = {id(b.value): b for b in self.blocks}.values()
        self._hooks = [h for b in unique for h in (b.value.register_forward_pre_hook(self.taps.before_value),
                                                   b.value.register_forward_hook(self.taps.after_value))]
        self._hooks += [h for b in {id(b.layer_norm): b for b in self.blocks}.values() for h in (
            b.layer_norm.register_forward_pre_hook(self.taps.before_norm),
            b.output_norm.register_forward_pre_hook(self.taps.before_output_norm))]

    def close(self) -> None:
        for hook in self._hooks:
            hook.remove()

    # --- forwards ---------------------------------------------------------------------------

    def _inputs(self, ids: torch.Tensor) -> dict:
        """Model inputs of a batch of unpadded variants (all of one length)."""
        inputs = {"input_ids": ids.to(self.device), "attention_mask": torch.ones_like(ids).to(self.device)}
        if self.token_types:
            inputs["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
        return inputs

    def _log_probs(self, ids: torch.Tensor) -> torch.Tensor:
        """Tag log-probabilities ``[B, n, C]`` of variants ``[B, n]``, in batches (float64,
        :func:`log_softmax`: a confident tagger's p is 1.0 to the last bit, its log p still moves)."""
        out = []
        for start in range(0, len(ids), self.batch_size):
            self.taps.reset(record=False)
            with torch.inference_mode():
                logits = self.model(**self._inputs(ids[start:start + self.batch_size])).logits
            out.append(log_softmax(logits.double()).cpu())
        return torch.cat(out)

    def _original(self, ids: torch.Tensor) -> tuple[dict[str, np.ndarray], torch.Tensor, list]:
        """The layered maps of :func:`~headatlas.analyses.mixing.layer_measures`, the tag
        log-probabilities ``[n, C]`` and each layer's output (the hidden states after it)."""
        self.taps.reset(record=True)
        with torch.inference_mode():
            out = self.model(**self._inputs(ids[None]), output_attentions=True, output_hidden_states=True)
        taps = self.taps
        ran = {len(taps.values), len(taps.norm_inputs), len(taps.ffn_sums)}
        if ran != {self.n_layers}:
            raise ModelError(f"{len(taps.values)} value projections and {len(taps.norm_inputs)} + "
                             f"{len(taps.ffn_sums)} LayerNorms ran for {self.n_layers} layers")
        maps = {name: [] for name in LAYERED + HEADS if name != "value_zeroing"}
        for layer in range(self.n_layers):
            block = self.blocks[layer % len(self.blocks)]
            parts = LayerParts(*_numpy(taps.inputs[layer], out.attentions[layer][0], taps.values[layer],
                                       block.output.weight, block.output.bias, block.layer_norm.weight,
                                       block.layer_norm.bias), eps=block.layer_norm.eps,
                               gamma2=_numpy(block.output_norm.weight)[0], eps2=block.output_norm.eps,
                               ffn_sum=_numpy(taps.ffn_sums[layer])[0])
            decomposed = decompose(parts)
            self._check(parts, decomposed[2], taps.norm_inputs[layer].double().cpu().numpy(), layer)
            for name, value in layer_measures(parts, decomposed).items():
                maps[name].append(value)
        log_probs = log_softmax(out.logits[0].double()).cpu()
        return {k: np.stack(v) for k, v in maps.items()}, log_probs, [h[0] for h in out.hidden_states[1:]]

    @staticmethod
    def _check(parts: LayerParts, terms: np.ndarray, norm_input: np.ndarray, layer: int) -> None:
        rebuilt = layer_norm_input(parts, terms)
        error = np.abs(rebuilt - norm_input).max() / max(np.abs(norm_input).max(), 1e-12)
        if error > CHECK_TOLERANCE:
            raise ModelError(f"layer {layer + 1}: the attention output rebuilt from α and the values "
                             f"differs from the LayerNorm's input by {error:.2g} (relative): this "
                             "family's layout (headatlas.encoders.layouts) does not hold")

    def _value_zeroing(self, ids: torch.Tensor, outputs: list) -> np.ndarray:
        """``[L, n, n]``: per layer, each token's output distance when token j's values are zeroed."""
        n = len(ids)
        maps = []
        for layer in range(self.n_layers):
            last = layer == self.n_layers - 1
            zeroed = []
            for start in range(0, n, self.batch_size):
                tokens = torch.arange(start, min(n, start + self.batch_size))
                self.taps.reset(record=False)
                self.taps.zero_layer, self.taps.zero_tokens = layer, tokens.to(self.device)
                self.taps.stop_layer = None if last else layer + 1
                try:
                    with torch.inference_mode():
                        out = self.model(**self._inputs(ids[None].expand(len(tokens), n)),
                                         output_hidden_states=last)
                    zeroed.append(out.hidden_states[-1].double().cpu())
                except _Stop:
                    zeroed.append(self.taps.stopped.double().cpu())
                finally:
                    self.taps.zero_layer = self.taps.zero_tokens = self.taps.stop_layer = None
            maps.append(cosine_distances(torch.cat(zeroed).numpy(), outputs[layer].double().cpu().numpy()))
        return np.stack(maps)

    def _grad_input(self, ids: torch.Tensor, targets: np.ndarray, tags: torch.Tensor) -> np.ndarray:
        """``[T, n]``: ‖∇ log p(ŷ_t) ⊙ e_j‖ at the word embeddings, one copy per target."""
        embed = self.model.get_input_embeddings()
        rows = []
        for start in range(0, len(targets), self.batch_size):
            chosen = torch.as_tensor(targets[start:start + self.batch_size])
            with torch.enable_grad():
                embedded = embed(ids[None].expand(len(chosen), -1).to(self.device)).detach().requires_grad_(True)
                inputs = self._inputs(ids[None].expand(len(chosen), -1))
                del inputs["input_ids"]
                self.taps.reset(record=False)
                logits = self.model(inputs_embeds=embedded, **inputs).logits
                logp = torch.log_softmax(logits.double(), dim=-1)
                picked = logp[torch.arange(len(chosen)), chosen, tags[chosen].to(self.device)]
                (grad,) = torch.autograd.grad(picked.sum(), embedded)
            rows.append((grad * embedded).double().norm(dim=-1).detach().cpu())
        return torch.cat(rows).numpy()

    # --- one sentence -----------------------------------------------------------------------

    def sentence(self, input_ids: list[int], targets: np.ndarray, special: np.ndarray,
                 rng: np.random.Generator) -> SentenceScores:
        """Score one sentence: ``targets`` the positions of its tagged wordpieces, ``special`` which
        positions are [CLS]/[SEP]."""
        ids = torch.tensor(input_ids)
        n = len(ids)
        layered, log_probs, outputs = self._original(ids)
        layered["value_zeroing"] = self._value_zeroing(ids, outputs)
        tags = log_probs.argmax(-1)
        base = log_probs[torch.arange(n), tags].numpy()  # log p(ŷ_i) on the sentence itself
        rolled = readings(layered)
        final = {m: maps[-1] for m, maps in rolled.items()}
        final["grad_input"] = np.zeros((n, n))
        final["grad_input"][targets] = self._grad_input(ids, targets, tags)
        references = self._blank_out(ids, targets, tags, base, special)
        contexts = context_positions(special, targets)
        stack = np.concatenate([np.stack([final[m] for m in MEASURES]),
                                np.stack([layered[m] for m in LAYERED]).reshape(-1, n, n),
                                np.stack([rolled[_rolled_name(m)] for m in LAYERED]).reshape(-1, n, n)])
        rho = np.stack([context_rho(stack, ref, targets, contexts) for ref in references])  # [R, X, T]
        per_head = np.concatenate([layered[name] for name in HEADS]).reshape(-1, n, n)  # [2·L·H, n, n]
        heads = context_rho(per_head, references[0], targets, contexts).reshape(
            len(HEADS), self.n_layers, -1, len(targets))
        shape = (len(references), len(LAYERED), self.n_layers, len(targets))
        final_rho, rest = rho[:, :len(MEASURES)], rho[:, len(MEASURES):]
        layer_rho, rolled_rho = (part.reshape(shape) for part in np.split(rest, 2, axis=1))
        orders = {**{m: final[m][targets] for m in MEASURES}, "blank_out": references[0]}
        deletion = self._deletion(ids, targets, tags, base, list(contexts), orders, rng)
        return SentenceScores(final_rho, layer_rho, rolled_rho, deletion, heads)

    def _blank_out(self, ids, targets, tags, base, special) -> list[np.ndarray]:
        """``[mask, remove]``, each ``[T, n]``: log p(ŷ_t) on the sentence (``base``) minus log p(ŷ_t)
        with token j masked (removed), the same order over j as the fall in p; NaN for j special or
        j = t (not scored)."""
        n = len(ids)
        blanked = [j for j in range(n) if not special[j]]
        masked = ids[None].repeat(len(blanked), 1)
        masked[torch.arange(len(blanked)), torch.tensor(blanked)] = self.mask_id
        p_mask = self._log_probs(masked)
        removed = torch.stack([torch.cat([ids[:j], ids[j + 1:]]) for j in blanked])
        p_remove = self._log_probs(removed)
        j, t = np.array(blanked)[:, None], np.asarray(targets)[None, :]  # [J, 1], [1, T]
        tag = tags[targets].numpy()[None, :]
        effects = []
        for log_p, position in ((p_mask, t + 0 * j), (p_remove, t - (j < t))):  # removal shifts t
            effect = np.full((len(targets), n), np.nan)
            effect[:, blanked] = (base[t] - log_p.numpy()[np.arange(len(blanked))[:, None], position, tag]).T
            effect[np.arange(len(targets)), targets] = np.nan  # j = t: not scored
            effects.append(effect)
        return effects

    def _deletion(self, ids, targets, tags, base, contexts, orders, rng) -> np.ndarray:
        """``[O, K, T]`` falls in p(ŷ_t) (from the log-probabilities ``base``) with the top ``k``
        context tokens of each order masked. One forward per distinct masked set (orders and
        targets often mask the same tokens)."""
        variants, where, seen = [], [], {}
        drops = np.full((len(ORDERS), self.steps, len(targets)), np.nan)
        for row, (t, context) in enumerate(zip(targets, contexts)):
            chance = rng.permutation(len(context))
            for o, order in enumerate(ORDERS):
                if order == "random":
                    ranked = context[chance]
                else:
                    scores = np.nan_to_num(orders[order][row, context], nan=-np.inf)
                    ranked = context[np.argsort(-scores, kind="stable")]
                for k in range(1, min(self.steps, len(context)) + 1):
                    masked = tuple(sorted(int(j) for j in ranked[:k]))
                    if masked not in seen:
                        seen[masked] = len(variants)
                        variant = ids.clone()
                        variant[torch.as_tensor(masked)] = self.mask_id
                        variants.append(variant)
                    where.append((o, k - 1, row, t, seen[masked]))
        if variants:
            log_probs = self._log_probs(torch.stack(variants))
            for o, k, row, t, b in where:
                drops[o, k, row] = np.exp(base[t]) - np.exp(float(log_probs[b, t, tags[t]]))
        return drops


def log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """``log p_c = (z_c - z_top) - log1p(Σ_{c' ≠ top} exp(z_c' - z_top))`` over the last axis: exact
    where torch's ``log_softmax`` rounds a confident class to 0 (``1 + 1e-20 == 1``), since the
    top class's 1 is never added to the rest."""
    top = logits.max(dim=-1, keepdim=True)
    shifted = logits - top.values
    rest = shifted.exp().scatter(-1, top.indices, 0.0).sum(dim=-1, keepdim=True)
    return shifted - torch.log1p(rest)


def _numpy(*tensors) -> list[np.ndarray]:
    return [t.detach().double().cpu().numpy() for t in tensors]


def _rolled_name(measure: str) -> str:
    """The reading that rolls ``measure`` out: ``attention`` -> ``attention_rollout``; GlobEnc,
    ALTI and value zeroing roll out under their own names."""
    return f"{measure}_rollout" if f"{measure}_rollout" in MEASURES else measure


def mixing_benchmark(source: str, revision: str | None, sentences, *, name: str, corpus: str,
                     split: str = "test", max_sentences: int | None = 100, max_length: int = 64,
                     batch_size: int = 64, deletion_steps: int = 3, seed: int = 0, n_boot: int = 1000,
                     boot_seed: int = 0, progress: bool = True):
    """Score every context mixing measure of the tagger at ``source`` against blank-out on the first
    ``max_sentences`` sentences of ``split`` that fit ``max_length`` wordpieces and have a target
    to score (a word with at least 3 other wordpieces beside it). ``seed``: the deletion curves'
    random order; ``n_boot``, ``boot_seed``: the intervals' resamples.

    Returns the :class:`~headatlas.analyses.result.Result` of
    :meth:`~headatlas.analyses.mixing.MixingTotals.result`, with ``attrs`` (model, corpus, N, the
    seconds per sentence, caption).
    """
    import time
    from collections import Counter

    from tqdm.auto import tqdm

    from headatlas.analyses.mixing import MixingTotals
    from headatlas.errors import HeadAtlasError
    from headatlas.interventions.grid import load_task_model
    from headatlas.tasks.upos import IGNORE, sentence_examples, split_sentences

    # the ablation's attention function: eager attention (α returned) when given no ablation
    model, tokenizer = load_task_model("upos", source, revision, name=name)
    parts, by_document = split_sentences(list(sentences))
    chosen = parts[split]
    unknown = {t for s in chosen for t in s.upos} - set(model.config.label2id)
    if unknown:
        raise HeadAtlasError(f"tags {sorted(unknown)} of {corpus} are not in the tagger's label map "
                             f"({source}): was it fine-tuned on {corpus}?")
    if model.config.num_labels < 2:
        log.warning("the tagger at %s has one tag: blanking a token cannot move its prediction, so no "
                    "target is scored (every ρ is NaN, the claims not applicable)", source)
    stats = Counter()
    examples = [e for e in sentence_examples(tokenizer, chosen, model.config.label2id, max_length, stats)
                if len(e) >= 6][:max_sentences]  # [CLS] + a target + 3 context pieces + [SEP]
    if not examples:
        raise HeadAtlasError(f"no {split} sentence of {corpus} has 4 to {max_length - 2} wordpieces")
    runner = MixingRunner(model, tokenizer, batch_size=batch_size, deletion_steps=deletion_steps)
    rng = np.random.default_rng(seed)
    scores, started = [], time.perf_counter()
    try:
        for example in tqdm(examples, desc="context mixing", disable=not progress, mininterval=2):
            labels = np.array(example.labels)
            special = np.zeros(len(example), dtype=bool)
            special[[0, -1]] = True  # [CLS] s [SEP]
            scores.append(runner.sentence(example.input_ids, np.flatnonzero(labels != IGNORE), special, rng))
    finally:
        runner.close()
    seconds = time.perf_counter() - started
    result = MixingTotals.of(scores).result(ORDERS, runner.n_layers, n_boot, boot_seed)
    n_targets = int(sum((np.array(e.labels) != IGNORE).sum() for e in examples))
    result.attrs = {"model_name": name, "source": str(source), "corpus": corpus, "split": split,
                    "split_by_document": by_document, "n_sentences": len(examples), "n_targets": n_targets,
                    "n_layers": runner.n_layers, "max_length": max_length, "deletion_steps": deletion_steps,
                    "n_skipped_too_long": stats["too_long_sentences"], "seconds": seconds,
                    "seconds_per_sentence": seconds / len(examples),
                    "wordpieces_per_sentence": float(np.mean([len(e) for e in examples]))}
    result.attrs["caption"] = caption(result.attrs)
    return result


def caption(attrs: dict) -> str:
    """The figures' footnote: the tagger, the sentences, the reference and what is left out."""
    return (f"{attrs['model_name']} (UPOS tagger), {attrs['n_sentences']} {attrs['corpus']} {attrs['split']} "
            f"sentences alone ([CLS] s [SEP], <= {attrs['max_length']} wordpieces), {attrs['n_targets']} "
            "target words; reference: the fall in p(predicted tag) when a token is masked (or removed); "
            "Spearman ρ over each target's context (itself and [CLS]/[SEP] left out), mean over targets, "
            "95% intervals resampling sentences")
