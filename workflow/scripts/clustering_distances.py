"""Rule clustering_distances: JS divergence between every pair of heads (Clark §6) -> square CSV."""

from headatlas.analyses.base import run_analysis
from headatlas.analyses.clustering import HeadDistances
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    p = snakemake.params
    table = run_analysis(HeadDistances, snakemake.input.stores, max_examples=p.max_examples,
                         average=p.average, smoothing=p.smoothing, weighting=p.weighting)
    write_table(table, snakemake.output[0], float_format="%.6g")
    log.info("%s: %d heads, %d query tokens", table.attrs["caption"], len(table), table.attrs["n_rows"])
