"""Rule syntax_table1: Clark's Table 1 on one treebank (paper's regime), the paper's rows beside."""

from headatlas.analyses.syntax import DependencyScores, table1
from headatlas.pipeline import rule_logging, write_table

with rule_logging(snakemake) as log:
    scores = DependencyScores.load(snakemake.input.scores)
    table = table1(scores, top=snakemake.params.top, min_count=snakemake.params.min_count)
    write_table(table, snakemake.output[0])
    log.info("%d sentences\n%s", len(scores.sentences), table.to_string(index=False))
