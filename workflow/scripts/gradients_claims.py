"""Rule gradients_claims: per-layer gradients beside the paper's "no-op" claim."""

import json

import pandas as pd

from headatlas.analyses.gradients import layer_table, paper_claims
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    with open(snakemake.input.meta) as handle:
        loss = json.load(handle)["loss"]
    layers = layer_table(pd.read_csv(snakemake.input.heads), pd.read_csv(snakemake.input.special))
    claims = paper_claims(layers, loss)
    for key, table in (("layers", layers), ("claims", claims)):
        with atomic_open(snakemake.output[key]) as handle:
            table.to_csv(handle, index=False, float_format="%.6g")
    log.info("%s loss\n%s\n%s", loss, layers.to_string(index=False), claims.to_string(index=False))
