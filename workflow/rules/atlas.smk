# The head atlas (issue 22): results/<m>/heads.csv joins, one row per (weighting, layer, head),
# every per-head table the run writes for model <m> (headatlas.report.atlas; nothing is
# recomputed), with its column dictionary heads_columns.csv; results/atlas.html shows every
# model's heads (a grid coloured by any column, a sortable table, one card per head with its
# attention on a few real examples read from the kept stores). The tables are the results the
# other rules declare with heads="<module>:<table>" (common.smk), found when the DAG is built, so
# an analysis a config leaves out leaves its columns out.
from headatlas.report.atlas import PAGE_OPTIONS, AtlasPlan, Declaration, HeadTable

ATLAS = AtlasPlan(
    PLAN,
    MODELS,
    CORPORA,
    declared_heads,
    lambda model: planned_heads().get(model, []),
    planned_paths,
    map_shards,
)
HEAD_ATLAS = Results(
    "atlas",
    f"{RESULTS}/{{model}}",
    labels=lambda text: {"model": "{model}", "result": text},
    category="Head atlas",
    model=ATLAS.asked,
    constrain={"model": ATLAS.candidates},
)
ATLAS_PAGE = HEAD_ATLAS.at(RESULTS, final=lambda model: bool(ATLAS.models()))
# The page's examples (`atlas:`, defaults PAGE_OPTIONS): per (model, corpus) 2, each at most 40
# words, as written in the prepared corpus. The page's size is about models with stores x
# corpora x examples x layers x heads x 2 weightings x max_units^2 bytes, x 4/3 for base64 (3.1 MB
# at most for the default run's MiniLM).


rule atlas_heads:
    input:
        tables=lambda wildcards: ATLAS.inputs(wildcards.model),
        code=lambda wildcards: code("atlas_heads.py", *ATLAS.modules()),
    output:
        heads=HEAD_ATLAS.table("heads.csv", "atlas_heads", "one profile per head", as_table=True),
        columns=HEAD_ATLAS.table(
            "heads_columns.csv", "atlas_columns", "column dictionary", as_table=True
        ),
    log:
        logs("atlas/{model}/heads"),
    benchmark:
        benchmarks("atlas/{model}/heads")
    conda:
        ENV
    params:
        tables=lambda wildcards: [vars(t) for t in ATLAS.tables(wildcards.model)],
        declared=lambda wildcards: [vars(d) for d in declared_heads()],
        results=lambda wildcards, output: str(Path(output.heads).parents[1]),
    script:
        "../scripts/atlas_heads.py"


rule atlas_page:
    input:
        heads=lambda wildcards: [output_of("atlas_heads", "heads", model=m) for m in ATLAS.models()],
        columns=lambda wildcards: [
            output_of("atlas_heads", "columns", model=m) for m in ATLAS.models()
        ],
        stores=lambda wildcards: ATLAS.store_files(),
        corpora=lambda wildcards: list(
            dict.fromkeys(f for files in atlas_corpora().values() for f in files.values())
        ),
        code=code("atlas_page.py"),
    output:
        # A report item (category "Head atlas", 2-3.4 MB of the report's ~12 MB), so a report
        # sent alone still has it; the landing page links to the item.
        ATLAS_PAGE.table(
            "atlas.html", "atlas_page", "every head (interactive page)", subcategory="all models"
        ),
    log:
        logs("atlas/page"),
    benchmark:
        benchmarks("atlas/page")
    conda:
        ENV
    params:
        models=lambda wildcards: ATLAS.models(),
        stores=lambda wildcards: ATLAS.stores(),
        corpora=atlas_corpora,
        options={**PAGE_OPTIONS, **config["atlas"]},
    script:
        "../scripts/atlas_page.py"
