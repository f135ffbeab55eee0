"""Rules headtypes_tsne / _boxplot / _layers / _grid: one figure of the head types each."""

import pandas as pd

from headatlas.plots import headtypes as plots
from headatlas.analyses.headtypes import FeatureSet, feature_matrix, footnote, tsne_embedding
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    features = FeatureSet.load(snakemake.input.features)
    types = pd.read_csv(snakemake.input.types)
    caption = footnote(features.meta, features.n_inputs)
    figure, path = snakemake.wildcards.figure, snakemake.output[0]
    if figure == "tsne":
        perplexity, seed = snakemake.params.perplexity, snakemake.params.seed
        xy = tsne_embedding(feature_matrix(types), seed=seed, perplexity=perplexity)
        plots.plot_tsne(types, xy, path, caption + f"; t-SNE seed {seed}, perplexity "
                        + ("min(30, (heads - 1) / 3)" if perplexity is None else str(perplexity)))
    elif figure == "boxplot":
        plots.plot_feature_boxes(types, path, caption)
    elif figure == "layers":
        plots.plot_layer_shares(types, path, caption)
    elif figure == "grid":
        stable = pd.read_csv(snakemake.input.stability[0])["consistent_inputs"]
        plots.plot_type_grid(types, path, caption + "; dot: head not in the same cluster in every "
                             "stability fit (resampling inputs)", consistent=stable)
    else:
        raise ValueError(f"unknown head-type figure {figure!r}")
    log.info("%s -> %s", figure, path)
