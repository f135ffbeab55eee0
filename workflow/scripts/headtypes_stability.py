"""Rule headtypes_stability: refit on random halves (von Luxburg 2010), share of heads never moved."""

import pandas as pd

from headatlas.analyses.headtypes import InputFeatures, stability_tables
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    p = snakemake.params
    table, heads = stability_tables(InputFeatures.load(snakemake.input.features),
                                    pd.read_csv(snakemake.input.types), **p.cluster,
                                    n_fits=p.n_fits, fraction=p.fraction)
    write_table(table, snakemake.output.table)
    write_table(heads, snakemake.output.heads)
    log.info("\n%s\nheads moved between fits (the paper's procedure): %s", table.to_string(index=False),
             " ".join(heads.attrs["unstable"]) or "none")
