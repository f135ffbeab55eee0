# The scorecard: every paper claim of every configured model in one table (results/scorecard.csv,
# shown on the report's landing page), and the cross-model figures. The scorecard reads every
# paper_claims.csv that the included analyses register in FINAL_TARGETS: an analysis joins it
# by writing its claims (headatlas.claims.Claim rows) to a file of that name.
SCORECARD_REPORT = {
    "category": "Scorecard and models compared",
    "subcategory": "all models",
}
COMPARE_DIR = f"{RESULTS}/compare"
SPECIAL_TABLE = f"{RESULTS}/{{model}}/{PLAN.surface_corpus}/surface/special_tokens.csv"
TABLE1 = f"{RESULTS}/{{model}}/{{corpus}}/syntax/table1.csv"
SHARES_TABLE = f"{RESULTS}/{{model}}/{PLAN.surface_corpus}/headtypes/type_shares.csv"


rule scorecard:
    input:
        claims=claims_files,
        code=code("scorecard.py"),
    output:
        table=report(
            f"{RESULTS}/scorecard.csv",
            caption="../report/scorecard.rst",
            labels={"result": "scorecard (table)"},
            **SCORECARD_REPORT,
        ),
        long=f"{RESULTS}/scorecard_long.csv",
        html=report(
            f"{RESULTS}/scorecard.html",
            caption="../report/scorecard.rst",
            labels={"result": "scorecard (page)"},
            **SCORECARD_REPORT,
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
        tables=[SPECIAL_TABLE.format(model=m) for m in MODELS],
        code=code("compare_special_tokens.py"),
    output:
        table=f"{COMPARE_DIR}/special_tokens_depth.csv",
        figure=report(
            f"{COMPARE_DIR}/special_tokens_depth.svg",
            caption="../report/compare_special_tokens.rst",
            labels={"result": "attention to special tokens by depth"},
            **SCORECARD_REPORT,
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
        tables=[
            TABLE1.format(model=m, corpus=c)
            for m in MODELS
            for c in PLAN.labelled_treebanks
        ],
        code=code("compare_table1.py"),
    output:
        table=f"{COMPARE_DIR}/table1.csv",
        figure=report(
            f"{COMPARE_DIR}/table1.svg",
            caption="../report/compare_table1.rst",
            labels={"result": "Table 1, models side by side"},
            **SCORECARD_REPORT,
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
        tables=[SHARES_TABLE.format(model=m) for m in MODELS],
        code=code("compare_headtypes.py"),
    output:
        table=f"{COMPARE_DIR}/headtype_shares.csv",
        figure=report(
            f"{COMPARE_DIR}/headtype_shares.svg",
            caption="../report/compare_headtypes.rst",
            labels={"result": "head-type shares per model"},
            **SCORECARD_REPORT,
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


FINAL_TARGETS["scorecard"] = lambda model: [
    f"{RESULTS}/scorecard.csv",
    f"{RESULTS}/scorecard.html",
]
FINAL_TARGETS["compare"] = lambda model: [
    f"{COMPARE_DIR}/{name}.{ext}"
    for name, planned in (
        ("special_tokens_depth", PLAN.surface_corpus is not None),
        ("table1", bool(PLAN.labelled_treebanks)),
        ("headtype_shares", PLAN.surface_corpus is not None),
    )
    if planned
    for ext in ("csv", "svg")
]
