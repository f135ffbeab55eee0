"""Rule probes_claims: Table 3's and Coenen et al.'s findings, judged on our probes (paper_claims.csv)."""

import pandas as pd

from headatlas.analyses.probes import paper_claims
from headatlas.pipeline import rule_logging, write_table

with rule_logging(snakemake) as log:
    claims = paper_claims(pd.read_csv(snakemake.input.table), pd.read_csv(snakemake.input.edges))
    write_table(claims, snakemake.output[0])
    log.info("\n%s", claims[["id", "ours", "verdict"]].to_string(index=False))
