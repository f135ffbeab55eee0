"""Rule corpus_summary: what went in, what was skipped, per (model, corpus)."""

import json

from headatlas.pipeline.jobs import rule_logging

from headatlas.io import write_table
from headatlas.store.summary import corpus_summary

with rule_logging(snakemake) as log:
    with open(snakemake.input.stats) as handle:
        table = corpus_summary(json.load(handle), snakemake.input.stores)
    write_table(table, snakemake.output[0])
    log.info("\n%s", table.to_string(index=False))
