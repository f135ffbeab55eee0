# Dependency relations (Clark et al. §4.2, Table 1, Fig. 5) on every treebank with labelled trees.
# syntax_scores streams the store once and scores every head on every dependency (scores.npz);
# the tables and figures read that file. Options: `syntax:` in the config schema.
# Under each weighting: syntax/ (attention weights) and syntax-norm/ (Kobayashi's norm weighting).
SYNTAX = config["syntax"]
SYNTAX_DIR = f"{RESULTS}/{{model}}/{{corpus}}/syntax{{weighting}}"
SYNTAX_HONEST_DIR = f"{RESULTS}/{{model}}/syntax{{weighting}}"
targets(
    "syntax",
    category="Dependency syntax (Clark §4.2)",
    corpus=PLAN.labelled_treebanks,
)
SYNTAX_CORPORA = {"corpus": one_of(PLAN.labelled_treebanks)}
SYNTAX_SCORES = f"{SYNTAX_DIR}/scores.npz"


rule syntax_scores:
    input:
        stores=stores,
        corpus=corpus_file,
        code=code("syntax_scores.py"),
    output:
        scores=SYNTAX_SCORES,
        heads=result(
            "syntax",
            f"{SYNTAX_DIR}/heads.csv",
            caption="../report/syntax_heads.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="every head (long table)",
            ),
            in_report=False,  # 0.3 MB per table: a file only, for the report's 15 MB budget
        ),
        offsets=result(
            "syntax",
            f"{SYNTAX_DIR}/offsets.csv",
            caption="../report/syntax_offsets.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="offset baselines",
            ),
        ),
        coverage=result(
            "syntax",
            f"{SYNTAX_DIR}/coverage.csv",
            caption="../report/syntax_coverage.rst",
            labels=labelled(model="{model}", corpus="{corpus}", result="coverage"),
        ),
    log:
        f"{LOGS}/syntax{{weighting}}/{{model}}/{{corpus}}/scores.log",
    benchmark:
        f"{LOGS}/benchmarks/syntax{{weighting}}/{{model}}/{{corpus}}/scores.tsv"
    wildcard_constraints:
        **SYNTAX_CORPORA,
    conda:
        ENV
    resources:
        mem_mb=2000,
    params:
        how=SYNTAX["word_from"],
        weighting=weighting,
    script:
        "../scripts/syntax_scores.py"


rule syntax_table1:
    input:
        scores=SYNTAX_SCORES,
        code=code("syntax_table1.py"),
    output:
        table=result(
            "syntax",
            f"{SYNTAX_DIR}/table1.csv",
            caption="../report/syntax_table1.rst",
            as_table=True,
            labels=labelled(model="{model}", corpus="{corpus}", result="Table 1"),
        ),
        claims=result(
            "syntax",
            f"{SYNTAX_DIR}/paper_claims.csv",
            caption="../report/syntax_claims.rst",
            labels=labelled(
                model="{model}", corpus="{corpus}", result="Table 1 claims"
            ),
        ),
    log:
        f"{LOGS}/syntax{{weighting}}/{{model}}/{{corpus}}/table1.log",
    benchmark:
        f"{LOGS}/benchmarks/syntax{{weighting}}/{{model}}/{{corpus}}/table1.tsv"
    wildcard_constraints:
        **SYNTAX_CORPORA,
    conda:
        ENV
    params:
        top=SYNTAX["top_relations"],
        min_count=SYNTAX["min_count"],
        bootstrap=SYNTAX["bootstrap"],
    script:
        "../scripts/syntax_table1.py"


rule syntax_heatmaps:
    input:
        scores=SYNTAX_SCORES,
        code=code("syntax_heatmaps.py"),
    output:
        **{
            slug: figure(
                "syntax",
                f"{SYNTAX_DIR}/heatmap_{slug}.svg",
                caption="../report/syntax_heatmap.rst",
                labels=labelled(
                    model="{model}",
                    corpus="{corpus}",
                    result=f"heat map {relation}",
                ),
            )
            for slug, relation in PLAN.syntax_heatmaps.items()
        },
    log:
        f"{LOGS}/syntax{{weighting}}/{{model}}/{{corpus}}/heatmaps.log",
    benchmark:
        f"{LOGS}/benchmarks/syntax{{weighting}}/{{model}}/{{corpus}}/heatmaps.tsv"
    wildcard_constraints:
        **SYNTAX_CORPORA,
    conda:
        ENV
    params:
        relations=PLAN.syntax_heatmaps,
    script:
        "../scripts/syntax_heatmaps.py"


rule syntax_lines:
    input:
        scores=SYNTAX_SCORES,
        stores=stores,
        corpus=corpus_file,
        code=code("syntax_lines.py"),
    output:
        examples=f"{SYNTAX_DIR}/lines.csv",
        figure=figure(
            "syntax",
            f"{SYNTAX_DIR}/lines.svg",
            caption="../report/syntax_lines.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="Fig. 5 example heads",
            ),
        ),
    log:
        f"{LOGS}/syntax{{weighting}}/{{model}}/{{corpus}}/lines.log",
    benchmark:
        f"{LOGS}/benchmarks/syntax{{weighting}}/{{model}}/{{corpus}}/lines.tsv"
    wildcard_constraints:
        **SYNTAX_CORPORA,
    conda:
        ENV
    params:
        how=SYNTAX["word_from"],
    script:
        "../scripts/syntax_lines.py"


rule syntax_honest:
    input:
        # the scores of these corpora, for the job's model and weighting
        select=(
            expand(
                SYNTAX_SCORES, corpus=SYNTAX["selection"]["corpus"], allow_missing=True
            )[0]
            if PLAN.honest
            else []
        ),
        evaluate=expand(
            SYNTAX_SCORES,
            corpus=[e["corpus"] for e in SYNTAX["evaluation"]],
            allow_missing=True,
        ),
        code=code("syntax_honest.py"),
    output:
        table=result(
            "syntax",
            f"{SYNTAX_HONEST_DIR}/honest.csv",
            caption="../report/syntax_honest.rst",
            final=PLAN.honest,
            labels=labelled(
                model="{model}",
                corpus="selection vs test",
                result="honest regime",
            ),
        ),
        figure=figure(
            "syntax",
            f"{SYNTAX_HONEST_DIR}/honest.svg",
            caption="../report/syntax_honest.rst",
            final=PLAN.honest,
            labels=labelled(
                model="{model}",
                corpus="selection vs test",
                result="both regimes",
            ),
        ),
    log:
        f"{LOGS}/syntax{{weighting}}/{{model}}/honest.log",
    benchmark:
        f"{LOGS}/benchmarks/syntax{{weighting}}/{{model}}/honest.tsv"
    conda:
        ENV
    params:
        selection=SYNTAX["selection"],
        evaluation=SYNTAX["evaluation"],
        bootstrap=SYNTAX["bootstrap"],
        top=SYNTAX["top_relations"],
        min_count=SYNTAX["min_count"],
    script:
        "../scripts/syntax_honest.py"
