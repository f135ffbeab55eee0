"""Rule compare_mixing: each measure's agreement with blank-out (masked), every tagger."""

import pandas as pd

from headatlas.io import write_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.plots.mixing import plot_mixing_by_model
from headatlas.report.compare import caption

with rule_logging(snakemake) as log:
    p = snakemake.params
    tables = [pd.read_csv(path).assign(model=m) for m, path in zip(p.models, snakemake.input.tables)]
    table = pd.concat(tables)
    table = table[table.reference == "mask"][["model", "measure", "rho", "low", "high", "rank", "targets"]]
    write_table(table, snakemake.output.table, float_format="%.4g")
    plot_mixing_by_model(table, snakemake.output.figure,
                         caption("Spearman ρ of each context mixing measure with blank-out by masking "
                                 "(the UPOS tagger of each model; 95% intervals over sentences)", p.models, [p.corpus]))
    log.info("\n%s", table.to_string(index=False))
