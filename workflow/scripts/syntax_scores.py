"""Rule syntax_scores: one pass over a treebank's store scores every head on every dependency."""

from headatlas.analyses.base import run_analysis
from headatlas.analyses.syntax import DependencyHeads
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    scores = run_analysis(DependencyHeads, snakemake.input.stores, corpus=snakemake.input.corpus,
                          how=snakemake.params.how, weighting=snakemake.params.weighting)
    scores.save(snakemake.output.scores)
    tables = scores.tables()
    for name, table in tables.items():
        write_table(table, snakemake.output[name], float_format="%.6g")
    log.info("coverage (word-level 'from' = %s):\n%s", snakemake.params.how,
             tables["coverage"].to_string(index=False))
    for problem in scores.problems():
        log.warning("%s", problem)
