"""Rule headtypes_compare: which heads changed type between two models (e.g. pre-trained vs fine-tuned)."""

import pandas as pd

from headatlas.analyses.headtypes import InputFeatures, compare_types
from headatlas.plots.headtypes import plot_type_changes
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    inp, before, after = snakemake.input, snakemake.wildcards.base, snakemake.wildcards.model
    changes, by_layer = compare_types(pd.read_csv(inp.before), pd.read_csv(inp.after),
                                      InputFeatures.load(inp.before_features),
                                      InputFeatures.load(inp.after_features))
    write_table(changes, snakemake.output.heads, float_format="%.4g")
    write_table(by_layer, snakemake.output.layers, float_format="%.4g")
    plot_type_changes(changes, by_layer, (before, after), snakemake.output.figure,
                      changes.attrs["caption"])
    log.info("%s -> %s: %d of %d heads changed type\n%s", before, after, changes["changed"].sum(),
             len(changes), by_layer.to_string(index=False))
