"""Rule atlas_heads: one model's per-head tables joined into results/<m>/heads.csv and its
column dictionary (headatlas.report.atlas)."""

from headatlas.pipeline.jobs import rule_logging
from headatlas.report.atlas import Declaration, HeadTable, build, write

with rule_logging(snakemake) as log:
    p, model = snakemake.params, snakemake.wildcards.model
    tables = [HeadTable(**t) for t in p.tables]
    atlas = build(tables, p.results, model, [Declaration(**d) for d in p.declared])
    write(atlas, snakemake.output.heads, snakemake.output.columns)
    log.info("%s: %d rows (%s), %d columns from %d tables", model, len(atlas.heads),
             ", ".join(atlas.heads["weighting"].unique()), atlas.heads.shape[1] - 3, len(tables))
