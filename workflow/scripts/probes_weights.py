"""Rule probe_weights: the attn-only probe's learned weight per head and direction, per seed."""

import pandas as pd

from headatlas.analyses.probes import attn_only_weights
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging
from headatlas.plots.probes import plot_probe_weights

with rule_logging(snakemake) as log:
    weights = pd.concat([attn_only_weights(path).assign(seed=seed)
                         for seed, path in zip(snakemake.params.seeds, snakemake.input.states)],
                        ignore_index=True)
    with atomic_open(snakemake.output.table) as handle:
        weights.to_csv(handle, index=False, float_format="%.6g")
    caption = (f"Attn-only probe over {snakemake.wildcards.model}'s word-level attention, trained on "
               f"{snakemake.wildcards.corpus} train; weights averaged over "
               f"{len(snakemake.params.seeds)} seeds. Raw weights: heads whose attention is more "
               "peaked can need smaller weights for the same effect.")
    plot_probe_weights(weights, snakemake.output.figure, caption)
    mean = weights.groupby(["direction", "layer", "head"])["weight"].mean()
    log.info("largest mean weights:\n%s", mean.sort_values(ascending=False).head(10).to_string())
