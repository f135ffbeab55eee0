"""Rule headtypes_cluster: k-means (or GMM) on the heads' distance features -> types and shares.

The clusters are named only when they are distinct (headtypes.name_if_distinct): otherwise every
head's type and the shares table say "no distinct types", with the separation test's statistic.
"""

from headatlas.analyses.headtypes import InputFeatures, head_types, name_if_distinct, type_shares
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    features = InputFeatures.load(snakemake.input[0])
    types, separation = name_if_distinct(head_types(features.head_table(), **snakemake.params.cluster))
    shares = type_shares(types, separation.text() if separation is not None else "not testable (too few heads)")
    write_table(types, snakemake.output.features, float_format="%.6g")
    write_table(shares, snakemake.output.shares, float_format="%.6g")
    log.info("%s over %d inputs:\n%s", snakemake.params.cluster, features.n_inputs,
             shares.to_string(index=False))
