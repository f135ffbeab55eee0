"""Rule rollout: attention rollout from α and from the norm maps -> shares, offset profile, figure."""

from headatlas.analyses.base import run_analysis
from headatlas.analyses.rollout import Rollout
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.rollout import plot_rollout

with rule_logging(snakemake) as log:
    p, out = snakemake.params, snakemake.output
    report = run_analysis(Rollout, snakemake.input.stores, max_offset=p.max_offset, residual=p.residual)
    write_table(report.shares, out.shares, float_format="%.6g")
    write_table(report.profile, out.profile, float_format="%.6g")
    plot_rollout(report.shares, report.profile, out.figure, report.attrs["caption"])
    log.info("%s", report.shares.to_string(index=False))
