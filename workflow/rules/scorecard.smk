# The scorecard: every paper claim of every configured model in one table (results/scorecard.csv;
# scorecard.html shows it with the two weightings as columns), the summary the report's landing
# page embeds (findings.html), and the cross-model figures. The scorecard reads every final result
# the included analyses declare with claims(...) (common.smk): an analysis joins it by declaring
# its claims table (headatlas.claims.Claim rows) so.
SHARED = {"category": "Scorecard and models compared", "subcategory": "all models"}
SCORECARD = Results("scorecard", RESULTS, labels=lambda text: {"result": text}, **SHARED)
COMPARED = Results("compare", f"{RESULTS}/compare", labels=lambda text: {"result": text}, **SHARED)
# (model, weighting suffix) of every sinks run: the models whose `analyses` include sinks
SINK_RUNS = [(m, w) for m in MODELS if PLAN.asks(m, "sinks") for w in PLAN.suffixes(m)]
ACTIVATION_RUNS = [m for m in PLAN.activation_models if PLAN.asks(m, "activations")]


rule scorecard:
    input:
        claims=claims_files,
        code=code("scorecard.py"),
    output:
        table=SCORECARD.table("scorecard.csv", "scorecard", "scorecard (CSV)"),
        long=f"{RESULTS}/scorecard_long.csv",
        html=SCORECARD.table("scorecard.html", "scorecard", "scorecard (table)"),
        summary=SCORECARD.table(
            "findings.html", "findings", "what was found (the landing page's summary)"
        ),
    log:
        logs("scorecard/scorecard"),
    benchmark:
        benchmarks("scorecard/scorecard")
    conda:
        ENV
    params:
        models=list(MODELS),
        controls=[m for m in MODELS if MODELS[m].get("random_init")],
        results=lambda wildcards, output: str(Path(output.table).parent),
    script:
        "../scripts/scorecard.py"


rule compare_special_tokens:
    input:
        tables=lambda wildcards: [
            output_of(
                "surface_table",
                "table",
                model=m,
                corpus=PLAN.surface_corpus,
                weighting="",
                analysis="special_tokens",
            )
            for m in MODELS
        ],
        code=code("compare_special_tokens.py"),
    output:
        **compared(
            "special_tokens_depth",
            "compare_special_tokens",
            "attention to special tokens by depth",
            PLAN.surface_corpus is not None,
        ),
    log:
        logs("compare/special_tokens"),
    benchmark:
        benchmarks("compare/special_tokens")
    conda:
        ENV
    params:
        models=list(MODELS),
        corpus=PLAN.surface_corpus,
    script:
        "../scripts/compare_special_tokens.py"


rule compare_sinks:
    input:
        tables=lambda wildcards: [
            output_of("sink_rate", "layers", model=m, corpus=PLAN.surface_corpus, weighting=w)
            for m, w in SINK_RUNS
        ],
        code=code("compare_sinks.py"),
    output:
        **compared(
            "sinks_depth",
            "compare_sinks",
            "attention sinks by depth",
            PLAN.surface_corpus is not None and bool(SINK_RUNS),
        ),
    log:
        logs("compare/sinks"),
    benchmark:
        benchmarks("compare/sinks")
    conda:
        ENV
    params:
        runs=[list(run) for run in SINK_RUNS],
        corpus=PLAN.surface_corpus,
        epsilon=config["sinks"]["epsilon"],
    script:
        "../scripts/compare_sinks.py"


rule compare_activations:
    input:
        tables=lambda wildcards: [
            output_of("activations", "layers", model=m, corpus=PLAN.surface_corpus)
            for m in ACTIVATION_RUNS
        ],
        code=code("compare_activations.py"),
    output:
        **compared(
            "activations_depth",
            "compare_activations",
            "massive activations by depth",
            PLAN.surface_corpus is not None and bool(ACTIVATION_RUNS),
        ),
    log:
        logs("compare/activations"),
    benchmark:
        benchmarks("compare/activations")
    conda:
        ENV
    params:
        models=ACTIVATION_RUNS,
        corpus=PLAN.surface_corpus,
    script:
        "../scripts/compare_activations.py"


rule compare_mixing:
    input:
        tables=lambda wildcards: [
            output_of("context_mixing", "measures", task_model=t) for t in PLAN.mixing_taggers
        ],
        code=code("compare_mixing.py"),
    output:
        **compared(
            "mixing",
            "compare_mixing",
            "context mixing vs blank-out, every tagger",
            bool(PLAN.mixing_taggers),
        ),
    log:
        logs("compare/mixing"),
    benchmark:
        benchmarks("compare/mixing")
    conda:
        ENV
    params:
        models=list(PLAN.mixing_taggers),
        corpus=FINETUNE["corpus"],
    script:
        "../scripts/compare_mixing.py"


rule compare_table1:
    input:
        tables=lambda wildcards: [
            output_of("syntax_table1", "table", model=m, corpus=c, weighting="")
            for m in MODELS
            for c in PLAN.labelled_treebanks
        ],
        code=code("compare_table1.py"),
    output:
        **compared(
            "table1",
            "compare_table1",
            "Table 1, models side by side",
            bool(PLAN.labelled_treebanks),
        ),
    log:
        logs("compare/table1"),
    benchmark:
        benchmarks("compare/table1")
    conda:
        ENV
    params:
        pairs=[[m, c] for m in MODELS for c in PLAN.labelled_treebanks],
    script:
        "../scripts/compare_table1.py"


rule compare_headtypes:
    input:
        tables=lambda wildcards: [
            output_of(
                "headtypes_cluster",
                "shares",
                model=m,
                corpus=PLAN.surface_corpus,
                weighting="",
            )
            for m in MODELS
        ],
        code=code("compare_headtypes.py"),
    output:
        **compared(
            "headtype_shares",
            "compare_headtypes",
            "head-type shares per model",
            PLAN.surface_corpus is not None,
        ),
    log:
        logs("compare/headtypes"),
    benchmark:
        benchmarks("compare/headtypes")
    conda:
        ENV
    params:
        models=list(MODELS),
        corpus=PLAN.surface_corpus,
    script:
        "../scripts/compare_headtypes.py"
