"""A batch of examples' maps as one array, and the quantities several analyses share.

:class:`MapBatch` holds B examples' maps under one view as ``attn [B, L, H, N, N]``, zero past
each example's length (rows and columns), in the numpy or the torch namespace and on whatever
device they were computed (the array API, through ``array_api_compat``). A batched analysis
(:meth:`headatlas.analyses.base.Analysis.update_batch`) reads it with the namespace's functions
only, so one implementation serves both places the maps come from:

* a store, or a fused extraction on the CPU: numpy, one example at a time (B = 1, no copy,
  no padding); numpy's elementwise kernels are ~3x torch's on one CPU thread (log, products:
  measured in docs/performance.md), so maps on the host stay numpy;
* a fused extraction on a GPU: the whole batch as a torch tensor on the device, so that only
  sums and per-example scores (kilobytes) are copied to the host, never a map.

Quantities that more than one analysis needs (each row's entropy and largest weight, each key
column's mass, the diagonals) are computed once per batch and view and kept
(:meth:`MapBatch.cached`); what depends on the examples alone (the token-class masks, an
analysis's per-token bins) once per group of examples, for every view and layer of them
(:meth:`MapBatch.shared`); a view another view's analysis reads (the norm view, which norm shares
reads beside α) once, from the producer's :class:`Views`. So the analyses of a fused extraction
share them. A batch of one example read from float16 maps asks the example for its row
entropies, which it looks up rather than computes (:meth:`~headatlas.store.example.Example.row_entropy`);
a numpy batch in a process that takes the compiled loops makes each key column's mass and each
row's largest weight in one pass (:mod:`headatlas.analyses._kernels`), where numpy makes two.

A batch may hold some of the model's layers only (``layers``): a fused extraction on a device
hands the analyses each layer's maps as the layer produces them (:meth:`headatlas.analyses.base.
Analysis.reduce`), so that no more than one layer's maps are ever held.
"""

from __future__ import annotations

import weakref
from dataclasses import replace
from typing import Callable, Sequence

import numpy as np
from array_api_compat import array_namespace as compat_namespace
from array_api_compat import is_numpy_array, to_device

from headatlas.store import halves
from headatlas.store.example import Example, class_onehot_of
from headatlas.store.halves import TINY


def array_namespace(x):
    """The array API namespace of ``x``: numpy itself for numpy arrays (numpy 2 implements the
    standard; ``array_api_compat``'s wrappers cost ~10 µs a call, ~0.5 ms per example here),
    ``array_api_compat``'s for torch tensors."""
    return np if is_numpy_array(x) else compat_namespace(x)


def upload(host, device):
    """A host array as a torch tensor on ``device``; to a CUDA device through pinned memory
    (torch's cache of it), without waiting: a copy from pageable memory first waits for every
    kernel queued before it, so the host and the device took turns (a fused bert-base batch
    made 29 such copies, and the host waited in them for a fifth of the run on an H200)."""
    import torch

    host = np.asarray(host)
    tensor = torch.as_tensor(host if host.flags.c_contiguous else host.copy())  # a broadcast view: its values
    if torch.device(device).type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


def to_host(x) -> np.ndarray:
    """``x`` (numpy or torch, any device) as a numpy array: the one place results leave a device."""
    return x if is_numpy_array(x) else np.asarray(to_device(x, "cpu"))


class MapBatch:
    """B examples' maps under one view, zero-padded to the widest, with shared quantities.

    Parameters
    ----------
    attn : float32 ``[B, L, H, N, N]`` (numpy or torch), zero past each example's length.
    examples : the B examples (tokens, ids, indices); their ``attn`` may be None when the
        maps live only in ``attn`` (a device batch).
    weighting : the view ``attn`` holds (``attention`` or ``norm``).
    layers : which of the model's layers the L axis holds (default: all of them, from 0).
    shared : the cache of what depends on the examples alone (:meth:`shared`), handed to every
        batch of the same examples (the views, the layers); default: this batch's own.
    views : the batches of the same examples and layers under each weighting (:class:`Views`),
        where the producer made them side by side: what one view needs of another
        (:meth:`view`) is then computed once; default: none.
    """

    def __init__(self, attn, examples: Sequence[Example] = (), weighting: str = "attention",
                 lengths: Sequence[int] | None = None, value_norms=None, norm_map=None,
                 layers: range | None = None, shared: dict | None = None, views: "Views | None" = None):
        self.attn = attn
        self.layers = range(attn.shape[1]) if layers is None else layers
        if len(self.layers) != attn.shape[1]:
            raise ValueError(f"maps of {attn.shape[1]} layers cannot be the model's layers {self.layers}")
        # Kobayashi's ‖f_h(x_j)‖ [B, L, H, N] and ‖Σ_h α f_h(x_j)‖ [B, L, N, N], zero past each
        # example's length, where the maps came with them (analyses with needs_norms read them)
        self.value_norms, self.norm_map = value_norms, norm_map
        self.xp = array_namespace(attn)
        self.examples = list(examples)
        self.weighting = weighting
        # maps without examples (a function of bare maps) give their lengths instead
        self.lengths = np.array([e.n_tokens for e in self.examples] if lengths is None else lengths,
                                dtype=np.int64)
        if attn.shape[0] != len(self.lengths) or attn.shape[-1] < self.lengths.max(initial=0):
            raise ValueError(f"maps of shape {tuple(attn.shape)} do not fit {len(self.lengths)} "
                             f"examples of lengths up to {self.lengths.max(initial=0)}")
        self._cache: dict = {}
        self._shared: dict = {} if shared is None else shared
        # weakly: views -> batch -> views would be a cycle, whose maps only the garbage collector
        # frees (a fused run's memory and time grew with it)
        self._views = None if views is None else weakref.ref(views)

    @classmethod
    def of(cls, examples: Sequence[Example], shared: dict | None = None,
           views: "Views | None" = None) -> "MapBatch":
        """The examples' numpy maps as a batch (one example: a view, no copy; else zero-padded);
        ``shared``: their cache of what depends on them alone (:meth:`shared`), if other
        batches of them (another view) have one; ``views``: those batches, by weighting."""
        examples = list(examples)
        norms = all(e.value_norms is not None and e.norm_map is not None for e in examples)
        if len(examples) == 1:
            e = examples[0]
            return cls(e.attn[None], examples, e.weighting, value_norms=e.value_norms[None] if norms else None,
                       norm_map=e.norm_map[None] if norms else None, shared=shared, views=views)
        return cls(_padded([e.attn for e in examples], 2), examples, examples[0].weighting,
                   value_norms=_padded([e.value_norms for e in examples], 1) if norms else None,
                   norm_map=_padded([e.norm_map for e in examples], 2) if norms else None, shared=shared,
                   views=views)

    def select(self, rows: Sequence[int]) -> "MapBatch":
        """The batch of these rows only (its shared quantities computed afresh)."""
        index = self.asarray(np.asarray(rows, dtype=np.int64))

        def take(x):
            return None if x is None else self.xp.take(x, index, axis=0)
        return MapBatch(take(self.attn), [self.examples[r] for r in rows], self.weighting,
                        self.lengths[list(rows)], take(self.value_norms), take(self.norm_map), self.layers)

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def width(self) -> int:
        return int(self.attn.shape[-1])

    @property
    def padded(self) -> bool:
        """Whether any example is shorter than the batch (a batch of one never is)."""
        return bool((self.lengths < self.width).any())

    def host_examples(self) -> list[Example]:
        """The examples with their maps as numpy arrays (for an analysis that reads one at a time)."""
        if all(e.attn is not None for e in self.examples):
            return self.examples
        maps = to_host(self.attn)
        value_norms = None if self.value_norms is None else to_host(self.value_norms)
        norm_map = None if self.norm_map is None else to_host(self.norm_map)
        return [replace(e, attn=maps[b, :, :, :n, :n],
                        value_norms=None if value_norms is None else value_norms[b, :, :, :n],
                        norm_map=None if norm_map is None else norm_map[b, :, :n, :n])
                for b, (e, n) in enumerate(zip(self.examples, self.lengths))]

    def cached(self, key: str, compute: Callable[[], object]):
        """``compute()`` the first time ``key`` is asked for on this batch, the same object after."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def shared(self, key: str, compute: Callable[[], object]):
        """:meth:`cached` for what depends on the examples alone, never on the maps: computed once
        for every batch that shares this batch's examples (each view, each layer)."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    # --- per token, [B, N], on the batch's device -----------------------------------------------

    def token_mask(self, kind: str):
        """float32 ``[B, N]``: 1 where the token is ``valid`` (within its example), ``cls``,
        ``sep`` or ``punct`` (:func:`~headatlas.store.example.token_masks`), else 0."""
        def compute():  # valid needs only the lengths, not each example's tokens
            host = self.valid() if kind == "valid" else self.host_masks()[kind]
            return self.asarray(host.astype(np.float32))
        return self.shared(f"mask:{kind}", compute)

    def valid(self) -> np.ndarray:
        """Boolean ``[B, N]`` numpy mask of the positions within each example (from the lengths
        alone: batches of bare maps have it too)."""
        return self.shared("valid", lambda: np.arange(self.width)[None, :] < self.lengths[:, None])

    def host_masks(self) -> dict[str, np.ndarray]:
        """Boolean ``[B, N]`` numpy masks of :meth:`token_mask`'s kinds."""
        def compute():
            out = {k: np.zeros((len(self), self.width), bool) for k in ("cls", "sep", "punct")}
            for b, e in enumerate(self.examples):
                n = e.n_tokens
                out["cls"][b, :n], out["sep"][b, :n], out["punct"][b, :n] = e.masks
            return {"valid": self.valid(), **out}
        return self.shared("host_masks", compute)

    def host_classes(self) -> np.ndarray:
        """float32 ``[B, N, 4]`` numpy: each token's class one-hot
        (:attr:`~headatlas.store.example.Example.class_onehot`), zero past each example's length."""
        def compute():  # from the batch's masks at once
            masks = self.host_masks()
            return class_onehot_of(masks["cls"], masks["sep"], masks["punct"], masks["valid"])
        return self.shared("host_classes", compute)

    def token_classes(self):
        """:meth:`host_classes` on the batch's device."""
        return self.shared("token_classes", lambda: self.asarray(self.host_classes()))

    def asarray(self, host: np.ndarray):
        """A host array as an array of the batch's namespace, on its device (:func:`upload`)."""
        return self.xp.asarray(host) if is_numpy_array(self.attn) else upload(host, self.attn.device)

    def n_tokens(self):
        """float64 ``[B]`` lengths on the batch's device."""
        return self.shared("n_tokens", lambda: self.asarray(self.lengths.astype(np.float64)))

    # --- the maps under another weighting ----------------------------------------------------

    def view(self, weighting: str) -> "MapBatch":
        """This batch under ``weighting``: the producer's batch of it where one was made beside
        this one (``views``), else made here once from these maps (for the norm view: α_ij‖f_h(x_j)‖
        with each row renormalised, :func:`headatlas.weightings.norm_weighted`'s operations)."""
        if weighting == self.weighting:
            return self
        views = None if self._views is None else self._views()
        if views is not None:
            try:
                return views[weighting]
            except KeyError:  # the producer made no batch of that view
                pass
        if (self.weighting, weighting) != ("attention", "norm"):
            raise ValueError(f"a batch of the {self.weighting} view cannot be seen under {weighting}")
        if self.value_norms is None:
            raise ValueError("the norm view needs the value norms (open the store with norms=True)")

        def make():  # its examples without maps: the maps are the batch's (host_examples)
            return MapBatch(norm_weighted(self.attn, self.value_norms),
                            [replace(e, attn=None) for e in self.examples], weighting, self.lengths,
                            self.value_norms, self.norm_map, self.layers, self._shared)
        return self.cached(f"view:{weighting}", make)

    # --- per row or column, [B, L, H, N] --------------------------------------------------------

    def row_entropy(self):
        """float32 ``[B, L, H, N]``: ``-Σ_k a log a`` of each query row (nats; 0 log 0 = 0; 0 on
        padding rows). A batch of one example's own maps asks the example, which looks a store's
        up (:meth:`~headatlas.store.example.Example.row_entropy`), whatever the analysis."""
        def compute():
            xp, attn, own = self.xp, self.attn, self._own_example()
            if own is not None:
                return own.row_entropy()[None]
            return -xp.vecdot(attn, xp.log(xp.clip(attn, min=TINY)))
        return self.cached("row_entropy", compute)

    def _own_example(self) -> Example | None:
        """The batch's one example, when the batch's maps are that example's own (all its layers,
        its view: what it knows of them holds for the batch); else None."""
        if len(self) != 1 or not self.examples or not is_numpy_array(self.attn):
            return None
        example = self.examples[0]
        if example.attn is None or example.attn.shape != self.attn.shape[1:]:
            return None
        return example if np.may_share_memory(self.attn, example.attn) else None

    def column_mass(self):
        """float64 ``[B, L, H, N]``: the attention each key receives, summed over the queries."""
        return self._map_sum("column_mass", lambda: self.xp.sum(self.attn, axis=-2, dtype=self.xp.float64))

    def row_max(self):
        """float32 ``[B, L, H, N]``: each query's largest weight (zero on padding rows)."""
        return self._map_sum("row_max", lambda: self.xp.max(self.attn, axis=-1))

    def _map_sum(self, key: str, compute: Callable[[], object]):
        """:meth:`column_mass` or :meth:`row_max`: on the host, once the process takes the compiled
        loops (:meth:`compiled_here`), both from one pass over the maps
        (:func:`headatlas.analyses._kernels.map_sums`, bitwise numpy's: 0.45 against 1.2 ms per
        128-token MiniLM example); else ``compute()``."""
        if key not in self._cache and self.compiled_here():
            self._cache.update(self._compiled_sums())
        return self.cached(key, compute)

    def compiled_here(self) -> bool:
        """Whether this batch's per-row quantities take the compiled loops: numpy float32 maps, in a
        process that takes them (:func:`~headatlas.store.halves.compiled`)."""
        return is_numpy_array(self.attn) and self.attn.dtype == np.float32 and halves.compiled()

    def _compiled_sums(self) -> dict:
        """:meth:`_map_sum`'s two from the compiled pass; none where a map is not finite (the pass
        assumes finite maps: numpy's arithmetic decides those)."""
        from headatlas.analyses._kernels import map_sums

        width = self.width
        maps = np.ascontiguousarray(self.attn).reshape(len(self), -1, width, width)
        columns, row_max = np.empty(maps.shape[:-1]), np.empty(maps.shape[:-1], np.float32)
        map_sums(maps, columns, row_max)
        if not np.isfinite(columns).all():
            return {}
        shape = self.attn.shape[:-1]
        return {"column_mass": columns.reshape(shape), "row_max": row_max.reshape(shape)}

    def diagonal(self, offset: int):
        """float32 ``[B, L, H, N - |offset|]``: the entries ``[i, i + offset]`` (zero on padding)."""
        return self.cached(f"diagonal:{offset}", lambda: self.xp.linalg.diagonal(self.attn, offset=offset))


class Views(dict):
    """Batches of the same examples and layers, by weighting (a subclass may make one when it is
    first asked for): what a batch reads of its other views (:meth:`MapBatch.view`)."""


def layer_of(batch: MapBatch, layer: int, shared: dict | None = None) -> MapBatch:
    """The batch's maps of one of its layers (index into ``batch.layers``) as a batch of their
    own: its examples, one layer, ``shared`` (default: the batch's) as its examples' cache."""
    def one(x):
        return None if x is None else x[:, layer:layer + 1]
    return MapBatch(one(batch.attn), batch.examples, batch.weighting, batch.lengths, one(batch.value_norms),
                    one(batch.norm_map), batch.layers[layer:layer + 1],
                    batch._shared if shared is None else shared)


def join_layers(parts: Sequence[dict]) -> dict:
    """:meth:`~headatlas.analyses.base.Analysis.reduce` of consecutive layers' batches joined on
    their layer axis (1): the reduction of the batch of all those layers."""
    return {key: array_namespace(parts[0][key]).concat([p[key] for p in parts], axis=1) for key in parts[0]}


def norm_weighted(attn, value_norms):
    """Kobayashi's per-head view of maps ``[..., H, N, N]`` and value norms ``[..., H, N]`` in
    their namespace (:func:`headatlas.weightings.norm_weighted`'s operations, for any array)."""
    return row_normalised(attn * value_norms[..., None, :])


def row_normalised(x):
    """``x`` divided by its sums over the last axis (rows summing to 0 stay 0), in ``x``'s
    namespace (:func:`headatlas.weightings.row_normalised` for any array)."""
    xp = array_namespace(x)
    totals = xp.sum(x, axis=-1, keepdims=True)
    return x / xp.where(totals > 0, totals, xp.ones_like(totals))


def _padded(arrays: Sequence[np.ndarray], token_dims: int) -> np.ndarray:
    """float32 ``[B, ..., N(, N)]``: the arrays, zero-padded on their ``token_dims`` last axes."""
    width = max(a.shape[-1] for a in arrays)
    out = np.zeros((len(arrays), *arrays[0].shape[:-token_dims], *(width,) * token_dims), np.float32)
    for b, a in enumerate(arrays):
        out[(b, Ellipsis, *(slice(0, d) for d in a.shape[-token_dims:]))] = a
    return out
