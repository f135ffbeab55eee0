"""Rule gradients_figure: Fig. 3, mean |dL/d attention| by layer; the footnote names the loss."""

import pandas as pd

from headatlas.analyses.gradients import caption, read_run
from headatlas.pipeline.jobs import rule_logging
from headatlas.plots.gradients import plot_gradients

with rule_logging(snakemake) as log:
    text = caption(read_run(snakemake.input.meta))
    plot_gradients(pd.read_csv(snakemake.input.heads), snakemake.output.figure, text)
    log.info("figure: %s", text)
