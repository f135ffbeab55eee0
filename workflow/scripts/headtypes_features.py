"""Rule headtypes_features: one pass over the store -> every input's 21-d distance features (.npz)."""

from headatlas.analyses.base import run_analysis
from headatlas.analyses.headtypes import DistanceFeatures
from headatlas.pipeline.jobs import rule_logging

with rule_logging(snakemake) as log:
    features = run_analysis(DistanceFeatures, snakemake.input.stores, n_windows=snakemake.params.n_windows,
                            weighting=snakemake.params.weighting)
    features.save(snakemake.output[0])
    log.info("%d inputs x %d heads x %d features -> %s", *features.features.shape, snakemake.output[0])
