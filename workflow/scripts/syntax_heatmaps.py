"""Rule syntax_heatmaps: every head's accuracy at each key relation, layers x heads, both directions."""

from headatlas.analyses.syntax import DependencyScores, absent_relation, best_offset
from headatlas.pipeline.jobs import rule_logging
from headatlas.plots.base import plot_note
from headatlas.plots.syntax import plot_relation_heatmap

with rule_logging(snakemake) as log:
    scores = DependencyScores.load(snakemake.input.scores)
    heads, text = scores.tables["heads"], scores.caption  # the caption saved with the scores
    for slug, relation in snakemake.params.relations.items():
        baseline = best_offset(scores, relation)
        if baseline is None:  # a user's treebank may lack it: say so, in the figure too
            log.warning("%s (syntax.key_relations lists it)", absent_relation(scores, relation))
            plot_note(absent_relation(scores, relation), snakemake.output[slug], text)
        else:
            plot_relation_heatmap(heads, relation, baseline, snakemake.output[slug], text)
            log.info("%s: best offset %+d (%.3f) -> %s", relation, *baseline, snakemake.output[slug])
