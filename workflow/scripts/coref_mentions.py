"""Rule coref_mentions: stream the document store -> per-mention table and where every mention went."""

from headatlas.analyses import run_analysis
from headatlas.analyses.coref import Coreference, load_documents, summary_counts
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    documents, sources = load_documents(snakemake.input.documents, snakemake.input.sentences)
    table = run_analysis(Coreference, snakemake.input.stores, documents=documents,
                         how=snakemake.params.how)
    counts = summary_counts(sources, table, table.attrs["analysed_documents"])
    with atomic_open(snakemake.output.mentions) as handle:
        table.to_csv(handle, index=False, float_format="%.6g")
    with atomic_open(snakemake.output.summary) as handle:
        counts.to_csv(handle)
    log.info("%d documents, %d mentions, %d evaluated -> %s", len(table.attrs["analysed_documents"]),
             len(table), counts.loc["mentions_evaluated", "all"], snakemake.output.mentions)
