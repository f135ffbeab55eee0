"""Rule scorecard: every paper_claims.csv of every model -> the scorecard (CSV, long CSV, HTML)."""

from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging, write_table
from headatlas.scorecard import caption, collect, models_of, scorecard, tally, to_html

with rule_logging(snakemake) as log:
    p = snakemake.params
    paths = list(snakemake.input.claims)
    long = collect(paths, p.results, p.models)
    models = models_of(long, p.models)  # the configured ones, then e.g. a fine-tuned task model
    wide = scorecard(long, models)
    counts = tally(long, models)
    write_table(wide, snakemake.output.table)
    write_table(long, snakemake.output.long)
    with atomic_open(snakemake.output.html) as handle:
        handle.write(to_html(wide, models, counts, caption(long, models, len(paths))))
    log.info("%d claims from %d files\n%s", len(wide), len(paths), counts.to_string(index=False))
