"""Rule importance: single heads and layers disabled, head importance, pruning curves -> tables, figures."""

import numpy as np
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.importance import plot_importance, plot_pruning, plot_single_heads
from headatlas.interventions.importance import build_task, run_experiments
from headatlas.tasks import get_task

with rule_logging(snakemake) as log:
    p = snakemake.params
    definition = get_task(p.task)
    task = build_task(definition, p.spec, snakemake.input.data, corpus=p.corpus, split=p.split,
                      importance_split=p.importance_split, max_examples=p.max_examples,
                      max_length=p.max_length, batch_size=p.batch_size,
                      options=getattr(p, definition.options) if definition.options else None)
    shares = np.round(np.arange(0, 1 + 1e-9, p.step), 6).tolist()
    if shares[-1] < 1:
        shares.append(1.0)
    result = run_experiments(task, shares, p.seeds, p.tolerance, p.bootstrap["n"],
                             p.bootstrap["seed"], snakemake.wildcards.task_model,
                             claim_tolerance=p.claim_tolerance_pct)
    tables, metric = result.tables, result.attrs["metric"]
    for name in ("heads", "layers", "curves"):
        write_table(tables[name], snakemake.output[name], float_format="%.6g")
    write_table(tables["summary"], snakemake.output.summary)
    write_table(result.claims_table(), snakemake.output.claims)
    base = float(tables["summary"]["value"].iloc[0])
    plot_single_heads(tables["heads"], tables["layers"], metric, snakemake.output.single, result.caption)
    plot_importance(tables["heads"], snakemake.output.importance, result.caption)
    plot_pruning(tables["curves"], base, metric, p.tolerance, snakemake.output.pruning, result.caption)
    log.info("%s\n%s\n%s", result.caption, tables["summary"].to_string(index=False),
             tables["layers"].to_string(index=False))
