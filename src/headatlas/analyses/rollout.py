"""Attention rollout (Abnar & Zuidema 2020), from the attention weights and from the value norms.

Raw attention says what a layer mixes from its *input* tokens, which from layer
2 on are already mixtures. Rollout follows the mixing through the layers: each
layer's map, with the residual connection modelled as half the weight on the
token itself, is

    Ã_l = ½ · A_l + ½ · I,   rows renormalised,

and the rolled-out map after layer l is ``R_l = Ã_l Ã_{l-1} ... Ã_1`` (row i:
how much of token i's representation after layer l comes from each input
token). Two sources of ``A_l``:

* ``attention``: the mean over heads of α (Abnar & Zuidema);
* ``norm``: the layer-level norm map ‖Σ_h α^h_ij f_h(x_j)‖ of Kobayashi et al.
  (2020), rows renormalised: what the layer really passes on.

Per layer and source :class:`Rollout` reports the share of the rolled-out rows
on ``[CLS]``, ``[SEP]``, ``.``/``,`` and other tokens (its result's table ``shares``), and the
relative-position profile (mean ``R_l[i, i + k]`` for offsets ``|k| <= max_offset``, table
``profile``).
Token-weighted means, as in :mod:`headatlas.analyses.surface`.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from array_api_compat import device, is_numpy_array

from headatlas.analyses.base import Analysis, describe, register
from headatlas.analyses.batch import MapBatch, array_namespace, to_host
from headatlas.analyses.batch import row_normalised
from headatlas.analyses.result import Result
from headatlas.analyses.norms import CLASS_LABELS, CLASSES

SOURCES = ("attention", "norm")
SOURCE_LABELS = {"attention": "rollout of α (mean over heads)",
                 "norm": "rollout of ‖Σ_h αf(x)‖ (Kobayashi)"}


def batch_layer_maps(batch: MapBatch, source: str):
    """``[B, L, N, N]`` per-layer maps whose rows sum to 1, on the batch's device: mean-over-heads
    α, or the norm map."""
    xp = batch.xp
    if source == "attention":
        return row_normalised(xp.mean(batch.attn, axis=2))
    if source == "norm":
        if batch.norm_map is None:
            raise ValueError("the batch has no norm maps (open the store with norms=True)")
        return row_normalised(batch.norm_map)
    raise ValueError(f"rollout source {source!r} is not one of {SOURCES}")


def rollout(maps, residual: float = 0.5):
    """Rolled-out maps ``[..., L, n, n]`` of per-layer maps ``[..., L, n, n]`` (rows summing
    to 1; numpy or torch).

    ``Ã_l = (1 - residual) A_l + residual I`` renormalised per row; ``R_1 = Ã_1``,
    ``R_l = Ã_l R_{l-1}``. Rows of every ``R_l`` sum to 1.
    """
    xp = array_namespace(maps)
    n = maps.shape[-1]
    eye = xp.eye(n, dtype=maps.dtype, device=device(maps))
    mixed = row_normalised((1 - residual) * maps + residual * eye)
    if not is_numpy_array(maps) and maps.ndim == 4:
        return _rollout_batched(mixed)
    steps, current = [], None
    for layer in range(maps.shape[-3]):
        step = mixed[..., layer, :, :]
        current = step if current is None else xp.matmul(step, current)
        steps.append(current)
    return xp.stack(steps, axis=-3)


def _rollout_batched(mixed):
    """:func:`rollout`'s products of a torch batch ``[B, L, n, n]`` with one ``bmm`` a layer (the
    kernel ``matmul`` calls, which issues four more operations around it: on a device, each one the
    host's), the layers taken apart in one operation."""
    import torch

    first, *rest = torch.unbind(mixed, dim=1)
    steps = [first]
    for step in rest:
        steps.append(torch.bmm(step, steps[-1]))
    return torch.stack(steps, dim=1)


def offset_sums(maps, max_offset: int):
    """Sums over queries of ``maps[..., i, i + k]`` for k = -max_offset..max_offset, and the counts.

    Returns ``sums [..., 2 * max_offset + 1]`` (float64, in ``maps``' namespace: numpy or torch)
    and ``counts [2 * max_offset + 1]`` (``n - |k|`` queries have a key at offset k; none when
    ``|k| >= n``).
    """
    xp = array_namespace(maps)
    n = maps.shape[-1]
    offsets = range(-max_offset, max_offset + 1)
    counts = np.array([max(n - abs(k), 0) for k in offsets], dtype=np.float64)
    if is_numpy_array(maps):  # one gather and one reduceat, not a diagonal and a sum per offset
        index, starts, columns = _diagonals(n, max_offset)
        sums = np.zeros((*maps.shape[:-2], len(offsets)))
        if len(index):
            picked = np.take(np.reshape(maps, (*maps.shape[:-2], n * n)), index, axis=-1).astype(np.float64)
            sums[..., columns] = np.add.reduceat(picked, starts, axis=-1)
        return sums, counts
    # a device: one gather and one product with each picked value's offset as a one-hot row
    # (a diagonal and a sum per offset are 2·(2·max_offset + 1) operations for the host to issue)
    index, one_hot = _offset_selector(xp, n, max_offset, device(maps))
    picked = xp.take(xp.reshape(maps, (*maps.shape[:-2], n * n)), index, axis=-1)
    return xp.matmul(xp.astype(picked, xp.float64), one_hot), counts


@functools.lru_cache(maxsize=256)
def _offset_selector(xp, n: int, max_offset: int, where) -> tuple:
    """:func:`_diagonals`' flat positions and a float64 one-hot ``[positions, 2·max_offset + 1]``
    of each one's offset, on device ``where`` (kept: a copy to a device waits for it)."""
    index, starts, columns = _diagonals(n, max_offset)
    one_hot = np.zeros((len(index), 2 * max_offset + 1))
    one_hot[np.arange(len(index)), np.repeat(columns, np.diff(np.append(starts, len(index))))] = 1
    return xp.asarray(index, device=where), xp.asarray(one_hot, device=where)


@functools.lru_cache(maxsize=1024)
def _diagonals(n: int, max_offset: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The flat positions ``i n + i + k`` of the diagonals ``k = -max_offset..max_offset`` of an
    ``[n, n]`` map that has them (``|k| < n``), one after the other; where each starts; and
    which of the offsets each is."""
    kept = [k for k in range(-max_offset, max_offset + 1) if abs(k) < n]
    rows = [np.arange(max(0, -k), min(n, n - k)) for k in kept]
    index = np.concatenate([i * n + i + k for i, k in zip(rows, kept)]) if kept else np.zeros(0, np.int64)
    starts = np.cumsum([0] + [len(i) for i in rows[:-1]]) if kept else np.zeros(0, np.int64)
    return index, starts, np.array([k + max_offset for k in kept], np.int64)


@register
class Rollout(Analysis):
    """Attention rollout per layer from α and from Kobayashi's norm maps.

    Parameters
    ----------
    max_offset : int
        The relative-position profile covers offsets -max_offset..+max_offset.
    residual : float
        Weight of the identity in each layer's map (Abnar & Zuidema: 0.5).

    The result's tables, in this order:

    ``shares``, one row per (source, layer)
        ``source`` (attention, norm), ``layer`` (1-based), and the share of the
        rolled-out rows on each token class: ``cls``, ``sep``, ``punct``, ``other``
        (summing to 1), ``special`` (the first three together).
    ``profile``, one row per (source, layer, offset)
        ``offset`` k (key position minus query position), ``mass``: mean ``R_l[i, i + k]``
        over the queries that have a key at that offset.

    State: sums that merging adds, ``shares [2, L, C]`` and ``offsets [2, L, 2 max_offset + 1]``
    (sources x layers x classes or offsets), ``offset_counts [2 max_offset + 1]`` (queries
    with a key at each offset) and ``n_queries``.
    """

    name = "rollout"
    bounded = True  # sums
    needs_norms = True
    _SUMS = ("shares", "offsets", "offset_counts", "n_queries")

    def __init__(self, n_layers: int, n_heads: int, max_offset: int = 8, residual: float = 0.5):
        super().__init__(n_layers, n_heads)
        if max_offset < 0 or not 0 <= residual <= 1:
            raise ValueError(f"max_offset must be >= 0 and residual in [0, 1], got {max_offset}, {residual}")
        self.max_offset, self.residual = max_offset, residual
        width = 2 * max_offset + 1
        self._shares = np.zeros((len(SOURCES), n_layers, len(CLASSES)))
        self._offsets = np.zeros((len(SOURCES), n_layers, width))
        self._offset_counts = np.zeros(width)
        self._n_queries = 0

    def reduce(self, batch: MapBatch) -> dict:
        # each layer's map ([B, L, N, N], 1/H of its maps); the product through the layers is fold's
        return {source: batch_layer_maps(batch, source) for source in SOURCES}

    def fold(self, batch: MapBatch, reduced: dict) -> None:
        xp, f64 = batch.xp, batch.xp.float64
        onehot = batch.token_classes()
        for s, source in enumerate(SOURCES):
            # [B, L, N, N]; a padding row rolls out to itself, and is dropped from the sums
            rolled = rollout(reduced[source], self.residual)
            if batch.padded:
                rolled = rolled * batch.token_mask("valid")[:, None, :, None]
            self._shares[s] += to_host(xp.sum(xp.matmul(rolled, onehot[:, None]), axis=(0, 2), dtype=f64))
            self._offsets[s] += to_host(xp.sum(offset_sums(rolled, self.max_offset)[0], axis=0))
        # queries with a key at each offset, from each example's own length
        offsets = np.abs(np.arange(-self.max_offset, self.max_offset + 1))
        self._offset_counts += np.maximum(batch.lengths[:, None] - offsets, 0).sum(axis=0)
        self._n_queries += int(batch.lengths.sum())

    def _state(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(getattr(self, f"_{name}")) for name in self._SUMS}

    def _merge(self, state: dict[str, np.ndarray]) -> None:
        for name in self._SUMS:
            setattr(self, f"_{name}", getattr(self, f"_{name}") + state[name])

    def result(self) -> Result:
        shares = self._shares / self._n_queries if self._n_queries else np.full_like(self._shares, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            profile = self._offsets / self._offset_counts
        share_rows, profile_rows = [], []
        for s, source in enumerate(SOURCES):
            for layer in range(self.n_layers):
                values = dict(zip(CLASSES, shares[s, layer]))
                share_rows.append({"source": source, "layer": layer + 1, **values,
                                   "special": values["cls"] + values["sep"] + values["punct"]})
                profile_rows += [{"source": source, "layer": layer + 1, "offset": k,
                                  "mass": profile[s, layer, k + self.max_offset]}
                                 for k in range(-self.max_offset, self.max_offset + 1)]
        return Result({"shares": pd.DataFrame(share_rows), "profile": pd.DataFrame(profile_rows)})

    def caption(self, result: Result, provenance: dict) -> str:
        return (f"{describe(provenance, provenance['n_examples'])}; attention rollout (Abnar & Zuidema "
                f"2020): per layer {1 - self.residual:g}·A + {self.residual:g}·I, rows renormalised, "
                "multiplied through the layers; A = mean over heads of α, or the layer's norm map "
                "‖Σ_h αf(x)‖ (Kobayashi et al. 2020) with rows renormalised; token classes "
                + ", ".join(CLASS_LABELS.values()) + "; token-weighted means")
