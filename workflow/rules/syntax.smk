# Dependency relations (Clark et al. §4.2, Table 1, Fig. 5) on every treebank with labelled trees.
# syntax_scores streams the store once and scores every head on every dependency (scores.npz);
# the tables and figures read that file. Options: `syntax:` in the config schema.
# Under each weighting: syntax/ (attention weights) and syntax-norm/ (Kobayashi's norm weighting).
SYNTAX = config["syntax"]
DEPENDENCIES = Results(
    "syntax",
    f"{RESULTS}/{{model}}/{{corpus}}/syntax{{weighting}}",
    category="Dependency syntax (Clark §4.2)",
    corpus=PLAN.labelled_treebanks,
)
# The honest regime: heads chosen on one corpus, scored on others.
HONEST = DEPENDENCIES.at(
    f"{RESULTS}/{{model}}/syntax{{weighting}}",
    lambda text: labelled(model="{model}", corpus="selection vs test", result=text),
)
SCORES = f"{DEPENDENCIES.folder}/scores.npz"


rule syntax_scores:
    input:
        stores=stores,
        corpus=corpus_file,
        code=code("syntax_scores.py"),
    output:
        scores=DEPENDENCIES.path("scores.npz"),
        heads=DEPENDENCIES.heads(
            "heads.csv",
            "syntax_heads",
            "every head (long table)",
            companions=["offsets.csv", "table1.csv"],
            in_report=False,  # 0.3 MB per table: a file only, for the report's 15 MB budget
        ),
        offsets=DEPENDENCIES.table("offsets.csv", "syntax_offsets", "offset baselines"),
        coverage=DEPENDENCIES.table("coverage.csv", "syntax_coverage", "coverage"),
    log:
        logs("syntax{weighting}/{model}/{corpus}/scores"),
    benchmark:
        benchmarks("syntax{weighting}/{model}/{corpus}/scores")
    conda:
        ENV
    resources:
        mem_mb=2000,
    params:
        module="syntax",
        analysis="dependency_heads",
        options={"how": SYNTAX["word_from"]},
        weighting=weighting,
    script:
        "../scripts/syntax_scores.py"


rule syntax_table1:
    input:
        scores=SCORES,
        code=code("syntax_table1.py"),
    output:
        table=DEPENDENCIES.table("table1.csv", "syntax_table1", "Table 1", as_table=True),
        claims=DEPENDENCIES.claims("paper_claims.csv", "syntax_claims", "Table 1 claims"),
    log:
        logs("syntax{weighting}/{model}/{corpus}/table1"),
    benchmark:
        benchmarks("syntax{weighting}/{model}/{corpus}/table1")
    conda:
        ENV
    params:
        **pick(SYNTAX, "top_relations", "min_count", "bootstrap"),
    script:
        "../scripts/syntax_table1.py"


rule syntax_heatmaps:
    input:
        scores=SCORES,
        code=code("syntax_heatmaps.py"),
    output:
        **heatmap_figures(PLAN.syntax_heatmaps),
    log:
        logs("syntax{weighting}/{model}/{corpus}/heatmaps"),
    benchmark:
        benchmarks("syntax{weighting}/{model}/{corpus}/heatmaps")
    conda:
        ENV
    params:
        relations=PLAN.syntax_heatmaps,
    script:
        "../scripts/syntax_heatmaps.py"


rule syntax_lines:
    input:
        unpack(maps),
        scores=SCORES,
        code=code("syntax_lines.py"),
    output:
        examples=DEPENDENCIES.path("lines.csv"),
        figure=DEPENDENCIES.figure("lines.svg", "syntax_lines", "Fig. 5 example heads"),
    log:
        logs("syntax{weighting}/{model}/{corpus}/lines"),
    benchmark:
        benchmarks("syntax{weighting}/{model}/{corpus}/lines")
    conda:
        ENV
    params:
        **MAPS_PARAMS,
        how=SYNTAX["word_from"],
    script:
        "../scripts/syntax_lines.py"


rule syntax_honest:
    input:
        # the scores of these corpora, for the job's model and weighting
        select=(
            expand(SCORES, corpus=SYNTAX["selection"]["corpus"], allow_missing=True)[0]
            if PLAN.honest
            else []
        ),
        evaluate=expand(
            SCORES,
            corpus=[e["corpus"] for e in SYNTAX["evaluation"]],
            allow_missing=True,
        ),
        code=code("syntax_honest.py"),
    output:
        table=HONEST.table("honest.csv", "syntax_honest", "honest regime", final=PLAN.honest),
        figure=HONEST.figure("honest.svg", "syntax_honest", "both regimes", final=PLAN.honest),
    log:
        logs("syntax{weighting}/{model}/honest"),
    benchmark:
        benchmarks("syntax{weighting}/{model}/honest")
    conda:
        ENV
    params:
        **pick(
            SYNTAX,
            "selection",
            "evaluation",
            "bootstrap",
            "top_relations",
            "min_count",
        ),
    script:
        "../scripts/syntax_honest.py"
