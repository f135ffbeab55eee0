# Massive activations (Sun et al. 2024) and dormant heads (Guo et al. 2024), on the surface corpus:
# the hidden states and each head's output, which the store does not keep, so the model is run
# again (one forward pass, as for gradient importance). Options: `activations:` in the schema.
ACTIVATIONS = Results(
    "activations",
    f"{RESULTS}/{{model}}/{{corpus}}/activations",
    category="Massive activations and dormant heads (Sun et al. 2024; Guo et al. 2024)",
    corpus=lambda model: ([PLAN.surface_corpus] if model in PLAN.activation_models else []),
    constrain={"corpus": PLAN.segments},
)


rule activations:
    input:
        corpus=corpus_file,
        model=model_inputs,
        code=code("activations.py"),
    output:
        heads=ACTIVATIONS.heads("heads.csv", "activation_heads", "per head"),
        layers=ACTIVATIONS.table("layers.csv", "activation_layers", "per layer"),
        claims=ACTIVATIONS.claims("paper_claims.csv", "activation_claims", "paper vs ours"),
        figure=ACTIVATIONS.figure("activations.svg", "activation_heads", "figure"),
    log:
        logs("activations/{model}/{corpus}"),
    benchmark:
        benchmarks("activations/{model}/{corpus}")
    conda:
        ENV
    threads: EXTRACTION["threads"]
    resources:
        mem_mb=4000,
    params:
        **pick(
            config["activations"],
            "max_examples",
            "batch_size",
            "massive_ratio",
            "sink_share",
            "quiet",
        ),
        spec=lambda wc: MODELS[wc.model],
        max_length=EXTRACTION["max_length"],
    script:
        "../scripts/activations.py"
