"""Massive activations and dormant heads (issue 34): the hidden states and each head's output
read beside the attention sinks, from one forward pass of the model.

Clark et al. (2019) read the attention that goes to [SEP] and [CLS] as a no-op; Kobayashi et al.
(2020) showed those tokens' value vectors are small. Two later readings of the same phenomenon:

* **Massive activations** (Sun et al. 2024, "Massive Activations in Large Language Models"): a
  few entries of the hidden states are 10³-10⁵ times the median magnitude, on the start token
  and the first delimiter, nearly constant across inputs, and act as biases that make those
  tokens attention sinks. Per input and layer ``l`` (0: the embeddings' output, ``1..L``: each
  layer's) we take the largest ``|h_l|`` entry over tokens and dimensions, the median ``|h_l|``,
  their ratio, and which token (its role: [CLS], [SEP], '.'/',', the first word piece, another
  token) and which dimension carry it.
* **Dormant heads** (Guo et al. 2024, arXiv 2410.13835, "Active-Dormant Attention Heads"): a head
  whose attention sits on the sink and whose output is near zero on an input. Head ``h``'s output
  at token ``i`` is ``o_h(i) = Σ_j α_hij f_h(x_j) = c_h(i) W_O^h`` (``c_h``: head h's slice of the
  context, the attention output projection's input; ``W_O^h``: its block of the projection), so
  ``Σ_h o_h(i) + b_O`` is the attention block's output (tested). Per input and head: the mean
  ``‖o_h(i)‖`` over tokens, that over the median of its layer's heads on the input (the
  **relative output**), and the **sink share**, the mean over queries of the attention on [CLS]
  and [SEP]. The head is dormant on the input when its sink share is at least ``sink_share``
  and its relative output at most ``quiet``.

The store keeps neither hidden states nor per-head outputs, so this is its own forward pass
over the segment corpus (as gradient importance is), with hooks on the output projection of
each attention block (the families with a norm layout, :mod:`headatlas.encoders.layouts`).
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from headatlas.analyses.result import Result
from headatlas.analyses.sinks import ROLES, role_masks
from headatlas.claims import Claim, above, holds_if, pct
from headatlas.corpora.records import Sentence
from headatlas.heads import ATTENTION_ONLY, Column, HeadColumns, head_table
from headatlas.stats import bootstrap_ratio

SUN, GUO, CLARK = "Sun et al. 2024", "Guo et al. 2024", "Clark et al. 2019"
MASSIVE_RATIO = 100.0  # a layer's top entry at least this times its median |h|: "massive"
SINK_SHARE = 0.5  # a head whose mean attention on [CLS] and [SEP] is at least this ...
QUIET = 0.5  # ... and whose output is at most this times its layer's median head's: dormant
SINK_ROLES = ("cls", "sep")  # the sink tokens of an encoder (Clark et al.'s [CLS] and [SEP])


def layer_tops(hidden: np.ndarray) -> tuple[float, float, int, int]:
    """The largest ``|h|`` entry of one input's hidden state ``[n, D]``, the median ``|h|`` over
    all ``n·D`` entries, and the token and dimension of the largest (the first on ties)."""
    magnitude = np.abs(np.asarray(hidden, dtype=np.float64))
    flat = int(np.argmax(magnitude))
    token, dim = divmod(flat, magnitude.shape[1])
    return float(magnitude.flat[flat]), float(np.median(magnitude)), token, dim


def head_outputs(context, weight, n_heads: int):
    """Each head's output ``o_h(i)`` ``[..., H, T, D]`` from the output projection's input
    ``context [..., T, H·dh]`` and its weight ``[D, H·dh]`` (torch's ``Linear.weight``): the
    head's slice of the context through its block of the projection, ``c_h W_O^hᵀ``; summed over
    the heads, plus the bias, the projection's output."""
    import torch

    *lead, width, inner = context.shape
    dh = inner // n_heads
    per_head = context.reshape(*lead, width, n_heads, dh)
    blocks = weight.reshape(weight.shape[0], n_heads, dh)  # [D, H, dh]
    return torch.einsum("...thd,ehd->...hte", per_head.float(), blocks.float())


def relative_outputs(outputs: np.ndarray) -> np.ndarray:
    """Each head's output norm over the median of its layer's heads: ``outputs [L, H]``."""
    median = np.median(outputs, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(median > 0, outputs / median, np.nan)


def dormant(sink: np.ndarray, relative: np.ndarray, sink_share: float = SINK_SHARE,
            quiet: float = QUIET) -> np.ndarray:
    """Which heads are dormant on an input: sink share at least ``sink_share`` and relative
    output at most ``quiet`` (``[L, H]`` each)."""
    return (sink >= sink_share) & (relative <= quiet)


class ActivationSums:
    """Per input: each layer's top entry (value, median, token role, dimension) and each head's
    output norm, relative output and sink share; :meth:`result` makes the tables and claims."""

    def __init__(self, n_layers: int, n_heads: int, sink_share: float = SINK_SHARE, quiet: float = QUIET,
                 massive_ratio: float = MASSIVE_RATIO):
        self.n_layers, self.n_heads = n_layers, n_heads
        self.sink_share, self.quiet, self.massive_ratio = sink_share, quiet, massive_ratio
        self.tops: list[np.ndarray] = []  # per input [L + 1, 4]: top, median, role index, dimension
        self.outputs: list[np.ndarray] = []  # per input [L, H]
        self.sinks: list[np.ndarray] = []  # per input [L, H]

    def add(self, hidden: Sequence[np.ndarray], roles: np.ndarray, outputs: np.ndarray,
            sinks: np.ndarray) -> None:
        """One input: its hidden states ``L + 1 x [n, D]``, the role of each token ``[n]``
        (an index into :data:`ROLES`), mean head output norms and sink shares ``[L, H]``."""
        rows = []
        for h in hidden:
            top, median, token, dim = layer_tops(h)
            rows.append((top, median, roles[token], dim))
        self.tops.append(np.array(rows, dtype=np.float64))
        self.outputs.append(np.asarray(outputs, dtype=np.float64))
        self.sinks.append(np.asarray(sinks, dtype=np.float64))

    def result(self) -> Result:
        if not self.tops:
            raise ValueError("no input was analysed")
        tops, outputs, sinks = np.stack(self.tops), np.stack(self.outputs), np.stack(self.sinks)
        relative = np.stack([relative_outputs(o) for o in outputs])
        asleep = dormant(sinks, relative, self.sink_share, self.quiet)
        heads = head_table(self.n_layers, self.n_heads, output_norm=outputs.mean(axis=0),
                           relative_output=np.nanmean(relative, axis=0), sink_share=sinks.mean(axis=0),
                           dormant_rate=asleep.mean(axis=0))
        return Result({"layers": self._layers(tops), "heads": heads},
                      claims=self._claims(tops, sinks, relative))

    def _layers(self, tops: np.ndarray) -> pd.DataFrame:
        rows = []
        for layer in range(tops.shape[1]):
            top, median, role, dim = (tops[:, layer, k] for k in range(4))
            ratio = top_ratios(tops)[:, layer]
            dims = Counter(dim.astype(int).tolist())
            top_dim, count = dims.most_common(1)[0]
            rows.append({"layer": layer, "top_ratio": float(np.nanmean(ratio)), "top_value": float(top.mean()),
                         "median": float(median.mean()), "top_dim": top_dim, "top_dim_share": count / len(dim),
                         **{f"on_{r}": float(np.mean(role == k)) for k, r in enumerate(ROLES)},
                         "top_cv": float(top.std() / top.mean()) if top.mean() > 0 else float("nan"),
                         "massive": bool(np.nanmean(ratio) >= self.massive_ratio)})
        return pd.DataFrame(rows)

    def _claims(self, tops: np.ndarray, sinks: np.ndarray, relative: np.ndarray) -> list[Claim]:
        return [massive_on_sinks(tops, self.massive_ratio),
                sink_heads_quiet(sinks, relative, self.sink_share, self.quiet)]


def top_ratios(tops: np.ndarray) -> np.ndarray:
    """Each input's and hidden state's top |h| over its median ``[N, L + 1]`` from ``tops [N, L + 1,
    4]`` (NaN where the median is 0)."""
    return tops[..., 0] / np.where(tops[..., 1] > 0, tops[..., 1], np.nan)


def ratio_and_interval(hits: np.ndarray, total: np.ndarray) -> tuple[float, float, float]:
    """``sum(hits) / sum(total)`` over inputs and its percentile bootstrap interval."""
    return (hits.sum() / total.sum(), *bootstrap_ratio(hits, total))


def massive_on_sinks(tops: np.ndarray, massive_ratio: float = MASSIVE_RATIO) -> Claim:
    """Sun et al.: massive activations sit on the sink tokens. ``tops [N, L + 1, 4]`` (per input
    and layer: top, median, role index, dimension). Over the layers whose mean ratio reaches
    ``massive_ratio``, the share of (input, layer) pairs whose top entry is on [CLS] or [SEP],
    with a percentile bootstrap interval over inputs; not applicable without such a layer."""
    mean_ratio = np.nanmean(top_ratios(tops), axis=0)  # [L + 1]
    massive = mean_ratio >= massive_ratio
    on_sink = np.isin(tops[..., 2], [ROLES.index(r) for r in SINK_ROLES])[:, massive]
    if massive.any():
        share, low, high = ratio_and_interval(on_sink.sum(axis=1).astype(float),
                                              np.full(len(tops), float(massive.sum())))
        decided = above(low, high, 0.5)
        ours = f"{pct(share, 1)} [{pct(low, 1)}, {pct(high, 1)}] of (input, massive layer) pairs"
        note = "" if decided is not None else "undecided: the 95% interval over inputs straddles 50%"
    else:
        share, decided, note = float("nan"), None, (
            f"no layer's top entry reaches {massive_ratio:g}x its median |h| (largest mean ratio "
            f"{np.nanmax(mean_ratio):.1f}x): no massive activation to place")
        ours = "no massive layer"
    return Claim("sun.massive.on_sink_tokens", f"{SUN} §2-3",
                 "massive activations sit on the sink tokens",
                 "on the start token and the first delimiter, 10^3-10^5x the median (LLaMA2, Mixtral)",
                 ours, holds_if(decided, share),
                 f"> 50% of the (input, layer) tops of layers with a mean top/median >= {massive_ratio:g} "
                 f"are on [CLS] or [SEP], over the whole 95% interval", note)


def sink_heads_quiet(sinks: np.ndarray, relative: np.ndarray, sink_share: float = SINK_SHARE,
                     quiet: float = QUIET) -> Claim:
    """Clark et al.'s "attention to [SEP]/[CLS] is a no-op", read on the heads' outputs: the
    (input, head) pairs whose sink share is at least ``sink_share`` have a mean relative output
    of at most ``quiet`` (the dormant heads' bound: at most half their layer's median head's);
    holds when the whole interval over inputs is, fails when it is all above."""
    heavy = sinks >= sink_share  # [N, L, H]
    values = np.where(heavy, np.nan_to_num(relative, nan=0.0), 0.0)
    total = heavy.sum(axis=(1, 2)).astype(float)
    if total.sum():
        mean, low, high = ratio_and_interval(values.sum(axis=(1, 2)), total)
        loud = above(low, high, quiet)
        decided = None if loud is None else not loud
        ours = f"{mean:.3f} [{low:.3f}, {high:.3f}] x the layer's median head, {int(total.sum())} pairs"
        note = "" if decided is not None else f"undecided: the 95% interval over inputs contains {quiet:g}"
    else:
        mean, decided, ours = float("nan"), None, "no head puts that much on [CLS] and [SEP]"
        note = f"no (input, head) pair has a sink share >= {sink_share:g}"
    return Claim("clark.s3.sink_heads_quiet", f"{CLARK} §3.2 (Kobayashi et al. 2020; {GUO})",
                 "attention to [SEP]/[CLS] is a no-op: the heads that put it there output little",
                 "a no-op (BERT-base); those heads' outputs near zero (dormant heads, LLMs)",
                 ours, holds_if(decided, mean),
                 f"(input, head) pairs with >= {sink_share:g} of their attention on [CLS] and [SEP] output "
                 f"<= {quiet:g}x their layer's median head on average, over the whole 95% interval", note)


def hidden_activations(loaded, sentences: Sequence[Sentence], *, max_length: int = 128, batch_size: int = 16,
                       max_examples: int | None = None, sink_share: float = SINK_SHARE, quiet: float = QUIET,
                       massive_ratio: float = MASSIVE_RATIO, progress: bool = True) -> Result:
    """Massive activations and dormant heads over the first ``max_examples`` inputs of a corpus
    that fit ``max_length`` (as extraction cuts them), in batches of ``batch_size``.

    Returns a :class:`~headatlas.analyses.result.Result` with tables ``layers`` (one row per
    hidden state, 0 = the embeddings': ``top_ratio`` the mean over inputs of top/median |h|,
    ``top_value``, ``median``, ``top_dim`` the dimension most often on top and ``top_dim_share``,
    ``on_<role>`` where the top entry sits, ``top_cv`` the top value's coefficient of variation
    over inputs, ``massive``) and ``heads`` (``output_norm`` mean ‖o_h‖, ``relative_output``,
    ``sink_share``, ``dormant_rate``), the two claims, and ``attrs`` (N, options, caption).
    Raises :class:`~headatlas.errors.ModelError` for a model without a norm layout (its output
    projection is not known).
    """
    import torch

    from headatlas.encoders.batching import to_device
    from headatlas.encoders.inputs import collate, encode_corpus, length_batches
    from headatlas.encoders.valuenorms import attention_layers, norms_support
    from headatlas.errors import ModelError

    model, tokenizer = loaded.model, loaded.tokenizer
    why = norms_support(model)
    if why is not None:
        raise ModelError(f"massive activations and dormant heads need each head's output projection: {why}")
    blocks = attention_layers(model)
    stats: Counter = Counter()
    kept, _ = encode_corpus(tokenizer, enumerate(sentences), max_length, stats)
    kept = kept[:max_examples]
    if not kept:
        raise ValueError(f"no input of at most {max_length} wordpieces in the corpus")
    n_layers, n_heads = loaded.n_layers, loaded.n_heads
    sums = ActivationSums(n_layers, n_heads, sink_share, quiet, massive_ratio)
    device = next(model.parameters()).device
    contexts: list = []
    hooks = [block.output.register_forward_pre_hook(lambda module, args: contexts.append(args[0]))
             for block in blocks]
    cls, sep = str(tokenizer.cls_token), str(tokenizer.sep_token)
    # a block shared across depth (ALBERT) runs once per layer
    weights = [blocks[layer % len(blocks)].output.weight for layer in range(n_layers)]
    try:
        for batch in tqdm(list(length_batches(kept, batch_size)), desc="activations", disable=not progress,
                          mininterval=2):
            inputs = to_device(collate(batch, tokenizer.pad_token_id or 0, "cpu"), device)
            width = inputs["input_ids"].shape[1]
            roles = np.stack([role_masks(tokenizer.convert_ids_to_tokens(e.input_ids), cls, sep, width)
                              for e in batch])  # [B, R, T]: every token has one role, padding none
            valid = torch.as_tensor(roles.any(axis=1), dtype=torch.float32, device=device)
            special = torch.as_tensor(roles[:, 0] | roles[:, 1], dtype=torch.float32, device=device)

            def token_mean(x):  # [B, H, T] -> [B, H]: the mean over each input's own tokens
                return (x * valid[:, None]).sum(dim=-1) / valid.sum(dim=-1)[:, None]

            with torch.inference_mode():
                out = model(**inputs, output_hidden_states=True, output_attentions=True, return_dict=True)
                if len(contexts) != n_layers:
                    raise ModelError(f"{len(contexts)} of {n_layers} output projections ran")
                outputs = torch.stack([token_mean(head_outputs(c, w, n_heads).norm(dim=-1))
                                       for c, w in zip(contexts, weights)], dim=1).cpu().numpy()  # [B, L, H]
                # each query's attention on [CLS] and [SEP], averaged over the input's queries
                sinks = torch.stack([token_mean((a.float() @ special[:, None, :, None])[..., 0])
                                     for a in out.attentions], dim=1).cpu().numpy()  # [B, L, H]
                hidden = [h.float().cpu().numpy() for h in out.hidden_states]
            for b, encoded in enumerate(batch):
                n = len(encoded)
                sums.add([h[b, :n] for h in hidden], roles[b, :, :n].argmax(axis=0), outputs[b], sinks[b])
            del out, hidden
            contexts.clear()
    finally:
        for hook in hooks:
            hook.remove()
    result = sums.result()
    result.attrs = {**loaded.info, "n_examples": len(kept), "n_layers": n_layers, "n_heads": n_heads,
                    "max_length": max_length, "sink_share": sink_share, "quiet": quiet,
                    "massive_ratio": massive_ratio, "n_skipped_too_long": stats["too_long"]}
    result.attrs["caption"] = caption(result.attrs)
    return result


def caption(attrs: dict) -> str:
    """The figure's footnote: model, N, and the definitions."""
    return (f"{attrs.get('model_name', 'model')}, {attrs['n_examples']} segments; massive activations "
            f"({SUN}): per layer the largest |h| entry over its median (0 = the embeddings' output), "
            f"massive at >= {attrs['massive_ratio']:g}x; dormant heads ({GUO}): sink share (attention on "
            f"[CLS] and [SEP]) >= {attrs['sink_share']:g} and output norm <= {attrs['quiet']:g}x the "
            "median head of its layer on the input; head output ||o_h|| = ||c_h W_O^h|| (before the bias)")


# What the per-head table (heads.csv) adds to the head atlas (headatlas.report.atlas).
ATLAS = {"heads": HeadColumns("dormant heads", GUO, rank=75, weighting=ATTENTION_ONLY, columns=(
    Column("output_norm", "output_norm", "value", "mean norm of the head's output ||Σ_j α f_h(x_j)||"),
    Column("relative_output", "relative_output", "value",
           "the head's output norm over its layer's median head's (per input, then averaged)"),
    Column("sink_attention", "sink_share", "share", "mean attention on [CLS] and [SEP]"),
    Column("dormant_rate", "dormant_rate", "share",
           "share of inputs on which the head is dormant: sink share >= 0.5, output <= 0.5x the median head",
           "dormant heads: attention on the sink, output near zero (LLMs, Guo et al.)"),
))}
