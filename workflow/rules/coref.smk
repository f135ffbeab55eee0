# Coreference heads (Clark et al. §4.3, Table 2) on document corpora (kind: documents).
# coref_mentions streams the store once (the heavy step); coref_accuracy only reads its table.
COREF = config.get("coref", {})
COREF_REPORT = {"category": "Coreference (Clark §4.3)", "subcategory": "{model}"}


rule coref_mentions:
    input:
        stores=stores,
        documents=corpus_file,
        sentences=lambda wc: f"data/corpora/{CORPORA[wc.corpus]['from']}.jsonl",
        code=lib("analyses/coref.py"),
    output:
        mentions=report(
            f"{RESULTS}/{{model}}/{{corpus}}/coref/mentions.csv",
            caption="../report/coref_mentions.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "table": "coref: per mention"},
            **COREF_REPORT,
        ),
        summary=report(
            f"{RESULTS}/{{model}}/{{corpus}}/coref/summary_counts.csv",
            caption="../report/coref_summary.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "table": "coref: mention counts"},
            **COREF_REPORT,
        ),
    params:
        how=COREF.get("word_level", "mean"),
    wildcard_constraints:
        corpus=one_of(DOCUMENT_CORPORA),
    log:
        "logs/coref/{model}/{corpus}/mentions.log",
    benchmark:
        "logs/benchmarks/coref/{model}/{corpus}/mentions.tsv"
    conda:
        ENV
    script:
        "../scripts/coref_mentions.py"


rule coref_accuracy:
    input:
        mentions=f"{RESULTS}/{{model}}/{{corpus}}/coref/mentions.csv",
        stores=stores,
        code=lib("analyses/coref.py"),
        plot=lib("plots/coref.py"),
    output:
        table=report(
            f"{RESULTS}/{{model}}/{{corpus}}/coref/accuracy.csv",
            caption="../report/coref_accuracy.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "table": "coref: Table 2"},
            **COREF_REPORT,
        ),
        heads=report(
            f"{RESULTS}/{{model}}/{{corpus}}/coref/head_accuracy.csv",
            caption="../report/coref_heads.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "table": "coref: per head"},
            **COREF_REPORT,
        ),
        heatmap=report(
            f"{RESULTS}/{{model}}/{{corpus}}/coref/head_accuracy.svg",
            caption="../report/coref_heads.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "figure": "coref: per head"},
            **COREF_REPORT,
        ),
    params:
        select_split=COREF.get("select_split", "train"),
        eval_split=COREF.get("eval_split", "test"),
        n_boot=COREF.get("bootstrap", 1000),
        seed=COREF.get("seed", 0),
        source_format=lambda wc: CORPORA[CORPORA[wc.corpus]["from"]].get("format", CORPORA[wc.corpus]["from"]),
        max_length=EXTRACTION.get("max_length", 128),
    wildcard_constraints:
        corpus=one_of(DOCUMENT_CORPORA),
    log:
        "logs/coref/{model}/{corpus}/accuracy.log",
    benchmark:
        "logs/benchmarks/coref/{model}/{corpus}/accuracy.tsv"
    conda:
        ENV
    script:
        "../scripts/coref_accuracy.py"


FINAL_TARGETS.append(
    lambda model: [
        f"{RESULTS}/{model}/{corpus}/coref/{name}"
        for corpus in DOCUMENT_CORPORA
        for name in ("summary_counts.csv", "accuracy.csv", "head_accuracy.csv", "head_accuracy.svg")
    ]
)
