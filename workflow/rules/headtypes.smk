# Distance features and head types (Guan et al. 2020) on the surface corpus. headtypes_features
# streams the store once and keeps every input's 21-d distance features (per_input.npz);
# clustering, stability and figures read that small file. Options: `headtypes:` in the schema.
# Under each weighting: headtypes/ (attention weights) and headtypes-norm/ (Kobayashi's norm
# weighting); the ablation uses the types of the attention weights.
HEADTYPES = config["headtypes"]
HEADTYPES_DIR = f"{RESULTS}/{{model}}/{{corpus}}/headtypes{{weighting}}"
HEADTYPES_REPORT = {"category": "Head types (Guan et al.)", "subcategory": "{model}"}
HEADTYPES_CLUSTER = {key: HEADTYPES[key] for key in ("k", "method", "n_init", "seed")}
# t-SNE (Fig. 2), features per type (Fig. 1), types per layer (Fig. 3), type of every head.
HEADTYPES_FIGURES = ["tsne", "boxplot", "layers", "grid"]


rule headtypes_features:
    input:
        stores=stores,
        code=code("headtypes_features.py"),
    output:
        f"{HEADTYPES_DIR}/per_input.npz",
    log:
        f"{LOGS}/headtypes{{weighting}}/{{model}}/{{corpus}}/features.log",
    benchmark:
        f"{LOGS}/benchmarks/headtypes{{weighting}}/{{model}}/{{corpus}}/features.tsv"
    priority: chain_priority
    conda:
        ENV
    resources:
        mem_mb=1000,
    params:
        n_windows=HEADTYPES["n_windows"],
        weighting=weighting,
    script:
        "../scripts/headtypes_features.py"


rule headtypes_cluster:
    input:
        f"{HEADTYPES_DIR}/per_input.npz",
        code=code("headtypes_cluster.py"),
    output:
        features=report(
            f"{HEADTYPES_DIR}/features.csv",
            caption="../report/headtypes_features.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="features and type per head",
            ),
            **HEADTYPES_REPORT,
        ),
        shares=report(
            f"{HEADTYPES_DIR}/type_shares.csv",
            caption="../report/headtypes_shares.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="type shares vs paper",
            ),
            **HEADTYPES_REPORT,
        ),
    log:
        f"{LOGS}/headtypes{{weighting}}/{{model}}/{{corpus}}/cluster.log",
    benchmark:
        f"{LOGS}/benchmarks/headtypes{{weighting}}/{{model}}/{{corpus}}/cluster.tsv"
    priority: chain_priority
    conda:
        ENV
    params:
        cluster=HEADTYPES_CLUSTER,
    script:
        "../scripts/headtypes_cluster.py"


rule headtypes_stability:
    input:
        features=f"{HEADTYPES_DIR}/per_input.npz",
        types=f"{HEADTYPES_DIR}/features.csv",
        code=code("headtypes_stability.py"),
    output:
        table=report(
            f"{HEADTYPES_DIR}/stability.csv",
            caption="../report/headtypes_stability.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="stability vs paper",
            ),
            **HEADTYPES_REPORT,
        ),
        heads=f"{HEADTYPES_DIR}/stability_heads.csv",
    log:
        f"{LOGS}/headtypes{{weighting}}/{{model}}/{{corpus}}/stability.log",
    benchmark:
        f"{LOGS}/benchmarks/headtypes{{weighting}}/{{model}}/{{corpus}}/stability.tsv"
    conda:
        ENV
    params:
        cluster=HEADTYPES_CLUSTER,
        n_fits=HEADTYPES["n_fits"],
        fraction=HEADTYPES["fraction"],
    script:
        "../scripts/headtypes_stability.py"


rule headtypes_claims:
    input:
        types=f"{HEADTYPES_DIR}/features.csv",
        stability=f"{HEADTYPES_DIR}/stability.csv",
        code=code("headtypes_claims.py"),
    output:
        report(
            f"{HEADTYPES_DIR}/paper_claims.csv",
            caption="../report/headtypes_claims.rst",
            labels=labelled(
                model="{model}", corpus="{corpus}", result="claims vs paper"
            ),
            **HEADTYPES_REPORT,
        ),
    log:
        f"{LOGS}/headtypes{{weighting}}/{{model}}/{{corpus}}/claims.log",
    benchmark:
        f"{LOGS}/benchmarks/headtypes{{weighting}}/{{model}}/{{corpus}}/claims.tsv"
    conda:
        ENV
    script:
        "../scripts/headtypes_claims.py"


rule headtypes_figure:
    input:
        features=f"{HEADTYPES_DIR}/per_input.npz",
        types=f"{HEADTYPES_DIR}/features.csv",
        # Only the grid marks unstable heads: the other figures need not wait for stability.
        stability=lambda wc: (
            [
                f"{RESULTS}/{wc.model}/{wc.corpus}/headtypes{wc.weighting}/stability_heads.csv"
            ]
            if wc.figure == "grid"
            else []
        ),
        code=code("headtypes_figure.py"),
    output:
        report(
            f"{HEADTYPES_DIR}/{{figure}}.svg",
            caption="../report/headtypes_figure.rst",
            labels=labelled(model="{model}", corpus="{corpus}", result="{figure}"),
            **HEADTYPES_REPORT,
        ),
    log:
        f"{LOGS}/headtypes{{weighting}}/{{model}}/{{corpus}}/{{figure}}.log",
    benchmark:
        f"{LOGS}/benchmarks/headtypes{{weighting}}/{{model}}/{{corpus}}/{{figure}}.tsv"
    wildcard_constraints:
        figure=one_of(HEADTYPES_FIGURES),
    conda:
        ENV
    params:
        seed=HEADTYPES["seed"],
        perplexity=HEADTYPES["perplexity"],
    script:
        "../scripts/headtypes_figure.py"


rule headtypes_compare:
    input:
        before=f"{RESULTS}/{{base}}/{{corpus}}/headtypes{{weighting}}/features.csv",
        after=f"{HEADTYPES_DIR}/features.csv",
        before_features=f"{RESULTS}/{{base}}/{{corpus}}/headtypes{{weighting}}/per_input.npz",
        after_features=f"{HEADTYPES_DIR}/per_input.npz",
        code=code("headtypes_compare.py"),
    output:
        heads=report(
            f"{HEADTYPES_DIR}/changes_from_{{base}}.csv",
            caption="../report/headtypes_compare.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="type changes from {base}",
            ),
            **HEADTYPES_REPORT,
        ),
        layers=f"{HEADTYPES_DIR}/changes_from_{{base}}_by_layer.csv",
        figure=report(
            f"{HEADTYPES_DIR}/changes_from_{{base}}.svg",
            caption="../report/headtypes_compare.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="type changes from {base} (figure)",
            ),
            **HEADTYPES_REPORT,
        ),
    log:
        f"{LOGS}/headtypes{{weighting}}/{{model}}/{{corpus}}/changes_from_{{base}}.log",
    benchmark:
        f"{LOGS}/benchmarks/headtypes{{weighting}}/{{model}}/{{corpus}}/changes_from_{{base}}.tsv"
    wildcard_constraints:
        base=one_of(MODELS),
    conda:
        ENV
    script:
        "../scripts/headtypes_compare.py"


FINAL_TARGETS["headtypes"] = lambda model: [
    f"{RESULTS}/{model}/{PLAN.surface_corpus}/headtypes{suffix}/{name}"
    for suffix in PLAN.suffixes(model)
    for name in ["features.csv", "type_shares.csv", "stability.csv", "paper_claims.csv"]
    + [f"{figure}.svg" for figure in HEADTYPES_FIGURES]
    + [
        f"changes_from_{before}.{ext}"
        for before, after in PLAN.headtype_pairs
        if after == model and suffix in PLAN.suffixes(before)
        for ext in ("csv", "svg")
    ]
    if PLAN.surface_corpus is not None
]
