# Extraction: one job per (model, corpus, shard) -> HDF5 store. GPU when present.
# Cluster resources (partition, gres, account) live in profiles/slurm/, not here.


rule extract:
    input:
        corpus=corpus_file,
        model=model_inputs,
    output:
        store=f"{RESULTS}/{{model}}/{{corpus}}/attention/shard-{{shard}}.h5",
    params:
        spec=lambda wc: MODELS[wc.model],
        max_length=EXTRACTION.get("max_length", 128),
        batch_size=EXTRACTION.get("batch_size", 32),
        max_tokens=EXTRACTION.get("max_tokens"),
        n_shards=N_SHARDS,
    threads: EXTRACTION.get("threads", 2)
    resources:
        mem_mb=8000,
    log:
        "logs/extract/{model}/{corpus}/shard-{shard}.log",
    conda:
        ENV
    script:
        "../scripts/extract.py"


rule corpus_summary:
    input:
        corpus=corpus_file,
        stats=lambda wc: str(Path(corpus_file(wc)).with_suffix(".stats.json")),
        stores=stores,
    output:
        report(
            f"{RESULTS}/{{model}}/{{corpus}}/corpus_summary.csv",
            caption="../report/corpus_summary.rst",
            category="Corpora",
            subcategory="{model}",
            labels={"model": "{model}", "corpus": "{corpus}", "table": "corpus summary"},
        ),
    log:
        "logs/summary/{model}/{corpus}.log",
    conda:
        ENV
    script:
        "../scripts/corpus_summary.py"
