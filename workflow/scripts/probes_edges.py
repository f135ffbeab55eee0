"""Rule probe_edges: Coenen et al.'s edge classifier on attention vectors of word pairs."""

import resource
import time

import pandas as pd

from headatlas.analyses.probes import FeatureSet, edge_table, run_edge_probe
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    start = time.perf_counter()
    p = snakemake.params
    train_corpus = snakemake.wildcards.corpus
    tests = iter(snakemake.input.tests)  # per attention source, one cache per test corpus
    runs = []
    for attention, train_path in zip(p.attention, snakemake.input.train):
        train = FeatureSet(train_path)
        evals = {}
        for corpus in p.tests:
            path = next(tests)
            evals[f"{corpus}_test"] = (train if corpus == train_corpus else FeatureSet(path), "test")
        for seed in p.seeds:
            result = run_edge_probe(train, evals, seed=seed, max_train_pairs=p.max_train_pairs)
            runs.append(result.assign(attention=attention))
            log.info("%s seed %d:\n%s", attention, seed, result.to_string(index=False))
    table = edge_table(pd.concat(runs, ignore_index=True))
    with atomic_open(snakemake.output[0]) as handle:
        table.to_csv(handle, index=False, float_format="%.4g")
    log.info("edge classifier:\n%s", table.to_string(index=False))
    log.info("%.1f s, peak memory %.0f MB", time.perf_counter() - start,
             resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
