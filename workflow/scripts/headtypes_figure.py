"""Rules headtypes_tsne / _boxplot / _layers / _grid: one figure of the head types each."""

import pandas as pd

from headatlas.plots import headtypes as plots
from headatlas.analyses.headtypes import InputFeatures, figure_inputs
from headatlas.pipeline.jobs import rule_logging

PLOTS = {"tsne": plots.plot_tsne, "boxplot": plots.plot_feature_boxes,
         "layers": plots.plot_layer_shares, "grid": plots.plot_type_grid}

with rule_logging(snakemake) as log:
    inp, figure = snakemake.input, snakemake.wildcards.figure
    stability = pd.read_csv(inp.stability[0]) if inp.stability else None
    inputs = figure_inputs(figure, InputFeatures.load(inp.features), pd.read_csv(inp.types), stability,
                           seed=snakemake.params.seed, perplexity=snakemake.params.perplexity)
    PLOTS[figure](path=snakemake.output.figure, **inputs)
    log.info("%s -> %s", figure, snakemake.output.figure)
