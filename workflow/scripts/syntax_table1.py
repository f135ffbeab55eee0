"""Rule syntax_table1: Clark's Table 1 on one treebank (paper's regime), the paper's rows beside,
and the paper's findings judged row by row (paper_claims.csv)."""

from headatlas.analyses.syntax import DependencyScores, paper_claims, table1
from headatlas.claims import claims_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    p = snakemake.params
    scores = DependencyScores.load(snakemake.input.scores)
    table = table1(scores, top=p.top_relations, min_count=p.min_count, n_boot=p.bootstrap["n"],
                   seed=p.bootstrap["seed"])
    claims = claims_table(paper_claims(table, snakemake.wildcards.corpus))
    write_table(table, snakemake.output.table)
    write_table(claims, snakemake.output.claims)
    log.info("%d sentences, %d root words\n%s\n%s", len(scores.sentences), scores.n_roots(),
             table.to_string(index=False), claims[["id", "ours", "verdict"]].to_string(index=False))
