"""Rule gradients_figure: Fig. 3, mean |dL/d attention| by layer; the footnote names the loss."""

import json

import pandas as pd

from headatlas.pipeline import describe, rule_logging
from headatlas.plots.gradients import plot_gradients

LOSS_TEXT = {
    "mlm": "loss: masked-LM with BERT's 15% masking (80/10/10), seed {seed}",
    "contrastive": "loss: in-batch contrastive (scale 20, symmetric, mean-pooled [CLS] A [SEP] vs "
                   "[CLS] B [SEP], batches of ~{batch_size} pairs); deviation: the paper used BERT's "
                   "masked-LM loss, this model has no masked-LM head",
}

with rule_logging(snakemake) as log:
    with open(snakemake.input.meta) as handle:
        meta = json.load(handle)
    caption = (f"{describe(meta, meta['n_examples'])}; {LOSS_TEXT[meta['loss']].format(**meta)}; "
               "mean |dL/da| per attention weight (eval mode, no dropout); [CLS] kept apart from "
               "'other'")
    plot_gradients(pd.read_csv(snakemake.input.heads), snakemake.output[0], caption)
    log.info("figure: %s", caption)
