"""Rule extract: one (model, corpus, shard) -> HDF5 attention store."""

from headatlas.corpora.records import JsonlRecords
from headatlas.encoders.extract import extract
from headatlas.encoders.models import load_model
from headatlas.pipeline.jobs import rule_logging
from headatlas.corpora.sources import sha256

with rule_logging(snakemake) as log:
    wc, params = snakemake.wildcards, snakemake.params
    loaded = load_model(wc.model, params.spec)
    log.info("model %s on %s, %d threads", loaded.info, next(loaded.model.parameters()).device,
             snakemake.threads)
    sentences = JsonlRecords(snakemake.input.corpus)  # read as used, not held
    stats = extract(loaded, sentences, snakemake.output.store, max_length=params.max_length,
                    batch_size=params.batch_size, max_tokens=params.max_tokens,
                    shard=int(wc.shard), n_shards=params.shards, norms=params.norms,
                    store_attrs={"corpus": wc.corpus, "corpus_sha256": sha256(snakemake.input.corpus)})
    log.info("done: %s", dict(stats))
