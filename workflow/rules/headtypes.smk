# Distance features and head types (Guan et al. 2020) on the surface corpus. headtypes_features
# streams the store once and keeps every input's 21-d distance features (per_input.npz);
# clustering, stability and figures read that small file. Options: `headtypes:` in the schema.
# Under each weighting: headtypes/ (attention weights) and headtypes-norm/ (Kobayashi's norm
# weighting); the ablation uses the types of the attention weights.
HEADTYPES = config["headtypes"]
HEADTYPES_CLUSTER = {key: HEADTYPES[key] for key in ("k", "method", "n_init", "seed")}
# t-SNE (Fig. 2), features per type (Fig. 1), types per layer (Fig. 3), type of every head.
HEADTYPES_FIGURES = ["tsne", "boxplot", "layers", "grid"]
HEAD_TYPES = Results(
    "headtypes",
    f"{RESULTS}/{{model}}/{{corpus}}/headtypes{{weighting}}",
    category="Head types (Guan et al.)",
    corpus=[PLAN.surface_corpus] if PLAN.surface_corpus is not None else [],
    figure=HEADTYPES_FIGURES,
    # changes from each model it is compared with, under the weightings both have
    base=lambda model: [before for before, after in PLAN.headtype_pairs if after == model],
    where=lambda w: "base" not in w or w["weighting"] in PLAN.suffixes(w["base"]),
    constrain={"base": list(MODELS)},
)


use rule store_analysis as headtypes_features with:
    input:
        stores=stores,
        code=analysis_code("headtypes"),
    output:
        result=f"{HEAD_TYPES.folder}/per_input.npz",
    log:
        logs("headtypes{weighting}/{model}/{corpus}/features"),
    benchmark:
        benchmarks("headtypes{weighting}/{model}/{corpus}/features")
    priority: chain_priority
    params:
        module="headtypes",
        analysis="distance_features",
        options={k: HEADTYPES[k] for k in ("n_windows", "sample_examples", "seed")},


rule headtypes_cluster:
    input:
        rules.headtypes_features.output.result,
        code=code("headtypes_cluster.py"),
    output:
        features=HEAD_TYPES.heads(
            "features.csv", "headtypes_features", "features and type per head"
        ),
        shares=HEAD_TYPES.table(
            "type_shares.csv",
            "headtypes_shares",
            "type shares vs paper",
            as_table=True,
        ),
    log:
        logs("headtypes{weighting}/{model}/{corpus}/cluster"),
    benchmark:
        benchmarks("headtypes{weighting}/{model}/{corpus}/cluster")
    priority: chain_priority
    conda:
        ENV
    params:
        cluster=HEADTYPES_CLUSTER,
    script:
        "../scripts/headtypes_cluster.py"


rule headtypes_stability:
    input:
        features=rules.headtypes_features.output.result,
        types=rules.headtypes_cluster.output.features,
        code=code("headtypes_stability.py"),
    output:
        table=HEAD_TYPES.table("stability.csv", "headtypes_stability", "stability vs paper"),
        heads=HEAD_TYPES.heads("stability_heads.csv", final=False, in_report=False),
    log:
        logs("headtypes{weighting}/{model}/{corpus}/stability"),
    benchmark:
        benchmarks("headtypes{weighting}/{model}/{corpus}/stability")
    conda:
        ENV
    params:
        **pick(HEADTYPES, "n_fits", "fraction"),
        cluster=HEADTYPES_CLUSTER,
    script:
        "../scripts/headtypes_stability.py"


rule headtypes_claims:
    input:
        types=rules.headtypes_cluster.output.features,
        stability=rules.headtypes_stability.output.table,
        code=code("headtypes_claims.py"),
    output:
        HEAD_TYPES.claims("paper_claims.csv", "headtypes_claims", "claims vs paper"),
    log:
        logs("headtypes{weighting}/{model}/{corpus}/claims"),
    benchmark:
        benchmarks("headtypes{weighting}/{model}/{corpus}/claims")
    conda:
        ENV
    script:
        "../scripts/headtypes_claims.py"


rule headtypes_figure:
    input:
        features=rules.headtypes_features.output.result,
        types=rules.headtypes_cluster.output.features,
        stability=grid_stability,
        code=code("headtypes_figure.py"),
    output:
        figure=HEAD_TYPES.figure("{figure}.svg", "headtypes_figure", "{figure}"),
    log:
        logs("headtypes{weighting}/{model}/{corpus}/{figure}"),
    benchmark:
        benchmarks("headtypes{weighting}/{model}/{corpus}/{figure}")
    conda:
        ENV
    params:
        **pick(HEADTYPES, "seed", "perplexity"),
    script:
        "../scripts/headtypes_figure.py"


rule headtypes_compare:
    input:
        # the same tables of the model {base}
        before=rules.headtypes_cluster.output.features.replace("{model}", "{base}"),
        after=rules.headtypes_cluster.output.features,
        before_features=rules.headtypes_features.output.result.replace("{model}", "{base}"),
        after_features=rules.headtypes_features.output.result,
        code=code("headtypes_compare.py"),
    output:
        heads=HEAD_TYPES.heads(
            "changes_from_{base}.csv",
            "headtypes_compare",
            "type changes from {base}",
            table="changes",
        ),
        layers=HEAD_TYPES.path("changes_from_{base}_by_layer.csv"),
        figure=HEAD_TYPES.figure(
            "changes_from_{base}.svg",
            "headtypes_compare",
            "type changes from {base} (figure)",
        ),
    log:
        logs("headtypes{weighting}/{model}/{corpus}/changes_from_{base}"),
    benchmark:
        benchmarks("headtypes{weighting}/{model}/{corpus}/changes_from_{base}")
    conda:
        ENV
    script:
        "../scripts/headtypes_compare.py"
