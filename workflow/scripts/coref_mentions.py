"""Rule coref_mentions: stream the document store -> per-mention table and where every mention went."""

from headatlas.analyses.base import run_analysis
from headatlas.analyses.coref import Coreference, load_documents, summary_counts
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.pipeline.outputs import write_outputs

with rule_logging(snakemake) as log:
    documents, sources = load_documents(snakemake.input.documents, snakemake.input.sentences)
    result = run_analysis(Coreference, snakemake.input.stores, documents=documents,
                          how=snakemake.params.how, weighting=snakemake.params.weighting)
    mentions, analysed = result.tables["mentions"], result.attrs["analysed_documents"]
    counts = summary_counts(sources, mentions, analysed)
    for row in counts.attrs["left_out"].itertuples():
        log.warning("document %s (%s) not analysed: %s", row.doc, row.split or "no split", row.reason)
    write_outputs(result, {"mentions": snakemake.output.mentions}, "coref", Coreference.name)
    write_table(counts, snakemake.output.summary, index=True)
    log.info("%d documents, %d mentions, %d evaluated -> %s", len(analysed), len(mentions),
             counts.loc["mentions_evaluated", "all"], snakemake.output.mentions)
