# Which heads matter to the task model of `ablation` (Kovaleva et al. 2019 §6; Michel et al. 2019):
# each head and each layer disabled alone (paired bootstrap intervals), Michel et al.'s gradient
# importance, and pruning curves in importance, reverse and random order. importance_compare
# sets the importance beside Guan's head types and Kovaleva's patterns of the task model.
# Options: `importance:` in the schema; the task model and its data come from `ablation`.
IMPORTANCE = config["importance"]
IMPORTANCE_MODELS = [PLAN.importance.task_model] if PLAN.importance else []
HEADS_MATTER = Results(
    "importance",
    f"{RESULTS}/{{task_model}}/importance",
    atlas_module="headatlas.interventions.importance",
    labels=lambda text: {"model": "{task_model}", "result": text},
    category="Which heads matter (Kovaleva §6, Michel et al.)",
    subcategory="{task_model}",
    task_model=lambda model: IMPORTANCE_MODELS if model == ABLATION["model"] else [],
    constrain={"task_model": IMPORTANCE_MODELS},
)


# output name -> (file, report label)
IMPORTANCE_RESULTS = {
    "heads": ("heads.csv", "per head: importance, change when disabled"),
    "layers": ("layers.csv", "per layer: change when disabled"),
    "curves": ("curves.csv", "pruning curves (table)"),
    "summary": ("summary.csv", "summary: counts, prunable share"),
    "claims": ("paper_claims.csv", "paper vs ours"),
    "single": ("single_heads.svg", "single heads disabled (figure)"),
    "importance": ("importance.svg", "head importance (figure)"),
    "pruning": ("pruning.svg", "pruning curves (Michel Fig. 4)"),
}


rule importance:
    input:
        model=task_model_inputs,
        data=lambda wildcards: PLAN.ablation.data or [],
        code=code("importance.py"),
    output:
        **{
            name: importance_output(name, file, label)
            for name, (file, label) in IMPORTANCE_RESULTS.items()
        },
    log:
        logs("importance/{task_model}"),
    benchmark:
        benchmarks("importance/{task_model}")
    priority: CHAIN_PRIORITY
    conda:
        ENV
    threads: IMPORTANCE["threads"]
    resources:
        mem_mb=3000,
    params:
        **pick(ABLATION, "task", "split", "squad"),
        **ablation_plan("spec", "corpus", "max_length"),
        **pick(
            IMPORTANCE,
            "importance_split",
            "step",
            "seeds",
            "tolerance",
            "claim_tolerance_pct",
            "bootstrap",
        ),
        **pick(IMPORTANCE, "max_examples", "batch_size"),
    script:
        "../scripts/importance.py"


rule importance_compare:
    input:
        unpack(importance_tables),
        heads=rules.importance.output.heads,
        code=code("importance_compare.py"),
    output:
        table=HEADS_MATTER.table(
            "compare.csv", "importance_compare", "importance by head type, pattern and dormancy"
        ),
        figure=HEADS_MATTER.figure(
            "compare.svg", "importance_compare", "importance vs change, by pattern"
        ),
    log:
        logs("importance/{task_model}_compare"),
    benchmark:
        benchmarks("importance/{task_model}_compare")
    conda:
        ENV
    params:
        patterns_corpus=lambda wildcards: PLAN.importance.patterns_corpus,
        types_corpus=lambda wildcards: PLAN.importance.types_corpus,
        metric=lambda wildcards: PLAN.importance.metric,
    script:
        "../scripts/importance_compare.py"
