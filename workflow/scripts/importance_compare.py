"""Rule importance_compare: head importance by Guan's head type and by Kovaleva's pattern."""

import pandas as pd

from headatlas.pipeline.jobs import rule_logging

from headatlas.io import write_table
from headatlas.plots.importance import plot_compare
from headatlas.interventions.importance import compare, output_rho, spearman

with rule_logging(snakemake) as log:
    heads = pd.read_csv(snakemake.input.heads)
    types = pd.read_csv(snakemake.input.types[0]) if snakemake.input.types else None
    patterns = pd.read_csv(snakemake.input.patterns[0]) if snakemake.input.patterns else None
    outputs = pd.read_csv(snakemake.input.activations[0]) if snakemake.input.activations else None
    table = compare(heads, types, patterns, activations=outputs)
    write_table(table, snakemake.output.table, float_format="%.4g")
    model = snakemake.wildcards.task_model
    groups = None
    if patterns is not None:
        groups = heads.merge(patterns[["layer", "head", "dominant"]], on=["layer", "head"])["dominant"]
    rho = spearman(heads["importance"], -heads["delta"])
    caption = (f"task model {model}: importance (Michel et al.) against the change when the head "
               f"alone is disabled, Spearman rho(importance, -change) = {rho:.2f}; colour: the "
               f"head's most frequent pattern on {snakemake.params.patterns_corpus}"
               if patterns is not None else f"task model {model}; no pattern table")
    if outputs is not None:
        caption += (f"; Spearman rho(relative output, importance) = {output_rho(heads, outputs):.2f} "
                    f"(outputs on {snakemake.params.types_corpus})")
    plot_compare(heads, groups, snakemake.params.metric, snakemake.output.figure, caption)
    log.info("%s\n%s", caption, table.to_string(index=False))
