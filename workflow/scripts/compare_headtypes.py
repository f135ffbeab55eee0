"""Rule compare_headtypes: the share of each Guan et al. head type, every model and the paper."""

import pandas as pd

from headatlas.report.compare import caption, shares_by_model
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.compare import plot_shares_by_model

with rule_logging(snakemake) as log:
    p = snakemake.params
    table = shares_by_model({m: pd.read_csv(path) for m, path in zip(p.models, snakemake.input.tables)})
    write_table(table, snakemake.output.table, float_format="%.4g")
    plot_shares_by_model(table, snakemake.output.figure,
                         caption("share of heads per type (k-means, k = 4, types named per model)", p.models,
                                 [p.corpus]))
    log.info("\n%s", table.to_string(index=False))
