# Gradient importance (Clark et al. §3.2, Fig. 3): |dL/d attention| of the model's own training
# loss, per layer, for attention to [SEP], to . and , and to other tokens. Needs gradients, so it
# re-runs the model on the segment corpus (not the store). Options (all optional) under
# `gradients:` in config.yaml:
#   loss: auto           auto | mlm | contrastive (auto: mlm iff the checkpoint has a masked-LM head)
#   max_examples: 1000   the first this many segments that fit max_length
#   batch_size: 16
#   seed: 0              BERT masking seed (mlm)
GRADIENTS = config.get("gradients", {})
GRADIENTS_DIR = f"{RESULTS}/{{model}}/{{corpus}}/gradients"
GRADIENTS_REPORT = {"category": "Gradient importance (Clark §3.2)", "subcategory": "{model}"}


rule gradients_importance:
    input:
        corpus=corpus_file,
        model=model_inputs,
        code=lib("analyses/gradients.py"),
    output:
        heads=report(
            f"{GRADIENTS_DIR}/heads.csv",
            caption="../report/gradients_importance.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "per head"},
            **GRADIENTS_REPORT,
        ),
        meta=f"{GRADIENTS_DIR}/run.json",
    params:
        spec=lambda wc: MODELS[wc.model],
        loss=GRADIENTS.get("loss", "auto"),
        max_examples=GRADIENTS.get("max_examples", 1000),
        batch_size=GRADIENTS.get("batch_size", 16),
        seed=GRADIENTS.get("seed", 0),
        max_length=EXTRACTION.get("max_length", 128),
    wildcard_constraints:
        corpus=one_of(SEGMENT_CORPORA),
    threads: EXTRACTION.get("threads", 2)
    resources:
        mem_mb=4000,
    log:
        "logs/gradients/{model}/{corpus}/importance.log",
    conda:
        ENV
    script:
        "../scripts/gradients_importance.py"


rule gradients_figure:
    input:
        heads=f"{GRADIENTS_DIR}/heads.csv",
        meta=f"{GRADIENTS_DIR}/run.json",
        plot=lib("plots/gradients.py"),
    output:
        report(
            f"{GRADIENTS_DIR}/gradients.svg",
            caption="../report/gradients_importance.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "Fig. 3"},
            **GRADIENTS_REPORT,
        ),
    log:
        "logs/gradients/{model}/{corpus}/figure.log",
    conda:
        ENV
    script:
        "../scripts/gradients_figure.py"


rule gradients_claims:
    input:
        heads=f"{GRADIENTS_DIR}/heads.csv",
        meta=f"{GRADIENTS_DIR}/run.json",
        special=f"{RESULTS}/{{model}}/{{corpus}}/surface/special_tokens.csv",
        code=lib("analyses/gradients.py"),
    output:
        layers=report(
            f"{GRADIENTS_DIR}/layers.csv",
            caption="../report/gradients_claims.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "per layer vs paper"},
            **GRADIENTS_REPORT,
        ),
        claims=report(
            f"{GRADIENTS_DIR}/paper_claims.csv",
            caption="../report/gradients_claims.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "paper vs ours"},
            **GRADIENTS_REPORT,
        ),
    log:
        "logs/gradients/{model}/{corpus}/claims.log",
    conda:
        ENV
    script:
        "../scripts/gradients_claims.py"


# A random encoder was never trained on the loss, so its gradients say nothing: left out.
FINAL_TARGETS.append(
    lambda model: (
        [
            f"{RESULTS}/{model}/{SURFACE_CORPUS}/gradients/{name}"
            for name in ("gradients.svg", "layers.csv", "paper_claims.csv")
        ]
        if SURFACE_CORPUS in SEGMENT_CORPORA and not MODELS[model].get("random_init")
        else []
    )
)
