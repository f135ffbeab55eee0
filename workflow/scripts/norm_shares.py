"""Rule norm_shares: Kobayashi et al.'s shares under α and ‖αf(x)‖, the α-‖f(x)‖ correlation, claims."""

from headatlas.analyses.base import run_analysis
from headatlas.analyses.norms import NormShares, norm_claims
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.norms import plot_norm_shares

with rule_logging(snakemake) as log:
    p, out = snakemake.params, snakemake.output
    report = run_analysis(NormShares, snakemake.input.stores, pairs_per_example=p.pairs_per_example,
                          seed=p.seed)
    claims = norm_claims(report)
    write_table(report.shares, out.shares, float_format="%.6g")
    write_table(report.correlation, out.correlation, float_format="%.4g")
    write_table(claims, out.claims)
    plot_norm_shares(report.shares, report.correlation, out.figure, report.attrs["caption"])
    log.info("%s\n%s\n%s", report.shares.to_string(index=False), report.correlation.to_string(index=False),
             claims[["id", "ours", "verdict"]].to_string(index=False))
