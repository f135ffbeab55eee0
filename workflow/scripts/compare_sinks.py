"""Rule compare_sinks: Gu et al.'s sink rate per layer and key role against relative depth,
every model that runs the sinks analysis, under each of its weightings."""

import pandas as pd

from headatlas.report.compare import caption, sinks_by_depth
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.compare import plot_sinks_by_depth
from headatlas.weightings import weighting_of_suffix

with rule_logging(snakemake) as log:
    p = snakemake.params
    tables = {(model, weighting_of_suffix(suffix)): pd.read_csv(path)
              for (model, suffix), path in zip(p.runs, snakemake.input.tables)}
    table = sinks_by_depth(tables)
    write_table(table, snakemake.output.table, float_format="%.4g")
    models = list(dict.fromkeys(model for model, _ in p.runs))
    plot_sinks_by_depth(table, snakemake.output.figure,
                        caption(f"sink rate per layer (a key with mean attention > ε = {p.epsilon}; "
                                "solid: attention weights, dashed: norm weighting)", models, [p.corpus]))
    log.info("\n%s", table.to_string(index=False))
