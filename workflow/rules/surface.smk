# Surface patterns (Clark et al. §3): one job per analysis, each streams the store once.
# Under each weighting: surface/ (attention weights) and surface-norm/ (Kobayashi's norm weighting).
SURFACE = Results(
    "surface",
    f"{RESULTS}/{{model}}/{{corpus}}/surface{{weighting}}",
    # labels: model, analysis and what it is (kind)
    labels=lambda text, kind="table": labelled(model="{model}", analysis=text, kind=kind),
    category="Surface patterns (Clark §3)",
    corpus=[PLAN.surface_corpus] if PLAN.surface_corpus is not None else [],
    analysis=list(config["surface"]["options"]),
)


use rule store_analysis as surface_table with:
    input:
        stores=stores,
        code=analysis_code("surface"),
    output:
        table=SURFACE.heads("{analysis}.csv", "surface_table", "{analysis}"),
        figure=SURFACE.figure(
            "{analysis}.svg", "surface_table", SURFACE.labels("{analysis}", "figure")
        ),
    log:
        logs("surface{weighting}/{model}/{corpus}/{analysis}"),
    benchmark:
        benchmarks("surface{weighting}/{model}/{corpus}/{analysis}")
    params:
        module="surface",
        analysis=lambda wc: wc.analysis,
        max_examples=lambda wc: config["surface"]["options"][wc.analysis]["max_examples"],


rule surface_claims:
    input:
        unpack(surface_tables),
        code=code("paper_claims.py"),
    output:
        SURFACE.claims("paper_claims.csv", "paper_claims", "paper vs ours"),
    log:
        logs("surface{weighting}/{model}/{corpus}/paper_claims"),
    benchmark:
        benchmarks("surface{weighting}/{model}/{corpus}/paper_claims")
    conda:
        ENV
    script:
        "../scripts/paper_claims.py"


rule surface_lines:
    input:
        unpack(surface_tables),
        unpack(maps),
        code=code("attention_lines.py"),
    output:
        heads=SURFACE.table("example_heads.csv", in_report=False),
        figure=SURFACE.figure(
            "attention_lines.svg",
            "attention_lines",
            SURFACE.labels("example heads (Fig. 1)", "figure"),
            in_report=False,  # 1.9 MB each at 128 tokens: the atlas has line views
        ),
    log:
        logs("surface{weighting}/{model}/{corpus}/attention_lines"),
    benchmark:
        benchmarks("surface{weighting}/{model}/{corpus}/attention_lines")
    conda:
        ENV
    params:
        **MAPS_PARAMS,
        example=config["surface"]["example"],
        weighting=weighting,
    script:
        "../scripts/attention_lines.py"
