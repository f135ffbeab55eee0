"""Rule paper_claims: Clark et al. §3 claims beside our measured values."""

import pandas as pd

from headatlas.analyses.surface import paper_claims
from headatlas.claims import claims_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    claims = claims_table(paper_claims(*(pd.read_csv(snakemake.input[k])
                                         for k in ("relative_position", "special_tokens", "entropy"))))
    write_table(claims, snakemake.output[0])
    log.info("\n%s", claims.to_string(index=False))
