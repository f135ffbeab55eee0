"""Rule corpus_lengths: every record's wordpieces, counted once for all the shards of a fused
extraction (each shard plans its batches from them instead of tokenising the whole corpus)."""

from tqdm.auto import tqdm

from headatlas.corpora.records import JsonlRecords
from headatlas.corpora.sources import sha256
from headatlas.encoders.inputs import corpus_lengths
from headatlas.encoders.models import load_tokenizer
from headatlas.pipeline.jobs import rule_logging
from headatlas.provenance import code_version
from headatlas.store.lengths import write_lengths

with rule_logging(snakemake) as log:
    wc, params = snakemake.wildcards, snakemake.params
    tokenizer = load_tokenizer(wc.model, params.spec, params.max_length)
    records = JsonlRecords(snakemake.input.corpus)  # read as used, not held
    lengths = corpus_lengths(tokenizer, tqdm(records, desc=f"lengths {wc.corpus}", unit="rec", mininterval=5))
    write_lengths(snakemake.output.lengths, lengths,
                  {"corpus": wc.corpus, "corpus_sha256": sha256(snakemake.input.corpus), "model_name": wc.model,
                   "tokenizer": type(tokenizer).__name__, **code_version()})
    log.info("%d records, %d wordpieces, %d empty", len(lengths), int(lengths.sum()), int((lengths == 0).sum()))
