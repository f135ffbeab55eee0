"""Rule prepare_documents: treebank sentences -> whole documents that fit the model."""

import json

from headatlas.corpora.documents import make_documents
from headatlas.corpora.records import read_jsonl, write_jsonl
from headatlas.io import atomic_open
from headatlas.models import load_tokenizer, wordpiece_counter
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    tokenizer = load_tokenizer(snakemake.wildcards.model, snakemake.params.model)
    documents, stats = make_documents(read_jsonl(snakemake.input.sentences), wordpiece_counter(tokenizer),
                                      snakemake.params.max_length)
    write_jsonl(snakemake.output.corpus, documents)
    with atomic_open(snakemake.output.stats) as handle:
        json.dump({"corpus": snakemake.wildcards.corpus, **stats}, handle, indent=2)
    log.info("documents: %s", dict(stats))
