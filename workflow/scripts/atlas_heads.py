"""Rule atlas_heads: every per-head table of one model -> results/<m>/heads.csv + its dictionary."""

from headatlas.report.atlas import build, write
from headatlas.pipeline.jobs import rule_logging

with rule_logging(snakemake) as log:
    model = snakemake.wildcards.model
    atlas = build(snakemake.input.tables, snakemake.params.results, model)
    write(atlas, snakemake.output.heads, snakemake.output.columns)
    log.info("%s: %d rows (%s), %d columns from %d files", model, len(atlas.heads),
             ", ".join(atlas.heads["weighting"].unique()), atlas.heads.shape[1] - 3,
             len(snakemake.input.tables))
