"""Rule gradients_importance: |dL/d attention| per head for [SEP], ./, [CLS], other keys (Clark Fig. 3).

The heavy step (the model is re-run with gradients). Writes the per-head table and run.json
(loss used, N, model provenance) for the figure and the claims, so they rerun without it.
"""

from headatlas.analyses.gradients import gradient_importance, load_for_loss, run_record, write_run
from headatlas.corpora.records import read_jsonl
from headatlas.pipeline.jobs import rule_logging
from headatlas.pipeline.outputs import write_outputs

with rule_logging(snakemake) as log:
    wc, p = snakemake.wildcards, snakemake.params
    loaded, loss = load_for_loss(wc.model, p.spec, p.loss)
    log.info("model %s, loss %s (asked: %s), %d threads", loaded.info, loss, p.loss, snakemake.threads)
    result = gradient_importance(loaded, loss, list(read_jsonl(snakemake.input.corpus)), corpus=wc.corpus,
                                 loss_asked=p.loss, max_length=p.max_length, batch_size=p.batch_size,
                                 max_examples=p.max_examples, seed=p.seed,
                                 max_batch_tokens=p.max_batch_tokens)
    write_outputs(result, {"heads": snakemake.output.heads}, "gradients", "gradients")
    record = run_record(result)
    write_run(record, snakemake.output.meta)
    log.info("%d segments (%s); mean loss per example %.4f", record["n_examples"], result.attrs["stats"],
             record["mean_loss"])
