# Kovaleva et al.'s attention patterns (2019, §3): every (head, input) map classified as vertical,
# diagonal, vertical+diagonal, block or heterogeneous by a random forest learned from the
# labelled maps' tune half (`patterns.classifier: forest`) or a decision list (`rules`).
# patterns_heads streams one store (per model and corpus of `patterns.corpora`); patterns_summary
# collects a model's corpora (Kovaleva's bar chart, per layer, the claims, the cross-tabulation
# with Guan's head types); patterns_evaluate scores the classifier on the hand-labelled maps.
# Options: `patterns:` in the schema.
PATTERNS = config["patterns"]


HEAD_PATTERNS = Results(
    "patterns",
    f"{RESULTS}/{{model}}/{{corpus}}/patterns",
    category="Attention patterns (Kovaleva et al.)",
    corpus=PLAN.patterns_corpora,
)
# A model's corpora side by side (none for a model without them), and the classifier's check.
MODEL_PATTERNS = HEAD_PATTERNS.at(f"{RESULTS}/{{model}}/patterns", final=patterns_corpora)
CLASSIFIER = HEAD_PATTERNS.at(
    f"{RESULTS}/patterns", subcategory="classifier", final=bool(PLAN.patterns_labels)
)
LABELS = PLAN.patterns_labels  # None: the evaluation is off


use rule store_analysis as patterns_heads with:
    input:
        stores=stores,
        code=analysis_code("patterns"),
    output:
        heads=HEAD_PATTERNS.heads("heads.csv", "patterns_heads", "pattern shares per head"),
        figure=HEAD_PATTERNS.figure(
            "heads.svg", "patterns_heads", "pattern shares per head (figure)"
        ),
    log:
        logs("patterns/{model}/{corpus}/heads"),
    benchmark:
        benchmarks("patterns/{model}/{corpus}/heads")
    priority: chain_priority
    params:
        module="patterns",
        analysis="patterns",
        options={
            "thresholds": PATTERNS["thresholds"],
            "classifier": PATTERNS["classifier"],
            "labels": own_labels(config),
        },
        max_examples=PATTERNS["max_examples"],
        weighting="attention",


rule patterns_summary:
    input:
        unpack(pattern_tables),
        code=code("patterns_summary.py"),
    output:
        shares=MODEL_PATTERNS.table(
            "shares.csv",
            "patterns_shares",
            "pattern shares per corpus (table)",
            as_table=True,
        ),
        figure=MODEL_PATTERNS.figure(
            "shares.svg", "patterns_shares", "pattern shares per corpus (Fig. 2)"
        ),
        layers=MODEL_PATTERNS.table(
            "layers.csv", "patterns_layers", "pattern shares per layer (table)"
        ),
        layers_figure=MODEL_PATTERNS.figure(
            "layers.svg", "patterns_layers", "pattern shares per layer"
        ),
        types=MODEL_PATTERNS.table(
            "head_types.csv", "patterns_types", "patterns by Guan's head type"
        ),
        claims=MODEL_PATTERNS.claims("paper_claims.csv", "patterns_claims", "paper vs ours"),
    log:
        logs("patterns/{model}/summary"),
    benchmark:
        benchmarks("patterns/{model}/summary")
    conda:
        ENV
    params:
        corpora=lambda wc: patterns_corpora(wc.model),
        surface=PLAN.surface_corpus,
        tolerance=PATTERNS["tolerance"],
    script:
        "../scripts/patterns_summary.py"


rule patterns_evaluate:
    input:
        labels=LABELS.file if LABELS else [],
        maps=LABELS.maps if LABELS else [],
        code=code("patterns_evaluate.py"),
    output:
        **{
            name: (CLASSIFIER.figure if name == "errors" else CLASSIFIER.table)(
                file,
                "patterns_errors" if name == "errors" else "patterns_evaluation",
                {"result": label},
            )
            for name, (file, label) in {
                "table": (
                    "evaluation.csv",
                    "classifier precision / recall (hand labels)",
                ),
                "agreement": (
                    "agreement.csv",
                    "classifier accuracy and Cohen's kappa (hand labels)",
                ),
                "confusion": ("confusion.csv", "classifier confusion matrix"),
                "thresholds": ("thresholds.csv", "thresholds: config vs tuned"),
                "errors": ("errors.png", "held-out maps the classifier gets wrong"),
            }.items()
        },
    log:
        logs("patterns/evaluate"),
    benchmark:
        benchmarks("patterns/evaluate")
    conda:
        ENV
    params:
        thresholds=PATTERNS["thresholds"],
        classifier=PATTERNS["classifier"],
    script:
        "../scripts/patterns_evaluate.py"
