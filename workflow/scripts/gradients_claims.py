"""Rule gradients_claims: per-layer gradients beside the paper's "no-op" claim."""

import pandas as pd

from headatlas.analyses.gradients import layer_table, paper_claims, read_run
from headatlas.claims import claims_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    loss = read_run(snakemake.input.meta)["loss"]
    layers = layer_table(pd.read_csv(snakemake.input.heads))
    claims = claims_table(paper_claims(layers, loss))
    write_table(layers, snakemake.output.layers, float_format="%.6g")
    write_table(claims, snakemake.output.claims, float_format="%.6g")
    log.info("%s loss\n%s\n%s", loss, layers.to_string(index=False), claims.to_string(index=False))
