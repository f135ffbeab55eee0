"""Rule clustering_mds: heads in 2-D by metric MDS, coloured by behaviour (Clark Fig. 6).

The caption starts with the distances' own (model, corpus, N, how a distance is computed), from
the provenance the distances' rule wrote beside them.
"""

import pandas as pd

from headatlas.analyses.clustering import distance_caption, mds_table
from headatlas.analyses.result import read_provenance
from headatlas.analyses.surface import classify_heads
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.clustering import plot_mds

with rule_logging(snakemake) as log:
    inp, p = snakemake.input, snakemake.params
    behaviour = classify_heads(*(pd.read_csv(inp[k]) for k in ("relative_position", "special_tokens",
                                                                 "entropy")))
    provenance = read_provenance(inp.provenance)
    table = mds_table(pd.read_csv(inp.distances), behaviour,
                      distance_caption(provenance, provenance["n_examples"], p.average),
                      seed=p.seed)
    write_table(table, snakemake.output.coordinates, float_format="%.6g")
    plot_mds(table, snakemake.output.figure, table.attrs["caption"])
    log.info("MDS of %d heads: Stress-1 %.3f; behaviours %s", len(table), table.attrs["stress"],
             table["behaviour"].value_counts().to_dict())
