# Attention weighted by value norms (Kobayashi et al. 2020) and attention rollout (Abnar & Zuidema
# 2020) on the surface corpus, for every model whose `weightings` include norm. Each streams the
# store (with its value norms) once. Options: `norms:` in the config schema.
NORMS = config["norms"]
targets(
    "norms",
    category="Value norms (Kobayashi) and rollout",
    corpus=lambda model: [PLAN.surface_corpus] if model in PLAN.norm_models else [],
)
NORM_MODELS = {"model": one_of(PLAN.norm_models)}


rule norm_shares:
    input:
        stores=stores,
        code=code("norm_shares.py"),
    output:
        shares=result(
            "norms",
            f"{RESULTS}/{{model}}/{{corpus}}/norms/shares.csv",
            caption="../report/norm_shares.rst",
            labels={
                "model": "{model}",
                "corpus": "{corpus}",
                "result": "shares per layer",
            },
        ),
        correlation=result(
            "norms",
            f"{RESULTS}/{{model}}/{{corpus}}/norms/correlation.csv",
            caption="../report/norm_shares.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "α vs ‖f(x)‖"},
        ),
        figure=figure(
            "norms",
            f"{RESULTS}/{{model}}/{{corpus}}/norms/norms.svg",
            caption="../report/norm_shares.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "figure"},
        ),
        claims=result(
            "norms",
            f"{RESULTS}/{{model}}/{{corpus}}/norms/paper_claims.csv",
            caption="../report/norm_claims.rst",
            labels={
                "model": "{model}",
                "corpus": "{corpus}",
                "result": "paper vs ours",
            },
        ),
    log:
        f"{LOGS}/norms/{{model}}/{{corpus}}/shares.log",
    benchmark:
        f"{LOGS}/benchmarks/norms/{{model}}/{{corpus}}/shares.tsv"
    wildcard_constraints:
        **NORM_MODELS,
    conda:
        ENV
    resources:
        mem_mb=1000,
    params:
        pairs_per_example=NORMS["pairs_per_example"],
        seed=NORMS["seed"],
    script:
        "../scripts/norm_shares.py"


rule rollout:
    input:
        stores=stores,
        code=code("rollout.py"),
    output:
        shares=result(
            "norms",
            f"{RESULTS}/{{model}}/{{corpus}}/rollout/shares.csv",
            caption="../report/rollout.rst",
            labels={
                "model": "{model}",
                "corpus": "{corpus}",
                "result": "rollout shares",
            },
        ),
        profile=result(
            "norms",
            f"{RESULTS}/{{model}}/{{corpus}}/rollout/relative_position.csv",
            caption="../report/rollout.rst",
            labels={
                "model": "{model}",
                "corpus": "{corpus}",
                "result": "rollout by offset",
            },
        ),
        figure=figure(
            "norms",
            f"{RESULTS}/{{model}}/{{corpus}}/rollout/rollout.svg",
            caption="../report/rollout.rst",
            labels={
                "model": "{model}",
                "corpus": "{corpus}",
                "result": "rollout figure",
            },
        ),
    log:
        f"{LOGS}/rollout/{{model}}/{{corpus}}.log",
    benchmark:
        f"{LOGS}/benchmarks/rollout/{{model}}/{{corpus}}.tsv"
    wildcard_constraints:
        **NORM_MODELS,
    conda:
        ENV
    params:
        max_offset=NORMS["max_offset"],
        residual=NORMS["residual"],
    script:
        "../scripts/rollout.py"
