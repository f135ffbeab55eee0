"""Rule syntax_table1: Clark's Table 1 on one treebank (paper's regime), the paper's rows beside."""

from headatlas.analyses.syntax import DependencyScores, table1
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    scores = DependencyScores.load(snakemake.input.scores)
    table = table1(scores, top=snakemake.params.top, min_count=snakemake.params.min_count)
    with atomic_open(snakemake.output[0]) as handle:
        table.to_csv(handle, index=False)
    log.info("%d sentences\n%s", len(scores.sentences), table.to_string(index=False))
