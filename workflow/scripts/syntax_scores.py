"""Rule syntax_scores: one pass over a treebank's store scores every head on every dependency."""

from headatlas.analyses.syntax import DependencyHeads
from headatlas.pipeline.jobs import rule_logging
from headatlas.pipeline.outputs import write_outputs
from headatlas.pipeline.streams import job_result

with rule_logging(snakemake) as log:
    out = snakemake.output
    scores = job_result(snakemake)
    # scores.npz (the whole result, read by the later rules) and its published tables.
    write_outputs(scores, {"result": out.scores, "heads": out.heads, "offsets": out.offsets,
                           "coverage": out.coverage}, "syntax", DependencyHeads.name)
    log.info("coverage (word-level 'from' = %s):\n%s", snakemake.params.options["how"],
             scores.tables["coverage"].to_string(index=False))
    for problem in scores.problems():
        log.warning("%s", problem)
