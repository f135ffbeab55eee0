# The head atlas (issue 22): results/<m>/heads.csv joins, one row per (weighting, layer, head),
# every per-head table the run writes for model <m> (headatlas.atlas; nothing is recomputed), with
# its column dictionary heads_columns.csv; results/atlas.html shows every model's heads (a grid
# coloured by any column, a sortable table, one card per head with its attention on a few real
# examples read from the kept stores). The tables are found among the other analyses' final
# targets at DAG time, so an analysis a config leaves out leaves its columns out.
from headatlas.atlas import planned_tables

ATLAS_REPORT = {"category": "Head atlas", "subcategory": "{model}"}
# The page's examples: per (model, corpus) this many, each at most this many words (the page's
# size is about models x corpora x examples x layers x heads x 2 weightings x max_units^2 bytes,
# x 4/3 for base64).
ATLAS_PAGE = {"examples": 2, "max_units": 40, "min_units": 8}


def planned_paths():
    """The final outputs of every analysis but the atlas, and the tables the task model's
    importance reads (written although its `analyses` may not ask for them)."""
    paths = [
        path
        for model in MODELS
        for analysis, targets in FINAL_TARGETS.items()
        if analysis != "atlas" and PLAN.asks(model, analysis)
        for path in targets(model)
        if runs_here(model, path)
    ]
    importance = PLAN.importance or {}
    paths += [importance[key] for key in ("patterns", "types") if importance.get(key)]
    return list(dict.fromkeys(paths))


# The configured models, and the task model of `importance` when it is not one of them (its
# per-head tables, e.g. importance/heads.csv, sit under results/<task model>/ all the same).
TASK_MODEL = (PLAN.importance or {}).get("task_model")
ATLAS_CANDIDATES = list(MODELS) + (
    [TASK_MODEL] if TASK_MODEL and TASK_MODEL not in MODELS else []
)


def atlas_tables(model):
    return planned_tables(planned_paths(), RESULTS, model)


def atlas_models():
    """The models with at least one per-head table in this run (each gets a heads.csv)."""
    return [m for m in ATLAS_CANDIDATES if PLAN.asks(m, "atlas") and atlas_tables(m)]


def atlas_stores():
    """{model: {corpus: shards}} for the examples: stores kept after the run
    (`extraction.keep_stores`) of corpora some planned analysis of the model reads."""
    planned = planned_paths()
    return {
        m: {
            c: store_shards(m, c)
            for c in CORPORA
            if PLAN.runs_on(m, c)
            and any(p.startswith(f"{RESULTS}/{m}/{c}/") for p in planned)
        }
        for m in atlas_models()
        if m in PLAN.kept_stores
    }


rule atlas_heads:
    input:
        tables=lambda wildcards: atlas_tables(wildcards.model),
        code=code("atlas_heads.py"),
    output:
        heads=report(
            f"{RESULTS}/{{model}}/heads.csv",
            caption="../report/atlas_heads.rst",
            labels={"model": "{model}", "result": "one profile per head"},
            **ATLAS_REPORT,
        ),
        columns=report(
            f"{RESULTS}/{{model}}/heads_columns.csv",
            caption="../report/atlas_columns.rst",
            labels={"model": "{model}", "result": "column dictionary"},
            **ATLAS_REPORT,
        ),
    log:
        f"{LOGS}/atlas/{{model}}/heads.log",
    benchmark:
        f"{LOGS}/benchmarks/atlas/{{model}}/heads.tsv"
    wildcard_constraints:
        model=one_of(ATLAS_CANDIDATES),
    conda:
        ENV
    params:
        results=RESULTS,
    script:
        "../scripts/atlas_heads.py"


rule atlas_page:
    input:
        heads=lambda wildcards: [f"{RESULTS}/{m}/heads.csv" for m in atlas_models()],
        columns=lambda wildcards: [
            f"{RESULTS}/{m}/heads_columns.csv" for m in atlas_models()
        ],
        stores=lambda wildcards: [
            path
            for corpora in atlas_stores().values()
            for shards in corpora.values()
            for path in shards
        ],
        code=code("atlas_page.py"),
    output:
        report(
            f"{RESULTS}/atlas.html",
            caption="../report/atlas_page.rst",
            labels={
                "model": "all models",
                "result": "the head atlas (interactive page)",
            },
            category="Head atlas",
            subcategory="all models",
        ),
    log:
        f"{LOGS}/atlas/page.log",
    benchmark:
        f"{LOGS}/benchmarks/atlas/page.tsv"
    conda:
        ENV
    params:
        models=lambda wildcards: atlas_models(),
        stores=lambda wildcards: atlas_stores(),
        options=ATLAS_PAGE,
    script:
        "../scripts/atlas_page.py"


def atlas_targets(model):
    """``model``'s heads.csv and dictionary (and the task model's, asked with the model it is
    fine-tuned from, as its importance is), and the page."""
    models = [model]
    if TASK_MODEL not in MODELS and model == (PLAN.ablation or {}).get("base"):
        models.append(TASK_MODEL)
    return [
        f"{RESULTS}/{m}/{name}"
        for m in models
        if m in atlas_models()
        for name in ("heads.csv", "heads_columns.csv")
    ] + ([f"{RESULTS}/atlas.html"] if atlas_models() else [])


FINAL_TARGETS["atlas"] = atlas_targets
