# Extraction: one job per (model, corpus, shard) -> HDF5 store. GPU when present.
# Cluster resources (partition, gres, account) live in profiles/slurm/, not here.
# Two rules, one job: `extract` for the models of `extraction.keep_stores` (their stores stay on
# disk), `extract_temp` for the others (their stores are temp(): deleted once every job reading
# them has run; README "Disk"). In fused mode (`extraction.mode`), `fused_extract` instead: every
# streaming job the run needs runs inside the forward pass, and only their states are written;
# its shards plan their batches from every record's length, counted once by `corpus_lengths`.
CORPUS_SUMMARY = Results(
    "corpora",
    f"{RESULTS}/{{model}}/{{corpus}}",
    labels=lambda text: {"model": "{model}", "corpus": "{corpus}", "table": text},
    category="Corpora",
    corpus=list(CORPORA),
)


rule extract:
    input:
        corpus=corpus_file,
        model=model_inputs,
        code=code("extract.py"),
    output:
        store=STORE,
    log:
        logs("extract/{model}/{corpus}/shard-{shard}"),
    benchmark:
        benchmarks("extract/{model}/{corpus}/shard-{shard}")
    wildcard_constraints:
        model=one_of(PLAN.kept_stores),
    priority: chain_priority
    conda:
        ENV
    threads: EXTRACTION["threads"]
    resources:
        mem_mb=8000,
    params:
        **pick(EXTRACTION, "max_length", "batch_size", "max_tokens", "shards"),
        spec=lambda wc: MODELS[wc.model],
        norms=lambda wc: PLAN.norms(wc.model),
    script:
        "../scripts/extract.py"


use rule extract as extract_temp with:
    output:
        store=temp(STORE),
    wildcard_constraints:
        model=one_of(PLAN.temp_stores),


rule corpus_lengths:
    input:
        corpus=corpus_file,
        model=model_inputs,
        code=code("corpus_lengths.py"),
    output:
        lengths=LENGTHS,
    log:
        logs("corpus_lengths/{model}/{corpus}"),
    benchmark:
        benchmarks("corpus_lengths/{model}/{corpus}")
    wildcard_constraints:
        model=one_of(PLAN.fused_models),
    priority: chain_priority
    conda:
        ENV
    threads: EXTRACTION["threads"]
    resources:
        mem_mb=2000,
    params:
        **pick(EXTRACTION, "max_length"),
        spec=lambda wc: MODELS[wc.model],
    script:
        "../scripts/corpus_lengths.py"


rule fused_extract:
    input:
        corpus=corpus_file,
        lengths=LENGTHS,
        model=model_inputs,
        files=run_files,
        code=code("fused_extract.py"),
    output:
        states=STATES,
        exemplars=EXEMPLARS,
    log:
        logs("fused_extract/{model}/{corpus}/shard-{shard}"),
    benchmark:
        benchmarks("fused_extract/{model}/{corpus}/shard-{shard}")
    wildcard_constraints:
        model=one_of(PLAN.fused_models),
    priority: chain_priority
    conda:
        ENV
    threads: EXTRACTION["threads"]
    resources:
        mem_mb=8000,
    params:
        **pick(
            EXTRACTION,
            "max_length",
            "batch_size",
            "max_tokens",
            "shards",
            "exemplars",
            "view_memory_mb",
            "spill_every",
        ),
        seed=EXTRACTION["exemplar_seed"],
        wanted=exemplars_wanted,
        spec=lambda wc: MODELS[wc.model],
        norms=lambda wc: PLAN.norms(wc.model),
        runs=runs_of,
    script:
        "../scripts/fused_extract.py"


rule corpus_summary:
    input:
        corpus=corpus_file,
        stats=lambda wc: str(Path(corpus_file(wc)).with_suffix(".stats.json")),
        stores=stores,
        code=code("corpus_summary.py"),
    output:
        CORPUS_SUMMARY.table("corpus_summary.csv", "corpus_summary", "corpus summary"),
    log:
        logs("summary/{model}/{corpus}"),
    benchmark:
        benchmarks("summary/{model}/{corpus}")
    conda:
        ENV
    script:
        "../scripts/corpus_summary.py"
