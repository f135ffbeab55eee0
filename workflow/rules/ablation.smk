# Head-type ablation without re-training (Guan et al. §5, Tables 2 and 3): prune / substitute /
# cut intra- or inter-sentence attention of one head type inside the task model, score the task.
# Options live under `ablation:` in config.yaml (`model: null`, the default, turns it off):
#   task: upos   -> the UPOS tagger fine-tuned from `model` (rule finetune_upos), scored on the
#                   `split` of the fine-tuning corpus; results/<model>_upos/ablation/
#   task: squad  -> `model` is a SQuAD-fine-tuned model of `models:`, scored on `squad_path`
#                   (SQuAD v1.1 JSON, exact match / F1); results/<model>/ablation/
#   types_from: task|base, types_corpus, types_csv   which head types label the heads
ABLATION = config.get("ablation", {})
ABLATION_TASK = ABLATION.get("task", "upos")
ABLATION_MODEL = ABLATION.get("model")
ABLATION_SQUAD = ABLATION.get("squad_path")
ABLATION_TASK_MODEL = (
    f"{ABLATION_MODEL}_upos" if ABLATION_TASK == "upos" else ABLATION_MODEL
)
# The task model's own head types when it is a configured model (its attention gets extracted),
# else those of its pre-trained base (`model` for upos, `base` for squad).
ABLATION_BASE = ABLATION_MODEL if ABLATION_TASK == "upos" else ABLATION.get("base")
ABLATION_TYPES_MODEL = (
    ABLATION_TASK_MODEL
    if ABLATION_TASK_MODEL in MODELS
    and (ABLATION.get("types_from", "task") == "task" or not ABLATION_BASE)
    else ABLATION_BASE
)
ABLATION_TYPES_CORPUS = ABLATION.get("types_corpus") or SURFACE_CORPUS
ABLATION_TYPES = ABLATION.get("types_csv") or (
    f"{RESULTS}/{ABLATION_TYPES_MODEL}/{ABLATION_TYPES_CORPUS}/headtypes/features.csv"
)
ABLATION_CORPUS = ABLATION.get("corpus") or FINETUNE_CORPUS
ABLATION_MODEL_PATH = (
    f"{RESULTS}/finetune/{ABLATION_MODEL}/upos/model"
    if ABLATION_TASK == "upos"
    else MODELS.get(ABLATION_MODEL, {}).get("path", "")
)
ABLATION_ON = ABLATION_MODEL in MODELS and (ABLATION_TASK == "upos" or bool(ABLATION_SQUAD))


rule ablation:
    input:
        model=(
            [f"{ABLATION_MODEL_PATH}/config.json"]
            if ABLATION_MODEL_PATH.startswith(f"{RESULTS}/")
            else []
        ),
        types=ABLATION_TYPES,
        data=(
            f"data/corpora/{ABLATION_CORPUS}.jsonl"
            if ABLATION_TASK == "upos"
            else (ABLATION_SQUAD or [])
        ),
        code=[lib("ablation.py"), lib("finetune.py"), lib("plots/ablation.py")],
    output:
        table=report(
            f"{RESULTS}/{{task_model}}/ablation/ablation.csv",
            caption="../report/ablation_table.rst",
            category="Head-type ablation (Guan §5)",
            subcategory="{task_model}",
            labels={"model": "{task_model}", "result": "Tables 2-3: ours vs paper"},
        ),
        figure=report(
            f"{RESULTS}/{{task_model}}/ablation/ablation.svg",
            caption="../report/ablation_table.rst",
            category="Head-type ablation (Guan §5)",
            subcategory="{task_model}",
            labels={"model": "{task_model}", "result": "Tables 2-3 as a chart"},
        ),
    params:
        task=ABLATION_TASK,
        base=ABLATION_BASE,
        spec=(
            {"path": ABLATION_MODEL_PATH}
            if ABLATION_TASK == "upos"
            else MODELS.get(ABLATION_MODEL, {})
        ),
        types_source=(
            f"the table {ABLATION['types_csv']}"
            if ABLATION.get("types_csv")
            else f"{ABLATION_TYPES_MODEL} on {ABLATION_TYPES_CORPUS}"
        ),
        types_own=None
        if ABLATION.get("types_csv")
        else ABLATION_TYPES_MODEL == ABLATION_TASK_MODEL,
        corpus=ABLATION_CORPUS,
        split=ABLATION.get("split", "test"),
        renormalise=ABLATION.get("renormalise", False),
        batch_size=ABLATION.get("batch_size", 32),
        max_examples=ABLATION.get("max_examples"),
        max_length=ABLATION.get("max_length") or FINETUNE.get("max_length", 128),
        squad=ABLATION.get("squad", {}),
    wildcard_constraints:
        task_model=one_of([ABLATION_TASK_MODEL] if ABLATION_ON else []),
    threads: ABLATION.get("threads", 2)
    resources:
        mem_mb=2000,  # measured: 0.93 GB peak for the MiniLM-L6 tagger
    benchmark:
        "logs/benchmarks/ablation/{task_model}.tsv"
    log:
        "logs/ablation/{task_model}.log",
    conda:
        ENV
    script:
        "../scripts/ablation_grid.py"


FINAL_TARGETS.append(
    lambda model: [
        f"{RESULTS}/{ABLATION_TASK_MODEL}/ablation/ablation.{ext}" for ext in ("csv", "svg")
    ]
    if ABLATION_ON and model == ABLATION_MODEL
    else []
)
