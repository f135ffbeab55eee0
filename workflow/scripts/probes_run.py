"""Rule probe_run: train one probe with one seed on the train treebank; UAS on dev and tests."""

from headatlas.analyses.probes import GLOVE_PROBES, ProbeCache, evaluation_sets, run_probe, save_probe
from headatlas.corpora.glove import load_glove
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    probe, seed = snakemake.wildcards.probe, int(snakemake.wildcards.seed)
    train = ProbeCache(snakemake.input.train)
    evals = evaluation_sets(train, snakemake.wildcards.corpus, snakemake.params.test,
                            snakemake.input.tests)
    glove = load_glove() if probe in GLOVE_PROBES else None
    if glove is not None:
        log.info("GloVe 6B 50-d covers %.1f%% of the training tokens",
                 100 * glove.coverage(train.words(train.indices("train"))))
    scores, model = run_probe(probe, train, evals, glove, seed=seed, epochs=snakemake.params.epochs,
                              batch_size=snakemake.params.batch_size, progress=False,
                              attention=snakemake.params.attention)
    write_table(scores, snakemake.output.scores, float_format="%.6g")
    save_probe(snakemake.output.state, probe, model, int(train.attrs["n_layers"]),
               int(train.attrs["n_heads"]))
    log.info("%s seed %d:\n%s", probe, seed, scores.to_string(index=False))
