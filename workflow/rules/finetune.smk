# Fine-tuning a base model for UPOS tagging (the task model of the head-type ablation, Guan §5).
# Inputs pack consecutive sentences of one document (attention crosses sentence boundaries).
# Options: `finetune:` in the schema; `models: []` (the default) turns it off. The checkpoint is
# a model like any other once the config names it, e.g.
#   models: {minilm_upos: {path: results/finetune/minilm/upos/model}}
FINETUNE = config["finetune"]
TAGGER = Results(
    "finetune",
    f"{RESULTS}/finetune/{{model}}/upos",
    category="Head-type ablation (Guan §5)",
    where=lambda w: w["model"] in PLAN.finetune_models,
    constrain={"model": PLAN.finetune_models},
)
FINETUNE_OPTIONS = {k: v for k, v in FINETUNE.items() if k not in ("models", "corpus", "threads")}


rule finetune_upos:
    input:
        corpus=f"{DATA}/corpora/{FINETUNE['corpus']}.jsonl",
        base=model_inputs,
        code=code("finetune_upos.py"),
    output:
        model=TAGGER.table("model/config.json", in_report=False),
        metrics=TAGGER.table("metrics.csv", "finetune_metrics", "UPOS tagger: test accuracy"),
        curve=TAGGER.table("curve.csv", "finetune_curve", "UPOS tagger: training curve"),
    log:
        logs("finetune/{model}/upos"),
    benchmark:
        benchmarks("finetune/{model}/upos")
    priority: CHAIN_PRIORITY
    conda:
        ENV
    threads: FINETUNE["threads"]
    resources:
        mem_mb=3000,  # measured: 2.0 GB peak for MiniLM-L6, batch 16 x 128
    params:
        spec=lambda wc: MODELS[wc.model],
        corpus=FINETUNE["corpus"],
        options=FINETUNE_OPTIONS,
    script:
        "../scripts/finetune_upos.py"
