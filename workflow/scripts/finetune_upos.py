"""Rule finetune_upos: fine-tune a base encoder for UPOS tagging -> checkpoint, metrics, curve."""

from pathlib import Path

import pandas as pd
import torch

from headatlas.corpora.records import read_jsonl
from headatlas.errors import HeadAtlasError
from headatlas.finetune import TuneOptions, fine_tune, save_checkpoint
from headatlas.io import atomic_open
from headatlas.models import resolve
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    torch.set_num_threads(snakemake.threads)
    spec, name = snakemake.params.spec, snakemake.wildcards.model
    if spec.get("random_init"):
        raise HeadAtlasError(f"model {name!r} is a random-init variant; fine-tune a pretrained one")
    source, revision = resolve(spec)
    options = TuneOptions(**snakemake.params.options)
    result = fine_tune(source, list(read_jsonl(snakemake.input.corpus)), options, revision=revision)
    metrics = {"base_model": name, "base_source": spec.get("hub") or spec.get("package") or source,
               "corpus": snakemake.params.corpus, **result.metrics, **vars(options)}
    with atomic_open(snakemake.output.metrics) as handle:
        pd.DataFrame({"quantity": list(metrics), "value": list(metrics.values())}).to_csv(
            handle, index=False)
    with atomic_open(snakemake.output.curve) as handle:
        result.curve.to_csv(handle, index=False, float_format="%.6g")
    save_checkpoint(result.model, result.tokenizer, Path(snakemake.output.model).parent)
    log.info("test accuracy %.2f%% -> %s", result.metrics["test_accuracy"],
             Path(snakemake.output.model).parent)
