# The scorecard: every paper claim of every configured model in one table (results/scorecard.csv;
# scorecard.html shows it with the two weightings as columns), the summary the report's landing
# page embeds (findings.html), and the cross-model figures. The scorecard reads every
# paper_claims.csv that the included analyses declare as final results: an analysis joins it
# by writing its claims (headatlas.claims.Claim rows) to a file of that name.
COMPARE_DIR = f"{RESULTS}/compare"
for _name in ("scorecard", "compare"):
    targets(_name, category="Scorecard and models compared", subcategory="all models")


rule scorecard:
    input:
        claims=claims_files,
        code=code("scorecard.py"),
    output:
        table=result(
            "scorecard",
            f"{RESULTS}/scorecard.csv",
            caption="../report/scorecard.rst",
            labels={"result": "scorecard (CSV)"},
        ),
        long=f"{RESULTS}/scorecard_long.csv",
        html=result(
            "scorecard",
            f"{RESULTS}/scorecard.html",
            caption="../report/scorecard.rst",
            labels={"result": "scorecard (table)"},
        ),
        summary=result(
            "scorecard",
            f"{RESULTS}/findings.html",
            caption="../report/findings.rst",
            labels={"result": "what was found (the landing page's summary)"},
        ),
    log:
        f"{LOGS}/scorecard/scorecard.log",
    benchmark:
        f"{LOGS}/benchmarks/scorecard/scorecard.tsv"
    conda:
        ENV
    params:
        models=list(MODELS),
        results=lambda wildcards, output: str(Path(output.table).parent),
    script:
        "../scripts/scorecard.py"


rule compare_special_tokens:
    input:
        tables=[
            SURFACE_TABLE.format(
                model=m,
                corpus=PLAN.surface_corpus,
                weighting="",
                analysis="special_tokens",
            )
            for m in MODELS
        ],
        code=code("compare_special_tokens.py"),
    output:
        table=result(
            "compare",
            f"{COMPARE_DIR}/special_tokens_depth.csv",
            final=PLAN.surface_corpus is not None,
            in_report=False,
        ),
        figure=figure(
            "compare",
            f"{COMPARE_DIR}/special_tokens_depth.svg",
            final=PLAN.surface_corpus is not None,
            caption="../report/compare_special_tokens.rst",
            labels={"result": "attention to special tokens by depth"},
        ),
    log:
        f"{LOGS}/compare/special_tokens.log",
    benchmark:
        f"{LOGS}/benchmarks/compare/special_tokens.tsv"
    conda:
        ENV
    params:
        models=list(MODELS),
        corpus=PLAN.surface_corpus,
    script:
        "../scripts/compare_special_tokens.py"


rule compare_table1:
    input:
        # syntax.smk is included after this file: its rules are known when the DAG is built
        tables=lambda wildcards: [
            rules.syntax_table1.output.table.format(model=m, corpus=c, weighting="")
            for m in MODELS
            for c in PLAN.labelled_treebanks
        ],
        code=code("compare_table1.py"),
    output:
        table=result(
            "compare",
            f"{COMPARE_DIR}/table1.csv",
            final=bool(PLAN.labelled_treebanks),
            in_report=False,
        ),
        figure=figure(
            "compare",
            f"{COMPARE_DIR}/table1.svg",
            final=bool(PLAN.labelled_treebanks),
            caption="../report/compare_table1.rst",
            labels={"result": "Table 1, models side by side"},
        ),
    log:
        f"{LOGS}/compare/table1.log",
    benchmark:
        f"{LOGS}/benchmarks/compare/table1.tsv"
    conda:
        ENV
    params:
        pairs=[[m, c] for m in MODELS for c in PLAN.labelled_treebanks],
    script:
        "../scripts/compare_table1.py"


rule compare_headtypes:
    input:
        tables=[
            rules.headtypes_cluster.output.shares.format(
                model=m, corpus=PLAN.surface_corpus, weighting=""
            )
            for m in MODELS
        ],
        code=code("compare_headtypes.py"),
    output:
        table=result(
            "compare",
            f"{COMPARE_DIR}/headtype_shares.csv",
            final=PLAN.surface_corpus is not None,
            in_report=False,
        ),
        figure=figure(
            "compare",
            f"{COMPARE_DIR}/headtype_shares.svg",
            final=PLAN.surface_corpus is not None,
            caption="../report/compare_headtypes.rst",
            labels={"result": "head-type shares per model"},
        ),
    log:
        f"{LOGS}/compare/headtypes.log",
    benchmark:
        f"{LOGS}/benchmarks/compare/headtypes.tsv"
    conda:
        ENV
    params:
        models=list(MODELS),
        corpus=PLAN.surface_corpus,
    script:
        "../scripts/compare_headtypes.py"
