# Attention weighted by value norms (Kobayashi et al. 2020) and attention rollout (Abnar & Zuidema
# 2020) on the surface corpus, for every model whose `weightings` include norm. Each streams the
# store (with its value norms) once. Options: `norms:` in the config schema.
NORMS = config["norms"]
NORM_SHARES = Results(
    "norms",
    f"{RESULTS}/{{model}}/{{corpus}}/norms",
    category="Value norms (Kobayashi) and rollout",
    corpus=lambda model: [PLAN.surface_corpus] if model in PLAN.norm_models else [],
    constrain={"model": PLAN.norm_models},
)
ROLLOUT = NORM_SHARES.at(f"{RESULTS}/{{model}}/{{corpus}}/rollout")


use rule store_analysis as norm_shares with:
    input:
        stores=stores,
        code=analysis_code("norms"),
    output:
        shares=NORM_SHARES.table("shares.csv", "norm_shares", "shares per layer"),
        correlation=NORM_SHARES.table("correlation.csv", "norm_shares", "α vs ‖f(x)‖"),
        figure=NORM_SHARES.figure("norms.svg", "norm_shares", "figure"),
        claims=NORM_SHARES.claims("paper_claims.csv", "norm_claims", "paper vs ours"),
    log:
        logs("norms/{model}/{corpus}/shares"),
    benchmark:
        benchmarks("norms/{model}/{corpus}/shares")
    params:
        module="norms",
        analysis="norm_shares",
        options={k: NORMS[k] for k in ("pairs_per_example", "seed", "sample_examples")},
        weighting="attention",  # it weighs α by the norms itself
        float_formats={"correlation": "%.4g", "claims": None},


use rule store_analysis as rollout with:
    input:
        stores=stores,
        code=analysis_code("rollout"),
    output:
        shares=ROLLOUT.table("shares.csv", "rollout", "rollout shares"),
        profile=ROLLOUT.table("relative_position.csv", "rollout", "rollout by offset"),
        figure=ROLLOUT.figure("rollout.svg", "rollout", "rollout figure"),
    log:
        logs("rollout/{model}/{corpus}"),
    benchmark:
        benchmarks("rollout/{model}/{corpus}")
    params:
        module="rollout",
        analysis="rollout",
        options={k: NORMS[k] for k in ("max_offset", "residual")},
        weighting="attention",
