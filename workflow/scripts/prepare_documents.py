"""Rule prepare_documents: treebank sentences -> whole documents (truncated, or in windows) that fit the model."""

import json

from headatlas.corpora.documents import SPECIALS, make_documents, make_windows
from headatlas.corpora.records import read_jsonl, write_jsonl
from headatlas.io import atomic_open
from headatlas.encoders.models import load_tokenizer, special_tokens_added, wordpiece_counter
from headatlas.pipeline.jobs import rule_logging

with rule_logging(snakemake) as log:
    spec, max_length = snakemake.params.spec, snakemake.params.max_length
    tokenizer = load_tokenizer(snakemake.wildcards.model, snakemake.params.model, max_length)
    # The documents leave room for BERT's [CLS] and [SEP]; a tokenizer adding more takes it here.
    budget = max_length - (special_tokens_added(tokenizer, pair=False) - SPECIALS)
    count = wordpiece_counter(tokenizer)
    keep = spec.get("keep_splits")
    sentences = (s for s in read_jsonl(snakemake.input.sentences) if not keep or s.split in keep)
    if spec["cover"] == "windows":
        documents, stats = make_windows(sentences, count, budget, spec["stride"] or max_length // 2)
    else:
        documents, stats = make_documents(sentences, count, budget)
    write_jsonl(snakemake.output.corpus, documents)
    with atomic_open(snakemake.output.stats) as handle:
        json.dump({"corpus": snakemake.wildcards.corpus, "cover": spec["cover"], **stats}, handle, indent=2)
    log.info("documents (%s): %s", spec["cover"], dict(stats))
