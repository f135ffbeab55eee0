"""Rule probes_claims: Table 3's and Coenen et al.'s findings, judged on our probes (paper_claims.csv).

An optional input ``random_entropy`` (the surface ``entropy.csv`` of the random-encoder twin)
puts the random encoder's attention entropy beside the random-init row and makes that
comparison not applicable when its maps are indistinguishable from uniform (issue 23 item 3).
"""

import pandas as pd

from headatlas.analyses.probes import paper_claims
from headatlas.claims import claims_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    random_entropy = snakemake.input.random_entropy  # one path, or none without a surface corpus
    claims = claims_table(paper_claims(pd.read_csv(snakemake.input.table), pd.read_csv(snakemake.input.edges),
                                       pd.read_csv(random_entropy[0]) if random_entropy else None))
    write_table(claims, snakemake.output[0])
    log.info("\n%s", claims[["id", "ours", "verdict"]].to_string(index=False))
