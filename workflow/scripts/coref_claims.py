"""Rule coref_claims: Clark et al.'s Table 2 findings, judged on our Table 2 (paper_claims.csv)."""

import pandas as pd

from headatlas.analyses.coref import paper_claims
from headatlas.claims import claims_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    claims = claims_table(paper_claims(pd.read_csv(snakemake.input.table, keep_default_na=False, na_values=[""]),
                                       snakemake.wildcards.corpus))
    write_table(claims, snakemake.output[0])
    log.info("\n%s", claims[["id", "ours", "verdict"]].to_string(index=False))
