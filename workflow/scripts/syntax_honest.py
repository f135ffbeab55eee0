"""Rule syntax_honest: heads chosen on one split, reported on others with bootstrap intervals."""

from headatlas.analyses.syntax import DependencyScores, footnote, honest_table
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging
from headatlas.plots.syntax import plot_regimes


def labelled(spec, path):
    """(``"corpus split+split"``, the scores of those splits)."""
    return f"{spec['corpus']} {'+'.join(spec['splits'])}", \
        DependencyScores.load(path).subset(spec["splits"])


with rule_logging(snakemake) as log:
    params = snakemake.params
    paths = snakemake.input.evaluate
    paths = [paths] if isinstance(paths, str) else list(paths)  # one file comes as a string
    selection = labelled(params.selection, snakemake.input.select)
    evaluations = [labelled(spec, path) for spec, path in zip(params.evaluation, paths)]
    table = honest_table(selection, evaluations, top=params.top, min_count=params.min_count,
                         n_boot=params.bootstrap["n"], seed=params.bootstrap["seed"])
    with atomic_open(snakemake.output.table) as handle:
        table.to_csv(handle, index=False)
    sizes = ", ".join(f"{label}: N = {len(s.sentences)} sentences" for label, s in
                      [selection, *evaluations])
    plot_regimes(table, snakemake.output.figure, footnote(
        selection[1], f"{sizes}; {params.bootstrap['n']} bootstrap resamples of sentences, "
                      f"seed {params.bootstrap['seed']}"))
    log.info("%s\n%s", sizes, table.to_string(index=False))
