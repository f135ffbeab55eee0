"""Rule patterns_heads: Kovaleva et al.'s pattern of every (head, input) map -> shares per head."""

from headatlas.analyses.base import run_analysis
from headatlas.analyses.patterns import AttentionPatterns, corpus_shares
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.patterns import plot_head_shares

with rule_logging(snakemake) as log:
    p = snakemake.params
    heads = run_analysis(AttentionPatterns, snakemake.input.stores, max_examples=p.max_examples,
                         thresholds=p.thresholds)
    write_table(heads, snakemake.output.heads, float_format="%.6g")
    plot_head_shares(heads, snakemake.output.figure, heads.attrs["caption"])
    log.info("%s\n%s", heads.attrs["caption"],
             corpus_shares(heads, snakemake.wildcards.corpus).to_string(index=False))
