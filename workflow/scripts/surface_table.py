"""Rule surface_table: one Clark §3 analysis -> its CSV table and figure."""

from headatlas.plots import surface as plots
from headatlas.analyses import surface  # noqa: F401  (registers the analyses run by name)
from headatlas.analyses.base import run_analysis
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

FIGURES = {
    "relative_position": plots.plot_relative_position,
    "special_tokens": plots.plot_special_tokens,
    "entropy": plots.plot_entropy,
}

with rule_logging(snakemake) as log:
    name = snakemake.wildcards.analysis
    table = run_analysis(name, snakemake.input.stores, weighting=snakemake.params.weighting,
                         **snakemake.params.options)
    write_table(table, snakemake.output.table, float_format="%.6g")
    FIGURES[name](table, snakemake.output.figure, table.attrs["caption"])
    log.info("%s over %d examples -> %s", name, table.attrs["provenance"]["n_examples"],
             snakemake.output.table)
