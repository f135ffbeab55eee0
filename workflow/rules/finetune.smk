# Fine-tuning a base model for UPOS tagging (the task model of the head-type ablation, Guan §5).
# Inputs pack consecutive sentences of one document (attention crosses sentence boundaries).
# Options live under `finetune:` in config.yaml; `models: []` (the default) turns it off.
# The checkpoint is a model like any other once the config names it, e.g.
#   models: {minilm_upos: {path: results/finetune/minilm/upos/model}}
FINETUNE = config.get("finetune", {})
FINETUNE_MODELS = [m for m in FINETUNE.get("models", []) if m in MODELS]
FINETUNE_CORPUS = FINETUNE.get("corpus", "gum")
FINETUNE_DIR = f"{RESULTS}/finetune/{{model}}/upos"
FINETUNE_REPORT = {"category": "Head-type ablation (Guan §5)", "subcategory": "{model}"}


rule finetune_upos:
    input:
        corpus=f"data/corpora/{FINETUNE_CORPUS}.jsonl",
        base=model_inputs,
        code=lib("finetune.py"),
    output:
        model=f"{FINETUNE_DIR}/model/config.json",
        metrics=report(
            f"{FINETUNE_DIR}/metrics.csv",
            caption="../report/finetune_metrics.rst",
            labels={"model": "{model}", "result": "UPOS tagger: test accuracy"},
            **FINETUNE_REPORT,
        ),
        curve=report(
            f"{FINETUNE_DIR}/curve.csv",
            caption="../report/finetune_curve.rst",
            labels={"model": "{model}", "result": "UPOS tagger: training curve"},
            **FINETUNE_REPORT,
        ),
    params:
        spec=lambda wc: MODELS[wc.model],
        corpus=FINETUNE_CORPUS,
        options={k: v for k, v in FINETUNE.items() if k not in ("models", "corpus", "threads")},
    threads: FINETUNE.get("threads", 2)
    resources:
        mem_mb=3000,  # measured: 2.0 GB peak for MiniLM-L6, batch 16 x 128
    benchmark:
        "logs/benchmarks/finetune/{model}/upos.tsv"
    log:
        "logs/finetune/{model}/upos.log",
    conda:
        ENV
    script:
        "../scripts/finetune_upos.py"


FINETUNE_TARGETS = ("model/config.json", "metrics.csv", "curve.csv")


FINAL_TARGETS.append(
    lambda model: [f"{RESULTS}/finetune/{model}/upos/{name}" for name in FINETUNE_TARGETS]
    if model in FINETUNE_MODELS
    else []
)
