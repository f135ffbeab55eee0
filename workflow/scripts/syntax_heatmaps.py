"""Rule syntax_heatmaps: every head's accuracy at each key relation, layers x heads, both directions."""

from headatlas.analyses.syntax import DependencyScores, best_offsets, footnote
from headatlas.pipeline import rule_logging
from headatlas.plots.base import plot_note
from headatlas.plots.syntax import plot_relation_heatmap

with rule_logging(snakemake) as log:
    scores = DependencyScores.load(snakemake.input.scores)
    heads = scores.head_table()
    offsets = best_offsets(scores.offset_table()).set_index("relation")
    for slug, relation in snakemake.params.relations.items():
        if relation not in offsets.index:  # a user's treebank may lack it: say so, in the figure too
            message = f"{relation!r} does not occur in {scores.attrs.get('corpus')}: no heat map"
            log.warning("%s (syntax.key_relations lists it)", message)
            plot_note(message, snakemake.output[slug], footnote(scores))
            continue
        base = offsets.loc[relation]
        plot_relation_heatmap(heads, relation, (int(base["offset"]), base["accuracy"]),
                              snakemake.output[slug], footnote(scores))
        log.info("%s: best offset %+d (%.3f) -> %s", relation, base["offset"], base["accuracy"],
                 snakemake.output[slug])
