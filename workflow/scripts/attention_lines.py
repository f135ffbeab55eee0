"""Rule attention_lines: Fig. 1-style pictures of four heads chosen from the data."""

import pandas as pd

from headatlas.analyses.surface import example_heads
from headatlas.pipeline.jobs import rule_logging
from headatlas.pipeline.streams import figure_maps
from headatlas.io import write_table
from headatlas.plots.surface import plot_attention_lines

with rule_logging(snakemake) as log:
    tables = (pd.read_csv(snakemake.input[k]) for k in ("relative_position", "special_tokens", "entropy"))
    table, heads, example = example_heads(*tables, figure_maps(snakemake), snakemake.params.example,
                                          weighting=snakemake.params.weighting)
    write_table(table, snakemake.output.heads)
    plot_attention_lines(example, heads, snakemake.output.figure, table.attrs["caption"])
    log.info("heads %s on example %s", heads, example.id)
