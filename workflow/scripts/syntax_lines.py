"""Rule syntax_lines: Fig. 5-style pictures of the best head for key relations, two sentences each."""

import pandas as pd

from headatlas.analyses.syntax import (LINE_RELATIONS, DependencyScores, best_heads,
                                       example_sentences, footnote, line_panel, load_examples)
from headatlas.corpora.records import read_jsonl
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging
from headatlas.plots.syntax import plot_dependency_lines

with rule_logging(snakemake) as log:
    scores = DependencyScores.load(snakemake.input.scores)
    best = best_heads(scores.head_table()).set_index("relation")
    relations = [r for r in LINE_RELATIONS if r in best.index]
    log.info("relations drawn: %s (absent from the treebank: %s)", relations,
             sorted(set(LINE_RELATIONS) - set(relations)))
    picks = {r: example_sentences(scores, r, best.at[r, "direction"], best.at[r, "layer"],
                                  best.at[r, "head"]) for r in relations}
    records = list(read_jsonl(snakemake.input.corpus))
    examples = load_examples(snakemake.input.stores, [i for idx in picks.values() for i in idx])
    panels, rows = [], []
    for relation, indices in picks.items():
        head = best.loc[relation]
        panels.append([line_panel(examples[i], records[i], relation, head["direction"],
                                  int(head["layer"]), int(head["head"]), snakemake.params.how)
                       for i in indices])
        rows += [{"relation": relation, "head": f"{head['layer']}-{head['head']}",
                  "direction": head["direction"], "accuracy": round(100 * head["accuracy"], 1),
                  "index": i, "id": records[i].id, "sentence": " ".join(records[i].words)}
                 for i in indices]
    table = pd.DataFrame(rows)
    with atomic_open(snakemake.output.examples) as handle:
        table.to_csv(handle, index=False)
    plot_dependency_lines(panels, snakemake.output.figure, footnote(
        scores, "sentences: the first in corpus order with 8-16 words where the head gets every "
                "instance of the relation right"))
    log.info("\n%s", table.to_string(index=False))
