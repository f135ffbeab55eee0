"""Rule headtypes_stability: refit on random halves (von Luxburg 2010), share of heads never moved."""

import pandas as pd

from headatlas.analyses.headtypes import RESAMPLE, FeatureSet, stability, stability_table
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    features = FeatureSet.load(snakemake.input.features)
    types = pd.read_csv(snakemake.input.types)
    # Fits are matched to the reported clusters, so "in type" means the types of features.csv.
    reference = types["cluster"].to_numpy()
    p = snakemake.params
    results = [stability(features.features, reference, k=p.cluster["k"], method=p.cluster["method"],
                         n_init=p.cluster["n_init"], seed=p.cluster["seed"], n_fits=p.n_fits,
                         fraction=p.fraction, resample=resample) for resample in RESAMPLE]
    table = stability_table(results, features.n_inputs)
    heads = types[["layer", "head", "type"]].assign(
        **{f"consistent_{r.resample}": r.consistent for r in results},
        **{f"fits_in_type_{r.resample}": (r.fits == reference).sum(axis=0) for r in results})
    with atomic_open(snakemake.output.table) as handle:
        table.to_csv(handle, index=False)
    with atomic_open(snakemake.output.heads) as handle:
        heads.to_csv(handle, index=False)
    unstable = heads[~heads["consistent_inputs"]]
    log.info("\n%s\nheads moved between fits (resampling inputs): %s", table.to_string(index=False),
             " ".join(f"{l}-{h}" for l, h in zip(unstable["layer"], unstable["head"])) or "none")
