# Dependency relations (Clark et al. §4.2, Table 1, Fig. 5). One job per (model, treebank) streams
# the store once and scores every head on every dependency (scores.npz); the tables and figures
# read that file. Options (all optional) live under `syntax:` in config.yaml:
#   word_from: mean|first|max          attention *from* a split word (paper: mean; Clark's code: first)
#   top_relations: 10, min_count: 100  Table 1 rows: the most frequent relations with enough instances
#   key_relations: [...]               one heat map each
#   selection: {corpus: gum, splits: [train, dev]}     honest regime: heads chosen here ...
#   evaluation: [{corpus: gum, splits: [test]}, ...]   ... and reported here, with bootstrap intervals
#   bootstrap: {n: 1000, seed: 0}

SYNTAX = config.get("syntax", {})
SYNTAX_DIR = f"{RESULTS}/{{model}}/{{corpus}}/syntax"
SYNTAX_HONEST_DIR = f"{RESULTS}/{{model}}/syntax"
SYNTAX_CATEGORY = "Dependency syntax (Clark §4.2)"
SYNTAX_TOP = SYNTAX.get("top_relations", 10)
SYNTAX_MIN_COUNT = SYNTAX.get("min_count", 100)
# Heat-map file names use the relation with ":" -> "_" (UD relation names contain no "_").
SYNTAX_HEATMAPS = {
    r.replace(":", "_"): r
    for r in SYNTAX.get(
        "key_relations", ["det", "obj", "nmod:poss", "aux:pass", "nsubj", "amod", "mark", "ccomp"]
    )
}
SYNTAX_SELECTION = SYNTAX.get("selection", {"corpus": "gum", "splits": ["train", "dev"]})
SYNTAX_EVALUATION = [
    e
    for e in SYNTAX.get(
        "evaluation",
        [{"corpus": "gum", "splits": ["test"]}, {"corpus": "ewt", "splits": ["test"]}],
    )
    if e["corpus"] in DEPENDENCY_CORPORA
]
SYNTAX_HONEST = SYNTAX_SELECTION["corpus"] in DEPENDENCY_CORPORA and bool(SYNTAX_EVALUATION)


rule syntax_scores:
    input:
        stores=stores,
        corpus=corpus_file,
        code=lib("analyses/syntax.py"),
    output:
        scores=f"{SYNTAX_DIR}/scores.npz",
        heads=report(
            f"{SYNTAX_DIR}/heads.csv",
            caption="../report/syntax_heads.rst",
            category=SYNTAX_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "every head (long table)"},
        ),
        offsets=report(
            f"{SYNTAX_DIR}/offsets.csv",
            caption="../report/syntax_offsets.rst",
            category=SYNTAX_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "offset baselines"},
        ),
        coverage=report(
            f"{SYNTAX_DIR}/coverage.csv",
            caption="../report/syntax_coverage.rst",
            category=SYNTAX_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "coverage"},
        ),
    params:
        how=SYNTAX.get("word_from", "mean"),
    wildcard_constraints:
        corpus=one_of(DEPENDENCY_CORPORA),
    resources:
        mem_mb=2000,
    log:
        "logs/syntax/{model}/{corpus}/scores.log",
    conda:
        ENV
    script:
        "../scripts/syntax_scores.py"


rule syntax_table1:
    input:
        scores=f"{SYNTAX_DIR}/scores.npz",
        code=lib("analyses/syntax.py"),
    output:
        report(
            f"{SYNTAX_DIR}/table1.csv",
            caption="../report/syntax_table1.rst",
            category=SYNTAX_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "Table 1"},
        ),
    params:
        top=SYNTAX_TOP,
        min_count=SYNTAX_MIN_COUNT,
    wildcard_constraints:
        corpus=one_of(DEPENDENCY_CORPORA),
    log:
        "logs/syntax/{model}/{corpus}/table1.log",
    conda:
        ENV
    script:
        "../scripts/syntax_table1.py"


rule syntax_heatmaps:
    input:
        scores=f"{SYNTAX_DIR}/scores.npz",
        code=[lib("analyses/syntax.py"), lib("plots/syntax.py")],
    output:
        **{
            slug: report(
                f"{SYNTAX_DIR}/heatmap_{slug}.svg",
                caption="../report/syntax_heatmap.rst",
                category=SYNTAX_CATEGORY,
                subcategory="{model}",
                labels={"model": "{model}", "corpus": "{corpus}", "result": f"heat map {relation}"},
            )
            for slug, relation in SYNTAX_HEATMAPS.items()
        },
    params:
        relations=SYNTAX_HEATMAPS,
    wildcard_constraints:
        corpus=one_of(DEPENDENCY_CORPORA),
    log:
        "logs/syntax/{model}/{corpus}/heatmaps.log",
    conda:
        ENV
    script:
        "../scripts/syntax_heatmaps.py"


rule syntax_lines:
    input:
        scores=f"{SYNTAX_DIR}/scores.npz",
        stores=stores,
        corpus=corpus_file,
        code=[lib("analyses/syntax.py"), lib("plots/syntax.py")],
    output:
        examples=f"{SYNTAX_DIR}/lines.csv",
        figure=report(
            f"{SYNTAX_DIR}/lines.svg",
            caption="../report/syntax_lines.rst",
            category=SYNTAX_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "Fig. 5 example heads"},
        ),
    params:
        how=SYNTAX.get("word_from", "mean"),
    wildcard_constraints:
        corpus=one_of(DEPENDENCY_CORPORA),
    log:
        "logs/syntax/{model}/{corpus}/lines.log",
    conda:
        ENV
    script:
        "../scripts/syntax_lines.py"


rule syntax_honest:
    input:
        select=f"{RESULTS}/{{model}}/{SYNTAX_SELECTION['corpus']}/syntax/scores.npz",
        evaluate=lambda wc: [
            f"{RESULTS}/{wc.model}/{e['corpus']}/syntax/scores.npz" for e in SYNTAX_EVALUATION
        ],
        code=[lib("analyses/syntax.py"), lib("plots/syntax.py")],
    output:
        table=report(
            f"{SYNTAX_HONEST_DIR}/honest.csv",
            caption="../report/syntax_honest.rst",
            category=SYNTAX_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "selection vs test", "result": "honest regime"},
        ),
        figure=report(
            f"{SYNTAX_HONEST_DIR}/honest.svg",
            caption="../report/syntax_honest.rst",
            category=SYNTAX_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "selection vs test", "result": "both regimes"},
        ),
    params:
        selection=SYNTAX_SELECTION,
        evaluation=SYNTAX_EVALUATION,
        bootstrap=SYNTAX.get("bootstrap", {"n": 1000, "seed": 0}),
        top=SYNTAX_TOP,
        min_count=SYNTAX_MIN_COUNT,
    log:
        "logs/syntax/{model}/honest.log",
    conda:
        ENV
    script:
        "../scripts/syntax_honest.py"


FINAL_TARGETS.append(
    lambda model: [
        f"{RESULTS}/{model}/{corpus}/syntax/{name}"
        for corpus in DEPENDENCY_CORPORA
        for name in ["table1.csv", "heads.csv", "offsets.csv", "coverage.csv", "lines.svg"]
        + [f"heatmap_{slug}.svg" for slug in SYNTAX_HEATMAPS]
    ]
    + (
        [f"{RESULTS}/{model}/syntax/honest.{ext}" for ext in ("csv", "svg")]
        if SYNTAX_HONEST
        else []
    )
)
