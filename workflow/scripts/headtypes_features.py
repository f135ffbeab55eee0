"""Rule headtypes_features: one pass over the store -> every input's 21-d distance features (.npz)."""

from headatlas.analyses.headtypes import collect_features
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    features = collect_features(snakemake.input.stores, n_windows=snakemake.params.n_windows)
    features.save(snakemake.output[0])
    log.info("%d inputs x %d heads x %d features -> %s", *features.features.shape, snakemake.output[0])
