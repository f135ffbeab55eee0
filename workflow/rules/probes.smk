# Probing classifiers (Clark et al. §5, Table 3) and Coenen et al.'s attention-vector edge
# classifier, for `probes.model` (and its random-encoder twin `probes.random_model`), trained on
# `probes.train` and scored on the test split of each of `probes.test`. Options: `probes:` in
# the schema. One feature cache per (model, treebank): word-level maps, float16, reused by every
# probe job, and temp(): deleted once the last probe job has read it (~1.1 GB for MiniLM on GUM;
# no table reads it, and it is rebuilt from the store in about a minute when a probe reruns).
PROBES = config["probes"]
PROBING = Results(
    "probes",
    f"{RESULTS}/{{model}}/{{corpus}}/probes",
    # the report's labels: model, result and what it is (a table unless said otherwise)
    labels=lambda text, kind="table": {
        "model": "{model}",
        "result": text,
        "kind": kind,
    },
    category="Probing classifiers (Clark §5)",
    corpus=lambda model: ([PROBES["train"]] if PLAN.probes_on and model == PROBES["model"] else []),
    constrain={
        "corpus": PLAN.labelled_treebanks,
        "probe": [probe for probe, _ in PLAN.probe_runs],
        "seed": r"\d+",
    },
)
# word-level attention caches, one per (model, treebank)
PROBES_FEATURES = f"{PROBING.folder}/features.h5"


rule probes_features:
    input:
        stores=stores,
        corpus=corpus_file,
        code=code("probes_features.py"),
    output:
        temp(PROBING.path("features.h5")),
    log:
        logs("probes/{model}/{corpus}/features"),
    benchmark:
        benchmarks("probes/{model}/{corpus}/features")
    conda:
        ENV
    resources:
        mem_mb=2000,
    params:
        module="probes",
        analysis="probe_features",
        options={"how": PROBES["word_from"]},
    script:
        "../scripts/probes_features.py"


rule probes_run:
    input:
        train=lambda wc: probe_features(probe_attention(wc), [wc.corpus])[0],
        tests=lambda wc: probe_features(probe_attention(wc), PROBES["test"]),
        code=code("probes_run.py"),
    output:
        scores=PROBING.path("runs/{probe}-seed{seed}.csv"),
        state=PROBING.path("runs/{probe}-seed{seed}.pt"),
    log:
        logs("probes/{model}/{corpus}/{probe}-seed{seed}"),
    benchmark:
        benchmarks("probes/{model}/{corpus}/{probe}-seed{seed}")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
    params:
        **pick(PROBES, "test", "epochs", "batch_size"),
        attention=probe_attention,
    script:
        "../scripts/probes_run.py"


rule probes_table3:
    input:
        runs=expand(
            rules.probes_run.output.scores,
            zip,
            probe=[p for p, _ in PLAN.probe_runs],
            seed=[s for _, s in PLAN.probe_runs],
            allow_missing=True,
        ),
        entropy=lambda wc: probes_entropy(wc.model),
        random_entropy=lambda wc: probes_entropy(PROBES["random_model"]),
        code=code("probes_table3.py"),
    output:
        table=PROBING.table("table3.csv", "probes_table3", "Table 3 (UAS)", as_table=True),
        figure=PROBING.figure(
            "table3.svg", "probes_table3", PROBING.labels("Table 3 (UAS)", "figure")
        ),
    log:
        logs("probes/{model}/{corpus}/table3"),
    benchmark:
        benchmarks("probes/{model}/{corpus}/table3")
    conda:
        ENV
    params:
        **pick(PROBES, "random_model", "test", "seeds", "epochs", "batch_size"),
        entropy_corpus=PLAN.surface_corpus,
    script:
        "../scripts/probes_table3.py"


rule probes_weights:
    input:
        states=expand(
            rules.probes_run.output.state,
            probe="attn_only",
            seed=PROBES["seeds"],
            allow_missing=True,
        ),
        code=code("probes_weights.py"),
    output:
        table=PROBING.heads("attn_only_weights.csv", "probes_weights", "attn-only weights"),
        figure=PROBING.figure(
            "attn_only_weights.svg",
            "probes_weights",
            PROBING.labels("attn-only weights", "figure"),
        ),
    log:
        logs("probes/{model}/{corpus}/weights"),
    benchmark:
        benchmarks("probes/{model}/{corpus}/weights")
    conda:
        ENV
    params:
        seeds=PROBES["seeds"],
    script:
        "../scripts/probes_weights.py"


rule probes_edges:
    input:
        train=edge_features(["{corpus}"]),
        tests=edge_features(PROBES["test"]),
        code=code("probes_edges.py"),
    output:
        table=PROBING.table("edges.csv", "probes_edges", "edge classifier (Coenen et al.)"),
    log:
        logs("probes/{model}/{corpus}/edges"),
    benchmark:
        benchmarks("probes/{model}/{corpus}/edges")
    conda:
        ENV
    resources:
        mem_mb=3000,
    params:
        **pick(PROBES, "test", "seeds", "edge_train_pairs"),
        attention=lambda wc: [wc.model, PROBES["random_model"]],
    script:
        "../scripts/probes_edges.py"


rule probes_claims:
    input:
        table=rules.probes_table3.output.table,
        edges=rules.probes_edges.output.table,
        # The random twin's attention entropy: its Table 3 row says nothing if its maps are uniform.
        random_entropy=lambda wc: probes_entropy(PROBES["random_model"]),
        code=code("probes_claims.py"),
    output:
        PROBING.claims("paper_claims.csv", "probes_claims", "claims vs papers"),
    log:
        logs("probes/{model}/{corpus}/claims"),
    benchmark:
        benchmarks("probes/{model}/{corpus}/claims")
    conda:
        ENV
    script:
        "../scripts/probes_claims.py"
