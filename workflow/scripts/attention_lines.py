"""Rule attention_lines: Fig. 1-style pictures of four heads chosen from the data."""

import pandas as pd

from headatlas.analyses.surface import pick_example_heads
from headatlas.io import atomic_open
from headatlas.pipeline import describe, rule_logging
from headatlas.plots.surface import plot_attention_lines
from headatlas.store import open_stores, pick_example

with rule_logging(snakemake) as log:
    rel, special, entropy = (pd.read_csv(snakemake.input[k])
                             for k in ("relative_position", "special_tokens", "entropy"))
    heads = pick_example_heads(rel, special, entropy)
    store = open_stores(snakemake.input.stores)
    # Fig. 1 shows short excerpts: by default the shortest segment of a readable length.
    example = pick_example(snakemake.input.stores, snakemake.params.example, min_tokens=24)
    table = pd.DataFrame([(b, l, h) for b, (l, h) in heads.items()], columns=["behaviour", "layer", "head"])
    with atomic_open(snakemake.output.heads) as handle:
        table.to_csv(handle, index=False)
    caption = describe(store.attrs, 1, f"segment shown ({example.id}) of {len(store)}")
    plot_attention_lines(example, heads, snakemake.output.figure, caption)
    log.info("heads %s on example %s", heads, example.id)
