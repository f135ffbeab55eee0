"""Rule probe_features: word-level maps and trees of one treebank, cached for the probes."""

import resource
import time

from headatlas.analyses.probes import build_features
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    start = time.perf_counter()
    stats = build_features(snakemake.input.stores, snakemake.input.corpus, snakemake.output[0],
                           how=snakemake.params.how)
    for split, n in stats["corpus"].items():
        left_out = n - stats["cached"][split]
        log.info("%s: %d of %d sentences cached%s", split, stats["cached"][split], n,
                 f" ({left_out} too long for the encoder, left out)" if left_out else "")
    if stats["unaligned_words"]:
        log.warning("%d words have no wordpieces: zero attention to and from them",
                    stats["unaligned_words"])
    log.info("%.1f s, peak memory %.0f MB", time.perf_counter() - start,
             resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
