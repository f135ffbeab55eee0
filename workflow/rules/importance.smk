# Which heads matter to the task model of `ablation` (Kovaleva et al. 2019 §6; Michel et al. 2019):
# each head and each layer disabled alone (paired bootstrap intervals), Michel et al.'s gradient
# importance, and pruning curves in importance, reverse and random order. importance_compare
# sets the importance beside Guan's head types and Kovaleva's patterns of the task model.
# Options: `importance:` in the schema; the task model and its data come from `ablation`.
IMPORTANCE = config["importance"]
IMPORTANCE_PLAN = PLAN.importance or {}
IMPORTANCE_DIR = f"{RESULTS}/{{task_model}}/importance"
targets(
    "importance",
    category="Which heads matter (Kovaleva §6, Michel et al.)",
    subcategory="{task_model}",
    task_model=lambda model: (
        [IMPORTANCE_PLAN["task_model"]]
        if IMPORTANCE_PLAN and model == ABLATION["model"]
        else []
    ),
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
        data=ABLATION_PLAN.get("data") or [],
        code=code("importance.py"),
    output:
        **{
            name: (figure if file.endswith(".svg") else result)(
                "importance",
                f"{IMPORTANCE_DIR}/{file}",
                caption="../report/importance.rst",
                labels={"model": "{task_model}", "result": label},
            )
            for name, (file, label) in IMPORTANCE_RESULTS.items()
        },
    log:
        f"{LOGS}/importance/{{task_model}}.log",
    benchmark:
        f"{LOGS}/benchmarks/importance/{{task_model}}.tsv"
    wildcard_constraints:
        task_model=one_of([IMPORTANCE_PLAN["task_model"]] if IMPORTANCE_PLAN else []),
    priority: CHAIN_PRIORITY
    conda:
        ENV
    threads: IMPORTANCE["threads"]
    resources:
        mem_mb=3000,
    params:
        task=ABLATION["task"],
        spec=ABLATION_PLAN.get("spec"),
        corpus=ABLATION_PLAN.get("corpus"),
        split=ABLATION["split"],
        importance_split=IMPORTANCE["importance_split"],
        max_length=ABLATION_PLAN.get("max_length"),
        squad=ABLATION["squad"],
        step=IMPORTANCE["step"],
        seeds=IMPORTANCE["seeds"],
        tolerance=IMPORTANCE["tolerance"],
        bootstrap=IMPORTANCE["bootstrap"],
        max_examples=IMPORTANCE["max_examples"],
        batch_size=IMPORTANCE["batch_size"],
    script:
        "../scripts/importance.py"


rule importance_compare:
    input:
        heads=rules.importance.output.heads,
        types=optional(IMPORTANCE_PLAN.get("types")),
        patterns=optional(IMPORTANCE_PLAN.get("patterns")),
        code=code("importance_compare.py"),
    output:
        table=result(
            "importance",
            f"{IMPORTANCE_DIR}/compare.csv",
            caption="../report/importance_compare.rst",
            labels={
                "model": "{task_model}",
                "result": "importance by head type and pattern",
            },
        ),
        figure=figure(
            "importance",
            f"{IMPORTANCE_DIR}/compare.svg",
            caption="../report/importance_compare.rst",
            labels={
                "model": "{task_model}",
                "result": "importance vs change, by pattern",
            },
        ),
    log:
        f"{LOGS}/importance/{{task_model}}_compare.log",
    benchmark:
        f"{LOGS}/benchmarks/importance/{{task_model}}_compare.tsv"
    wildcard_constraints:
        task_model=one_of([IMPORTANCE_PLAN["task_model"]] if IMPORTANCE_PLAN else []),
    conda:
        ENV
    params:
        patterns_corpus=IMPORTANCE_PLAN.get("patterns_corpus"),
        metric=IMPORTANCE_PLAN.get("metric"),
    script:
        "../scripts/importance_compare.py"
