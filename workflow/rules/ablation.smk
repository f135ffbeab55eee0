# Head-type ablation without re-training (Guan et al. §5, Tables 2 and 3): prune / substitute /
# cut intra- or inter-sentence attention of one head type inside the task model, score the task.
# Options: `ablation:` in the schema (`model: null`, the default, turns it off):
#   task: upos   -> the UPOS tagger fine-tuned from `model` (rule finetune_upos), scored on the
#                   `split` of the fine-tuning corpus; results/<model>_upos/ablation/
#   task: squad  -> `model` is a SQuAD-fine-tuned model of `models:`, scored on `squad_path`
#                   (SQuAD v1.1 JSON, exact match / F1); results/<model>/ablation/
# The task model, head-type source and data are derived in headatlas.pipeline.config (PLAN.ablation).
ABLATION = config["ablation"]
ABLATION_PLAN = PLAN.ablation or {}
targets(
    "ablation",
    category="Head-type ablation (Guan §5)",
    subcategory="{task_model}",
    task_model=lambda model: (
        [ABLATION_PLAN["task_model"]]
        if PLAN.ablation and model == ABLATION["model"]
        else []
    ),
)


rule ablation:
    input:
        model=task_model_inputs,
        types=ABLATION_PLAN.get("types", []),
        data=ABLATION_PLAN.get("data") or [],
        code=code("ablation_grid.py"),
    output:
        table=result(
            "ablation",
            f"{RESULTS}/{{task_model}}/ablation/ablation.csv",
            caption="../report/ablation_table.rst",
            labels={"model": "{task_model}", "result": "Tables 2-3: ours vs paper"},
        ),
        figure=figure(
            "ablation",
            f"{RESULTS}/{{task_model}}/ablation/ablation.svg",
            caption="../report/ablation_table.rst",
            labels={"model": "{task_model}", "result": "Tables 2-3 as a chart"},
        ),
    log:
        f"{LOGS}/ablation/{{task_model}}.log",
    benchmark:
        f"{LOGS}/benchmarks/ablation/{{task_model}}.tsv"
    wildcard_constraints:
        task_model=one_of([ABLATION_PLAN["task_model"]] if PLAN.ablation else []),
    priority: CHAIN_PRIORITY
    conda:
        ENV
    threads: ABLATION["threads"]
    resources:
        mem_mb=2000,  # measured: 0.93 GB peak for the MiniLM-L6 tagger
    params:
        task=ABLATION["task"],
        base=ABLATION_PLAN.get("base"),
        spec=ABLATION_PLAN.get("spec"),
        types_source=ABLATION_PLAN.get("types_source"),
        types_own=ABLATION_PLAN.get("types_own"),
        corpus=ABLATION_PLAN.get("corpus"),
        split=ABLATION["split"],
        renormalise=ABLATION["renormalise"],
        batch_size=ABLATION["batch_size"],
        max_examples=ABLATION["max_examples"],
        max_length=ABLATION_PLAN.get("max_length"),
        squad=ABLATION["squad"],
    script:
        "../scripts/ablation_grid.py"


rule ablation_claims:
    input:
        table=rules.ablation.output.table,
        code=code("ablation_claims.py"),
    output:
        result(
            "ablation",
            f"{RESULTS}/{{task_model}}/ablation/paper_claims.csv",
            caption="../report/ablation_claims.rst",
            labels={"model": "{task_model}", "result": "claims vs paper"},
        ),
    log:
        f"{LOGS}/ablation/{{task_model}}.claims.log",
    benchmark:
        f"{LOGS}/benchmarks/ablation/{{task_model}}.claims.tsv"
    wildcard_constraints:
        task_model=one_of([ABLATION_PLAN["task_model"]] if PLAN.ablation else []),
    conda:
        ENV
    script:
        "../scripts/ablation_claims.py"
