"""Rule gradients_importance: |dL/d attention| per head for [SEP], ./, [CLS], other keys (Clark Fig. 3).

The heavy step (the model is re-run with gradients). Writes the per-head table and run.json
(loss used, N, model provenance) for the figure and the claims, so they rerun without it.
"""

from headatlas.analyses.gradients import gradient_importance, load_for_loss, run_record, write_run
from headatlas.corpora.records import read_jsonl
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    wc, p = snakemake.wildcards, snakemake.params
    loaded, loss = load_for_loss(wc.model, p.spec, p.loss)
    log.info("model %s, loss %s (asked: %s), %d threads", loaded.info, loss, p.loss, snakemake.threads)
    heads, stats = gradient_importance(loaded, loss, list(read_jsonl(snakemake.input.corpus)),
                                       max_length=p.max_length, batch_size=p.batch_size,
                                       max_examples=p.max_examples, seed=p.seed,
                                       max_batch_tokens=p.max_batch_tokens)
    write_table(heads, snakemake.output.heads, float_format="%.6g")
    record = run_record(loaded, wc.corpus, loss, heads, stats, loss_asked=p.loss,
                        batch_size=p.batch_size, seed=p.seed, max_length=p.max_length,
                        max_batch_tokens=p.max_batch_tokens)
    write_run(record, snakemake.output.meta)
    log.info("%d segments (%s); mean loss per example %.4f", record["n_examples"], dict(stats),
             record["mean_loss"])
