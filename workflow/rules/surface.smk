# Surface patterns (Clark et al. §3): one job per analysis, each streams the store once.
# Under each weighting: surface/ (attention weights) and surface-norm/ (Kobayashi's norm weighting).
targets(
    "surface",
    category="Surface patterns (Clark §3)",
    corpus=[PLAN.surface_corpus] if PLAN.surface_corpus is not None else [],
    analysis=SURFACE_TABLES,
)


rule surface_table:
    input:
        stores=stores,
        code=code("surface_table.py"),
    output:
        table=result(
            "surface",
            SURFACE_TABLE,
            caption="../report/surface_table.rst",
            labels=labelled(model="{model}", analysis="{analysis}", kind="table"),
        ),
        figure=figure(
            "surface",
            f"{SURFACE_DIR}/{{analysis}}.svg",
            caption="../report/surface_table.rst",
            labels=labelled(model="{model}", analysis="{analysis}", kind="figure"),
        ),
    log:
        f"{LOGS}/surface{{weighting}}/{{model}}/{{corpus}}/{{analysis}}.log",
    benchmark:
        f"{LOGS}/benchmarks/surface{{weighting}}/{{model}}/{{corpus}}/{{analysis}}.tsv"
    wildcard_constraints:
        analysis=one_of(SURFACE_TABLES),
    conda:
        ENV
    params:
        options=lambda wc: config["surface"]["options"][wc.analysis],
        weighting=weighting,
    script:
        "../scripts/surface_table.py"


rule surface_claims:
    input:
        unpack(surface_tables),
        code=code("paper_claims.py"),
    output:
        result(
            "surface",
            f"{SURFACE_DIR}/paper_claims.csv",
            caption="../report/paper_claims.rst",
            labels=labelled(model="{model}", analysis="paper vs ours", kind="table"),
        ),
    log:
        f"{LOGS}/surface{{weighting}}/{{model}}/{{corpus}}/paper_claims.log",
    benchmark:
        f"{LOGS}/benchmarks/surface{{weighting}}/{{model}}/{{corpus}}/paper_claims.tsv"
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
            caption="../report/attention_lines.rst",
            in_report=False,  # 1.9 MB each at 128 tokens: the atlas has line views
            labels=labelled(
                model="{model}", analysis="example heads (Fig. 1)", kind="figure"
            ),
        ),
    log:
        f"{LOGS}/surface{{weighting}}/{{model}}/{{corpus}}/attention_lines.log",
    benchmark:
        f"{LOGS}/benchmarks/surface{{weighting}}/{{model}}/{{corpus}}/attention_lines.tsv"
    conda:
        ENV
    params:
        example=config["surface"]["example"],
        weighting=weighting,
    script:
        "../scripts/attention_lines.py"
