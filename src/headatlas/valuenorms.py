"""Value-vector norms during extraction (Kobayashi et al. 2020), captured with forward hooks.

In a BERT-layout self-attention layer head *h* adds ``α_ij f_h(x_j)`` to token
*i*'s output, with the transformed value vector

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

:class:`NormRecorder` hooks the ``value`` projection (``x W_V + b_V``) and the
self-attention module (whose output carries α under eager attention) of every
layer; no model code is forked. Models without that layout (:func:`norms_support`
says why) are extracted without norms.
"""

from __future__ import annotations

import numpy as np
import torch

from headatlas.errors import ModelError
from headatlas.store import NORMS_OFF, NORMS_RECORDED, NORMS_UNSUPPORTED

# Module names of the BERT layout (BERT, RoBERTa, ELECTRA, XLM-R and their fine-tuned variants).
LAYOUT = "encoder.layer[i].attention.self.value and encoder.layer[i].attention.output.dense"


def model_class(model) -> str:
    """The encoder's class name, e.g. ``BertModel`` (recorded in the store)."""
    return type(model).__name__


def attention_layers(model) -> list | None:
    """The self-attention blocks ``layer.attention`` of a BERT-layout encoder, else None.

    BERT layout: ``encoder.layer[i].attention.self`` has ``query``, ``key`` and
    ``value`` linear maps, ``encoder.layer[i].attention.output.dense`` maps the
    concatenated heads back to the hidden size.
    """
    base = getattr(model, "base_model", model)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if not isinstance(layers, torch.nn.ModuleList) or not len(layers):
        return None
    blocks = []
    for layer in layers:
        attention = getattr(layer, "attention", None)
        self_attn = getattr(attention, "self", None)
        value = getattr(self_attn, "value", None)
        dense = getattr(getattr(attention, "output", None), "dense", None)
        heads = getattr(self_attn, "num_attention_heads", None)
        if not (isinstance(value, torch.nn.Linear) and isinstance(dense, torch.nn.Linear) and heads):
            return None
        if value.out_features != dense.in_features or value.out_features % heads:
            return None
        blocks.append(attention)
    return blocks


def norms_support(model) -> str | None:
    """None when value norms can be recorded for ``model``, else why not (naming its class)."""
    if attention_layers(model) is None:
        return (f"norms are unsupported for {model_class(model)}: its attention layers do not have "
                f"the BERT layout ({LAYOUT})")
    return None


def gram_weights(dense_weight: torch.Tensor) -> torch.Tensor:
    """``M = W_O W_Oᵀ`` (float32) from the output projection's ``weight`` ``[hidden, all_heads]``.

    With ``f_h(x) = v_h W_O^h`` and torch's ``Linear`` storing ``W_Oᵀ``,
    ``<f_h(x), f_g(x)> = v_h M[h, g] v_gᵀ`` for the ``[dh, dh]`` blocks of ``M``.
    """
    w = dense_weight.detach().float()
    return w.T @ w


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
    dh = hidden // n_heads
    v = values.float().reshape(batch, width, n_heads, dh)
    # u[b, t, h, :] = v_h M[h-block rows, :]; G[b, t, h, g] = <u[b, t, h, g-block], v_g>
    u = torch.einsum("bthd,hde->bthe", v, gram.reshape(n_heads, dh, hidden))
    G = torch.einsum("bthge,btge->bthg", u.reshape(batch, width, n_heads, n_heads, dh), v)
    value_norms = G.diagonal(dim1=2, dim2=3).clamp_min(0).sqrt().transpose(1, 2)
    a = attn.float().permute(0, 3, 2, 1)  # [b, key j, query i, h]
    squared = (torch.matmul(a, G) * a).sum(-1)  # [b, j, i]: α_·ijᵀ G_j α_·ij
    return value_norms, squared.clamp_min(0).sqrt().transpose(1, 2)


class NormRecorder:
    """Record value norms and norm maps of every layer while the model runs.

    Use as a context manager around forward passes; after each forward,
    :meth:`take` returns that batch's arrays. The hooks are removed on exit.

    Parameters
    ----------
    model : a BERT-layout encoder (:func:`norms_support` returns None for it),
        run with eager attention (the self-attention module must return α).
    """

    def __init__(self, model):
        reason = norms_support(model)
        if reason is not None:
            raise ModelError(reason)
        self.blocks = attention_layers(model)
        self._handles: list = []
        self._values: dict[int, torch.Tensor] = {}
        self._out: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def __enter__(self) -> "NormRecorder":
        self._grams = [gram_weights(block.output.dense.weight) for block in self.blocks]
        for layer, block in enumerate(self.blocks):
            self._handles.append(block.self.value.register_forward_hook(self._value_hook(layer)))
            self._handles.append(block.self.register_forward_hook(self._attention_hook(layer)))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._values.clear()
        self._out.clear()

    def _value_hook(self, layer: int):
        def hook(module, args, output):
            self._values[layer] = output
        return hook

    def _attention_hook(self, layer: int):
        block = self.blocks[layer]

        def hook(module, args, output):
            weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
            if weights is None:
                raise ModelError(f"{type(module).__name__} returned no attention weights: value norms "
                                 "need the eager attention implementation")
            values = self._values.pop(layer)
            self._out[layer] = value_norms_and_map(values, weights, self._grams[layer],
                                                   block.self.num_attention_heads)
        return hook

    def take(self, dtype=torch.float16) -> "BatchNorms":
        """The last forward's ``value_norms [batch, L, H, T]`` and ``norm_map [batch, L, T, T]``.

        In ``dtype`` (float16, as stored; float32 to check the arithmetic). Raises
        ModelError if a layer did not run.
        """
        if len(self._out) != len(self.blocks):
            raise ModelError(f"value norms were recorded for {len(self._out)} of {len(self.blocks)} "
                             "layers: did the forward pass run inside the recorder?")
        layers = [self._out[i] for i in range(len(self.blocks))]
        self._out.clear()
        value_norms = torch.stack([vn.to(dtype) for vn, _ in layers], dim=1)
        norm_map = torch.stack([nm.to(dtype) for _, nm in layers], dim=1)
        return BatchNorms(value_norms.cpu().numpy(), norm_map.cpu().numpy())


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


class NoNorms:
    """Stands in for :class:`NormRecorder` when no norms are recorded."""

    def __enter__(self) -> "NoNorms":
        return self

    def __exit__(self, *exc) -> None:
        pass

    def take(self) -> BatchNorms:
        return BatchNorms()


def norm_recorder(model, wanted: bool = True) -> tuple[str, "NormRecorder | NoNorms", str | None]:
    """What extraction records for ``model``: the store's ``norms`` state, the recorder, and a
    message to log when norms were wanted but the model does not support them."""
    if not wanted:
        return NORMS_OFF, NoNorms(), None
    reason = norms_support(model)
    if reason is not None:
        return NORMS_UNSUPPORTED, NoNorms(), f"{reason}; extracting attention only"
    return NORMS_RECORDED, NormRecorder(model), None
