"""Rule coref_mentions: stream the document store -> per-mention table and where every mention went."""

from headatlas.analyses.base import run_analysis
from headatlas.analyses.coref import Coreference, load_documents, summary_counts
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    documents, sources = load_documents(snakemake.input.documents, snakemake.input.sentences)
    table = run_analysis(Coreference, snakemake.input.stores, documents=documents,
                         how=snakemake.params.how, weighting=snakemake.params.weighting)
    counts = summary_counts(sources, table, table.attrs["analysed_documents"])
    for row in counts.attrs["left_out"].itertuples():
        log.warning("document %s (%s) not analysed: %s", row.doc, row.split or "no split", row.reason)
    write_table(table, snakemake.output.mentions, float_format="%.6g")
    write_table(counts, snakemake.output.summary, index=True)
    log.info("%d documents, %d mentions, %d evaluated -> %s", len(table.attrs["analysed_documents"]),
             len(table), counts.loc["mentions_evaluated", "all"], snakemake.output.mentions)
