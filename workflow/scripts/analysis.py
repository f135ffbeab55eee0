"""A store analysis that needs no script of its own: ``params.module`` names its library module
``headatlas.analyses.<module>`` (which registers ``params.analysis``) and its plot module
``headatlas.plots.<module>`` (``plot_<analysis>(table, path, caption)``). Output ``table`` gets
the analysis's result, output ``figure`` (if the rule has one) its plot.

Its rule takes ``code=code("analysis.py", "headatlas.analyses.<module>",
"headatlas.plots.<module>")``, so editing either module reruns it (docs/development.md).
"""

import importlib

from headatlas.analyses.base import run_analysis
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    p = snakemake.params
    importlib.import_module(f"headatlas.analyses.{p.module}")  # registers the analysis
    table = run_analysis(p.analysis, snakemake.input.stores, weighting=p.weighting, **p.options)
    write_table(table, snakemake.output.table, float_format="%.6g")
    if "figure" in snakemake.output.keys():
        plots = importlib.import_module(f"headatlas.plots.{p.module}")
        getattr(plots, f"plot_{p.analysis}")(table, snakemake.output.figure, table.attrs["caption"])
    log.info("%s over %d examples -> %s", p.analysis, table.attrs["provenance"]["n_examples"],
             snakemake.output.table)
