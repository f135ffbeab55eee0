"""Value-vector norms during extraction (Kobayashi et al. 2020), captured with forward hooks.

In a self-attention layer head *h* adds ``α_ij f_h(x_j)`` to token *i*'s output,
with the transformed value vector

    f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h

where ``W_O^h`` is head *h*'s block of rows of the attention output projection
(its bias ``b_O`` is shared by all heads and left out). Two quantities are recorded
per layer:

* ``value_norms [heads, n]``: ``‖f_h(x_j)‖``, so ``‖α_ij f_h(x_j)‖ = α_ij ‖f_h(x_j)‖``;
* ``norm_map [n, n]``: ``‖Σ_h α^h_ij f_h(x_j)‖``, what token *j* contributes to
  token *i* through the whole layer.

Both come from the per-token Gram matrix ``G_j[h, g] = <f_h(x_j), f_g(x_j)>``:
``‖f_h(x_j)‖² = G_j[h, h]`` and ``‖Σ_h α^h_ij f_h(x_j)‖² = α_·ijᵀ G_j α_·ij``, i.e.
O(n²H²) per layer instead of O(n²Hd). ``G_j`` itself is ``v_j^h M_hg v_j^gᵀ`` with
``M = W_O W_Oᵀ`` computed once per layer, so ``f`` is never materialised.

Where each family keeps ``W_V`` and ``W_O`` is one row of
:data:`headatlas.encoders.layouts.NORM_LAYOUTS` (BERT / RoBERTa / ELECTRA,
DistilBERT, ALBERT's shared layer, DeBERTa-v2/v3, MPNet, ModernBERT's fused ``Wqkv``). :class:`NormRecorder`
hooks the value projection and the module that returns α of every attention
block; α is taken from that module's own output, the probabilities that mixed
the values, whatever produced the scores (MPNet's relative position bias,
DeBERTa's disentangled attention). No model code is forked. Models without a
known layout (:func:`norms_support` says why) are extracted without norms.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

import numba
import numpy as np
import torch

from headatlas.encoders.batching import HostArray, pack_examples
from headatlas.encoders.layouts import NormLayout, norm_layout_of, supported_types
from headatlas.errors import ModelError
from headatlas.store.schema import NORMS_OFF, NORMS_RECORDED, NORMS_UNSUPPORTED


def model_class(model) -> str:
    """The encoder's class name, e.g. ``BertModel`` (recorded in the store)."""
    return type(model).__name__


@dataclass(frozen=True)
class AttentionBlock:
    """One attention block of a model: the module returning ``(output, α)``, ``W_V`` and ``W_O``,
    and the post-attention and post-FFN LayerNorms where the family has them (else None).

    ``value`` is the linear map whose outputs ``value_columns`` are the values: all of them, or
    a block of a fused query-key-value projection (ModernBERT's ``Wqkv``)."""

    attention: torch.nn.Module
    value: torch.nn.Linear
    output: torch.nn.Linear
    layer_norm: torch.nn.LayerNorm | None = None
    output_norm: torch.nn.LayerNorm | None = None
    value_columns: tuple[int, int] | None = None  # (start, stop); None: every output

    def values(self, projected: torch.Tensor) -> torch.Tensor:
        """The values ``[..., heads * dh]`` among the value map's outputs ``projected``."""
        if self.value_columns is None:
            return projected
        start, stop = self.value_columns
        return projected[..., start:stop]


def _submodule(module: torch.nn.Module, path: str):
    for part in filter(None, path.split(".")):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def layout_of(model) -> NormLayout | None:
    """The :data:`~headatlas.encoders.layouts.NORM_LAYOUTS` row of ``model``'s config, else None."""
    return norm_layout_of(getattr(getattr(model, "config", None), "model_type", None))


def _blocks(model, layout: NormLayout) -> tuple[list[AttentionBlock] | None, str]:
    base = getattr(model, "base_model", model)
    heads = getattr(model.config, "num_attention_heads", None)
    pattern = re.compile(layout.block)
    blocks = []
    for name, module in base.named_modules():
        if not pattern.fullmatch(name):
            continue
        attention = _submodule(module, layout.attention)
        value, output = _submodule(module, layout.value), _submodule(module, layout.output)
        if attention is None or not (isinstance(value, torch.nn.Linear) and isinstance(output, torch.nn.Linear)):
            return None, f"{name} lacks {layout.value} or {layout.output} as linear maps"
        part, parts = layout.value_part
        width = value.out_features // parts
        if not heads or value.out_features % parts or width != output.in_features or width % heads:
            return None, (f"{name}: the value projection's {width} outputs do not split "
                          f"into {heads} heads feeding the output projection")
        layer = base.get_submodule(name.rpartition(".")[0]) if "." in name else base
        norms = [_submodule(layer, path) if path else None for path in (layout.layer_norm, layout.output_norm)]
        blocks.append(AttentionBlock(attention, value, output,
                                     *(n if isinstance(n, torch.nn.LayerNorm) else None for n in norms),
                                     value_columns=(part * width, (part + 1) * width) if parts > 1 else None))
    if not blocks:
        return None, f"no module matches {layout.block}"
    return blocks, ""


def attention_layers(model) -> list[AttentionBlock] | None:
    """The distinct attention blocks of ``model`` (in module order), else None.

    A shared block (ALBERT) appears once and runs once per layer.
    """
    layout = layout_of(model)
    return _blocks(model, layout)[0] if layout else None


def norms_support(model) -> str | None:
    """None when value norms can be recorded for ``model``, else why not (naming its class)."""
    layout = layout_of(model)
    if layout is None:
        model_type = getattr(getattr(model, "config", None), "model_type", None)
        return (f"norms are unsupported for {model_class(model)}: model type {model_type!r} has no "
                f"known attention layout (known: {supported_types()})")
    blocks, why = _blocks(model, layout)
    if blocks is None:
        return f"norms are unsupported for {model_class(model)}: its {layout.name} layout does not hold ({why})"
    return None


def gram_weights(dense_weight: torch.Tensor) -> torch.Tensor:
    """``M = W_O W_Oᵀ`` (float32) from the output projection's ``weight`` ``[hidden, all_heads]``.

    With ``f_h(x) = v_h W_O^h`` and torch's ``Linear`` storing ``W_Oᵀ``,
    ``<f_h(x), f_g(x)> = v_h M[h, g] v_gᵀ`` for the ``[dh, dh]`` blocks of ``M``.
    """
    w = dense_weight.detach().float()
    return w.T @ w


def token_grams(values: torch.Tensor, gram: torch.Tensor, n_heads: int,
                chunk: int = 1024) -> torch.Tensor:
    """Per-token Gram matrices ``G[t, h, g] = <f_h(x_t), f_g(x_t)>`` ``[tokens, heads, heads]``.

    ``values`` ``[tokens, heads * dh]`` is the value projection, ``gram`` :func:`gram_weights`.
    Only the upper triangle is computed (``G`` is symmetric): for head ``h``,
    ``u = v_h M[h, h:]`` and ``G[h, g] = <u[g-block], v_g>`` for ``g >= h``, in chunks of
    ``chunk`` tokens so the intermediates stay in cache.
    """
    if values.device.type != "cpu":
        return _token_grams_batched(values, gram, n_heads)
    tokens, hidden = values.shape
    dh = hidden // n_heads
    out = values.new_empty(tokens, n_heads, n_heads)
    for start in range(0, tokens, chunk):
        x = values[start:start + chunk]
        n = x.shape[0]
        for h in range(n_heads):
            rest = n_heads - h
            u = x[:, h * dh:(h + 1) * dh] @ gram[h * dh:(h + 1) * dh, h * dh:]  # [n, rest * dh]
            u.mul_(x[:, h * dh:])
            row = u.view(n, rest, dh).sum(-1)  # G[h, h:]
            out[start:start + n, h, h:] = row
            out[start:start + n, h + 1:, h] = row[:, 1:]
    return out


def _token_grams_batched(values: torch.Tensor, gram: torch.Tensor, n_heads: int,
                         chunk_bytes: int = 2**27) -> torch.Tensor:
    """:func:`token_grams` for a device, in a few large operations instead of the CPU's
    cache-sized chunks (on a GPU, each small product is a kernel launch the host must issue):
    ``y_g = v_g M[g, :]`` for every key head ``g`` at once (one batched product), then
    ``G[h, g] = <v_h, y_g[h-block]>`` (``M`` is symmetric), over chunks of tokens whose ``y``
    takes at most ``chunk_bytes``."""
    tokens, hidden = values.shape
    dh = hidden // n_heads
    per_token = n_heads * hidden * values.element_size()
    size = max(1, chunk_bytes // per_token)
    blocks = gram.view(n_heads, dh, hidden)  # M[g, :], one row block per key head
    out = values.new_empty(tokens, n_heads, n_heads)
    for start in range(0, tokens, size):
        x = values[start:start + size].view(-1, n_heads, dh)  # [t, h, dh]
        y = torch.bmm(x.transpose(0, 1), blocks)  # [g, t, hidden]: v_g M[g, :]
        out[start:start + size] = (y.view(n_heads, -1, n_heads, dh) * x).sum(-1).permute(1, 2, 0)
    return out


def layer_norm_map(attn: torch.Tensor, grams: torch.Tensor) -> torch.Tensor:
    """``‖Σ_h α^h_ij f_h(x_j)‖`` ``[batch, T, T]`` from α ``[batch, H, T, T]`` and ``G`` ``[batch, T, H, H]``.

    ``α_·ijᵀ G_j α_·ij = Σ_h G_j[h, h] α_h² + 2 Σ_{h<g} G_j[h, g] α_h α_g``. On the CPU one
    compiled pass (:func:`_quadratic_forms`, numba) reads each query row of α once; other
    devices take :func:`_layer_norm_map_torch` (one batched matrix product).
    """
    if attn.device.type != "cpu":
        return _layer_norm_map_torch(attn, grams)
    batch, n_heads, width, _ = attn.shape
    attn = attn.float().contiguous().numpy()  # no copy when already float32 and contiguous
    grams = grams.float().permute(0, 2, 3, 1).contiguous().numpy()  # [b, h, g, key]: key innermost
    out = np.empty((batch, width, width), np.float32)
    _quadratic_forms(attn, grams, out)
    return torch.from_numpy(out)


@numba.njit(fastmath=True, cache=True, nogil=True)
def _quadratic_forms(attn, grams, out):  # pragma: no cover (compiled; tested through layer_norm_map)
    """``out[b, i, j] = sqrt(max(0, Σ_{h<=g} c_hg G[b, h, g, j] α[b, h, i, j] α[b, g, i, j]))``, c = 1 or 2."""
    batch, n_heads, width, _ = attn.shape
    acc = np.empty(width, np.float32)
    for b in range(batch):
        for i in range(width):
            acc[:] = 0
            for h in range(n_heads):
                a_h = attn[b, h, i]
                for g in range(h, n_heads):
                    a_g = attn[b, g, i]
                    gram = grams[b, h, g]
                    c = np.float32(1.0) if g == h else np.float32(2.0)
                    for j in range(width):
                        acc[j] += c * gram[j] * a_h[j] * a_g[j]
            for j in range(width):
                out[b, i, j] = np.sqrt(max(acc[j], np.float32(0.0)))


def _layer_norm_map_torch(attn: torch.Tensor, grams: torch.Tensor) -> torch.Tensor:
    """:func:`layer_norm_map` in tensor ops (any device): for each key ``j`` the query rows'
    head weights ``a = α[:, :, j]`` ``[T, H]`` times ``G_j``, then ``Σ_g (a G_j)_g a_g``: one
    batched matrix product over (batch, key) instead of a pass per head pair."""
    a = attn.permute(0, 3, 2, 1)  # [b, key, query, h]
    quadratic = ((a @ grams) * a).sum(-1)  # grams [b, key, h, g]
    return quadratic.transpose(1, 2).clamp_min(0).sqrt()


def value_norms_and_map(values: torch.Tensor, attn: torch.Tensor, gram: torch.Tensor,
                        n_heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head value norms and the layer-level norm map of one layer, for a batch.

    Parameters
    ----------
    values : ``[batch, T, heads * dh]``
        The value projection ``x W_V + b_V``.
    attn : ``[batch, heads, T, T]``
        Attention weights α (padded keys carry weight 0).
    gram : ``[heads * dh, heads * dh]``
        :func:`gram_weights` of the layer's output projection.
    n_heads : int

    Returns
    -------
    value_norms : ``[batch, heads, T]`` float32, ``‖f_h(x_j)‖``.
    norm_map : ``[batch, T, T]`` float32, ``‖Σ_h α^h_ij f_h(x_j)‖`` (query i, key j).
    """
    batch, width, hidden = values.shape
    grams = token_grams(values.float().reshape(batch * width, hidden), gram, n_heads)
    grams = grams.view(batch, width, n_heads, n_heads)
    value_norms = grams.diagonal(dim1=2, dim2=3).clamp_min(0).sqrt().transpose(1, 2)
    return value_norms, layer_norm_map(attn.float(), grams)


@contextlib.contextmanager
def one_thread():
    """Run torch's CPU ops on one thread inside: the norms' small GEMMs and reductions scale badly
    (2 threads: 1.6x the CPU time of one for 0.8x the wall time), and the CPU time is what the
    norms cost on top of extraction."""
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class NormRecorder:
    """Record value norms and norm maps of every layer while the model runs.

    Use as a context manager around forward passes; after each forward,
    :meth:`take` returns that batch's arrays. The hooks are removed on exit.
    Layers are recorded in the order their attention runs, so a block shared
    across depth (ALBERT) gives one layer per call.

    Parameters
    ----------
    model : an encoder with a known layout (:func:`norms_support` returns None for it),
        run with eager attention and ``output_attentions=True`` (the module must return α).
    """

    def __init__(self, model):
        reason = norms_support(model)
        if reason is not None:
            raise ModelError(reason)
        self.blocks = attention_layers(model)
        self.n_layers = int(model.config.num_hidden_layers)
        self.n_heads = int(model.config.num_attention_heads)
        self._handles: list = []
        self._values: dict[int, torch.Tensor] = {}
        self._out: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._on_layer = None

    def __enter__(self) -> "NormRecorder":
        self._grams = [gram_weights(block.output.weight) for block in self.blocks]
        for index, block in enumerate(self.blocks):
            self._handles.append(block.value.register_forward_hook(self._value_hook(block, index)))
            # first among the module's hooks: the maps are handed on (layer_by_layer) before
            # transformers' own output recorder could keep them
            self._handles.append(block.attention.register_forward_hook(self._attention_hook(index), prepend=True))
        return self

    @contextlib.contextmanager
    def layer_by_layer(self, on_layer):
        """Inside, each layer's ``α [B, H, T, T]``, value norms and norm map go to
        ``on_layer(α, value_norms, norm_map)`` as the layer runs, and the attention module's
        output carries no map on (the model's outputs keep none: peak memory holds one layer's
        maps, not every layer's); :meth:`take` then has nothing to give."""
        self._on_layer = on_layer
        try:
            yield
        finally:
            self._on_layer = None

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._values.clear()
        self._out.clear()

    def _value_hook(self, block: AttentionBlock, index: int):
        def hook(module, args, output):
            self._values[index] = block.values(output)
        return hook

    def _attention_hook(self, index: int):
        def hook(module, args, output):
            weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
            if weights is None:
                raise ModelError(f"{type(module).__name__} returned no attention weights: value norms "
                                 "need the eager attention implementation and output_attentions=True")
            values = self._values.pop(index)
            with one_thread():
                norms = value_norms_and_map(values, weights, self._grams[index], self.n_heads)
            if self._on_layer is None:
                self._out.append(norms)
                return None
            self._on_layer(weights, *norms)
            return (output[0], None, *output[2:])
        return hook

    def _layers(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The last forward's per-layer ``(value_norms, norm_map)``; ModelError if a layer did not run."""
        if len(self._out) != self.n_layers:
            count = len(self._out)
            self._out.clear()
            raise ModelError(f"value norms were recorded for {count} of {self.n_layers} "
                             "layers: did the forward pass run inside the recorder?")
        layers, self._out = self._out, []
        return layers

    def take(self, dtype=torch.float16) -> "BatchNorms":
        """The last forward's ``value_norms [batch, L, H, T]`` and ``norm_map [batch, L, T, T]``.

        In ``dtype`` (float16, as stored; float32 to check the arithmetic). Raises
        ModelError if a layer did not run.
        """
        layers = self._layers()
        value_norms = torch.stack([vn.to(dtype) for vn, _ in layers], dim=1)
        norm_map = torch.stack([nm.to(dtype) for _, nm in layers], dim=1)
        return BatchNorms(value_norms.cpu().numpy(), norm_map.cpu().numpy())

    def take_layers(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The last forward's per-layer ``(value_norms [batch, H, T], norm_map [batch, T, T])``,
        float32 on the model's device (a fused extraction's device batch reads them there)."""
        return self._layers()

    def take_packed(self, lengths) -> "PackedNorms":
        """The last forward's arrays without padding, packed as the store keeps them (float16):
        each example's ``value_norms [L, H, n]`` and then ``norm_map [L, n, n]`` back to back
        (:func:`headatlas.encoders.batching.pack_examples`), copied to the host once per batch."""
        return pack_norms(self._layers(), lengths)


def pack_norms(layers: list[tuple[torch.Tensor, torch.Tensor]], lengths) -> "PackedNorms":
    """Per-layer ``(value_norms, norm_map)`` (:meth:`NormRecorder.take_layers`) packed as the
    store keeps them and copied to the host (:meth:`NormRecorder.take_packed`); none: empty."""
    if not layers:
        return PackedNorms()
    return PackedNorms(HostArray(pack_examples([vn for vn, _ in layers], lengths, token_dims=1)),
                       HostArray(pack_examples([nm for _, nm in layers], lengths, token_dims=2)))


class BatchNorms:
    """One batch's recorded arrays (or none); :meth:`example` slices one example's for the store."""

    def __init__(self, value_norms: np.ndarray | None = None, norm_map: np.ndarray | None = None):
        self.value_norms, self.norm_map = value_norms, norm_map

    def example(self, row: int, n: int) -> dict:
        """``value_norms`` ``[L, H, n]`` and ``norm_map`` ``[L, n, n]`` of batch row ``row``, or {}."""
        if self.value_norms is None:
            return {}
        return {"value_norms": self.value_norms[row, :, :, :n],
                "norm_map": self.norm_map[row, :, :n, :n]}


class PackedNorms:
    """One batch's packed norms (:meth:`NormRecorder.take_packed`), or none (:class:`NoNorms`)."""

    def __init__(self, value_norms: HostArray | None = None, norm_map: HostArray | None = None):
        self._value_norms, self._norm_map = value_norms, norm_map

    def arrays(self) -> dict:
        """``value_norms`` and ``norm_map`` as flat numpy arrays (the keywords of
        :meth:`headatlas.store.writer.StoreWriter.add_batch`), or {}; waits for a device's copy."""
        if self._value_norms is None:
            return {}
        return {"value_norms": self._value_norms.numpy(), "norm_map": self._norm_map.numpy()}


class NoNorms:
    """Stands in for :class:`NormRecorder` when no norms are recorded."""

    def __enter__(self) -> "NoNorms":
        return self

    def __exit__(self, *exc) -> None:
        pass

    def take(self) -> BatchNorms:
        return BatchNorms()

    def take_layers(self) -> list:
        return []

    def take_packed(self, lengths) -> PackedNorms:
        return PackedNorms()


def norm_recorder(model, wanted: bool = True) -> tuple[str, "NormRecorder | NoNorms", str | None]:
    """What extraction records for ``model``: the store's ``norms`` state, the recorder, and a
    message to log when norms were wanted but the model does not support them."""
    if not wanted:
        return NORMS_OFF, NoNorms(), None
    reason = norms_support(model)
    if reason is not None:
        return NORMS_UNSUPPORTED, NoNorms(), f"{reason}; extracting attention only"
    return NORMS_RECORDED, NormRecorder(model), None
