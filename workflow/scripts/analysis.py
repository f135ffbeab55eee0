"""A store analysis's rule: stream the store through one analysis and write its result.

``params.module`` names its library module ``headatlas.analyses.<module>`` (importing it
registers ``params.analysis``), ``params.options`` its options from the config, and
``params.weighting`` the view of the maps. Every other input but ``stores`` and ``code`` is an
option too, by its name (a corpus file an analysis joins the store with). In fused mode the
``stores`` are the states of the extraction that ran this job inside the forward pass, merged
here (headatlas.pipeline.streams.job_result). The outputs are
written from the result by name (:func:`headatlas.pipeline.outputs.write_outputs`): a table
of the result, ``table``, ``claims``, ``result`` (the whole result saved), and ``figure``, drawn
by ``headatlas.plots.<module>.plot_<analysis>``; ``params.float_formats`` may set how an
output's floats are printed.

Its rule is ``use rule store_analysis as <rule> with:`` and takes
``code=analysis_code("<module>")``, so editing either module reruns it (docs/development.md).
"""

from headatlas.pipeline.jobs import rule_logging
from headatlas.pipeline.outputs import write_outputs
from headatlas.pipeline.streams import job_result

with rule_logging(snakemake) as log:
    p = snakemake.params
    result = job_result(snakemake)
    write_outputs(result, dict(snakemake.output.items()), p.module, p.analysis, p.float_formats)
    log.info("%s over %d examples: %s", p.analysis, result.provenance["n_examples"], result.caption)
    for name, table in result.tables.items():
        log.info("%s: %d rows x %d columns%s", name, *table.shape,
                 "\n" + table.to_string(index=False) if len(table) <= 60 else "")
    for claim in result.claims:
        log.info("claim %s: %s (%s)", claim.id, claim.ours, claim.verdict)
