"""Rule clustering_mds: heads in 2-D by metric MDS, coloured by behaviour (Clark Fig. 6)."""

import pandas as pd

from headatlas.analyses.clustering import distance_matrix, embed_heads
from headatlas.analyses.surface import classify_heads
from headatlas.io import atomic_open
from headatlas.pipeline import describe, rule_logging
from headatlas.plots.clustering import plot_mds
from headatlas.store import open_stores

with rule_logging(snakemake) as log:
    inp, p = snakemake.input, snakemake.params
    distances = pd.read_csv(inp.distances)
    coords, stress = embed_heads(distance_matrix(distances), seed=p.seed)
    behaviour = classify_heads(*(pd.read_csv(inp[k]) for k in ("relative_position", "special_tokens",
                                                                  "entropy")))
    table = distances[["layer", "head"]].merge(behaviour, on=["layer", "head"], how="left")
    table["x"], table["y"] = coords[:, 0], coords[:, 1]
    with atomic_open(snakemake.output.coordinates) as handle:
        table.to_csv(handle, index=False, float_format="%.6g")
    stores = open_stores(inp.stores)
    n = len(stores) if p.max_examples is None else min(len(stores), p.max_examples)
    how = "mean JS divergence per token (paper)" if p.average else \
        "JS divergence summed over tokens (Clark's code)"
    caption = (f"{describe(stores.attrs, n)}; distance = {how}, rows smoothed 0.999a + 0.001/n as in "
               f"Clark's code; metric MDS (random state {p.seed}), Kruskal Stress-1 = {stress:.3f}; "
               "behaviours: thresholds of Clark's code")
    plot_mds(table, snakemake.output.figure, caption)
    log.info("MDS of %d heads: Stress-1 %.3f; behaviours %s", len(table), stress,
             table["behaviour"].value_counts().to_dict())
