"""Rule finetune_upos: fine-tune a base encoder for UPOS tagging -> checkpoint, metrics, curve."""

from pathlib import Path

import torch

from headatlas.corpora.records import read_jsonl
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging
from headatlas.tasks.upos import fine_tune_model, save_checkpoint

with rule_logging(snakemake) as log:
    torch.set_num_threads(snakemake.threads)
    result = fine_tune_model(snakemake.wildcards.model, snakemake.params.spec,
                             read_jsonl(snakemake.input.corpus), snakemake.params.corpus,
                             snakemake.params.options)
    with atomic_open(snakemake.output.metrics) as handle:
        result.metrics_table().to_csv(handle, index=False)
    with atomic_open(snakemake.output.curve) as handle:
        result.curve.to_csv(handle, index=False, float_format="%.6g")
    save_checkpoint(result.model, result.tokenizer, Path(snakemake.output.model).parent)
    log.info("test accuracy %.2f%% -> %s", result.metrics["test_accuracy"],
             Path(snakemake.output.model).parent)
