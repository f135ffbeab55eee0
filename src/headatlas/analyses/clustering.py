"""Clustering attention heads by what they attend to (Clark et al. 2019 §6, Fig. 6).

* ``head_distances`` (a streaming analysis): the distance between heads i and j
  is the Jensen-Shannon divergence between their attention rows, summed over
  every query token of every example. The rows are first smoothed to
  ``(1 - s) a + s / n`` (s = 0.001, n = keys in the example) as in Clark's
  published code, which keeps every logarithm finite. By default the sum is
  divided by the number of query tokens (the paper's Fig. 6 caption: "average
  Jensen-Shannon divergences"); ``average=False`` keeps the code's raw sum.
  The two differ only by one constant factor, so the MDS picture is the same
  up to scale.
* :func:`embed_heads`: 2-D metric MDS of the distances (fixed random state);
  :func:`mds_table`: Fig. 6's points with their caption.
* :func:`group_structure`: mean distance within vs between groups of heads
  (layers, or behaviours), with a one-sided permutation test of the labels;
  :func:`structure_table`: the three tests the workflow reports.
* :func:`paper_claims`: §6's observations beside our numbers.

Natural logarithms throughout (nats), so 0 <= JS <= log 2 per row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from headatlas.analyses.base import Analysis, describe, register
from headatlas.analyses.result import Result
from headatlas.claims import Claim, holds_if
from headatlas.heads import Column, HeadColumns, head_name, head_names, head_table

if TYPE_CHECKING:
    import torch

SMOOTHING = 0.001  # Clark's code: 0.999 * a + 0.001 / n
# The permutation test's default; the brief asks for at least 1,000.
N_PERMUTATIONS = 1000


def _xlogx_rows(x: torch.Tensor, buffer: torch.Tensor, zeros: bool = True) -> torch.Tensor:
    """``sum_k x log x`` over the last axis, as float64; ``buffer`` is float32 scratch shaped like ``x``.

    With ``zeros`` (x may hold zeros), x is clamped to the smallest float before the log,
    which makes ``0 log 0 = 0``. In-place log and product (``xlogy`` is ~2.5x slower here);
    each row's keys are summed in float32 (a few hundred terms), then cast.
    """
    import torch

    if zeros:
        torch.clamp_min(x, torch.finfo(x.dtype).tiny, out=buffer).log_()
    else:
        torch.log(x, out=buffer)
    return buffer.mul_(x).sum(-1).double()


def pairwise_js(attn: np.ndarray, smoothing: float = SMOOTHING) -> np.ndarray:
    """Jensen-Shannon divergence between every pair of heads, summed over query rows.

    Uses ``JS(p, q) = (sum p log p + sum q log q) / 2 - sum m log m`` with
    ``m = (p + q) / 2``: the two entropy terms are computed once per head, and
    only ``m log m`` per pair, as ``s = p + q`` with
    ``sum m log m = (sum s log s - log 2 * sum s) / 2`` (one pass fewer).
    Each head is paired with itself and every later head at once (the upper
    triangle), in float32 torch ops (about twice numpy's speed here: its
    vectorised log), each row's sum accumulated in float64. Runs on torch's
    intra-op threads (``torch.set_num_threads``).

    Parameters
    ----------
    attn : ndarray, shape [heads, n, n]
        Attention rows (each sums to 1) of all heads of one example, e.g. an
        :class:`~headatlas.store.example.Example`'s ``attn`` reshaped to ``[L*H, n, n]``.
    smoothing : float
        Each row becomes ``(1 - smoothing) * a + smoothing / n`` first.

    Returns
    -------
    ndarray, shape [heads, heads], float64
        Symmetric, zero diagonal: ``sum over rows q of JS(attn[i, q], attn[j, q])``.
    """
    if attn.ndim != 3 or attn.shape[1] != attn.shape[2]:
        raise ValueError(f"attention of shape {attn.shape}: expected [heads, n, n]")
    n_heads, n = attn.shape[:2]
    import torch  # here: the jobs that only read the distances (MDS, structure) need no torch

    p = torch.from_numpy(np.asarray(attn, dtype=np.float32)) * (1 - smoothing) + smoothing / n
    zeros = smoothing == 0  # smoothed rows are strictly positive: no 0 log 0 to guard
    half_plogp = 0.5 * _xlogx_rows(p, torch.empty_like(p), zeros).sum(-1)
    # Total mass of each head (~n; the store's float16 rows do not sum to exactly 1).
    mass = p.sum((1, 2), dtype=torch.float64)
    upper = torch.zeros(n_heads, n_heads, dtype=torch.float64)
    sums, logs = torch.empty_like(p), torch.empty_like(p)  # buffers reused for every head
    for h in range(n_heads):
        s = torch.add(p[h:], p[h], out=sums[:n_heads - h])
        slogs = _xlogx_rows(s, logs[:n_heads - h], zeros).sum(-1)
        mlogm = 0.5 * (slogs - np.log(2) * (mass[h] + mass[h:]))
        upper[h, h:] = half_plogp[h] + half_plogp[h:] - mlogm
    upper = torch.triu(upper.clamp_min(0.0), diagonal=1)  # float rounding can leave tiny negatives
    return (upper + upper.T).numpy()


@register
class HeadDistances(Analysis):
    """Distances between all pairs of heads (Fig. 6): a square per-head table.

    Parameters
    ----------
    average : bool
        Divide the summed divergences by the number of query tokens (default True, the
        paper's caption); False keeps Clark's code's raw sum.
    smoothing : float
        Rows become ``(1 - smoothing) a + smoothing / n`` first (default 0.001).

    The result's ``heads`` table: ``layer``, ``head`` and one column per head named
    ``"layer-head"`` (rows and columns in the same order, layer-major). A cell is the JS
    divergence of the two heads summed over all query tokens, divided by the number of
    query tokens when ``average``. ``attrs["n_rows"]``: those query tokens.

    State (merging adds): ``sums`` ``[layers * heads, layers * heads]`` (the divergences
    summed over every query token) and ``n_rows`` (query tokens).
    """

    name = "head_distances"
    bounded = True  # sums

    def __init__(self, n_layers: int, n_heads: int, average: bool = True,
                 smoothing: float = SMOOTHING):
        super().__init__(n_layers, n_heads)
        if not 0 <= smoothing < 1:
            raise ValueError(f"smoothing must be in [0, 1), got {smoothing}")
        self.average, self.smoothing = average, smoothing
        self._sums = np.zeros((n_layers * n_heads,) * 2)
        self._n_rows = 0

    def update(self, example) -> None:
        n = example.n_tokens
        attn = example.attn.reshape(self.n_layers * self.n_heads, n, n)
        self._sums += pairwise_js(attn, self.smoothing)
        self._n_rows += n

    def _state(self) -> dict[str, np.ndarray]:
        return {"sums": self._sums.copy(), "n_rows": np.asarray(self._n_rows, np.int64)}

    def _merge(self, state: dict[str, np.ndarray]) -> None:
        self._sums += state["sums"]
        self._n_rows += int(state["n_rows"])

    def result(self) -> Result:
        if self._n_rows == 0:
            raise ValueError("no examples were seen; the distances are undefined")
        dist = self._sums / self._n_rows if self.average else self._sums
        names = head_names(self.n_layers, self.n_heads)
        table = head_table(self.n_layers, self.n_heads, **{name: dist[:, k] for k, name in enumerate(names)})
        return Result({"heads": table}, attrs={"n_rows": self._n_rows})

    def caption(self, result: Result, provenance: dict) -> str:
        return distance_caption(provenance, provenance["n_examples"], self.average, self.smoothing)


def distance_caption(attrs: dict, n_examples: int, average: bool = True,
                     smoothing: float = SMOOTHING) -> str:
    """Footnote of the head distances: model, corpus, N, how a distance is computed."""
    how = "mean JS divergence per token (paper)" if average else \
        "JS divergence summed over tokens (Clark's code)"
    return (f"{describe(attrs, n_examples)}; distance = {how}, rows smoothed "
            f"{1 - smoothing:g}a + {smoothing:g}/n as in Clark's code")


def distance_matrix(table: pd.DataFrame) -> np.ndarray:
    """The ``[heads, heads]`` array of a :class:`HeadDistances` table (read back from CSV).

    Raises ``ValueError`` when the table is not square, symmetric and in the
    order of its rows (e.g. a hand-edited or truncated file).
    """
    names = [head_name(l, h) for l, h in zip(table["layer"], table["head"])]
    missing = [n for n in names if n not in table.columns]
    if missing or len(table.columns) != len(names) + 2:
        raise ValueError(f"distance table is not square over its {len(names)} heads "
                         f"(missing columns: {missing[:5]})")
    dist = table[names].to_numpy(dtype=float)
    if not np.allclose(dist, dist.T, rtol=1e-4, atol=1e-8) or np.any(np.diag(dist) != 0):
        raise ValueError("distance table is not symmetric with a zero diagonal")
    return dist


def embed_heads(dist: np.ndarray, seed: int = 0, n_init: int = 4,
                max_iter: int = 1000) -> tuple[np.ndarray, float]:
    """2-D metric MDS (SMACOF) of precomputed distances.

    Parameters
    ----------
    dist : ndarray, shape [heads, heads]
        Symmetric distances, zero diagonal.
    seed : int
        ``random_state`` of the random starts (the best of ``n_init`` is kept).

    Returns
    -------
    coords : ndarray, shape [heads, 2]
    stress : float
        :func:`stress1` of the fit.
    """
    from sklearn.manifold import MDS

    mds = MDS(n_components=2, metric_mds=True, metric="precomputed", init="random", n_init=n_init,
              max_iter=max_iter, eps=1e-9, random_state=seed, normalized_stress=True)
    coords = mds.fit_transform(dist)
    return coords, stress1(dist, coords)


def stress1(dist: np.ndarray, coords: np.ndarray) -> float:
    """Kruskal's Stress-1: sqrt(sum (|x_i - x_j| - d_ij)^2 / sum d_ij^2) over pairs.

    0 = the picture reproduces the distances exactly; ~0.1 fair, ~0.2 poor.
    """
    return float(np.sqrt(((euclidean(coords) - dist) ** 2).sum() / (dist ** 2).sum()))


def euclidean(coords: np.ndarray) -> np.ndarray:
    """Pairwise Euclidean distances of ``[points, dims]`` coordinates."""
    diff = coords[:, None, :] - coords[None, :, :]
    return np.sqrt((diff ** 2).sum(axis=-1))


def _group_sums(dist: np.ndarray, onehot: np.ndarray) -> np.ndarray:
    """Sum of ``dist`` over ordered pairs inside each group: ``[..., groups]``.

    ``onehot`` is ``[..., points, groups]``; the result is ``diag(M^T D M)``.
    """
    return np.einsum("...ig,...ig->...g", dist @ onehot, onehot)


def _with_ties(x):
    """``x`` nudged up by a relative 1e-9, so a shuffle equal to it up to summation order counts."""
    return x + 1e-9 * np.abs(x)


def group_structure(dist: np.ndarray, labels, n_permutations: int = N_PERMUTATIONS,
                    seed: int = 0) -> pd.DataFrame:
    """Are heads with the same label closer than chance? Within vs between distances.

    For each group g (and for all groups together, row ``"all"``): ``within`` =
    mean distance over pairs of distinct heads both in g; ``between`` = mean
    distance from g's heads to heads outside g; ``ratio`` = within / between.
    ``p_value`` is one-sided: the labels are shuffled among the heads (group
    sizes kept) ``n_permutations`` times, and p = (1 + #{shuffled within <=
    observed within}) / (1 + n_permutations). For "all", the within mean pools
    every group's pairs (with the total fixed, a lower within mean is the same
    as a higher between mean). Groups of one head have no pairs: NaN.

    Parameters
    ----------
    dist : ndarray, shape [heads, heads]
    labels : array-like, shape [heads]
        Any hashable labels (layers, behaviour names).
    n_permutations, seed : the test's size and its random generator's seed.

    Returns
    -------
    DataFrame with columns ``group``, ``n_heads``, ``within``, ``between``,
    ``ratio``, ``p_value``, ``n_permutations``.
    """
    labels = np.asarray(labels)
    if dist.shape != (len(labels), len(labels)):
        raise ValueError(f"{dist.shape} distances for {len(labels)} labels")
    groups, codes = np.unique(labels, return_inverse=True)
    eye = np.eye(len(groups))
    sizes = eye[codes].sum(axis=0)
    pairs = sizes * (sizes - 1)  # ordered pairs of distinct heads in each group
    rng = np.random.default_rng(seed)
    shuffled = rng.permuted(np.tile(codes, (n_permutations, 1)), axis=1)  # [perm, heads]
    observed, null = _group_sums(dist, eye[codes]), _group_sums(dist, eye[shuffled])
    with np.errstate(invalid="ignore", divide="ignore"):
        within = observed / pairs
        between = ((dist @ eye[codes]).sum(axis=0) - observed) / (sizes * (len(labels) - sizes))
        p_group = (1 + (null <= _with_ties(observed)).sum(axis=0)) / (1 + n_permutations)
    p_group[pairs == 0] = np.nan
    total_pairs = pairs.sum()
    all_within = observed.sum() / total_pairs if total_pairs else np.nan
    all_between = (dist.sum() - observed.sum()) / (len(labels) ** 2 - (sizes ** 2).sum())
    p_all = (1 + (null.sum(axis=1) <= _with_ties(observed.sum())).sum()) / (1 + n_permutations) \
        if total_pairs else np.nan
    table = pd.DataFrame({
        "group": [str(g) for g in groups] + ["all"],
        "n_heads": np.append(sizes, len(labels)).astype(int),
        "within": np.append(within, all_within),
        "between": np.append(between, all_between),
        "p_value": np.append(p_group, p_all),
    })
    table.insert(4, "ratio", table["within"] / table["between"])
    table["n_permutations"] = n_permutations
    return table


def mds_table(distances: pd.DataFrame, behaviour: pd.DataFrame, caption: str,
              seed: int = 0) -> pd.DataFrame:
    """Fig. 6's points: every head placed in 2-D by metric MDS of its distances.

    Parameters
    ----------
    distances : DataFrame
        A :class:`HeadDistances` table (read back from CSV).
    behaviour : DataFrame
        ``layer``, ``head``, ``behaviour`` (:func:`headatlas.analyses.surface.classify_heads`).
    caption : str
        The distances' caption (:func:`distance_caption`: model, corpus, N, how a distance
        is computed), which the MDS's own is appended to.
    seed : int
        The MDS random state.

    Returns
    -------
    DataFrame with columns ``layer``, ``head``, ``behaviour``, ``x``, ``y``;
    ``attrs["stress"]`` (:func:`stress1`) and ``attrs["caption"]``.
    """
    coords, stress = embed_heads(distance_matrix(distances), seed=seed)
    table = distances[["layer", "head"]].merge(behaviour, on=["layer", "head"], how="left")
    table["x"], table["y"] = coords[:, 0], coords[:, 1]
    table.attrs["stress"] = stress
    table.attrs["caption"] = (f"{caption}; metric MDS (random state {seed}), Kruskal Stress-1 = "
                              f"{stress:.3f}; behaviours: thresholds of Clark's code")
    return table


# What the MDS coordinates add to the head atlas (headatlas.report.atlas), by table name.
ATLAS = {
    "coordinates": HeadColumns("MDS coordinates", "Clark et al. 2019 §6", rank=20, columns=(
        Column("mds_x", "x", "JS distance", "2-D metric MDS of the Jensen-Shannon distances between heads, "
               "first axis", "heads of one layer sit close together"),
        Column("mds_y", "y", "JS distance", "second axis"),
        Column("behaviour", "behaviour", "label", "Clark's Fig. 6 colour (broad, next, previous, [CLS], "
               "[SEP], punctuation, other)"),
    )),
}


def structure_table(dist: np.ndarray, coords: pd.DataFrame, n_permutations: int = N_PERMUTATIONS,
                    seed: int = 0) -> pd.DataFrame:
    """:func:`group_structure` of the JS distances by layer and by behaviour, and of the MDS picture by layer.

    Parameters
    ----------
    dist : ndarray, shape [heads, heads]
        The JS distances (:func:`distance_matrix`).
    coords : DataFrame
        The :func:`mds_table` of the same heads, in the same order.

    Returns
    -------
    The :func:`group_structure` tables stacked, with the columns ``space`` (``js``
    or ``mds``) and ``grouping`` (``layer`` or ``behaviour``) first. Heads whose
    behaviour is ``other`` form no behaviour group and are left out of that test.
    ``attrs["stress"]``: :func:`stress1` of the picture.
    """
    xy = coords[["x", "y"]].to_numpy()
    labelled = (coords["behaviour"] != "other").to_numpy()
    tests = {
        ("js", "layer"): (dist, coords["layer"]),
        ("mds", "layer"): (euclidean(xy), coords["layer"]),
        ("js", "behaviour"): (dist[labelled][:, labelled], coords.loc[labelled, "behaviour"]),
    }
    parts = []
    for (space, grouping), (d, labels) in tests.items():
        part = group_structure(d, labels.to_numpy(), n_permutations=n_permutations, seed=seed)
        part.insert(0, "grouping", grouping)
        part.insert(0, "space", space)
        parts.append(part)
    table = pd.concat(parts, ignore_index=True)
    table.attrs["stress"] = stress1(dist, xy)
    return table


CLARK_S6 = "Clark et al. 2019 §6"
ALPHA = 0.05  # permutation test level
STRESS_FAIR = 0.2  # Kruskal's Stress-1: 0.2 "poor", 0.1 "fair", 0.05 "good"
# A claim over groups ("heads cluster by layer / by behaviour") needs this many groups ...
MIN_GROUPS = 2
# ... each of at least this many heads (a group of one has no within-group pair).
MIN_GROUP_HEADS = 2


def paper_claims(structure: pd.DataFrame, stress: float, average: bool) -> list[Claim]:
    """Clark et al.'s §6 observations beside ours, with verdicts (:class:`~headatlas.claims.Claim` records).

    ``structure`` is the concatenation of :func:`group_structure` tables with
    the columns ``space`` (``js`` or ``mds``) and ``grouping`` (``layer`` or
    ``behaviour``) added. A grouping claim holds when heads of one group are
    closer on average than heads of different groups and the permutation test
    gives p < :data:`ALPHA`. A claim over groups needs at least
    :data:`MIN_GROUPS` groups of at least :data:`MIN_GROUP_HEADS` heads each:
    with one such group (the others single heads) "within" is that one group's
    pairs, and the test says whether that group is tight, not whether heads
    cluster *by* the grouping; it is then not applicable, with the reason.

    Returns
    -------
    list[Claim]
        One :class:`~headatlas.claims.Claim` per finding
        (:func:`~headatlas.claims.claims_table` makes them a ``paper_claims.csv`` table).
    """
    def test(space: str, grouping: str) -> tuple[str, bool | None]:
        rows = structure[(structure["space"] == space) & (structure["grouping"] == grouping)]
        hit = rows[rows["group"] == "all"]
        groups = rows[rows["group"] != "all"]
        sized = groups[groups["n_heads"] >= MIN_GROUP_HEADS]
        if hit.empty or len(sized) < MIN_GROUPS:
            found = ", ".join(f"{g} {int(n)}" for g, n in zip(groups["group"], groups["n_heads"]))
            return (f"not testable: {len(sized)} {grouping} group(s) of >= {MIN_GROUP_HEADS} heads, "
                    f"{MIN_GROUPS} needed (heads per group: {found or 'none'})"), None
        if not np.isfinite(hit["within"].iloc[0]):
            return "not testable (no group has two heads)", None
        r = hit.iloc[0]
        text = (f"within {r['within']:.3g} vs between {r['between']:.3g} (ratio {r['ratio']:.2f}), "
                f"permutation p = {r['p_value']:.3g} ({int(r['n_permutations'])} shuffles)")
        return text, bool(r["within"] < r["between"] and r["p_value"] < ALPHA)

    unit = "JS per token (averaged)" if average else "JS summed over all tokens (Clark's code)"
    rule = (f"mean distance within groups < between groups, permutation test p < {ALPHA}; needs "
            f">= {MIN_GROUPS} groups of >= {MIN_GROUP_HEADS} heads")
    claims = []
    for key, claim, paper, (space, grouping), note in (
            ("same_layer", "heads in the same layer sit close together", "heads within the same layer "
             "are often fairly close to each other (Fig. 6)", ("js", "layer"),
             f"distances: {unit}; mean over pairs of distinct heads"),
            ("same_layer_mds", "heads in the same layer sit close together in the 2-D picture",
             "as above, read off Fig. 6", ("mds", "layer"), "Euclidean distances of the MDS coordinates"),
            ("behaviour", "heads cluster by behaviour", "several clear clusters of heads that behave "
             "similarly", ("js", "behaviour"), "behaviours from the surface tables with Clark's code "
             "thresholds; heads labelled 'other' are left out")):
        ours, holds = test(space, grouping)
        claims.append(Claim(f"clark.s6.{key}", CLARK_S6, claim, paper, ours, holds_if(holds),
                            rule.replace("groups", f"{grouping}s" if grouping == "layer" else "behaviours"),
                            note))
    claims.append(Claim("clark.s6.mds_fit", CLARK_S6, "2-D distances approximately match the JS divergences",
                        "approximately (no number given)", f"Kruskal Stress-1 = {stress:.3f}",
                        holds_if(None if not np.isfinite(stress) else stress <= STRESS_FAIR),
                        f"Kruskal Stress-1 of the metric MDS <= {STRESS_FAIR}",
                        "0 = perfect, 0.05 good, 0.1 fair, 0.2 poor"))
    return claims
