"""Rule patterns_summary: a model's pattern shares per corpus and layer, the claims, the head types."""

import pandas as pd

from headatlas.analyses.patterns import corpus_shares, crosstab_types, layer_shares, paper_claims
from headatlas.claims import claims_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.patterns import plot_corpus_shares, plot_layer_shares

with rule_logging(snakemake) as log:
    p, model = snakemake.params, snakemake.wildcards.model
    heads = {corpus: pd.read_csv(path) for corpus, path in zip(p.corpora, snakemake.input.heads)}
    shares = pd.concat([corpus_shares(h, c) for c, h in heads.items()], ignore_index=True)
    layers = pd.concat([layer_shares(h).assign(corpus=c) for c, h in heads.items()], ignore_index=True)
    layers = layers[["corpus", *[c for c in layers.columns if c != "corpus"]]]
    main = p.surface if p.surface in heads else p.corpora[0]
    n = {c: int(h["n_inputs"].iloc[0]) for c, h in heads.items()}
    caption = (f"model {model}; " + ", ".join(f"{c}: {n[c]} inputs x {len(h)} heads"
                                              for c, h in heads.items())
               + "; Kovaleva et al. (Fig. 2): BERT-base fine-tuned on GLUE tasks, a CNN on ~400 "
               "hand-labelled maps; block needs two sentences in an input (the segments corpus has several)")
    write_table(shares, snakemake.output.shares, float_format="%.4g")
    write_table(layers, snakemake.output.layers, float_format="%.4g")
    plot_corpus_shares(shares, snakemake.output.figure, caption)
    plot_layer_shares(layers, snakemake.output.layers_figure, caption)
    if snakemake.input.types:
        types = crosstab_types(heads[main], pd.read_csv(snakemake.input.types[0]))
    else:
        types = pd.DataFrame(columns=["type", "heads"])
        log.info("no head types of %s on %s: the cross-tabulation is empty", model, main)
    write_table(types, snakemake.output.types, float_format="%.4g")
    main_shares = shares[shares["corpus"] == main].reset_index(drop=True)
    write_table(claims_table(paper_claims(main_shares, heads[main], p.tolerance)), snakemake.output.claims)
    log.info("%s\n%s\n%s", caption, shares.to_string(index=False), types.to_string(index=False))
