"""Rule coref_mentions: stream the document store -> per-mention table and where every mention went."""

from headatlas.analyses.coref import Coreference, load_documents, summary_counts
from headatlas.io import write_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.pipeline.outputs import write_outputs
from headatlas.pipeline.streams import job_result

with rule_logging(snakemake) as log:
    _, sources = load_documents(snakemake.input.documents, snakemake.input.sentences)
    result = job_result(snakemake)
    mentions, analysed = result.tables["mentions"], result.attrs["analysed_documents"]
    counts = summary_counts(sources, mentions, analysed)
    for row in counts.attrs["left_out"].itertuples():
        log.warning("document %s (%s) not analysed: %s", row.doc, row.split or "no split", row.reason)
    write_outputs(result, {"mentions": snakemake.output.mentions, "provenance": snakemake.output.provenance},
                  "coref", Coreference.name)
    write_table(counts, snakemake.output.summary, index=True)
    log.info("%d documents, %d mentions, %d evaluated -> %s", len(analysed), len(mentions),
             counts.loc["mentions_evaluated", "all"], snakemake.output.mentions)
