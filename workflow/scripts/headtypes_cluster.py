"""Rule headtypes_cluster: k-means (or GMM) on the heads' distance features -> types and shares."""

from headatlas.analyses.headtypes import FeatureSet, head_types, type_shares
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    features = FeatureSet.load(snakemake.input[0])
    types = head_types(features.head_table(), **snakemake.params.cluster)
    shares = type_shares(types)
    for name, table in (("features", types), ("shares", shares)):
        with atomic_open(snakemake.output[name]) as handle:
            table.to_csv(handle, index=False, float_format="%.6g")
    log.info("%s over %d inputs:\n%s", snakemake.params.cluster, features.n_inputs,
             shares.to_string(index=False))
