"""Rule coref_accuracy: per-mention table -> Table 2 (ours beside the paper's), per-head CSV, heat map."""

from headatlas.analyses.coref import deviations, head_accuracy, read_mentions, table2
from headatlas.io import atomic_open
from headatlas.pipeline import describe, rule_logging
from headatlas.plots.coref import plot_head_accuracy
from headatlas.store import open_stores

with rule_logging(snakemake) as log:
    params = snakemake.params
    mentions = read_mentions(snakemake.input.mentions)
    table = table2(mentions, params.select_split, params.eval_split, params.n_boot, params.seed)
    # The head rows: chosen on the selection split (held out) and on the evaluation data.
    chosen = dict(zip(table.loc[table["paper_head"] != "", "selected_on"],
                      table.loc[table["paper_head"] != "", "head"]))
    heads = head_accuracy(mentions, list(chosen), by_kind=list(chosen)[-1])
    with atomic_open(snakemake.output.table) as handle:
        table.to_csv(handle, index=False, float_format="%.4g")
    with atomic_open(snakemake.output.heads) as handle:
        heads.to_csv(handle, index=False, float_format="%.4g")
    footnote = "; ".join(
        [describe(open_stores(snakemake.input.stores).attrs, mentions["doc"].nunique(),
                  "documents with mentions"),
         "evaluated mentions: " + ", ".join(f"{s} {heads[f'n_{s}'].iloc[0]}" for s in chosen),
         deviations(params.source_format, params.max_length)])
    plot_head_accuracy(heads, [(f"acc_{s}", f"accuracy on {s} (best {h})", h) for s, h in chosen.items()],
                       snakemake.output.heatmap, footnote)
    log.info("Table 2:\n%s", table.to_string())
