# Head-type ablation without re-training (Guan et al. §5, Tables 2 and 3): prune / substitute /
# cut intra- or inter-sentence attention of one head type inside the task model, score the task.
# Options: `ablation:` in the schema (`model: null`, the default, turns it off):
#   task: upos   -> the UPOS tagger fine-tuned from `model` (rule finetune_upos), scored on the
#                   `split` of the fine-tuning corpus; results/<model>_upos/ablation/
#   task: squad  -> `model` is a SQuAD-fine-tuned model of `models:`, scored on `squad_path`
#                   (SQuAD v1.1 JSON, exact match / F1); results/<model>/ablation/
# The task model, head-type source and data are derived in headatlas.pipeline.plan
# (PLAN.ablation, None when the ablation is off: then TASK_MODELS is empty and no job matches).
ABLATION = config["ablation"]
TASK_MODELS = [PLAN.ablation.task_model] if PLAN.ablation else []
ABLATIONS = Results(
    "ablation",
    f"{RESULTS}/{{task_model}}/ablation",
    labels=lambda text: {"model": "{task_model}", "result": text},
    category="Head-type ablation (Guan §5)",
    subcategory="{task_model}",
    task_model=lambda model: TASK_MODELS if model == ABLATION["model"] else [],
    constrain={"task_model": TASK_MODELS},
)


rule ablation:
    input:
        model=task_model_inputs,
        types=ablation_types,
        data=lambda wildcards: PLAN.ablation.data or [],
        code=code("ablation_grid.py"),
    output:
        table=ABLATIONS.table("ablation.csv", "ablation_table", "Tables 2-3: ours vs paper"),
        figure=ABLATIONS.figure("ablation.svg", "ablation_table", "Tables 2-3 as a chart"),
        result=ABLATIONS.path("ablation.npz"),  # the whole grid, per-unit scores for the claims
    log:
        logs("ablation/{task_model}"),
    benchmark:
        benchmarks("ablation/{task_model}")
    priority: CHAIN_PRIORITY
    conda:
        ENV
    threads: ABLATION["threads"]
    resources:
        mem_mb=2000,  # measured: 0.93 GB peak for the MiniLM-L6 tagger
    params:
        **pick(ABLATION, "task", "split", "renormalise", "batch_size", "max_examples"),
        **pick(ABLATION, "squad"),
        **ablation_plan("base", "spec", "types_source", "types_own", "corpus", "max_length"),
    script:
        "../scripts/ablation_grid.py"


rule ablation_claims:
    input:
        table=rules.ablation.output.table,
        result=rules.ablation.output.result,
        stability=ablation_stability,
        code=code("ablation_claims.py"),
    output:
        ABLATIONS.claims("paper_claims.csv", "ablation_claims", "claims vs paper"),
    log:
        logs("ablation/{task_model}.claims"),
    benchmark:
        benchmarks("ablation/{task_model}.claims")
    conda:
        ENV
    params:
        **pick(ABLATION, "bootstrap", "min_type_stability"),
    script:
        "../scripts/ablation_claims.py"
