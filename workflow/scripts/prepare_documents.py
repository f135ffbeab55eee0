"""Rule prepare_documents: treebank sentences -> whole documents (truncated, or in windows) that fit the model."""

import json

from headatlas.corpora.documents import make_documents, make_windows
from headatlas.corpora.records import read_jsonl, write_jsonl
from headatlas.io import atomic_open
from headatlas.models import load_tokenizer, wordpiece_counter
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    spec, max_length = snakemake.params.spec, snakemake.params.max_length
    count = wordpiece_counter(load_tokenizer(snakemake.wildcards.model, snakemake.params.model))
    keep = spec.get("keep_splits")
    sentences = (s for s in read_jsonl(snakemake.input.sentences) if not keep or s.split in keep)
    if spec["cover"] == "windows":
        documents, stats = make_windows(sentences, count, max_length, spec["stride"] or max_length // 2)
    else:
        documents, stats = make_documents(sentences, count, max_length)
    write_jsonl(snakemake.output.corpus, documents)
    with atomic_open(snakemake.output.stats) as handle:
        json.dump({"corpus": snakemake.wildcards.corpus, "cover": spec["cover"], **stats}, handle, indent=2)
    log.info("documents (%s): %s", spec["cover"], dict(stats))
