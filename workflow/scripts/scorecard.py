"""Rule scorecard: every paper_claims.csv of every model -> the scorecard (CSV, long CSV, HTML page
with the two weightings as columns) and the summary the report's landing page opens on."""

from headatlas.report.findings import summary_html
from headatlas.io import atomic_open
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.report.scorecard import by_weighting, caption, collect, models_of, own_columns, scorecard, tally, to_html

with rule_logging(snakemake) as log:
    p = snakemake.params
    paths = list(snakemake.input.claims)
    long = collect(paths, p.results, p.models)
    controls = [m for m in p.controls if m in set(long["model"])]  # random encoders: last, marked
    models = models_of(long, p.models, controls)  # the configured ones, a fine-tuned task model, controls
    wide = scorecard(long, models, controls)
    write_table(wide, snakemake.output.table)
    write_table(long, snakemake.output.long)
    with atomic_open(snakemake.output.html) as handle:
        handle.write(to_html(by_weighting(long, models, controls), own_columns(long, models),
                             caption(long, models, len(paths), controls), controls))
    with atomic_open(snakemake.output.summary) as handle:
        handle.write(summary_html(long, models, p.results, controls=controls))
    log.info("%d claims from %d files\n%s", len(wide), len(paths), tally(long, models).to_string(index=False))
