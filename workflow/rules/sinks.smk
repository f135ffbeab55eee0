# Attention sinks (Gu et al. 2025), on the surface corpus, under each weighting: which heads
# have a key that takes more than ε of the mean attention, and on which kind of token.
SINKS = Results(
    "sinks",
    f"{RESULTS}/{{model}}/{{corpus}}/sinks{{weighting}}",
    category="Attention sinks (Gu et al. 2025)",
    corpus=[PLAN.surface_corpus] if PLAN.surface_corpus is not None else [],
)


use rule store_analysis as sink_rate with:
    input:
        stores=stores,
        code=analysis_code("sinks"),
    output:
        heads=SINKS.heads("sink_rate.csv", "sink_rate", "per head"),
        layers=SINKS.table("layers.csv", "sink_rate", "per layer and role"),
        claims=SINKS.claims("paper_claims.csv", "sink_claims", "paper vs ours"),
        figure=SINKS.figure("sink_rate.svg", "sink_rate", "figure"),
    log:
        logs("sinks{weighting}/{model}/{corpus}"),
    benchmark:
        benchmarks("sinks{weighting}/{model}/{corpus}")
    params:
        module="sinks",
        analysis="sink_rate",
        options={"epsilon": config["sinks"]["epsilon"]},
