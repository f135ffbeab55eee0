"""Rule surface_table: one Clark §3 analysis -> its CSV table and figure."""

from headatlas.plots import surface as plots
from headatlas.analyses import run_analysis
from headatlas.io import atomic_open
from headatlas.pipeline import describe, rule_logging
from headatlas.store import open_stores

FIGURES = {
    "relative_position": plots.plot_relative_position,
    "special_tokens": plots.plot_special_tokens,
    "entropy": plots.plot_entropy,
}

with rule_logging(snakemake) as log:
    name = snakemake.wildcards.analysis
    attrs = open_stores(snakemake.input.stores).attrs
    table = run_analysis(name, snakemake.input.stores, **snakemake.params.options)
    with atomic_open(snakemake.output.table) as handle:
        table.to_csv(handle, index=False, float_format="%.6g")
    FIGURES[name](table, snakemake.output.figure, describe(attrs, table.attrs["n_examples"]))
    log.info("%s over %d examples -> %s", name, table.attrs["n_examples"], snakemake.output.table)
