"""Rule probe_run: train one probe with one seed on the train treebank; UAS on dev and tests."""

import resource
import time

import torch

from headatlas.analyses.probes import FeatureSet, run_probe, save_probe
from headatlas.glove import load_glove
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    start = time.perf_counter()
    torch.set_num_threads(snakemake.threads)
    probe, seed = snakemake.wildcards.probe, int(snakemake.wildcards.seed)
    train_corpus = snakemake.wildcards.corpus
    train = FeatureSet(snakemake.input.train)
    evals = {f"{train_corpus}_dev": (train, "dev")}
    for corpus, path in zip(snakemake.params.tests, snakemake.input.tests):
        evals[f"{corpus}_test"] = (train if corpus == train_corpus else FeatureSet(path), "test")
    glove = load_glove() if "glove" in probe else None
    if glove is not None:
        log.info("GloVe 6B 50-d covers %.1f%% of the training tokens",
                 100 * glove.coverage(train.words(train.indices("train"))))
    scores, model = run_probe(probe, train, evals, glove, seed=seed,
                              epochs=snakemake.params.epochs,
                              batch_size=snakemake.params.batch_size, progress=False)
    # Which model's attention the probe read (none for the two attention-free baselines).
    uses_attention = "attn" in probe
    scores.insert(0, "attention", snakemake.params.attention if uses_attention else "")
    scores["corpus_sentences"] = [features.coverage["corpus"][split]
                                  for features, split in evals.values()]
    with atomic_open(snakemake.output.scores) as handle:
        scores.to_csv(handle, index=False, float_format="%.6g")
    save_probe(snakemake.output.state, probe, model, int(train.attrs["n_layers"]),
               int(train.attrs["n_heads"]))
    log.info("%s seed %d:\n%s", probe, seed, scores.to_string(index=False))
    log.info("%.1f s, peak memory %.0f MB", time.perf_counter() - start,
             resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
