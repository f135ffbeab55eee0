"""Rule compare_activations: the largest |h| entry over the median per hidden state against
relative depth, every model that runs the activations analysis (Sun et al. 2024)."""

import pandas as pd

from headatlas.io import write_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.plots.compare import plot_activations_by_depth
from headatlas.report.compare import activations_by_depth, caption

with rule_logging(snakemake) as log:
    p = snakemake.params
    table = activations_by_depth({m: pd.read_csv(path) for m, path in zip(p.models, snakemake.input.tables)})
    write_table(table, snakemake.output.table, float_format="%.4g")
    plot_activations_by_depth(table, snakemake.output.figure,
                              caption("largest |h| entry over the median |h| per hidden state (Sun et al. "
                                      "2024's massive activations; marker: the token role carrying it most often)",
                                      p.models, [p.corpus]))
    log.info("\n%s", table.to_string(index=False))
