"""Rule headtypes_claims: Guan et al.'s head-type and stability claims, judged (paper_claims.csv)."""

import pandas as pd

from headatlas.analyses.headtypes import paper_claims
from headatlas.claims import claims_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    claims = claims_table(paper_claims(pd.read_csv(snakemake.input.types), pd.read_csv(snakemake.input.stability)))
    write_table(claims, snakemake.output[0])
    log.info("\n%s", claims[["id", "ours", "verdict"]].to_string(index=False))
