# Distance features and head types (Guan et al. 2020) on the surface corpus. headtypes_features
# streams the store once and keeps every input's 21-d distance features (per_input.npz);
# clustering, stability and figures read that small file. Options: `headtypes:` in the schema.
# Under each weighting: headtypes/ (attention weights) and headtypes-norm/ (Kobayashi's norm
# weighting); the ablation uses the types of the attention weights.
HEADTYPES = config["headtypes"]
HEADTYPES_DIR = f"{RESULTS}/{{model}}/{{corpus}}/headtypes{{weighting}}"
HEADTYPES_CLUSTER = {key: HEADTYPES[key] for key in ("k", "method", "n_init", "seed")}
# t-SNE (Fig. 2), features per type (Fig. 1), types per layer (Fig. 3), type of every head.
HEADTYPES_FIGURES = ["tsne", "boxplot", "layers", "grid"]
targets(
    "headtypes",
    category="Head types (Guan et al.)",
    corpus=[PLAN.surface_corpus] if PLAN.surface_corpus is not None else [],
    figure=HEADTYPES_FIGURES,
    # changes from each model it is compared with, under the weightings both have
    base=lambda model: [
        before for before, after in PLAN.headtype_pairs if after == model
    ],
    where=lambda w: "base" not in w or w["weighting"] in PLAN.suffixes(w["base"]),
)


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
        rules.headtypes_features.output[0],
        code=code("headtypes_cluster.py"),
    output:
        features=result(
            "headtypes",
            f"{HEADTYPES_DIR}/features.csv",
            caption="../report/headtypes_features.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="features and type per head",
            ),
        ),
        shares=result(
            "headtypes",
            f"{HEADTYPES_DIR}/type_shares.csv",
            caption="../report/headtypes_shares.rst",
            as_table=True,
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="type shares vs paper",
            ),
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
        features=rules.headtypes_features.output[0],
        types=rules.headtypes_cluster.output.features,
        code=code("headtypes_stability.py"),
    output:
        table=result(
            "headtypes",
            f"{HEADTYPES_DIR}/stability.csv",
            caption="../report/headtypes_stability.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="stability vs paper",
            ),
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
        types=rules.headtypes_cluster.output.features,
        stability=rules.headtypes_stability.output.table,
        code=code("headtypes_claims.py"),
    output:
        result(
            "headtypes",
            f"{HEADTYPES_DIR}/paper_claims.csv",
            caption="../report/headtypes_claims.rst",
            labels=labelled(
                model="{model}", corpus="{corpus}", result="claims vs paper"
            ),
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
        features=rules.headtypes_features.output[0],
        types=rules.headtypes_cluster.output.features,
        # Only the grid marks unstable heads: the other figures need not wait for stability.
        stability=lambda wc: (
            [rules.headtypes_stability.output.heads.format(**wc)]
            if wc.figure == "grid"
            else []
        ),
        code=code("headtypes_figure.py"),
    output:
        figure=figure(
            "headtypes",
            f"{HEADTYPES_DIR}/{{figure}}.svg",
            caption="../report/headtypes_figure.rst",
            labels=labelled(model="{model}", corpus="{corpus}", result="{figure}"),
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
        # the same tables of the model {base}
        before=rules.headtypes_cluster.output.features.replace("{model}", "{base}"),
        after=rules.headtypes_cluster.output.features,
        before_features=rules.headtypes_features.output[0].replace("{model}", "{base}"),
        after_features=rules.headtypes_features.output[0],
        code=code("headtypes_compare.py"),
    output:
        heads=result(
            "headtypes",
            f"{HEADTYPES_DIR}/changes_from_{{base}}.csv",
            caption="../report/headtypes_compare.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="type changes from {base}",
            ),
        ),
        layers=f"{HEADTYPES_DIR}/changes_from_{{base}}_by_layer.csv",
        figure=figure(
            "headtypes",
            f"{HEADTYPES_DIR}/changes_from_{{base}}.svg",
            caption="../report/headtypes_compare.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="type changes from {base} (figure)",
            ),
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
