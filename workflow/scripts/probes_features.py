"""Rule probe_features: word-level maps and trees of one treebank, cached for the probes."""

from headatlas.analyses.probes import coverage_messages
from headatlas.pipeline.jobs import rule_logging
from headatlas.pipeline.streams import job_result

with rule_logging(snakemake) as log:
    result = job_result(snakemake, path=snakemake.output[0])
    for level, message in coverage_messages(result.attrs["coverage"]):
        log.log(level, "%s", message)
