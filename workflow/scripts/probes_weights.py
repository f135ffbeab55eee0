"""Rule probe_weights: the attn-only probe's learned weight per head and direction, per seed."""

from headatlas.analyses.probes import weight_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.probes import plot_probe_weights

with rule_logging(snakemake) as log:
    weights = weight_table(snakemake.input.states, snakemake.params.seeds, snakemake.wildcards.model,
                           snakemake.wildcards.corpus)
    write_table(weights, snakemake.output.table, float_format="%.6g")
    plot_probe_weights(weights, snakemake.output.figure, weights.attrs["caption"])
    mean = weights.groupby(["direction", "layer", "head"])["weight"].mean()
    log.info("largest mean weights:\n%s", mean.sort_values(ascending=False).head(10).to_string())
