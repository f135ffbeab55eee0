"""Rule table_page: a CSV declared ``as_table`` -> the same cells as an HTML page for the report."""

from headatlas.report.htmltable import csv_page
from headatlas.io import atomic_open
from headatlas.pipeline.jobs import rule_logging

with rule_logging(snakemake) as log:
    source = snakemake.input.table
    with atomic_open(snakemake.output[0]) as handle:
        handle.write(csv_page(source, snakemake.params.title, f"The cells of {source}, as written there."))
    log.info("%s -> %s", source, snakemake.output[0])
