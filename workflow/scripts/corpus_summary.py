"""Rule corpus_summary: what went in, what was skipped, per (model, corpus)."""

import json

from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging
from headatlas.summary import corpus_summary

with rule_logging(snakemake) as log:
    with open(snakemake.input.stats) as handle:
        stats = json.load(handle)
    table = corpus_summary(stats, snakemake.input.stores)
    with atomic_open(snakemake.output[0]) as handle:
        table.to_csv(handle, index=False)
    log.info("\n%s", table.to_string(index=False))
