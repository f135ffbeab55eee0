"""Rule context_mixing: every context mixing measure of a UPOS tagger against blank-out, per
layer, deletion curves and the three claims (issue 35)."""

from pathlib import Path

from headatlas.corpora.records import read_jsonl
from headatlas.interventions.mixing import mixing_benchmark
from headatlas.pipeline.jobs import rule_logging
from headatlas.pipeline.outputs import write_outputs

with rule_logging(snakemake) as log:
    p, model = snakemake.params, snakemake.wildcards.task_model
    tagger = Path(snakemake.input.tagger).parent
    result = mixing_benchmark(str(tagger), None, read_jsonl(snakemake.input.corpus), name=model,
                              corpus=p.corpus, split=p.split, max_sentences=p.max_sentences,
                              max_length=p.max_length, batch_size=p.batch_size,
                              deletion_steps=p.deletion_steps, seed=p.seed, n_boot=p.bootstrap["n"],
                              boot_seed=p.bootstrap["seed"])
    write_outputs(result, dict(snakemake.output.items()), "mixing", "mixing",
                  float_formats={name: "%.6g" for name in snakemake.output.keys()})
    measures = result.tables["measures"]
    log.info("%s\n%.2f s per sentence (%.1f wordpieces)\n%s\n%s", result.caption,
             result.attrs["seconds_per_sentence"], result.attrs["wordpieces_per_sentence"],
             measures[measures.reference == "mask"][["measure", "rho", "low", "high"]].to_string(index=False),
             result.claims_table()[["id", "ours", "verdict"]].to_string(index=False))
