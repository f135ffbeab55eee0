"""Rule prepare_treebank: read a treebank from the mirror, its pinned URL or a path."""

import json
from pathlib import Path

from headatlas.corpora.prepare import corpus_stats, prepare_treebank
from headatlas.corpora.records import write_jsonl
from headatlas.io import atomic_open
from headatlas.pipeline.jobs import rule_logging
from headatlas.corpora.sources import mirror_setting, resolve_mirror

with rule_logging(snakemake) as log:
    corpus = snakemake.wildcards.corpus
    mirror, setting = resolve_mirror(snakemake.params.mirror), mirror_setting(snakemake.params.mirror)
    log.info("corpus %s; mirror: %s", corpus, setting)
    spec = snakemake.params.spec
    sentences = prepare_treebank(corpus, spec, mirror, Path(snakemake.params.downloads), setting)
    stats = corpus_stats(sentences, assigned=spec.get("splits") is not None)
    write_jsonl(snakemake.output.corpus, sentences)
    with atomic_open(snakemake.output.stats) as handle:
        json.dump({"corpus": corpus, **stats}, handle, indent=2)
    log.info("wrote %s: %s", snakemake.output.corpus, stats)
