# Coreference heads (Clark et al. §4.3, Table 2) on document corpora (kind: documents).
# coref_mentions streams the store once (the heavy step); coref_accuracy only reads its table.
# Under each weighting: coref/ (attention weights) and coref-norm/ (Kobayashi's norm weighting).
COREF = config["coref"]
COREFERENCE = Results(
    "coref",
    f"{RESULTS}/{{model}}/{{corpus}}/coref{{weighting}}",
    labels=lambda text: labelled(model="{model}", corpus="{corpus}", table=text),
    category="Coreference (Clark §4.3)",
    corpus=PLAN.documents,
)


rule coref_mentions:
    input:
        stores=stores,
        documents=corpus_file,
        sentences=lambda wc: f"{DATA}/corpora/{CORPORA[wc.corpus]['from']}.jsonl",
        code=code("coref_mentions.py"),
    output:
        mentions=COREFERENCE.table(
            "mentions.csv",
            "coref_mentions",
            "coref: per mention",
            final=False,
            in_report=False,  # 0.6-0.7 MB per table: a file only, for the report's 15 MB budget
        ),
        summary=COREFERENCE.table("summary_counts.csv", "coref_summary", "coref: mention counts"),
        provenance=COREFERENCE.path("mentions.provenance.json"),
    log:
        logs("coref{weighting}/{model}/{corpus}/mentions"),
    benchmark:
        benchmarks("coref{weighting}/{model}/{corpus}/mentions")
    conda:
        ENV
    params:
        module="coref",
        analysis="coref",
        options={"how": COREF["word_from"]},
        weighting=weighting,
    script:
        "../scripts/coref_mentions.py"


rule coref_accuracy:
    input:
        mentions=rules.coref_mentions.output.mentions,
        selection=coref_selection,
        provenance=rules.coref_mentions.output.provenance,
        code=code("coref_accuracy.py"),
    output:
        table=COREFERENCE.table("accuracy.csv", "coref_accuracy", "coref: Table 2", as_table=True),
        heads=COREFERENCE.heads("head_accuracy.csv", "coref_heads", "coref: per head"),
        heatmap=COREFERENCE.figure(
            "head_accuracy.svg",
            "coref_heads",
            labelled(model="{model}", corpus="{corpus}", figure="coref: per head"),
        ),
    log:
        logs("coref{weighting}/{model}/{corpus}/accuracy"),
    benchmark:
        benchmarks("coref{weighting}/{model}/{corpus}/accuracy")
    conda:
        ENV
    params:
        **pick(COREF, "select_split", "eval_split", "bootstrap"),
        selection_label=lambda wc: PLAN.coref_selection.get(wc.corpus, ""),
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
        COREFERENCE.claims("paper_claims.csv", "coref_claims", "coref: claims"),
    log:
        logs("coref{weighting}/{model}/{corpus}/claims"),
    benchmark:
        benchmarks("coref{weighting}/{model}/{corpus}/claims")
    conda:
        ENV
    script:
        "../scripts/coref_claims.py"
