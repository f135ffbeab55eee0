# Coreference heads (Clark et al. §4.3, Table 2) on document corpora (kind: documents).
# coref_mentions streams the store once (the heavy step); coref_accuracy only reads its table.
# Under each weighting: coref/ (attention weights) and coref-norm/ (Kobayashi's norm weighting).
COREF = config["coref"]
COREF_DIR = f"{RESULTS}/{{model}}/{{corpus}}/coref{{weighting}}"
targets("coref", category="Coreference (Clark §4.3)", corpus=PLAN.documents)


rule coref_mentions:
    input:
        stores=stores,
        documents=corpus_file,
        sentences=lambda wc: f"{DATA}/corpora/{CORPORA[wc.corpus]['from']}.jsonl",
        code=code("coref_mentions.py"),
    output:
        mentions=result(
            "coref",
            f"{COREF_DIR}/mentions.csv",
            caption="../report/coref_mentions.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                table="coref: per mention",
            ),
            final=False,
            in_report=False,  # 0.6-0.7 MB per table: a file only, for the report's 15 MB budget
        ),
        summary=result(
            "coref",
            f"{COREF_DIR}/summary_counts.csv",
            caption="../report/coref_summary.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                table="coref: mention counts",
            ),
        ),
    log:
        f"{LOGS}/coref{{weighting}}/{{model}}/{{corpus}}/mentions.log",
    benchmark:
        f"{LOGS}/benchmarks/coref{{weighting}}/{{model}}/{{corpus}}/mentions.tsv"
    wildcard_constraints:
        corpus=one_of(PLAN.documents),
    conda:
        ENV
    params:
        how=COREF["word_from"],
        weighting=weighting,
    script:
        "../scripts/coref_mentions.py"


rule coref_accuracy:
    input:
        mentions=rules.coref_mentions.output.mentions,
        # windows over part of a treebank: the held-out head may be chosen on its truncated twin
        selection=lambda wc: (
            [
                f"{RESULTS}/{wc.model}/{PLAN.coref_selection[wc.corpus]}/coref/mentions.csv"
            ]
            if wc.corpus in PLAN.coref_selection
            else []
        ),
        stores=stores,
        code=code("coref_accuracy.py"),
    output:
        table=result(
            "coref",
            f"{COREF_DIR}/accuracy.csv",
            caption="../report/coref_accuracy.rst",
            as_table=True,
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                table="coref: Table 2",
            ),
        ),
        heads=result(
            "coref",
            f"{COREF_DIR}/head_accuracy.csv",
            caption="../report/coref_heads.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                table="coref: per head",
            ),
        ),
        heatmap=figure(
            "coref",
            f"{COREF_DIR}/head_accuracy.svg",
            caption="../report/coref_heads.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                figure="coref: per head",
            ),
        ),
    log:
        f"{LOGS}/coref{{weighting}}/{{model}}/{{corpus}}/accuracy.log",
    benchmark:
        f"{LOGS}/benchmarks/coref{{weighting}}/{{model}}/{{corpus}}/accuracy.tsv"
    wildcard_constraints:
        corpus=one_of(PLAN.documents),
    conda:
        ENV
    params:
        selection_label=lambda wc: PLAN.coref_selection.get(wc.corpus, ""),
        select_split=COREF["select_split"],
        eval_split=COREF["eval_split"],
        n_boot=COREF["bootstrap"]["n"],
        seed=COREF["bootstrap"]["seed"],
        source_format=lambda wc: format_name(config, CORPORA[wc.corpus]["from"]),
        max_length=EXTRACTION["max_length"],
        weighting=weighting,
    script:
        "../scripts/coref_accuracy.py"


rule coref_claims:
    input:
        table=rules.coref_accuracy.output.table,
        code=code("coref_claims.py"),
    output:
        result(
            "coref",
            f"{COREF_DIR}/paper_claims.csv",
            caption="../report/coref_claims.rst",
            labels=labelled(model="{model}", corpus="{corpus}", table="coref: claims"),
        ),
    log:
        f"{LOGS}/coref{{weighting}}/{{model}}/{{corpus}}/claims.log",
    benchmark:
        f"{LOGS}/benchmarks/coref{{weighting}}/{{model}}/{{corpus}}/claims.tsv"
    wildcard_constraints:
        corpus=one_of(PLAN.documents),
    conda:
        ENV
    script:
        "../scripts/coref_claims.py"
