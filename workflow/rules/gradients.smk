# Gradient importance (Clark et al. §3.2, Fig. 3): |dL/d attention| of the model's own training
# loss, per layer, for attention to [SEP], to . and , and to other tokens. Needs gradients, so it
# re-runs the model on the segment corpus (not the store). Options: `gradients:` in the schema.
GRADIENTS = config["gradients"]
GRADIENT_IMPORTANCE = Results(
    "gradients",
    f"{RESULTS}/{{model}}/{{corpus}}/gradients",
    category="Gradient importance (Clark §3.2)",
    corpus=lambda model: ([PLAN.surface_corpus] if model in PLAN.gradient_models else []),
    constrain={"corpus": PLAN.segments},
)


rule gradients_importance:
    input:
        corpus=corpus_file,
        model=model_inputs,
        code=code("gradients_importance.py"),
    output:
        heads=GRADIENT_IMPORTANCE.heads(
            "heads.csv", "gradients_importance", "per head", final=False
        ),
        meta=GRADIENT_IMPORTANCE.path("run.json"),
    log:
        logs("gradients/{model}/{corpus}/importance"),
    benchmark:
        benchmarks("gradients/{model}/{corpus}/importance")
    conda:
        ENV
    threads: EXTRACTION["threads"]
    resources:
        mem_mb=4000,
    params:
        **pick(GRADIENTS, "loss", "max_examples", "batch_size", "max_batch_tokens", "seed"),
        spec=lambda wc: MODELS[wc.model],
        max_length=EXTRACTION["max_length"],
    script:
        "../scripts/gradients_importance.py"


rule gradients_figure:
    input:
        **rules.gradients_importance.output,
        code=code("gradients_figure.py"),
    output:
        figure=GRADIENT_IMPORTANCE.figure("gradients.svg", "gradients_importance", "Fig. 3"),
    log:
        logs("gradients/{model}/{corpus}/figure"),
    benchmark:
        benchmarks("gradients/{model}/{corpus}/figure")
    conda:
        ENV
    script:
        "../scripts/gradients_figure.py"


rule gradients_claims:
    input:
        **rules.gradients_importance.output,
        code=code("gradients_claims.py"),
    output:
        layers=GRADIENT_IMPORTANCE.table("layers.csv", "gradients_claims", "per layer vs paper"),
        claims=GRADIENT_IMPORTANCE.claims("paper_claims.csv", "gradients_claims", "paper vs ours"),
    log:
        logs("gradients/{model}/{corpus}/claims"),
    benchmark:
        benchmarks("gradients/{model}/{corpus}/claims")
    conda:
        ENV
    script:
        "../scripts/gradients_claims.py"
