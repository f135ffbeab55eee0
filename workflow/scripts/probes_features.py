"""Rule probe_features: word-level maps and trees of one treebank, cached for the probes."""

from headatlas.analyses.base import run_analysis
from headatlas.analyses.probes import ProbeFeatures, coverage_messages
from headatlas.pipeline.jobs import rule_logging

with rule_logging(snakemake) as log:
    result = run_analysis(ProbeFeatures, snakemake.input.stores, corpus=snakemake.input.corpus,
                          path=snakemake.output[0], how=snakemake.params.how)
    for level, message in coverage_messages(result.attrs["coverage"]):
        log.log(level, "%s", message)
