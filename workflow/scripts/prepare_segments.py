"""Rule prepare_segments: Wikipedia [CLS] A [SEP] B [SEP] pairs cut to the model's wordpiece budget
(Clark et al.'s preprocessing: most segments fill it)."""

import json
from pathlib import Path

from headatlas.corpora import wikipedia
from headatlas.corpora.records import write_jsonl
from headatlas.io import atomic_open
from headatlas.encoders.models import load_tokenizer, special_tokens_added
from headatlas.pipeline.jobs import rule_logging

with rule_logging(snakemake) as log:
    spec = snakemake.params.spec
    source = Path(spec["path"]) if spec.get("path") else wikipedia.find_summaries()
    articles = wikipedia.load_articles(source)
    max_length = snakemake.params.max_length
    tokenizer = load_tokenizer(snakemake.wildcards.model, snakemake.params.model, max_length)
    # make_segments leaves room for BERT's 3 special tokens; RoBERTa's pairs have 4.
    extra = special_tokens_added(tokenizer, pair=True) - wikipedia.SPECIALS_IN_PAIR
    segments, stats = wikipedia.make_segments(
        articles, wikipedia.piece_counter(tokenizer), n=spec.get("n_segments", 1000),
        max_length=max_length - extra, seed=spec.get("seed", 0))
    wikipedia.require_segments(segments, stats, source, max_length)
    if len(segments) < spec.get("n_segments", 1000):
        log.warning("only %d segments could be made from %d articles", len(segments), len(articles))
    write_jsonl(snakemake.output.corpus, segments)
    with atomic_open(snakemake.output.stats) as handle:
        json.dump({"corpus": snakemake.wildcards.corpus, "source": str(source),
                   "articles": len(articles), **stats}, handle, indent=2)
    log.info("segments from %s: %s", source, dict(stats))
