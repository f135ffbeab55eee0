"""Rule prepare_documents: treebank sentences -> whole documents that fit the model."""

import json

from transformers import AutoTokenizer

from headatlas.corpora.documents import make_documents
from headatlas.corpora.records import read_jsonl, write_jsonl
from headatlas.io import atomic_open
from headatlas.models import resolve
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    name, revision = resolve(snakemake.params.model)
    tokenizer = AutoTokenizer.from_pretrained(name, revision=revision, use_fast=True)

    def count(words):
        return len(tokenizer(words, is_split_into_words=True, add_special_tokens=False)["input_ids"])

    documents, stats = make_documents(read_jsonl(snakemake.input.sentences), count,
                                      snakemake.params.max_length)
    write_jsonl(snakemake.output.corpus, documents)
    with atomic_open(snakemake.output.stats) as handle:
        json.dump({"corpus": snakemake.wildcards.corpus, **stats}, handle, indent=2)
    log.info("documents: %s", dict(stats))
