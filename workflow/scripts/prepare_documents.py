"""Rule prepare_documents: treebank sentences -> whole documents that fit the model."""

import json

from headatlas.corpora.documents import SPECIALS, make_documents
from headatlas.corpora.records import read_jsonl, write_jsonl
from headatlas.io import atomic_open
from headatlas.models import load_tokenizer, special_tokens_added, wordpiece_counter
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    max_length = snakemake.params.max_length
    tokenizer = load_tokenizer(snakemake.wildcards.model, snakemake.params.model, max_length)
    extra = special_tokens_added(tokenizer, pair=False) - SPECIALS  # make_documents leaves room for 2
    documents, stats = make_documents(read_jsonl(snakemake.input.sentences), wordpiece_counter(tokenizer),
                                      max_length - extra)
    write_jsonl(snakemake.output.corpus, documents)
    with atomic_open(snakemake.output.stats) as handle:
        json.dump({"corpus": snakemake.wildcards.corpus, **stats}, handle, indent=2)
    log.info("documents: %s", dict(stats))
