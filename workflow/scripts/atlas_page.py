"""Rule atlas_page: every model's heads.csv (+ a few examples from the kept stores) -> results/atlas.html."""

from pathlib import Path

from headatlas.report.atlas_page import build_page, size_report
from headatlas.io import atomic_open
from headatlas.pipeline.jobs import rule_logging

with rule_logging(snakemake) as log:
    p = snakemake.params
    results = Path(snakemake.output[0]).parent
    text, parts = build_page(p.models, results, p.stores, **p.options, corpora=p.corpora)
    with atomic_open(snakemake.output[0], encoding="utf-8") as handle:
        handle.write(text)
    log.info("%s", size_report(parts, text))
