"""Rule ablation: every head-type variant of Guan et al. Tables 2-3 on the task model -> table, chart."""

from headatlas.pipeline.jobs import rule_logging

from headatlas.io import write_table
from headatlas.plots.ablation import plot_ablation
from headatlas.interventions.grid import ablation_grid
from headatlas.tasks import get_task

with rule_logging(snakemake) as log:
    p = snakemake.params
    task = get_task(p.task)
    result = ablation_grid(
        task, p.spec, snakemake.input.data, snakemake.input.types, snakemake.wildcards.task_model,
        types_source=p.types_source, types_own=p.types_own, corpus=p.corpus, split=p.split,
        renormalise=p.renormalise, batch_size=p.batch_size, max_examples=p.max_examples,
        max_length=p.max_length, options=getattr(p, task.options) if task.options else None)
    write_table(result.table, snakemake.output.table, float_format="%.4g")
    result.save(snakemake.output.result)
    plot_ablation(result.table, result.attrs["metric"], snakemake.output.figure, result.caption)
    log.info("%s\n%s", result.caption, result.table.to_string(index=False))
