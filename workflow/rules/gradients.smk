# Gradient importance (Clark et al. §3.2, Fig. 3): |dL/d attention| of the model's own training
# loss, per layer, for attention to [SEP], to . and , and to other tokens. Needs gradients, so it
# re-runs the model on the segment corpus (not the store). Options: `gradients:` in the schema.
GRADIENTS = config["gradients"]
GRADIENTS_DIR = f"{RESULTS}/{{model}}/{{corpus}}/gradients"
targets(
    "gradients",
    category="Gradient importance (Clark §3.2)",
    corpus=lambda model: (
        [PLAN.surface_corpus] if model in PLAN.gradient_models else []
    ),
)


rule gradients_importance:
    input:
        corpus=corpus_file,
        model=model_inputs,
        code=code("gradients_importance.py"),
    output:
        heads=result(
            "gradients",
            f"{GRADIENTS_DIR}/heads.csv",
            caption="../report/gradients_importance.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "per head"},
            final=False,
        ),
        meta=f"{GRADIENTS_DIR}/run.json",
    log:
        f"{LOGS}/gradients/{{model}}/{{corpus}}/importance.log",
    benchmark:
        f"{LOGS}/benchmarks/gradients/{{model}}/{{corpus}}/importance.tsv"
    wildcard_constraints:
        corpus=one_of(PLAN.segments),
    conda:
        ENV
    threads: EXTRACTION["threads"]
    resources:
        mem_mb=4000,
    params:
        spec=lambda wc: MODELS[wc.model],
        loss=GRADIENTS["loss"],
        max_examples=GRADIENTS["max_examples"],
        batch_size=GRADIENTS["batch_size"],
        max_batch_tokens=GRADIENTS["max_batch_tokens"],
        seed=GRADIENTS["seed"],
        max_length=EXTRACTION["max_length"],
    script:
        "../scripts/gradients_importance.py"


rule gradients_figure:
    input:
        **rules.gradients_importance.output,
        code=code("gradients_figure.py"),
    output:
        figure=figure(
            "gradients",
            f"{GRADIENTS_DIR}/gradients.svg",
            caption="../report/gradients_importance.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "Fig. 3"},
        ),
    log:
        f"{LOGS}/gradients/{{model}}/{{corpus}}/figure.log",
    benchmark:
        f"{LOGS}/benchmarks/gradients/{{model}}/{{corpus}}/figure.tsv"
    conda:
        ENV
    script:
        "../scripts/gradients_figure.py"


rule gradients_claims:
    input:
        **rules.gradients_importance.output,
        code=code("gradients_claims.py"),
    output:
        layers=result(
            "gradients",
            f"{GRADIENTS_DIR}/layers.csv",
            caption="../report/gradients_claims.rst",
            labels={
                "model": "{model}",
                "corpus": "{corpus}",
                "result": "per layer vs paper",
            },
        ),
        claims=result(
            "gradients",
            f"{GRADIENTS_DIR}/paper_claims.csv",
            caption="../report/gradients_claims.rst",
            labels={
                "model": "{model}",
                "corpus": "{corpus}",
                "result": "paper vs ours",
            },
        ),
    log:
        f"{LOGS}/gradients/{{model}}/{{corpus}}/claims.log",
    benchmark:
        f"{LOGS}/benchmarks/gradients/{{model}}/{{corpus}}/claims.tsv"
    conda:
        ENV
    script:
        "../scripts/gradients_claims.py"
