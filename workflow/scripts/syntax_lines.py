"""Rule syntax_lines: Fig. 5-style pictures of the best head for key relations, two sentences each."""

from headatlas.analyses.syntax import DependencyScores, line_examples
from headatlas.pipeline.jobs import rule_logging
from headatlas.pipeline.streams import figure_maps
from headatlas.io import write_table
from headatlas.plots.syntax import plot_dependency_lines

with rule_logging(snakemake) as log:
    table, panels = line_examples(DependencyScores.load(snakemake.input.scores), figure_maps(snakemake),
                                  snakemake.input.corpus, how=snakemake.params.how)
    write_table(table, snakemake.output.examples)
    plot_dependency_lines(panels, snakemake.output.figure, table.attrs["caption"])
    log.info("absent from the treebank: %s\n%s", table.attrs["absent"], table.to_string(index=False))
