# Kovaleva et al.'s attention patterns (2019, §3): every (head, input) map classified as vertical,
# diagonal, vertical+diagonal, block or heterogeneous by a decision list on map features.
# patterns_heads streams one store (per model and corpus of `patterns.corpora`); patterns_summary
# collects a model's corpora (Kovaleva's bar chart, per layer, the claims, the cross-tabulation
# with Guan's head types); patterns_evaluate scores the classifier on the hand-labelled maps.
# Options: `patterns:` in the schema.
PATTERNS = config["patterns"]
PATTERNS_DIR = f"{RESULTS}/{{model}}/{{corpus}}/patterns"
targets(
    "patterns",
    category="Attention patterns (Kovaleva et al.)",
    corpus=PLAN.patterns_corpora,
)


rule patterns_heads:
    input:
        stores=stores,
        code=code("patterns_heads.py"),
    output:
        heads=result(
            "patterns",
            f"{PATTERNS_DIR}/heads.csv",
            caption="../report/patterns_heads.rst",
            labels={
                "model": "{model}",
                "corpus": "{corpus}",
                "result": "pattern shares per head",
            },
        ),
        figure=figure(
            "patterns",
            f"{PATTERNS_DIR}/heads.svg",
            caption="../report/patterns_heads.rst",
            labels={
                "model": "{model}",
                "corpus": "{corpus}",
                "result": "pattern shares per head (figure)",
            },
        ),
    log:
        f"{LOGS}/patterns/{{model}}/{{corpus}}/heads.log",
    benchmark:
        f"{LOGS}/benchmarks/patterns/{{model}}/{{corpus}}/heads.tsv"
    wildcard_constraints:
        corpus=one_of(PLAN.patterns_corpora),
    priority: chain_priority
    conda:
        ENV
    resources:
        mem_mb=1000,
    params:
        thresholds=PATTERNS["thresholds"],
        max_examples=PATTERNS["max_examples"],
    script:
        "../scripts/patterns_heads.py"


rule patterns_summary:
    input:
        heads=lambda wc: [
            rules.patterns_heads.output.heads.format(model=wc.model, corpus=c)
            for c in patterns_corpora(wc.model)
        ],
        types=lambda wc: (
            [
                rules.headtypes_cluster.output.features.format(
                    model=wc.model, corpus=PLAN.surface_corpus, weighting=""
                )
            ]
            if PLAN.surface_corpus in patterns_corpora(wc.model)
            else []
        ),
        code=code("patterns_summary.py"),
    output:
        shares=result(
            "patterns",
            f"{RESULTS}/{{model}}/patterns/shares.csv",
            as_table=True,
            caption="../report/patterns_shares.rst",
            labels={"model": "{model}", "result": "pattern shares per corpus (table)"},
            final=patterns_corpora,  # a model with none has no summary
        ),
        figure=figure(
            "patterns",
            f"{RESULTS}/{{model}}/patterns/shares.svg",
            caption="../report/patterns_shares.rst",
            labels={
                "model": "{model}",
                "result": "pattern shares per corpus (Fig. 2)",
            },
            final=patterns_corpora,
        ),
        layers=result(
            "patterns",
            f"{RESULTS}/{{model}}/patterns/layers.csv",
            caption="../report/patterns_layers.rst",
            labels={"model": "{model}", "result": "pattern shares per layer (table)"},
            final=patterns_corpora,
        ),
        layers_figure=figure(
            "patterns",
            f"{RESULTS}/{{model}}/patterns/layers.svg",
            caption="../report/patterns_layers.rst",
            labels={"model": "{model}", "result": "pattern shares per layer"},
            final=patterns_corpora,
        ),
        types=result(
            "patterns",
            f"{RESULTS}/{{model}}/patterns/head_types.csv",
            caption="../report/patterns_types.rst",
            labels={"model": "{model}", "result": "patterns by Guan's head type"},
            final=patterns_corpora,
        ),
        claims=result(
            "patterns",
            f"{RESULTS}/{{model}}/patterns/paper_claims.csv",
            caption="../report/patterns_claims.rst",
            labels={"model": "{model}", "result": "paper vs ours"},
            final=patterns_corpora,
        ),
    log:
        f"{LOGS}/patterns/{{model}}/summary.log",
    benchmark:
        f"{LOGS}/benchmarks/patterns/{{model}}/summary.tsv"
    conda:
        ENV
    params:
        corpora=lambda wc: patterns_corpora(wc.model),
        surface=PLAN.surface_corpus,
        tolerance=PATTERNS["tolerance"],
    script:
        "../scripts/patterns_summary.py"


LABELS = PLAN.patterns_labels or {}
EVALUATION_DIR = f"{RESULTS}/patterns"


rule patterns_evaluate:
    input:
        labels=LABELS.get("file", []),
        maps=LABELS.get("maps", []),
        code=code("patterns_evaluate.py"),
    output:
        table=result(
            "patterns",
            f"{EVALUATION_DIR}/evaluation.csv",
            caption="../report/patterns_evaluation.rst",
            labels={"result": "classifier precision / recall (hand labels)"},
            subcategory="classifier",
            final=bool(LABELS),
        ),
        agreement=result(
            "patterns",
            f"{EVALUATION_DIR}/agreement.csv",
            caption="../report/patterns_evaluation.rst",
            labels={"result": "classifier accuracy and Cohen's kappa (hand labels)"},
            subcategory="classifier",
            final=bool(LABELS),
        ),
        confusion=result(
            "patterns",
            f"{EVALUATION_DIR}/confusion.csv",
            caption="../report/patterns_evaluation.rst",
            labels={"result": "classifier confusion matrix"},
            subcategory="classifier",
            final=bool(LABELS),
        ),
        thresholds=result(
            "patterns",
            f"{EVALUATION_DIR}/thresholds.csv",
            caption="../report/patterns_evaluation.rst",
            labels={"result": "thresholds: config vs tuned"},
            subcategory="classifier",
            final=bool(LABELS),
        ),
        errors=figure(
            "patterns",
            f"{EVALUATION_DIR}/errors.png",
            caption="../report/patterns_errors.rst",
            labels={"result": "held-out maps the classifier gets wrong"},
            subcategory="classifier",
            final=bool(LABELS),
        ),
    log:
        f"{LOGS}/patterns/evaluate.log",
    benchmark:
        f"{LOGS}/benchmarks/patterns/evaluate.tsv"
    conda:
        ENV
    params:
        thresholds=PATTERNS["thresholds"],
    script:
        "../scripts/patterns_evaluate.py"
