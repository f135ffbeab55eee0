"""Rule importance: single heads and layers disabled, head importance, pruning curves -> tables, figures."""

import numpy as np
from headatlas.claims import claims_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.importance import plot_importance, plot_pruning, plot_single_heads
from headatlas.interventions.importance import build_task, run_experiments

with rule_logging(snakemake) as log:
    p = snakemake.params
    task = build_task(p.task, p.spec, snakemake.input.data, corpus=p.corpus, split=p.split,
                      importance_split=p.importance_split, max_examples=p.max_examples,
                      max_length=p.max_length, batch_size=p.batch_size, squad_options=p.squad)
    shares = np.round(np.arange(0, 1 + 1e-9, p.step), 6).tolist()
    if shares[-1] < 1:
        shares.append(1.0)
    result = run_experiments(task, shares, p.seeds, p.tolerance, p.bootstrap["n"],
                             p.bootstrap["seed"], snakemake.wildcards.task_model)
    write_table(result.heads, snakemake.output.heads, float_format="%.6g")
    write_table(result.layers, snakemake.output.layers, float_format="%.6g")
    write_table(result.curves, snakemake.output.curves, float_format="%.6g")
    write_table(result.summary, snakemake.output.summary)
    write_table(claims_table(result.claims), snakemake.output.claims)
    base = float(result.summary["value"].iloc[0])
    plot_single_heads(result.heads, result.layers, result.metric, snakemake.output.single, result.caption)
    plot_importance(result.heads, snakemake.output.importance, result.caption)
    plot_pruning(result.curves, base, result.metric, p.tolerance, snakemake.output.pruning, result.caption)
    log.info("%s\n%s\n%s", result.caption, result.summary.to_string(index=False),
             result.layers.to_string(index=False))
