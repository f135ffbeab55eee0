# Distance features and head types (Guan et al. 2020). One job per (model, corpus) streams the store
# once and keeps every input's 21-d distance features (per_input.npz); clustering, stability and
# figures read that small file. Options (all optional) live under `headtypes:` in config.yaml:
#   k: 4, method: kmeans|gmm, n_init: 10, seed: 0     clustering (types named when k = 4)
#   n_windows: 16                                     distance windows of width L / n_windows
#   n_fits: 10, fraction: 0.5                         stability: refits on random parts
#   perplexity: null                                  t-SNE; null = min(30, (heads - 1) / 3)
#   compare: [[minilm, minilm_upos]]                  pairs (before, after): heads that changed type

HEADTYPES = config.get("headtypes", {})
HEADTYPES_DIR = f"{RESULTS}/{{model}}/{{corpus}}/headtypes"
HEADTYPES_CATEGORY = "Head types (Guan et al.)"
HEADTYPES_CLUSTER = {
    "k": HEADTYPES.get("k", 4),
    "method": HEADTYPES.get("method", "kmeans"),
    "n_init": HEADTYPES.get("n_init", 10),
    "seed": HEADTYPES.get("seed", 0),
}
# Pairs naming a model that is not in the config are left out (no targets, no error).
HEADTYPES_PAIRS = [
    tuple(pair) for pair in HEADTYPES.get("compare", []) if all(m in MODELS for m in pair)
]
# t-SNE (Fig. 2), features per type (Fig. 1), types per layer (Fig. 3), type of every head.
HEADTYPES_FIGURES = ["tsne", "boxplot", "layers", "grid"]


rule headtypes_features:
    input:
        stores=stores,
        code=lib("analyses/headtypes.py"),
    output:
        f"{HEADTYPES_DIR}/per_input.npz",
    params:
        n_windows=HEADTYPES.get("n_windows", 16),
    resources:
        mem_mb=1000,
    benchmark:
        "logs/benchmarks/headtypes/{model}/{corpus}/features.tsv"
    log:
        "logs/headtypes/{model}/{corpus}/features.log",
    conda:
        ENV
    script:
        "../scripts/headtypes_features.py"


rule headtypes_cluster:
    input:
        f"{HEADTYPES_DIR}/per_input.npz",
        code=lib("analyses/headtypes.py"),
    output:
        features=report(
            f"{HEADTYPES_DIR}/features.csv",
            caption="../report/headtypes_features.rst",
            category=HEADTYPES_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "features and type per head"},
        ),
        shares=report(
            f"{HEADTYPES_DIR}/type_shares.csv",
            caption="../report/headtypes_shares.rst",
            category=HEADTYPES_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "type shares vs paper"},
        ),
    params:
        cluster=HEADTYPES_CLUSTER,
    benchmark:
        "logs/benchmarks/headtypes/{model}/{corpus}/cluster.tsv"
    log:
        "logs/headtypes/{model}/{corpus}/cluster.log",
    conda:
        ENV
    script:
        "../scripts/headtypes_cluster.py"


rule headtypes_stability:
    input:
        features=f"{HEADTYPES_DIR}/per_input.npz",
        types=f"{HEADTYPES_DIR}/features.csv",
        code=lib("analyses/headtypes.py"),
    output:
        table=report(
            f"{HEADTYPES_DIR}/stability.csv",
            caption="../report/headtypes_stability.rst",
            category=HEADTYPES_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "stability vs paper"},
        ),
        heads=f"{HEADTYPES_DIR}/stability_heads.csv",
    params:
        cluster=HEADTYPES_CLUSTER,
        n_fits=HEADTYPES.get("n_fits", 10),
        fraction=HEADTYPES.get("fraction", 0.5),
    benchmark:
        "logs/benchmarks/headtypes/{model}/{corpus}/stability.tsv"
    log:
        "logs/headtypes/{model}/{corpus}/stability.log",
    conda:
        ENV
    script:
        "../scripts/headtypes_stability.py"


rule headtypes_figure:
    input:
        features=f"{HEADTYPES_DIR}/per_input.npz",
        types=f"{HEADTYPES_DIR}/features.csv",
        stability=lambda wc: (
            [f"{RESULTS}/{wc.model}/{wc.corpus}/headtypes/stability_heads.csv"]
            if wc.figure == "grid"
            else []
        ),
        code=lib("plots/headtypes.py"),
    output:
        report(
            f"{HEADTYPES_DIR}/{{figure}}.svg",
            caption="../report/headtypes_figure.rst",
            category=HEADTYPES_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "{figure}"},
        ),
    params:
        seed=HEADTYPES.get("seed", 0),
        perplexity=HEADTYPES.get("perplexity"),
    wildcard_constraints:
        figure=one_of(HEADTYPES_FIGURES),
    benchmark:
        "logs/benchmarks/headtypes/{model}/{corpus}/{figure}.tsv"
    log:
        "logs/headtypes/{model}/{corpus}/{figure}.log",
    conda:
        ENV
    script:
        "../scripts/headtypes_figure.py"


rule headtypes_compare:
    input:
        before=f"{RESULTS}/{{base}}/{{corpus}}/headtypes/features.csv",
        after=f"{HEADTYPES_DIR}/features.csv",
        before_features=f"{RESULTS}/{{base}}/{{corpus}}/headtypes/per_input.npz",
        after_features=f"{HEADTYPES_DIR}/per_input.npz",
        code=lib("plots/headtypes.py"),
    output:
        heads=report(
            f"{HEADTYPES_DIR}/changes_from_{{base}}.csv",
            caption="../report/headtypes_compare.rst",
            category=HEADTYPES_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "type changes from {base}"},
        ),
        layers=f"{HEADTYPES_DIR}/changes_from_{{base}}_by_layer.csv",
        figure=report(
            f"{HEADTYPES_DIR}/changes_from_{{base}}.svg",
            caption="../report/headtypes_compare.rst",
            category=HEADTYPES_CATEGORY,
            subcategory="{model}",
            labels={
                "model": "{model}",
                "corpus": "{corpus}",
                "result": "type changes from {base} (figure)",
            },
        ),
    wildcard_constraints:
        base=one_of(MODELS),
    log:
        "logs/headtypes/{model}/{corpus}/changes_from_{base}.log",
    conda:
        ENV
    script:
        "../scripts/headtypes_compare.py"


FINAL_TARGETS.append(
    lambda model: (
        [
            f"{RESULTS}/{model}/{SURFACE_CORPUS}/headtypes/{name}"
            for name in ["features.csv", "type_shares.csv", "stability.csv"]
            + [f"{figure}.svg" for figure in HEADTYPES_FIGURES]
        ]
        + [
            f"{RESULTS}/{model}/{SURFACE_CORPUS}/headtypes/changes_from_{base}.{ext}"
            for base, after in HEADTYPES_PAIRS
            if after == model
            for ext in ("csv", "svg")
        ]
        if SURFACE_CORPUS in CORPORA
        else []
    )
)
