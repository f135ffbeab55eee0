"""Rule compare_special_tokens: attention to [CLS], [SEP], . , against relative depth, every model."""

import pandas as pd

from headatlas.report.compare import caption, special_by_depth
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.compare import plot_special_by_depth

with rule_logging(snakemake) as log:
    p = snakemake.params
    table = special_by_depth({m: pd.read_csv(path) for m, path in zip(p.models, snakemake.input.tables)})
    write_table(table, snakemake.output.table, float_format="%.4g")
    plot_special_by_depth(table, snakemake.output.figure,
                          caption("mean attention per layer (over heads and query tokens)", p.models, [p.corpus]))
    log.info("\n%s", table.to_string(index=False))
