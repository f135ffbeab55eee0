# Surface patterns (Clark et al. §3): one job per analysis, each streams the store once.


rule surface_table:
    input:
        stores=stores,
        code=lib("analyses/surface.py"),
    output:
        table=report(
            f"{RESULTS}/{{model}}/{{corpus}}/surface/{{analysis}}.csv",
            caption="../report/surface_table.rst",
            category="Surface patterns (Clark §3)",
            subcategory="{model}",
            labels={"model": "{model}", "analysis": "{analysis}", "kind": "table"},
        ),
        figure=report(
            f"{RESULTS}/{{model}}/{{corpus}}/surface/{{analysis}}.svg",
            caption="../report/surface_table.rst",
            category="Surface patterns (Clark §3)",
            subcategory="{model}",
            labels={"model": "{model}", "analysis": "{analysis}", "kind": "figure"},
        ),
    params:
        options=lambda wc: config.get("surface", {}).get("options", {}).get(wc.analysis, {}),
    wildcard_constraints:
        analysis="|".join(SURFACE_TABLES),
    log:
        "logs/surface/{model}/{corpus}/{analysis}.log",
    conda:
        ENV
    script:
        "../scripts/surface_table.py"


rule paper_claims:
    input:
        unpack(surface_table_files),
    output:
        report(
            f"{RESULTS}/{{model}}/{{corpus}}/surface/paper_claims.csv",
            caption="../report/paper_claims.rst",
            category="Surface patterns (Clark §3)",
            subcategory="{model}",
            labels={"model": "{model}", "analysis": "paper vs ours", "kind": "table"},
        ),
    log:
        "logs/surface/{model}/{corpus}/paper_claims.log",
    conda:
        ENV
    script:
        "../scripts/paper_claims.py"


rule attention_lines:
    input:
        unpack(surface_table_files),
        stores=stores,
    output:
        heads=f"{RESULTS}/{{model}}/{{corpus}}/surface/example_heads.csv",
        figure=report(
            f"{RESULTS}/{{model}}/{{corpus}}/surface/attention_lines.svg",
            caption="../report/attention_lines.rst",
            category="Surface patterns (Clark §3)",
            subcategory="{model}",
            labels={"model": "{model}", "analysis": "example heads (Fig. 1)", "kind": "figure"},
        ),
    params:
        example=config.get("surface", {}).get("example"),
    log:
        "logs/surface/{model}/{corpus}/attention_lines.log",
    conda:
        ENV
    script:
        "../scripts/attention_lines.py"
