"""Rule ablation_claims: Guan et al.'s ablation findings, judged on our grid (paper_claims.csv)."""

import pandas as pd

from headatlas.claims import claims_table
from headatlas.interventions.ablation import paper_claims
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    claims = claims_table(paper_claims(pd.read_csv(snakemake.input.table)))
    write_table(claims, snakemake.output[0])
    log.info("\n%s", claims[["id", "ours", "verdict"]].to_string(index=False))
