"""Rule clustering_distances: JS divergence between every pair of heads (Clark §6) -> square CSV."""

from headatlas.analyses import run_analysis
from headatlas.analyses.clustering import HeadDistances
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    p = snakemake.params
    table = run_analysis(HeadDistances, snakemake.input.stores, max_examples=p.max_examples,
                         average=p.average, smoothing=p.smoothing)
    with atomic_open(snakemake.output[0]) as handle:
        table.to_csv(handle, index=False, float_format="%.6g")
    log.info("distances between %d heads over %d examples (%d query tokens), %s over tokens",
             len(table), table.attrs["n_examples"], table.attrs["n_rows"],
             "averaged" if p.average else "summed")
