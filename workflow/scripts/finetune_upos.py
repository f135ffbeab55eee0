"""Rule finetune_upos: fine-tune a base encoder for UPOS tagging -> checkpoint, metrics, curve."""

from pathlib import Path

from headatlas.corpora.records import read_jsonl
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.tasks.upos import fine_tune_model, save_checkpoint

with rule_logging(snakemake) as log:
    result = fine_tune_model(snakemake.wildcards.model, snakemake.params.spec,
                             read_jsonl(snakemake.input.corpus), snakemake.params.corpus,
                             snakemake.params.options)
    write_table(result.metrics_table(), snakemake.output.metrics)
    write_table(result.curve, snakemake.output.curve, float_format="%.6g")
    save_checkpoint(result.model, result.tokenizer, Path(snakemake.output.model).parent)
    log.info("test accuracy %.2f%% -> %s", result.metrics["test_accuracy"],
             Path(snakemake.output.model).parent)
