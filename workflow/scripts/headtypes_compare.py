"""Rule headtypes_compare: which heads changed type between two models (e.g. pre-trained vs fine-tuned)."""

import pandas as pd

from headatlas.analyses.headtypes import FeatureSet, changes_by_layer, footnote, type_changes
from headatlas.io import atomic_open
from headatlas.plots.headtypes import plot_type_changes
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    before, after = snakemake.wildcards.base, snakemake.wildcards.model
    changes = type_changes(pd.read_csv(snakemake.input.before), pd.read_csv(snakemake.input.after))
    by_layer = changes_by_layer(changes)
    for name, table in (("heads", changes), ("layers", by_layer)):
        with atomic_open(snakemake.output[name]) as handle:
            table.to_csv(handle, index=False, float_format="%.4g")
    metas = [FeatureSet.load(p) for p in (snakemake.input.before_features, snakemake.input.after_features)]
    caption = " | ".join(footnote(f.meta, f.n_inputs) for f in metas)
    caption += "; types are clustered and named per model independently"
    plot_type_changes(changes, by_layer, (before, after), snakemake.output.figure, caption)
    log.info("%s -> %s: %d of %d heads changed type\n%s", before, after, changes["changed"].sum(),
             len(changes), by_layer.to_string(index=False))
