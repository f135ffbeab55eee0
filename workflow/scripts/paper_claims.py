"""Rule paper_claims: Clark et al. §3 claims beside our measured values."""

import pandas as pd

from headatlas.analyses.surface import paper_claims
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    rel, special, entropy = (pd.read_csv(snakemake.input[k])
                             for k in ("relative_position", "special_tokens", "entropy"))
    claims = paper_claims(rel, special, entropy, n_layers=int(rel["layer"].max()))
    with atomic_open(snakemake.output[0]) as handle:
        claims.to_csv(handle, index=False)
    log.info("\n%s", claims.to_string(index=False))
