"""Rule gradients_importance: |dL/d attention| per head for [SEP], ./, [CLS], other keys (Clark Fig. 3).

The heavy step (the model is re-run with gradients). Writes the per-head table and run.json
(loss used, N, model provenance) for the figure and the claims, so they rerun without it.
"""

import json

import torch

from headatlas.analyses.gradients import gradient_importance, load_for_loss
from headatlas.corpora.records import read_jsonl
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    torch.set_num_threads(snakemake.threads)
    wc, p = snakemake.wildcards, snakemake.params
    loaded, loss = load_for_loss(wc.model, p.spec, p.loss)
    log.info("model %s, loss %s (asked: %s), %d threads", loaded.info, loss, p.loss, snakemake.threads)
    sentences = list(read_jsonl(snakemake.input.corpus))
    heads, stats = gradient_importance(loaded, loss, sentences, max_length=p.max_length,
                                       batch_size=p.batch_size, max_examples=p.max_examples, seed=p.seed)
    n = heads.attrs["n_examples"]
    with atomic_open(snakemake.output.heads) as handle:
        heads.to_csv(handle, index=False, float_format="%.6g")
    meta = {**loaded.info, "corpus": wc.corpus, "n_layers": loaded.model.config.num_hidden_layers,
            "n_heads": loaded.model.config.num_attention_heads, "loss": loss, "loss_asked": p.loss,
            "n_examples": n, "batch_size": p.batch_size, "seed": p.seed, "max_length": p.max_length,
            "mean_loss": stats["loss_sum"] / n, "n_skipped_too_long": stats["too_long"]}
    with atomic_open(snakemake.output.meta) as handle:
        json.dump(meta, handle, indent=1)
    log.info("%d segments (%s); mean loss per example %.4f", n, dict(stats), meta["mean_loss"])
