"""Rule compare_table1: Table 1's best-head accuracy per relation, every model side by side."""

import pandas as pd

from headatlas.report.compare import caption, table1_by_model
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.compare import plot_table1_by_model

with rule_logging(snakemake) as log:
    keys = [tuple(k) for k in snakemake.params.pairs]
    tables = {key: pd.read_csv(path, keep_default_na=False, na_values=[""])
              for key, path in zip(keys, snakemake.input.tables)}
    table = table1_by_model(tables)
    write_table(table, snakemake.output.table)
    models, corpora = list(dict.fromkeys(m for m, _ in keys)), list(dict.fromkeys(c for _, c in keys))
    plot_table1_by_model(table, snakemake.output.figure, caption(
        "Table 1 (paper's regime: best head chosen on the data it is scored on), 95% bootstrap "
        "intervals over sentences; 'all' counts root words as wrong", models, corpora))
    log.info("\n%s", table.to_string(index=False))
