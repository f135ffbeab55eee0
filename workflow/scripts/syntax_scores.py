"""Rule syntax_scores: one pass over a treebank's store scores every head on every dependency."""

import resource
import time

from headatlas.analyses.syntax import score_treebank
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    start = time.perf_counter()
    scores = score_treebank(snakemake.input.stores, snakemake.input.corpus, how=snakemake.params.how)
    scores.save(snakemake.output.scores)
    tables = {"heads": scores.head_table(), "offsets": scores.offset_table(),
              "coverage": scores.coverage_table()}
    for name, table in tables.items():
        with atomic_open(snakemake.output[name]) as handle:
            table.to_csv(handle, index=False, float_format="%.6g")
    log.info("coverage (word-level 'from' = %s):\n%s", snakemake.params.how,
             tables["coverage"].to_string(index=False))
    for reason, group in scores.unscored.groupby("reason"):
        log.warning("%d sentences not scored (%s): %s", len(group), reason, " ".join(group["id"]))
    unaligned = scores.counts().query("unaligned > 0")
    if len(unaligned):
        log.warning("dependencies touching a word without wordpieces (not scored):\n%s",
                    unaligned.to_string(index=False))
    log.info("%.1f s, peak memory %.0f MB", time.perf_counter() - start,
             resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
