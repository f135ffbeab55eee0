"""Rule syntax_honest: heads chosen on one split, reported on others with bootstrap intervals."""

from headatlas.analyses.syntax import honest_table, labelled_scores
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.syntax import plot_regimes

with rule_logging(snakemake) as log:
    params = snakemake.params
    paths = snakemake.input.evaluate
    paths = [paths] if isinstance(paths, str) else list(paths)  # one file comes as a string
    table = honest_table(labelled_scores(params.selection, snakemake.input.select, "syntax.selection"),
                         [labelled_scores(spec, path, f"syntax.evaluation.{i}")
                          for i, (spec, path) in enumerate(zip(params.evaluation, paths))],
                         top=params.top_relations, min_count=params.min_count, n_boot=params.bootstrap["n"],
                         seed=params.bootstrap["seed"])
    write_table(table, snakemake.output.table)
    plot_regimes(table, snakemake.output.figure, table.attrs["caption"])
    log.info("%s\n%s", table.attrs["caption"], table.to_string(index=False))
