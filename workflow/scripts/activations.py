"""Rule activations: massive activations per layer and dormant heads per head, with their claims
and figure (Sun et al. 2024; Guo et al. 2024), from one forward pass of the model."""

from headatlas.analyses.activations import hidden_activations
from headatlas.corpora.records import read_jsonl
from headatlas.encoders.models import load_model
from headatlas.pipeline.jobs import rule_logging
from headatlas.pipeline.outputs import write_outputs

with rule_logging(snakemake) as log:
    wc, p = snakemake.wildcards, snakemake.params
    loaded = load_model(wc.model, p.spec)
    log.info("model %s, %d threads", loaded.info, snakemake.threads)
    result = hidden_activations(loaded, list(read_jsonl(snakemake.input.corpus)), max_length=p.max_length,
                                batch_size=p.batch_size, max_examples=p.max_examples,
                                massive_ratio=p.massive_ratio, sink_share=p.sink_share, quiet=p.quiet)
    result.attrs["corpus"] = wc.corpus
    write_outputs(result, dict(snakemake.output.items()), "activations", "activations")
    log.info("%d segments\n%s\n%s", result.attrs["n_examples"], result.tables["layers"].to_string(index=False),
             result.claims_table()[["id", "ours", "verdict"]].to_string(index=False))
