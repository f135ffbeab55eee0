"""Rule fused_extract: one (model, corpus, shard) -> the states of every planned streaming job
(no attention map stored) and a small exemplar store."""

import importlib

from headatlas.analyses.base import analysis_class
from headatlas.analyses.fused import Run, fused_extract
from headatlas.corpora.records import JsonlRecords
from headatlas.corpora.sources import sha256
from headatlas.encoders.models import load_model
from headatlas.pipeline.jobs import rule_logging


def make_run(spec):
    """A planned job's run (headatlas.pipeline.streams.run_spec): its files read as options."""
    importlib.import_module(f"headatlas.analyses.{spec['module']}")  # registers the analysis
    cls = analysis_class(spec["analysis"])
    options = {**cls.load_inputs(spec["files"]), **spec["options"]}
    return Run(spec["key"], spec["analysis"], options, spec["weighting"], spec["max_examples"])


with rule_logging(snakemake) as log:
    wc, params = snakemake.wildcards, snakemake.params
    loaded = load_model(wc.model, params.spec)
    log.info("model %s on %s, %d threads", loaded.info, next(loaded.model.parameters()).device,
             snakemake.threads)
    runs = [make_run(spec) for spec in params.runs]
    log.info("%d analysis runs inside the forward pass: %s", len(runs), ", ".join(r.key for r in runs))
    sentences = JsonlRecords(snakemake.input.corpus)  # read as used, not held
    stats = fused_extract(
        loaded, sentences, snakemake.output.states, runs, exemplar_path=snakemake.output.exemplars,
        exemplars=params.exemplars, exemplar_seed=params.seed, wanted=params.wanted,
        max_length=params.max_length, batch_size=params.batch_size, max_tokens=params.max_tokens,
        shard=int(wc.shard), n_shards=params.shards, norms=params.norms,
        view_bytes=params.view_memory_mb * 2**20, spill_every=params.spill_every, lengths=snakemake.input.lengths,
        store_attrs={"corpus": wc.corpus, "corpus_sha256": sha256(snakemake.input.corpus)})
    log.info("done: %s", dict(stats))
