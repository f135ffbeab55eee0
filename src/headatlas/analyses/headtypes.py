"""Distance features and unsupervised head types (Guan et al. 2020, §3-4).

Every head is described by a 21-dimensional *distance feature*: the share of
its attention that goes to the four special tokens (``[CLS]``, ``[SEP]``,
``,``, ``.``), to the query token itself, and to the other tokens in 16
distance windows. K-means with k = 4 on these features gives the paper's four
head types — dense, diagonal, dense&vertical, vertical — and their stability
is measured after von Luxburg (2010) by refitting on random halves.

How we read the paper's definition (its Eq. 2 leaves details open)
------------------------------------------------------------------
* ``L`` is the number of wordpieces of an input, ``[CLS]`` and ``[SEP]``
  included; ``N = 16`` windows of width ``L / N`` each.
* Each key is put in exactly one bin, decided by the key alone (the paper
  calls special-token and window attention "exclusive"): a ``[CLS]``,
  ``[SEP]``, ``,`` or ``.`` key goes to its special bin, *also when it is the
  query itself* (so a ``[SEP]`` attending to itself counts as ``[SEP]``);
  any other key at distance ``d = |s - t|`` goes to ``self`` if ``d = 0`` and
  else to window ``i`` (0-based) with ``i L / N < d <= (i + 1) L / N``, i.e.
  ``i = ceil(d N / L) - 1``. Eq. 2's window ``[iL/N, (i+1)L/N]`` is read as
  half-open so that every distance falls in exactly one window; with L = 16
  the windows have width 1 (window ``i`` = distance ``i + 1``) and the last
  window, distance 16, is always empty.
* "Normalised by L": a token's 21 values are its attention row split into
  the bins, divided by the row's total (1 up to float16 rounding of the
  store), so they sum to 1; the input's feature is the mean over its L query
  tokens ("(1/L) sum_s" of Eq. 2). Inputs are then averaged with equal weight.
* The features are clustered as they are (no standardisation): all 21 are
  shares of the same attention mass.

Naming the clusters
-------------------
K-means cluster numbers are arbitrary, so each cluster centre is scored
against the paper's descriptions and the names are given by the Hungarian
method (maximum total score, one name per cluster). A centre's mass splits
into *special* (``[CLS]`` + ``[SEP]`` + ``,`` + ``.``), *near* (``self`` +
the nearest window) and *far* (every other window); near + far + special = 1.

* ``diagonal`` ("large values in the short-range windows"): score = near;
* ``dense`` ("highest attention at long range windows and relatively small
  attention to the special tokens"): score = far - special;
* ``vertical`` ("large values at special tokens, much higher than other
  types"): score = special - far;
* ``dense&vertical`` ("large values at long range windows and special
  tokens"): score = min(far, special), high only when both are.

Names are given only to clusters that are there: when :func:`separation`
finds no distinct clusters (a random encoder's heads), every head's type is
:data:`NO_TYPES` (:func:`name_if_distinct`), the shares table says so with the
test's statistic, and every reader of the types (claims, type changes, the
ablation) treats the types as not applicable.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from headatlas.analyses.base import Analysis, length_text, register
from headatlas.analyses.batch import MapBatch, to_host
from headatlas.analyses.result import Result
from headatlas.analyses.sample import ExampleSample
from headatlas.claims import Claim, holds_if, pct
from headatlas.heads import Column, HeadColumns, head_name, head_table
from headatlas.store.example import Example
from headatlas.weightings import weighting_note

N_WINDOWS = 16
SPECIAL = ("cls", "sep", "comma", "period")
TYPES = ("dense", "diagonal", "dense&vertical", "vertical")
# The ``type`` of every head when the clusters are not distinct (:func:`name_if_distinct`).
NO_TYPES = "no distinct types"
METHODS = ("kmeans", "gmm")
# Stability: "heads" is the paper's procedure (the headline), "inputs" a second reading.
RESAMPLE = ("heads", "inputs")
HEADLINE = RESAMPLE[0]
READINGS = {"heads": "the paper's procedure", "inputs": "second reading: resampling inputs"}

# Guan et al. (2020), BERT-large (24 x 16 = 384 heads), 1,000 SQuAD samples.
# As printed the shares sum to 98.99%; with diagonal = 102/384 = 26.56% they would sum to 100%,
# so 25.56 is probably a typo. We quote the paper as printed.
PAPER_SHARES = {"dense": 26.04, "diagonal": 25.56, "dense&vertical": 34.11, "vertical": 13.28}
PAPER_LAYERS_TEXT = {"dense": "mainly the first layers", "diagonal": "almost all layers",
                     "dense&vertical": "mainly middle layers", "vertical": "mainly higher layers"}
# Table 1: share of heads clustered consistently over 10 fits on random 50% splits.
PAPER_STABILITY = {"pre-trained": 95.98, "SQuAD": 96.26, "MRPC": 95.98, "MNLI": 94.37}
PAPER_MODEL = "BERT-large (24 layers x 16 heads = 384 heads)"


def feature_names(n_windows: int = N_WINDOWS) -> list[str]:
    """Column names: the four special tokens, ``self``, then ``win01`` .. ``win16`` (nearest first)."""
    return [*SPECIAL, "self", *(f"win{i + 1:02d}" for i in range(n_windows))]


# ---------------------------------------------------------------------------------------------
# features

@functools.lru_cache(maxsize=64)
def _distances(n: int) -> np.ndarray:
    """int ``[n, n]``: ``|i - j|`` of every (query, key) pair, read-only (one array per ``n``)."""
    position = np.arange(n)
    distances = np.abs(position[:, None] - position[None, :])
    distances.setflags(write=False)
    return distances


def key_bins(n: int, special: np.ndarray, n_windows: int = N_WINDOWS) -> np.ndarray:
    """The feature bin of every (query, key) pair of an ``n``-token input.

    Parameters
    ----------
    n : int
        Tokens in the input (``L``).
    special : bool array [4, n]
        Which tokens are ``[CLS]``, ``[SEP]``, ``,``, ``.`` (in :data:`SPECIAL` order).
    n_windows : int
        ``N``, the number of distance windows.

    Returns
    -------
    int array [n, n]
        ``bins[s, t]`` in ``0 .. 4 + n_windows``: 0-3 special token, 4 self,
        ``5 + i`` window ``i`` (the rules are in the module docstring).
    """
    special = np.asarray(special, dtype=bool)
    if special.shape != (len(SPECIAL), n):
        raise ValueError(f"special masks of shape {special.shape}, expected {(len(SPECIAL), n)}")
    key = special_keys(special)
    return np.where(key >= 0, key, _distance_bins(n, n_windows))  # special keys win over self and windows


def special_keys(special: np.ndarray) -> np.ndarray:
    """int16 ``[..., n]``: the :data:`SPECIAL` class of each key (the last it is in), -1 for none,
    of masks ``[..., 4, n]`` (:func:`special_masks`)."""
    key = np.full(special.shape[:-2] + special.shape[-1:], -1, np.int16)
    for j in range(special.shape[-2]):
        np.copyto(key, j, where=special[..., j, :])
    return key


@functools.lru_cache(maxsize=64)
def _distance_bins(n: int, n_windows: int) -> np.ndarray:
    """:func:`key_bins` of an ``n``-token input without special tokens (self and windows: the
    same for every input of that length), read-only."""
    d = _distances(n)
    window = -(-d * n_windows // n) - 1  # ceil(d N / L) - 1, in integers: edges exact for every L
    bins = len(SPECIAL) + 1 + window
    bins[d == 0] = len(SPECIAL)
    bins.setflags(write=False)
    return bins


def special_masks(example: Example) -> np.ndarray:
    """bool [4, n]: ``[CLS]``, ``[SEP]``, ``,``, ``.`` tokens of ``example``."""
    comma, period = _comma_and_period(example.punct_mask, example.tokens)
    return np.stack([example.cls_mask, example.sep_mask, comma, period])


def _comma_and_period(punct: np.ndarray, tokens: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Masks like ``punct`` (``[n]`` of one input's ``tokens``, or ``[B, n]`` of each input's) of
    its tokens that end in ``,`` and in ``.``: the last character of the few punctuation tokens."""
    rows = [tokens] if punct.ndim == 1 else tokens
    b, i = np.nonzero(punct.reshape(len(rows), -1))
    ends = [rows[r][c][-1:] for r, c in zip(b.tolist(), i.tolist())]
    comma, period = np.zeros((len(rows), punct.shape[-1]), bool), np.zeros((len(rows), punct.shape[-1]), bool)
    comma[b, i], period[b, i] = [end == "," for end in ends], [end == "." for end in ends]
    return comma.reshape(punct.shape), period.reshape(punct.shape)


def batch_key_bins(batch: MapBatch, n_windows: int = N_WINDOWS) -> np.ndarray:
    """int16 ``[B, N, N]`` (host): :func:`key_bins` of :func:`special_masks` of each example of
    ``batch``, 0 past its length; made for the whole batch at once from its token masks."""
    masks = batch.host_masks()
    comma, period = _comma_and_period(masks["punct"], [e.tokens for e in batch.examples])
    key = special_keys(np.stack([masks["cls"], masks["sep"], comma, period], axis=1))  # [B, N]
    lengths = batch.lengths
    out = np.zeros((len(batch), batch.width, batch.width), np.int16)
    for n in np.unique(lengths).tolist():
        out[lengths == n, :n, :n] = _distance_bins(n, n_windows)
    # special keys win over self and windows
    np.copyto(out, key[:, None, :], where=masks["valid"][:, :, None] & (key >= 0)[:, None, :])
    return out


def distance_features(attn: np.ndarray, bins: np.ndarray, n_bins: int | None = None) -> np.ndarray:
    """One input's distance features: per head, its rows binned, normalised and averaged.

    Parameters
    ----------
    attn : float array [..., n, n]
        Attention (query, key) of any number of heads, e.g. ``[layers, heads, n, n]``.
    bins : int array [n, n]
        From :func:`key_bins`.
    n_bins : int, optional
        Number of bins (default ``bins.max() + 1``; pass 21 so empty top bins still count).

    Returns
    -------
    float32 array [..., n_bins]
        Mean over the n query tokens of each token's row mass per bin, the row
        first divided by its total so each token's values sum to 1.
    """
    n = attn.shape[-1]
    if attn.shape[-2:] != (n, n) or bins.shape != (n, n):
        raise ValueError(f"attention {attn.shape} and bins {bins.shape} are not [.., n, n] / [n, n]")
    n_bins = int(bins.max()) + 1 if n_bins is None else n_bins
    batch = MapBatch(np.asarray(attn, dtype=np.float32).reshape(1, -1, 1, n, n), lengths=[n])
    return binned_rows(batch, bins[None], n_bins)[0].reshape(*attn.shape[:-2], n_bins)


def pair_bins(batch: MapBatch, bins: np.ndarray, n_bins: int) -> np.ndarray:
    """int16 ``[B, N, N]`` (host): ``bins`` (:func:`key_bins` of each example, ``[B, N, N]``),
    with the pairs past an example's length, and any bin outside ``0 .. n_bins - 1``, in one more
    bin, ``n_bins``, which no feature reads (the compiled loop indexes by it unchecked)."""
    width, valid = batch.width, batch.valid()  # [B, N]
    index = bins[:, :width, :width]
    inside = (index >= 0) & (index < n_bins)
    if batch.padded:
        inside &= valid[:, :, None] & valid[:, None, :]
    return np.where(inside, index, n_bins).astype(np.int16)


def key_and_distance_bins(index: np.ndarray, lengths: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``index`` (:func:`pair_bins`, ``[B, N, N]``) as int32 ``[B, N]`` twice, where its bins have
    :func:`key_bins`' form: each key's bin where every query of its example gives the key one
    (else -1), and for the other keys the bin at each distance ``|i - j|``; unused entries
    ``n_bins``. None where some example's bins are of another form (the numpy path reads them)."""
    by_key = np.full(index.shape[:2], -1, np.int32)
    by_distance = np.full(index.shape[:2], n_bins, np.int32)
    for b, n in enumerate(np.asarray(lengths).tolist()):
        own = index[b, :n, :n].astype(np.int32)
        fixed = (own == own[:1]).all(axis=0)  # the key alone decides
        by_key[b, :n] = np.where(fixed, own[0], -1)
        free = np.flatnonzero(~fixed)
        if not len(free):
            continue
        # the first and the last of the other keys see every distance any of them has
        first, last = free[0], free[-1]
        distance = np.arange(n)
        by_distance[b, :n] = np.where(distance <= n - 1 - first, own[np.minimum(first + distance, n - 1), first],
                                      own[np.maximum(last - distance, 0), last])
        if not np.array_equal(np.where(fixed, own[0], by_distance[b, _distances(n)]), own):
            return None
    return by_key, by_distance


def bin_onehot(batch: MapBatch, index: np.ndarray, n_bins: int):
    """float32 ``[B, N*N, n_bins]`` on the batch's device: 1 where a (query, key) pair of an
    example is in bin b (``index``: :func:`pair_bins`)."""
    index = batch.asarray(index.reshape(len(batch), -1, 1))  # made where the maps are (int16: 1/40 of its bytes)
    return batch.xp.astype(index == batch.asarray(np.arange(n_bins, dtype=np.int16)), batch.xp.float32)


def binned_rows(batch: MapBatch, bins: np.ndarray, n_bins: int, host: bool = True, key: str | None = None):
    """:func:`distance_features` of every map of a batch, on its device; float32
    ``[B, maps, n_bins]``, on the host (``host=False``: on the batch's device, so that a layer
    read on a GPU waits on no copy; :func:`check_features` on the host then). ``bins``: int
    ``[B, N, N]``, each example's :func:`key_bins`. ``key``: a name for these bins, under which what
    is made of them is kept for every view and layer of the examples (:meth:`MapBatch.shared`).
    A map with a row of no mass gets NaN features, which :func:`check_features` refuses.

    On the host, once the process takes the compiled loops, one pass per map does it for bins of
    :func:`key_bins`' form (:func:`key_and_distance_bins`; :func:`headatlas.analyses._kernels.binned_rows`);
    else every row is divided by its total and one matmul sums every row into its bins for all
    heads at once, ``[maps, N*N] @ [N*N, bins]``, in float64 as the loop sums."""
    def shared(name: str, make):
        return make() if key is None else batch.shared(f"{key}:{name}", make)
    xp = batch.xp
    n_maps, width = len(batch), batch.width
    if batch.compiled_here():
        parts = shared("parts", lambda: key_and_distance_bins(pair_bins(batch, bins, n_bins), batch.lengths, n_bins))
        if parts is not None:
            from headatlas.analyses import _kernels

            out = np.empty((n_maps, int(np.prod(batch.attn.shape[1:-2])), n_bins), np.float32)
            _kernels.binned_rows(np.ascontiguousarray(batch.attn).reshape(n_maps, -1, width, width), *parts,
                                 batch.lengths, n_bins, out)
            return check_features(out) if host else out
    # in float64, as the compiled loop sums: float32 sums of 16,384 terms a bin would part from it
    # in the 7th digit the tables print
    f64 = xp.float64
    onehot = shared("onehot", lambda: xp.astype(bin_onehot(batch, pair_bins(batch, bins, n_bins), n_bins), f64))
    totals = xp.sum(batch.attn, axis=-1, keepdims=True, dtype=f64)
    # a real query's row of no mass divides by NaN (its map's features NaN); padding rows by 1
    empty = (totals <= 0) & (batch.token_mask("valid") > 0)[:, None, None, :, None]
    rows = xp.astype(batch.attn, f64) / xp.where(totals > 0, totals, xp.where(
        empty, xp.full_like(totals, float("nan")), xp.ones_like(totals)))
    flat = xp.matmul(xp.reshape(rows, (n_maps, -1, width * width)), onehot)
    features = xp.astype(flat / batch.n_tokens()[:, None, None], xp.float32)
    return check_features(to_host(features)) if host else features


def check_features(features: np.ndarray) -> np.ndarray:
    """``features`` (host), refused when a map had a row of no mass (:func:`binned_rows`)."""
    if np.isnan(features).any():
        raise ValueError("an attention row sums to 0; distance features need rows of positive mass")
    return features


@register
class DistanceFeatures(Analysis):
    """Guan et al.'s 21-d distance feature of every head and input, streamed over a store.

    ``result()`` is an :class:`InputFeatures`: the mean feature of every head over all
    inputs (each input with equal weight) for the per-head table
    (:meth:`InputFeatures.head_table`), and each input's ``[layers * heads, 21]`` feature
    (float32: 1,000 inputs x 72 heads is 6 MB) for a sample of at most ``sample_examples``
    inputs, in corpus order, for the stability analysis's input resampling.

    Parameters
    ----------
    n_windows : int
        ``N``, the number of distance windows (default 16).
    sample_examples : int or None
        Keep each input's features for at most this many inputs (:class:`ExampleSample`:
        seeded by the corpus positions, the same however the corpus is sharded), so the state
        stays a fixed size on any corpus; None keeps every input's.
    seed : int
        Seed of that sample.

    State: ``feature_sum`` float64 ``[layers * heads, 4 + 1 + n_windows]`` over every input
    (merging adds), and the sample's ``features`` float32 ``[inputs, layers * heads,
    4 + 1 + n_windows]`` and ``example_index`` int ``[inputs]`` (corpus positions, ascending;
    merging keeps the sample of the union).
    """

    name = "distance_features"
    bounded = True  # sums and a capped sample of examples
    unit = "inputs"

    def __init__(self, n_layers: int, n_heads: int, n_windows: int = N_WINDOWS,
                 sample_examples: int | None = 2000, seed: int = 0):
        super().__init__(n_layers, n_heads)
        if n_windows < 1:
            raise ValueError(f"n_windows must be >= 1, got {n_windows}")
        self.n_windows = n_windows
        self.sample_examples = sample_examples
        self.seed = seed
        self._sum = np.zeros((n_layers * n_heads, self.n_features))  # over every input
        self._kept = ExampleSample(sample_examples, seed)  # corpus position -> [layers * heads, n_features]

    @property
    def n_features(self) -> int:
        return len(SPECIAL) + 1 + self.n_windows

    def reduce(self, batch: MapBatch) -> dict:
        key = f"key_bins:{self.n_windows}"
        bins = batch.shared(key, lambda: batch_key_bins(batch, self.n_windows))
        features = binned_rows(batch, bins, self.n_features, host=False, key=key)
        return {"features": batch.xp.reshape(features, (len(batch), len(batch.layers), self.n_heads, -1))}

    def fold(self, batch: MapBatch, reduced: dict) -> None:
        features = check_features(to_host(reduced["features"])).reshape(len(batch), self.n_layers * self.n_heads, -1)
        self._sum += features.sum(axis=0, dtype=np.float64)
        for example, feats in zip(batch.examples, features):
            if self._kept.admits(example.index):  # a copy: a view would hold the whole batch
                self._kept.add(example.index, feats.copy())

    def _state(self) -> dict[str, np.ndarray]:
        kept = self._kept.items()
        shape = (0, self.n_layers * self.n_heads, self.n_features)
        return {"feature_sum": self._sum,
                "features": np.stack([f for _, f in kept]) if kept else np.zeros(shape, np.float32),
                "example_index": np.asarray([i for i, _ in kept], np.int64)}

    def _merge(self, state: dict[str, np.ndarray]) -> None:
        self._sum = self._sum + state["feature_sum"]
        self._kept.extend(zip(state["example_index"].tolist(), state["features"]))

    def result(self) -> "InputFeatures":
        if not self.n_examples:
            raise ValueError("no input was analysed")
        state = self._state()
        return InputFeatures.from_arrays(state["features"], state["example_index"], self.lengths,
                                         self.n_layers, self.n_heads, self.n_windows,
                                         mean=self._sum / self.n_examples)

    def caption(self, result: "InputFeatures", provenance: dict) -> str:
        text = caption(provenance, result.n_inputs, result.lengths)
        if result.n_sampled < result.n_inputs:
            text += (f"; each input's own features (the stability's input resampling) kept for a seeded "
                     f"sample of {result.n_sampled:,} inputs (sample_examples)")
        return text


class InputFeatures(Result):
    """Distance features of one (model, corpus): :class:`DistanceFeatures`'s result.

    ``arrays``: ``mean`` float64 ``[layers * heads, n_features]`` (every input's feature
    averaged, heads in layer-major order), ``lengths`` int ``[inputs]`` (tokens of every
    input), and for the sampled inputs (every input unless the sample was capped)
    ``features`` float32 ``[sampled, layers * heads, n_features]`` and ``example_index`` int
    ``[sampled]`` (corpus positions, ascending); ``attrs``: ``n_layers``, ``n_heads``,
    ``n_windows``, and once run, the provenance and caption (saved with it:
    :meth:`~headatlas.analyses.result.Result.save`, ``per_input.npz``).
    """

    @classmethod
    def from_arrays(cls, features: np.ndarray, example_index, lengths, n_layers: int, n_heads: int,
                    n_windows: int = N_WINDOWS, mean: np.ndarray | None = None) -> "InputFeatures":
        """``mean``: every input's average (default: the average of ``features``, which then
        hold every input)."""
        features = np.asarray(features)
        mean = features.mean(axis=0, dtype=np.float64) if mean is None else np.asarray(mean, np.float64)
        return cls(arrays={"features": features, "example_index": np.asarray(example_index),
                           "lengths": np.asarray(lengths), "mean": mean},
                   attrs={"n_layers": int(n_layers), "n_heads": int(n_heads), "n_windows": int(n_windows)})

    @property
    def features(self) -> np.ndarray:
        return self.arrays["features"]

    @property
    def example_index(self) -> np.ndarray:
        return self.arrays["example_index"]

    @property
    def lengths(self) -> np.ndarray:
        return self.arrays["lengths"]

    @property
    def n_layers(self) -> int:
        return self.attrs["n_layers"]

    @property
    def n_heads(self) -> int:
        return self.attrs["n_heads"]

    @property
    def n_windows(self) -> int:
        return self.attrs["n_windows"]

    @property
    def mean(self) -> np.ndarray:
        return self.arrays["mean"]

    @property
    def n_inputs(self) -> int:
        """Every input the mean is over."""
        return len(self.lengths)

    @property
    def n_sampled(self) -> int:
        """Inputs whose own features are kept (:attr:`features`)."""
        return len(self.features)

    def head_table(self) -> pd.DataFrame:
        """Per head: ``layer``, ``head`` (1-based) and the input-averaged features."""
        return head_table(self.n_layers, self.n_heads, **dict(zip(feature_names(self.n_windows), self.mean.T)))


# ---------------------------------------------------------------------------------------------
# clustering

def fit_clusters(x: np.ndarray, k: int = 4, method: str = "kmeans", seed: int = 0, n_init: int = 10):
    """Fit k-means (or a diagonal-covariance Gaussian mixture) to ``x`` [samples, features].

    Returns the fitted scikit-learn estimator (``predict``, ``cluster_centers_``/``means_``).
    A full covariance per component would need 231 parameters in 21 dimensions, more than
    the 72-384 heads can support, hence ``covariance_type="diag"`` for ``gmm``.
    """
    if method not in METHODS:
        raise ValueError(f"clustering method {method!r} unknown; use one of {METHODS}")
    if len(x) < k:
        raise ValueError(f"{len(x)} heads cannot form {k} clusters; lower headtypes.k")
    if method == "kmeans":
        from sklearn.cluster import KMeans

        return KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(x)
    from sklearn.mixture import GaussianMixture

    return GaussianMixture(n_components=k, covariance_type="diag", n_init=n_init,
                           random_state=seed).fit(x)


def centres(model) -> np.ndarray:
    """Cluster centres [k, features] of a k-means or Gaussian-mixture fit."""
    return model.cluster_centers_ if hasattr(model, "cluster_centers_") else model.means_


def profile(feats: np.ndarray) -> dict[str, np.ndarray]:
    """Special, near (self + nearest window) and far (other windows) mass of feature rows."""
    feats = np.atleast_2d(feats)
    n_special = len(SPECIAL)
    return {"special": feats[:, :n_special].sum(axis=1),
            "near": feats[:, n_special] + feats[:, n_special + 1],
            "far": feats[:, n_special + 2:].sum(axis=1)}


def name_clusters(cluster_centres: np.ndarray) -> list[str]:
    """A type name per cluster (index = cluster id), from the centres' profiles.

    With 4 clusters: the Hungarian assignment of the module docstring
    (diagonal = near, dense = far - special, vertical = special - far,
    dense&vertical = min(far, special)). With another k the paper has no names: the
    clusters are called ``c1`` .. ``ck`` in order of increasing special mass.
    """
    p = profile(cluster_centres)
    k = len(cluster_centres)
    if k != len(TYPES):
        order = np.argsort(p["special"], kind="stable")
        names = [""] * k
        for rank, cluster in enumerate(order):
            names[cluster] = f"c{rank + 1}"
        return names
    far, special = p["far"], p["special"]
    scores = np.stack([far - special, p["near"], np.minimum(far, special), special - far])  # TYPES x k
    from scipy.optimize import linear_sum_assignment  # here: figure jobs import this module

    type_idx, cluster_idx = linear_sum_assignment(scores, maximize=True)
    names = [""] * k
    for t, c in zip(type_idx, cluster_idx):
        names[c] = TYPES[t]
    return names


def head_types(table: pd.DataFrame, k: int = 4, method: str = "kmeans", seed: int = 0,
               n_init: int = 10) -> pd.DataFrame:
    """Cluster the heads of a feature table and name the clusters.

    Parameters
    ----------
    table : DataFrame
        Per head: ``layer``, ``head`` and the :func:`feature_names` columns.

    Returns
    -------
    DataFrame
        ``table`` plus ``cluster`` (the estimator's id) and ``type`` (its name).
    """
    x = feature_matrix(table)
    model = fit_clusters(x, k, method, seed, n_init)
    labels = model.predict(x)
    names = np.array(name_clusters(centres(model)))
    return table.assign(cluster=labels, type=names[labels])


def feature_columns(table: pd.DataFrame) -> list[str]:
    """The feature column names of a per-head table (the number of windows is inferred)."""
    n_windows = sum(c.startswith("win") for c in table.columns)
    columns = feature_names(n_windows)
    missing = [c for c in columns if c not in table.columns]
    if n_windows == 0 or missing:
        raise ValueError(f"feature table lacks columns {missing or 'win01..'}")
    return columns


def feature_matrix(table: pd.DataFrame) -> np.ndarray:
    """The feature columns of a per-head table as ``[heads, features]``."""
    return table[feature_columns(table)].to_numpy(dtype=float)


def match_labels(labels: np.ndarray, reference: np.ndarray, k: int) -> np.ndarray:
    """Relabel ``labels`` so they agree with ``reference`` as much as possible (Hungarian method).

    Both are int arrays in ``0 .. k-1``; cluster ``i`` of ``labels`` becomes the
    reference cluster it shares most heads with, under a one-to-one matching.
    """
    labels, reference = np.asarray(labels), np.asarray(reference)
    if labels.shape != reference.shape:
        raise ValueError(f"labels {labels.shape} and reference {reference.shape} differ in shape")
    if labels.size and (max(labels.max(), reference.max()) >= k or min(labels.min(), reference.min()) < 0):
        raise ValueError(f"labels must lie in 0..{k - 1}")
    overlap = np.zeros((k, k), dtype=np.int64)
    np.add.at(overlap, (labels, reference), 1)
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(overlap, maximize=True)
    mapping = np.empty(k, dtype=np.int64)
    mapping[rows] = cols
    return mapping[labels]


# ---------------------------------------------------------------------------------------------
# stability (von Luxburg 2010; Guan et al. Table 1)

@dataclass
class Stability:
    """Result of :func:`stability`.

    ``fits`` is int [n_fits, heads]: each fit's labels matched to ``reference``.
    """

    reference: np.ndarray
    fits: np.ndarray
    resample: str
    fraction: float
    subsample_size: int

    @property
    def consistent(self) -> np.ndarray:
        """bool [heads]: the same (matched) cluster in every fit — the paper's criterion."""
        return (self.fits == self.fits[0]).all(axis=0)

    @property
    def score(self) -> float:
        """Share of heads assigned consistently in all fits."""
        return float(self.consistent.mean())

    @property
    def agreement(self) -> np.ndarray:
        """float [n_fits]: share of heads each fit puts in their reference cluster."""
        return (self.fits == self.reference).mean(axis=1)


def stability(per_input: np.ndarray, reference: np.ndarray | None = None, k: int = 4,
              method: str = "kmeans", n_fits: int = 10, fraction: float = 0.5, seed: int = 0,
              n_init: int = 10, resample: str = "heads", full: np.ndarray | None = None) -> Stability:
    """Clustering stability: refit on random subsamples, count heads that never change cluster.

    Parameters
    ----------
    per_input : float array [inputs, heads, features]
        Each input's distance features (:attr:`InputFeatures.features`).
    reference : int array [heads], optional
        Labels every fit is matched to (default: a fit on all inputs).
    full : float array [heads, features], optional
        The heads' features over every input (default: ``per_input``'s mean; given when
        ``per_input`` holds a sample of the inputs, :attr:`InputFeatures.mean`).
    resample : ``"heads"`` or ``"inputs"``
        ``heads``: the paper's procedure ("split 50% training data to fit ...
        and predict on the whole dataset"; the data points clustered are the
        heads): fit on a random ``fraction`` of the heads (full features) and
        predict every head. ``inputs``: each fit clusters every head, its
        features averaged over a random ``fraction`` of the inputs. The second
        is high by construction: a head's mean over half of the inputs is
        nearly its mean over all of them (the spread of a mean of 500 inputs is
        that of 1,000 times sqrt(2)), so every fit clusters almost the same
        points; it asks only whether the types survive halving the data.

    Returns
    -------
    Stability
        Fits matched to the reference by the Hungarian method; a head is
        consistent when all ``n_fits`` matched labels are equal.
    """
    if per_input.ndim != 3:
        raise ValueError(f"per_input must be [inputs, heads, features], got shape {per_input.shape}")
    if resample not in RESAMPLE:
        raise ValueError(f"resample {resample!r} unknown; use one of {RESAMPLE}")
    if not 0 < fraction <= 1 or n_fits < 1:
        raise ValueError(f"need 0 < fraction <= 1 and n_fits >= 1 (got {fraction}, {n_fits})")
    n_inputs, n_heads = per_input.shape[:2]
    full = per_input.mean(axis=0, dtype=np.float64) if full is None else np.asarray(full, np.float64)
    if reference is None:
        reference = fit_clusters(full, k, method, seed, n_init).predict(full)
    rng = np.random.default_rng(seed)
    population = n_inputs if resample == "inputs" else n_heads
    size = max(1 if resample == "inputs" else k, round(fraction * population))
    fits = []
    for _ in range(n_fits):
        pick = np.sort(rng.choice(population, size=size, replace=False))
        fit_seed = int(rng.integers(2**31 - 1))
        if resample == "inputs":
            x = per_input[pick].mean(axis=0, dtype=np.float64)
            labels = fit_clusters(x, k, method, fit_seed, n_init).predict(x)
        else:
            labels = fit_clusters(full[pick], k, method, fit_seed, n_init).predict(full)
        fits.append(match_labels(labels, reference, k))
    return Stability(np.asarray(reference), np.stack(fits), resample, fraction, size)


def stability_table(results: Iterable[Stability], n_inputs: int, n_sampled: int | None = None) -> pd.DataFrame:
    """One row per stability run (resampling heads, resampling inputs), beside Guan et al.'s Table 1.

    Columns: ``resample``, ``reading`` (:data:`READINGS`: the paper's procedure
    or the second reading), ``fits``, ``per_fit`` (what each fit saw),
    ``consistent_pct`` (heads with the same matched cluster in every fit — the
    paper's measure), ``paper_pct`` (pre-trained BERT-large), ``in_type_pct``
    (heads in their full-data type in every fit, stricter), ``agreement_mean_pct``
    and ``agreement_min_pct`` (one fit against the full-data types), ``note``.
    ``n_sampled``: the inputs whose own features were kept, when fewer than ``n_inputs``
    (resampling inputs draws from them).
    """
    fine_tuned = ", ".join(f"{k} {v:.2f}%" for k, v in PAPER_STABILITY.items() if k != "pre-trained")
    notes = {"inputs": "each fit clusters all heads, described by a random part of the inputs; high by "
                       "construction: a head's mean over half of the inputs is nearly its mean over all, "
                       "so every fit clusters almost the same points",
             "heads": "each fit clusters a random part of the heads (all inputs) and predicts every "
                      "head, as the paper describes"}
    rows = []
    for r in results:
        n_heads = r.fits.shape[1]
        population = f"{n_heads} heads"
        if r.resample == "inputs":
            sampled = n_inputs if n_sampled is None else min(n_sampled, n_inputs)
            population = (f"{n_inputs} inputs" if sampled == n_inputs
                          else f"a seeded sample of {sampled} of the {n_inputs} inputs")
        rows.append({
            "resample": r.resample, "reading": READINGS[r.resample], "fits": len(r.fits),
            "per_fit": f"{r.subsample_size} of {population}",
            "consistent_pct": round(100 * r.score, 2),
            "paper_pct": PAPER_STABILITY["pre-trained"],
            "in_type_pct": round(100 * float((r.fits == r.reference).all(axis=0).mean()), 2),
            "agreement_mean_pct": round(100 * float(r.agreement.mean()), 2),
            "agreement_min_pct": round(100 * float(r.agreement.min()), 2),
            "note": f"{notes[r.resample]}; paper: {PAPER_MODEL}, 10 fits on 50%, "
                    f"fine-tuned models {fine_tuned}",
        })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# summaries

def type_shares(types: pd.DataFrame, separation_text: str | None = None) -> pd.DataFrame:
    """Per type: heads, share (%), mean layer, beside the paper's share (BERT-large).

    ``types`` is a per-head table with ``layer`` and ``type`` (from :func:`head_types`
    or :func:`name_if_distinct`). Heads without distinct types (:data:`NO_TYPES`)
    give one row of that name, no paper share and no paper layers: no type is named.
    ``separation_text`` (:meth:`Separation.text`, the reason) fills a ``separation``
    column when given.
    """
    if (types["type"] == NO_TYPES).any():
        n_layers, mean_layer = int(types["layer"].max()), float(types["layer"].mean())
        shares = pd.DataFrame({"type": [NO_TYPES], "heads": [len(types)], "share_pct": [100.0],
                               "paper_pct": [np.nan], "mean_layer": [round(mean_layer, 2)],
                               "mean_depth": [round(mean_layer / n_layers, 2)], "paper_layers": [""]})
        return shares.assign(separation=separation_text) if separation_text is not None else shares
    found = set(types["type"])
    # The paper's four in its order (absent ones as 0 heads), or c1, c2, ... for another k.
    names = list(TYPES) if found <= set(TYPES) else sorted(found, key=lambda n: (len(n), n))
    n_layers = int(types["layer"].max())
    grouped = types.groupby("type")["layer"]
    counts = grouped.size().reindex(names, fill_value=0)
    mean_layer = grouped.mean().reindex(names)
    return pd.DataFrame({
        "type": names,
        "heads": counts.to_numpy(),
        "share_pct": (100 * counts / len(types)).round(2).to_numpy(),
        "paper_pct": [PAPER_SHARES.get(n, np.nan) for n in names],
        "mean_layer": mean_layer.round(2).to_numpy(),
        "mean_depth": (mean_layer / n_layers).round(2).to_numpy(),
        "paper_layers": [PAPER_LAYERS_TEXT.get(n, "") for n in names],
    }).assign(**({} if separation_text is None else {"separation": separation_text}))


def name_if_distinct(types: pd.DataFrame, n_references: int | None = None,
                     seed: int = 0) -> tuple[pd.DataFrame, "Separation | None"]:
    """:func:`head_types`'s table with its names kept only if the clusters are distinct.

    When :func:`separation` finds the clusters not distinct (not beyond chance, or
    too close), every head's ``type`` becomes :data:`NO_TYPES` (``cluster`` is
    kept: stability and the claims still read it). When separation cannot be
    tested (too few heads), the names are kept and the claims say "not testable".
    Returns the table and the :class:`Separation` (None when not testable);
    ``n_references`` (default :data:`N_REFERENCES`) and ``seed`` as for :func:`separation`,
    the same as the claims' (:func:`paper_claims`), so both reach the same verdict.
    """
    sep = separation(types, N_REFERENCES if n_references is None else n_references, seed)
    if sep is None or sep.distinct:
        return types, sep
    return types.assign(type=NO_TYPES), sep


def has_types(types: pd.DataFrame) -> bool:
    """Whether a per-head table names types (False: :data:`NO_TYPES`, the clusters are not distinct)."""
    return not (types["type"] == NO_TYPES).any()


def layer_shares(types: pd.DataFrame) -> pd.DataFrame:
    """Share of each type among the heads of each layer (Guan et al. Fig. 3): layers x types."""
    shares = pd.crosstab(types["layer"], types["type"], normalize="index")
    order = [t for t in TYPES if t in shares.columns] + sorted(set(shares.columns) - set(TYPES))
    return shares[order]


def tsne_embedding(x: np.ndarray, seed: int = 0, perplexity: float | None = None) -> np.ndarray:
    """2-D t-SNE of the heads' features; perplexity defaults to ``min(30, (heads - 1) / 3)``.

    scikit-learn needs ``perplexity < n_samples``; the default keeps that for
    any number of heads >= 2 (23.7 for 72 heads, 1 for the 4 heads of the tiny test model).
    The exact gradient is used: with a few hundred points it is both exact and
    faster than the Barnes-Hut approximation (2.5 s against 44 s for 72 heads here).
    """
    from sklearn.manifold import TSNE

    n = len(x)
    if n < 2:
        raise ValueError("t-SNE needs at least 2 heads")
    perplexity = min(30.0, max(1.0, (n - 1) / 3)) if perplexity is None else float(perplexity)
    if not 0 < perplexity < n:
        raise ValueError(f"t-SNE perplexity {perplexity} must lie in (0, {n}) for {n} heads")
    return TSNE(n_components=2, perplexity=perplexity, init="pca", learning_rate="auto",
                method="exact", random_state=seed).fit_transform(x)


def type_changes(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Heads whose type differs between two models with the same shape (e.g. pre-trained vs fine-tuned).

    Returns
    -------
    DataFrame
        Per head: ``layer``, ``head``, ``before``, ``after``, ``changed`` (bool).
        When either model has no distinct types (:data:`NO_TYPES`) there is no
        type to change: ``changed`` is False everywhere and ``attrs["not_applicable"]``
        says why, as does a ``note`` column.
    """
    keys = ["layer", "head"]
    if len(before) != len(after) or not before[keys].sort_values(keys).to_numpy().tolist() == \
            after[keys].sort_values(keys).to_numpy().tolist():
        raise ValueError("the two models have different layers x heads; their head types cannot be compared")
    merged = before[keys + ["type"]].merge(after[keys + ["type"]], on=keys, suffixes=("_before", "_after"))
    merged = merged.rename(columns={"type_before": "before", "type_after": "after"})
    without = [side for side, table in (("before", before), ("after", after)) if not has_types(table)]
    changes = merged.assign(changed=merged["before"] != merged["after"] if not without else False)
    if without:
        why = (f"not applicable: no distinct types {' and '.join(without)} (the heads do not separate "
               "into clusters: no type to change)")
        changes = changes.assign(note=why)
        changes.attrs["not_applicable"] = why
    return changes.sort_values(keys, ignore_index=True)


def changes_by_layer(changes: pd.DataFrame) -> pd.DataFrame:
    """Per layer: heads, heads that changed type, their share."""
    g = changes.groupby("layer")["changed"]
    return pd.DataFrame({"heads": g.size(), "changed": g.sum(), "share": g.mean()}).reset_index()


def stability_tables(features: InputFeatures, types: pd.DataFrame, k: int = 4, method: str = "kmeans",
                     n_init: int = 10, seed: int = 0, n_fits: int = 10,
                     fraction: float = 0.5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`stability` resampling inputs and resampling heads, matched to the reported types.

    Parameters
    ----------
    features : the per-input features the types were clustered from.
    types : the per-head table of :func:`head_types` (``layer``, ``head``, ``cluster``,
        ``type``); every fit is matched to its clusters, so "in type" means these types.
    k, method, n_init, seed : the clustering (as for :func:`head_types`).
    n_fits, fraction : refits, and the part of the inputs (or heads) each one sees.

    Returns
    -------
    table : :func:`stability_table`, one row per way of resampling, the paper's
        procedure (resampling heads) first.
    heads : per head ``layer``, ``head``, ``type``, ``consistent_<resample>`` (same
        cluster in every fit) and ``fits_in_type_<resample>``; ``attrs["unstable"]``
        names the heads that moved between fits in the paper's procedure.
    """
    reference = types["cluster"].to_numpy()
    results = [stability(features.features, reference, k=k, method=method, n_init=n_init, seed=seed,
                         n_fits=n_fits, fraction=fraction, resample=resample, full=features.mean)
               for resample in RESAMPLE]
    heads = types[["layer", "head", "type"]].assign(
        **{f"consistent_{r.resample}": r.consistent for r in results},
        **{f"fits_in_type_{r.resample}": (r.fits == reference).sum(axis=0) for r in results})
    unstable = heads[~heads[f"consistent_{HEADLINE}"]]
    heads.attrs["unstable"] = list(map(head_name, unstable["layer"], unstable["head"]))
    return stability_table(results, features.n_inputs, features.n_sampled), heads


# ---------------------------------------------------------------------------------------------
# do the heads separate at all?

SEPARATION_ALPHA = 0.05  # the gap test's level
N_REFERENCES = 200  # uniform reference sets of the gap test
# The two closest cluster centres must differ by at least this much attention mass (total
# variation: half the L1 distance of two profiles that each sum to 1).
MIN_CENTRE_TV = 0.05


@dataclass
class Separation:
    """Whether the heads form ``k`` clusters more distinct than chance (:func:`separation`)."""

    k: int
    statistic: float  # log W_1 - log W_k of the heads (k-means within sum of squares)
    reference_mean: float  # the same under the uniform reference
    p_value: float
    n_references: int
    min_centre_tv: float  # attention mass between the two closest reported cluster centres
    closest: str  # their names

    @property
    def beyond_chance(self) -> bool:
        return bool(self.p_value < SEPARATION_ALPHA)

    @property
    def far_apart(self) -> bool:
        return bool(self.min_centre_tv >= MIN_CENTRE_TV)

    @property
    def distinct(self) -> bool:
        return self.beyond_chance and self.far_apart

    def text(self) -> str:
        if np.isnan(self.statistic):
            return f"every head has the same features: nothing to separate (k = {self.k})"
        return (f"gap test k = {self.k} vs 1: log(W1/Wk) {self.statistic:.3f} vs "
                f"{self.reference_mean:.3f} under uniform references, p = {self.p_value:.3g} "
                f"({self.n_references} references); closest centres ({self.closest}) "
                f"{100 * self.min_centre_tv:.1f}% of attention apart")


def _log_dispersion_drop(x: np.ndarray, k: int, seed: int, n_init: int) -> float:
    """``log W_1 - log W_k``: how much ``k`` k-means clusters shrink the within sum of squares."""
    import warnings

    w1 = float(((x - x.mean(axis=0)) ** 2).sum())
    if w1 == 0:
        return float("nan")  # identical heads: nothing to split
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate points: fewer distinct clusters than k
        wk = float(fit_clusters(x, k, "kmeans", seed, n_init).inertia_)
    return float("inf") if wk <= 0 else float(np.log(w1) - np.log(wk))


def separation(types: pd.DataFrame, n_references: int = N_REFERENCES, seed: int = 0,
               n_init: int = 4) -> Separation | None:
    """Do the heads' features separate into the reported clusters more than chance?

    Two tests, both needed before the clusters are named as types (issue 23 item 2):

    * **Beyond chance: a gap test** (Tibshirani, Walther & Hastie 2001). The
      statistic is ``log W_1 - log W_k``, the drop of the k-means within-cluster sum
      of squares from one cluster to ``k``; its null distribution comes from
      ``n_references`` reference sets of as many heads drawn uniformly in the box
      spanned by the heads along their principal axes (the paper's reference (b)),
      clustered the same way; p is one-sided from the references' mean and sd
      (the statistic is a log ratio of sums of squares, close to normal; a rank p
      from 200 references would move by about 0.015 with the seed near 0.05:
      Tibshirani et al. also use the references' sd).
      Uniform is the least clustered shape of the same extent, so a drop no bigger
      than a uniform cloud's says the heads form a continuum or a blob, not
      groups. Why this null, not resampled inputs or uniform maps: the claims see
      the per-head features only (``types``), and a uniform-maps null gives every
      head the same feature, so any spread would count as structure.
    * **Far enough apart to matter.** The gap test is blind to scale: a random
      encoder's heads that differ by 0.007 per feature can still fall in tight
      groups (say, by layer). So the two closest reported cluster centres must
      also differ by at least :data:`MIN_CENTRE_TV` of attention (total variation
      of the two mean profiles: the share of attention that would have to move to
      turn one into the other). A named type 5% of attention from another is
      a shade, not a type; Guan et al.'s types differ by tens of percent.

    ``types`` is :func:`head_types`'s table (feature columns and ``cluster``; the
    ``type`` column names the clusters when ``cluster`` is absent). None when the
    features are missing or there are fewer than two clusters or no more heads than
    clusters.
    """
    try:
        x = feature_matrix(types)
    except (ValueError, KeyError):
        return None
    labels = pd.factorize(types["cluster"] if "cluster" in types else types["type"])[0]
    k = int(labels.max()) + 1 if len(labels) else 0
    if k < 2 or len(x) <= k:
        return None
    statistic = _log_dispersion_drop(x, k, seed, n_init)
    centred = x - x.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    z = centred @ axes.T
    rng = np.random.default_rng(seed)
    reference = np.array([_log_dispersion_drop(rng.uniform(z.min(axis=0), z.max(axis=0), z.shape) @ axes,
                                               k, seed, n_init) for _ in range(n_references)])
    finite = reference[np.isfinite(reference)]
    if np.isnan(statistic) or len(finite) < 2:
        p_value = 1.0
    else:
        # One-sided, from the references' mean and sd (normal approximation), not their rank:
        # a rank p from 200 references moves by +-0.015 near 0.05 with the seed.
        from scipy.stats import norm

        mean, sd = finite.mean(), finite.std(ddof=1)
        p_value = float(norm.sf((statistic - mean) / sd)) if sd > 0 else float(statistic <= mean)
    centres = np.array([x[labels == c].mean(axis=0) for c in range(k)])
    tv = 0.5 * np.abs(centres[:, None, :] - centres[None, :, :]).sum(axis=-1)
    tv[np.diag_indices(k)] = np.inf
    i, j = np.unravel_index(np.argmin(tv), tv.shape)
    # Clusters that are not distinct are not types: they are named by number, not by a type name.
    distinct = p_value < SEPARATION_ALPHA and tv[i, j] >= MIN_CENTRE_TV
    named = distinct and "type" in types and has_types(types)
    names = (types["type"] if named else pd.Series([f"cluster {c + 1}" for c in labels])).to_numpy()
    name = {c: str(names[labels == c][0]) for c in range(k)}
    return Separation(k, statistic, float(np.nanmean(reference)) if np.isfinite(reference).any()
                      else float("nan"), p_value, n_references, float(tv[i, j]),
                      f"{name[i]} and {name[j]}")


# ---------------------------------------------------------------------------------------------
# the paper's claims

GUAN = "Guan et al. 2020"
MIN_SHARE = 5.0  # a type "exists" when at least this share (%) of the heads has it
SHARE_TOLERANCE = 10.0  # points between our share of a type and the paper's
STABLE = 90.0  # "stable": at least this share (%) of heads in the same cluster in every fit
SPREAD = 0.75  # "almost all layers": in at least this share of the layers


MIN_TYPE_HEADS = 2  # a claim about where a type's heads sit needs at least this many heads of it


def paper_claims(types: pd.DataFrame, stability: pd.DataFrame, n_references: int = N_REFERENCES,
                 seed: int = 0) -> list[Claim]:
    """Guan et al.'s head-type claims beside ours, with verdicts (:class:`~headatlas.claims.Claim` records).

    ``types`` is the per-head table of :func:`head_types` (``layer``, ``type``);
    ``stability`` is :func:`stability_table`, whose ``heads`` row (the paper's
    procedure) decides the stability claim. Layers are read as relative depth
    ``layer / n_layers``: "first" layers are the lower half (depth <= 0.5),
    "higher" the upper half, "middle" the middle third (1/3 < depth <= 2/3).
    The type claims are not applicable unless the heads form the paper's four
    named types (k = 4) and those clusters are distinct (:func:`separation`: more
    than chance under a gap test, and far enough apart); otherwise the claim
    ``guan.types.distinct`` says "no distinct types" and the type claims and the
    stability claim (stability of types that are not there) are not applicable.
    A table whose types :func:`name_if_distinct` left unnamed (:data:`NO_TYPES`) is
    read the same way, its separation tested on ``cluster``.
    A claim about where one type's heads sit needs :data:`MIN_TYPE_HEADS` of them.
    ``n_references``, ``seed``: the gap test's reference sets.

    Returns
    -------
    list[Claim]
        One :class:`~headatlas.claims.Claim` per finding
        (:func:`~headatlas.claims.claims_table` makes them a ``paper_claims.csv`` table).
    """
    n_layers = int(types["layer"].max())
    depth = types["layer"] / n_layers
    unnamed = not has_types(types)  # name_if_distinct found no distinct types
    four = unnamed or set(types["type"]) <= set(TYPES) and types["type"].nunique() >= 1
    sep = separation(types, n_references, seed)
    distinct = sep is not None and sep.distinct and not unnamed
    named = four and distinct
    if not four:
        why = "the heads are not clustered into the paper's four named types (k != 4)"
    elif sep is None:
        why = "no distinct types: separation not testable (no feature columns, or too few heads)"
    elif sep.distinct:  # a table from name_if_distinct with another seed: the types were not named
        why = f"no distinct types (the types were not named; here {sep.text()})"
    else:
        why = f"no distinct types ({sep.text()})"
    shares = (100 * types["type"].value_counts(normalize=True)).reindex(TYPES, fill_value=0.0)
    by_type = {t: depth[types["type"] == t] for t in TYPES}

    def share_in(t: str, where) -> float | None:
        d = by_type[t]
        return float(where(d).mean()) if len(d) >= MIN_TYPE_HEADS else None

    def where_text(t: str, share: float | None, place: str) -> str:
        n = len(by_type[t])
        if share is None:
            return f"{n} {t} head{'s' if n != 1 else ''} (fewer than {MIN_TYPE_HEADS}: no claim about where they sit)"
        return f"{pct(share)} of {t} heads in {place}"

    def layers_of(t: str) -> str:
        found = sorted(types.loc[types["type"] == t, "layer"].unique())
        return f"in {len(found)} of {n_layers} layers" if found else "no such heads"

    def claim(key, text, paper, ours, holds, rule, note=""):  # without types: no shares to show
        return Claim(f"guan.types.{key}", GUAN + " §4", text, paper, ours if named else NO_TYPES,
                     holds_if(holds if named else None), rule, note if named else why)

    lower, upper = (lambda d: d <= 0.5), (lambda d: d > 0.5)
    middle = (lambda d: (d > 1 / 3) & (d <= 2 / 3))
    dense_low, vertical_high = share_in("dense", lower), share_in("vertical", upper)
    dv_middle, diagonal_layers = share_in("dense&vertical", middle), \
        types.loc[types["type"] == "diagonal", "layer"].nunique() / n_layers
    off = {t: abs(shares[t] - PAPER_SHARES[t]) for t in TYPES}
    claims = [
        Claim("guan.types.distinct", GUAN + " §4", "the heads separate into distinct types",
              "4 types from k-means on the distance features (t-SNE shows them apart)",
              sep.text() if sep is not None else "not testable (no feature columns, or too few heads)",
              holds_if(None if sep is None else distinct),
              f"gap test of the k clusters against {n_references} uniform references (principal-axes "
              f"box) p < {SEPARATION_ALPHA:g}, and the two closest cluster centres >= "
              f"{100 * MIN_CENTRE_TV:g}% of attention apart (total variation)",
              "" if distinct or sep is None else "no distinct types: the type claims are not applicable"),
        claim("four_types", "attention heads fall into four types: dense, diagonal, dense&vertical, vertical",
              "4 types (k-means, k = 4)", ", ".join(f"{t} {shares[t]:.0f}%" for t in TYPES),
              bool(all(shares[t] >= MIN_SHARE for t in TYPES)),
              f"each of the four types holds >= {MIN_SHARE:g}% of the heads"),
        claim("shares", "the four types' shares of the heads",
              ", ".join(f"{t} {PAPER_SHARES[t]:.1f}%" for t in TYPES),
              ", ".join(f"{t} {shares[t]:.1f}%" for t in TYPES),
              bool(max(off.values()) <= SHARE_TOLERANCE),
              f"every type's share within {SHARE_TOLERANCE:g} points of the paper's",
              f"paper: {PAPER_MODEL}"),
        claim("dense_first_layers", "dense heads are mainly in the first layers", PAPER_LAYERS_TEXT["dense"],
              where_text("dense", dense_low, "the lower half"),
              None if dense_low is None else dense_low > 0.5,
              "more than half of the dense heads at relative depth <= 0.5"),
        claim("diagonal_all_layers", "diagonal heads are in almost all layers", PAPER_LAYERS_TEXT["diagonal"],
              layers_of("diagonal"), bool(diagonal_layers >= SPREAD),
              f"diagonal heads in >= {pct(SPREAD)} of the layers"),
        claim("dense_vertical_middle", "dense&vertical heads are mainly in the middle layers",
              PAPER_LAYERS_TEXT["dense&vertical"],
              where_text("dense&vertical", dv_middle, "the middle third"),
              None if dv_middle is None else dv_middle > 0.5,
              "more than half of the dense&vertical heads at relative depth in (1/3, 2/3]"),
        claim("vertical_higher_layers", "vertical heads are mainly in the higher layers",
              PAPER_LAYERS_TEXT["vertical"],
              where_text("vertical", vertical_high, "the upper half"),
              None if vertical_high is None else vertical_high > 0.5,
              "more than half of the vertical heads at relative depth > 0.5"),
    ]
    rows = stability.set_index("resample")
    headline = rows.loc[HEADLINE] if HEADLINE in rows.index else None
    second = rows.loc["inputs"] if "inputs" in rows.index else None
    claims.append(Claim(
        "guan.stability", GUAN + " §4, Table 1", "the head types are stable (von Luxburg 2010)",
        f"{PAPER_STABILITY['pre-trained']}% of heads consistent (pre-trained; fine-tuned "
        f"{min(PAPER_STABILITY.values()):.2f}-{max(PAPER_STABILITY.values()):.2f}%)",
        f"{headline['consistent_pct']:.1f}% ({headline['per_fit']} per fit)" if headline is not None
        else "not measured",
        holds_if(None if headline is None or not distinct else headline["consistent_pct"] >= STABLE),
        f"the paper's procedure (fit on a random half of the heads, predict every head, 10 fits): "
        f">= {STABLE:g}% of heads in the same matched cluster in every fit (only when the types are "
        "distinct)",
        "; ".join(filter(None, [
            "" if distinct else why,
            "" if second is None else f"second reading, resampling inputs: {second['consistent_pct']:.1f}% "
            "(high by construction: a head's mean over half of the inputs is nearly its mean over all)"]))))
    return claims


FIGURES = ("tsne", "boxplot", "layers", "grid")


def figure_inputs(figure: str, features: InputFeatures, types: pd.DataFrame,
                  stability_heads: pd.DataFrame | None = None, seed: int = 0,
                  perplexity: float | None = None) -> dict:
    """What the plot of one head-type figure (:data:`FIGURES`) is drawn from, with its caption.

    ``tsne``: the heads embedded in 2-D (``xy``); ``boxplot``, ``layers``: the
    types alone; ``grid``: also ``consistent``, the heads that stayed in their
    cluster in every stability fit of the paper's procedure (``stability_heads``,
    from :func:`stability_tables`). Returns the keyword arguments of the plot
    function: ``types``, ``caption`` (the features' own, saved with them) and those extras.
    """
    text = features.caption
    if figure == "tsne":
        xy = tsne_embedding(feature_matrix(types), seed=seed, perplexity=perplexity)
        how = "min(30, (heads - 1) / 3)" if perplexity is None else str(perplexity)
        return {"types": types, "xy": xy, "caption": f"{text}; t-SNE seed {seed}, perplexity {how}"}
    if figure in ("boxplot", "layers"):
        return {"types": types, "caption": text}
    if figure == "grid":
        if stability_heads is None:
            raise ValueError("the grid figure needs the stability heads table")
        return {"types": types, "consistent": stability_heads[f"consistent_{HEADLINE}"],
                "caption": f"{text}; dot: head not in the same cluster in every stability fit "
                           "(the paper's procedure: fit on a random half of the heads, predict every head)"}
    raise ValueError(f"unknown head-type figure {figure!r}; choose one of {FIGURES}")


def compare_types(before: pd.DataFrame, after: pd.DataFrame, before_features: InputFeatures,
                  after_features: InputFeatures) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Which heads changed type between two models, per head and per layer.

    ``before``/``after`` are :func:`head_types` tables; the captions of the features
    those types came from make the caption. Returns :func:`type_changes` (with
    ``attrs["caption"]``) and :func:`changes_by_layer`.
    """
    changes = type_changes(before, after)
    why = changes.attrs.get("not_applicable")
    changes.attrs["caption"] = ((f"{why.upper()[:1]}{why[1:]}. " if why else "")
                                + " | ".join(f.caption for f in (before_features, after_features))
                                + "; types are clustered and named per model independently")
    return changes, changes_by_layer(changes)


def caption(meta: dict, n_inputs: int, lengths=None) -> str:
    """Figure footnote: model, corpus, N, the deviations from Guan et al., and the inputs'
    length distribution (``lengths``: tokens per input, when given)."""
    heads = int(meta.get("n_layers") or 0) * int(meta.get("n_heads") or 0)
    spread = f"; {length_text(lengths)}" if lengths is not None and len(lengths) else ""
    return (f"model {meta.get('model_name')} ({meta.get('model_id')}), corpus {meta.get('corpus')}, "
            f"N = {n_inputs} inputs; deviations from Guan et al.: paper used {PAPER_MODEL}, the "
            f"SQuAD-fine-tuned whole-word-masking checkpoint, on 1,000 SQuAD samples; this is "
            f"{meta.get('n_layers')}x{meta.get('n_heads')} = {heads} heads on segments of "
            f"<= {meta.get('max_length')} wordpieces{spread}{weighting_note(meta)}")


# --- the head atlas -----------------------------------------------------------------------

def atlas_changes(path: Path) -> pd.DataFrame:
    """Per head: its type in the model before fine-tuning (``type_before``), and whether it
    changed (``changed``): the atlas's reader of ``changes_from_{base}.csv`` (:data:`ATLAS`)."""
    return pd.read_csv(path).rename(columns={"before": "type_before"})


# What the head-type tables add to the head atlas (headatlas.report.atlas), by table name:
# features.csv and stability_heads.csv of headtypes_cluster / headtypes_stability, and
# changes_from_{base}.csv of headtypes_compare (only for the pairs of models compared).
ATLAS = {
    "features": HeadColumns("head type", GUAN, rank=30, columns=(
        Column("type", "type", "label", "Guan et al.'s type of the head (k-means, k = 4)",
               "BERT-large: dense 26.0%, diagonal 25.6%, dense&vertical 34.1%, vertical 13.3%"),
        Column("cluster", "cluster", "id", "its k-means cluster"),
    ) + tuple(Column(f"guan_{f}", f, "share", f"distance feature '{f}' (21-d, Guan et al.)")
              for f in feature_names())),
    "stability_heads": HeadColumns("type stability", f"{GUAN} (von Luxburg 2010)", rank=31, columns=(
        Column("type_fits", "fits_in_type_heads", "fits of 10",
               "fits on half of the heads that gave the head its type", "95.98% of heads stable"),
    )),
    "changes": HeadColumns(
        "type before fine-tuning ({base})", GUAN, rank=31.5, listed_when_absent=False,
        reader="headatlas.analyses.headtypes:atlas_changes", columns=(
            Column("type_in_{base}", "type_before", "label", "the head's type in {base}"),
            Column("type_changed_from_{base}", "changed", "bool", "whether its type differs from {base}'s"),
        )),
}
