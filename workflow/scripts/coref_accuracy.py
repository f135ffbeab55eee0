"""Rule coref_accuracy: per-mention table -> Table 2 (ours beside the paper's), per-head CSV, heat map."""

from headatlas.analyses.coref import accuracy_tables, read_mentions
from headatlas.analyses.result import read_provenance
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.coref import plot_head_accuracy

with rule_logging(snakemake) as log:
    p, inp = snakemake.params, snakemake.input
    selection = read_mentions(inp.selection[0]) if inp.selection else None
    table, heads = accuracy_tables(read_mentions(inp.mentions), read_provenance(inp.provenance), p.select_split,
                                   p.eval_split, p.bootstrap["n"], p.bootstrap["seed"], p.source_format, p.max_length,
                                   selection, p.selection_label, weighting=p.weighting)
    write_table(table, snakemake.output.table, float_format="%.4g")
    write_table(heads, snakemake.output.heads, float_format="%.4g")
    plot_head_accuracy(heads, heads.attrs["panels"], snakemake.output.heatmap, heads.attrs["caption"])
    log.info("Table 2:\n%s", table.to_string())
