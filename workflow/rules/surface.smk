# Surface patterns (Clark et al. §3): one job per analysis, each streams the store once.
# Under each weighting: surface/ (attention weights) and surface-norm/ (Kobayashi's norm weighting).
SURFACE_DIR = f"{RESULTS}/{{model}}/{{corpus}}/surface{{weighting}}"
targets(
    "surface",
    category="Surface patterns (Clark §3)",
    corpus=[PLAN.surface_corpus] if PLAN.surface_corpus is not None else [],
    analysis=list(config["surface"]["options"]),
)


use rule store_analysis as surface_table with:
    input:
        stores=stores,
        code=analysis_code("surface"),
    output:
        table=result(
            "surface",
            f"{SURFACE_DIR}/{{analysis}}.csv",
            caption="surface_table",
            labels=labelled(model="{model}", analysis="{analysis}", kind="table"),
            heads="headatlas.analyses.surface:{analysis}",
        ),
        figure=figure(
            "surface",
            f"{SURFACE_DIR}/{{analysis}}.svg",
            caption="surface_table",
            labels=labelled(model="{model}", analysis="{analysis}", kind="figure"),
        ),
    log:
        logs("surface{weighting}/{model}/{corpus}/{analysis}"),
    benchmark:
        benchmarks("surface{weighting}/{model}/{corpus}/{analysis}")
    wildcard_constraints:
        analysis=one_of(config["surface"]["options"]),
    params:
        module="surface",
        analysis=lambda wc: wc.analysis,
        max_examples=lambda wc: config["surface"]["options"][wc.analysis][
            "max_examples"
        ],


rule surface_claims:
    input:
        unpack(surface_tables),
        code=code("paper_claims.py"),
    output:
        claims(
            "surface",
            f"{SURFACE_DIR}/paper_claims.csv",
            caption="paper_claims",
            labels=labelled(model="{model}", analysis="paper vs ours", kind="table"),
        ),
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
        stores=stores,
        code=code("attention_lines.py"),
    output:
        heads=result("surface", f"{SURFACE_DIR}/example_heads.csv", in_report=False),
        figure=figure(
            "surface",
            f"{SURFACE_DIR}/attention_lines.svg",
            caption="attention_lines",
            in_report=False,  # 1.9 MB each at 128 tokens: the atlas has line views
            labels=labelled(
                model="{model}", analysis="example heads (Fig. 1)", kind="figure"
            ),
        ),
    log:
        logs("surface{weighting}/{model}/{corpus}/attention_lines"),
    benchmark:
        benchmarks("surface{weighting}/{model}/{corpus}/attention_lines")
    conda:
        ENV
    params:
        example=config["surface"]["example"],
        weighting=weighting,
    script:
        "../scripts/attention_lines.py"
