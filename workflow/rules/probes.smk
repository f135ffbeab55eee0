# Probing classifiers (Clark et al. §5, Table 3) and Coenen et al.'s attention-vector edge
# classifier. Settings under `probes:` in config.yaml:
#   model / random_model   whose attention is probed, and its random-encoder twin (Table 3's
#                          "Random Init Attn + GloVe"); both must be in `models:`
#   train                  treebank with train/dev/test splits: train on train, pick the epoch on dev
#   test                   treebanks whose test split is scored
#   seeds, epochs, batch_size, word_from, edge_train_pairs
# When `model`, `random_model` or a corpus is not configured (e.g. the tiny test config), the
# probe targets are simply left out.
# One feature cache per (model, treebank): word-level maps, float16, reused by every probe job.

PROBES = config.get("probes", {})
PROBES_MODEL = PROBES.get("model", "minilm")
PROBES_RANDOM = PROBES.get("random_model", "minilm_random")
PROBES_TRAIN = PROBES.get("train", "gum")
PROBES_TEST = PROBES.get("test", ["gum", "ewt"])
PROBES_SEEDS = PROBES.get("seeds", [0, 1, 2])
# Same names as headatlas.analyses.probes.PROBES (not imported: it would load torch at parse time).
PROBES_NAMES = ["right_branching", "distances_glove", "random_attn_glove", "attn_only", "attn_glove"]
PROBES_ON = {PROBES_MODEL, PROBES_RANDOM} <= set(MODELS) and {PROBES_TRAIN, *PROBES_TEST} <= set(
    TREEBANK_CORPORA
)
PROBES_DIR = f"{RESULTS}/{{model}}/{{corpus}}/probes"
PROBES_FEATURES = f"{RESULTS}/{{model}}/{{corpus}}/probes/features.h5"
PROBES_CATEGORY = "Probing classifiers (Clark §5)"
# Deterministic right-branching runs once; the trained probes once per seed.
PROBES_RUNS = [("right_branching", 0)] + [
    (p, s) for p in PROBES_NAMES if p != "right_branching" for s in PROBES_SEEDS
]


rule probe_features:
    input:
        stores=stores,
        corpus=corpus_file,
        code=lib("analyses/probes.py"),
    output:
        PROBES_FEATURES,
    params:
        how=PROBES.get("word_from", "mean"),
    wildcard_constraints:
        corpus=one_of(TREEBANK_CORPORA),
    resources:
        mem_mb=2000,
    log:
        "logs/probes/{model}/{corpus}/features.log",
    benchmark:
        "logs/benchmarks/probes/{model}/{corpus}/features.tsv"
    conda:
        ENV
    script:
        "../scripts/probes_features.py"


rule probe_run:
    input:
        train=lambda wc: PROBES_FEATURES.format(
            model=PROBES_RANDOM if wc.probe == "random_attn_glove" else wc.model, corpus=wc.corpus
        ),
        tests=lambda wc: [
            PROBES_FEATURES.format(
                model=PROBES_RANDOM if wc.probe == "random_attn_glove" else wc.model, corpus=c
            )
            for c in PROBES_TEST
        ],
        code=[lib("analyses/probes.py"), lib("glove.py")],
    output:
        scores=f"{PROBES_DIR}/runs/{{probe}}-seed{{seed}}.csv",
        state=f"{PROBES_DIR}/runs/{{probe}}-seed{{seed}}.pt",
    params:
        tests=PROBES_TEST,
        attention=lambda wc: PROBES_RANDOM if wc.probe == "random_attn_glove" else wc.model,
        epochs=PROBES.get("epochs", 1),
        batch_size=PROBES.get("batch_size", 1),
    wildcard_constraints:
        probe=one_of(PROBES_NAMES),
        seed=r"\d+",
    threads: 1
    resources:
        mem_mb=2000,
    log:
        "logs/probes/{model}/{corpus}/{probe}-seed{seed}.log",
    benchmark:
        "logs/benchmarks/probes/{model}/{corpus}/{probe}-seed{seed}.tsv"
    conda:
        ENV
    script:
        "../scripts/probes_run.py"


rule probe_table3:
    input:
        runs=[f"{PROBES_DIR}/runs/{p}-seed{s}.csv" for p, s in PROBES_RUNS],
        code=[lib("analyses/probes.py"), lib("plots/probes.py")],
    output:
        table=report(
            f"{PROBES_DIR}/table3.csv",
            caption="../report/probes_table3.rst",
            category=PROBES_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "result": "Table 3 (UAS)", "kind": "table"},
        ),
        figure=report(
            f"{PROBES_DIR}/table3.svg",
            caption="../report/probes_table3.rst",
            category=PROBES_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "result": "Table 3 (UAS)", "kind": "figure"},
        ),
    params:
        random_model=PROBES_RANDOM,
        tests=PROBES_TEST,
        seeds=PROBES_SEEDS,
        epochs=PROBES.get("epochs", 1),
        batch_size=PROBES.get("batch_size", 1),
    log:
        "logs/probes/{model}/{corpus}/table3.log",
    conda:
        ENV
    script:
        "../scripts/probes_table3.py"


rule probe_weights:
    input:
        states=[f"{PROBES_DIR}/runs/attn_only-seed{s}.pt" for s in PROBES_SEEDS],
        code=[lib("analyses/probes.py"), lib("plots/probes.py")],
    output:
        table=report(
            f"{PROBES_DIR}/attn_only_weights.csv",
            caption="../report/probes_weights.rst",
            category=PROBES_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "result": "attn-only weights", "kind": "table"},
        ),
        figure=report(
            f"{PROBES_DIR}/attn_only_weights.svg",
            caption="../report/probes_weights.rst",
            category=PROBES_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "result": "attn-only weights", "kind": "figure"},
        ),
    params:
        seeds=PROBES_SEEDS,
    log:
        "logs/probes/{model}/{corpus}/weights.log",
    conda:
        ENV
    script:
        "../scripts/probes_weights.py"


rule probe_edges:
    input:
        train=[PROBES_FEATURES.format(model=m, corpus="{corpus}") for m in ("{model}", PROBES_RANDOM)],
        tests=[
            PROBES_FEATURES.format(model=m, corpus=c)
            for m in ("{model}", PROBES_RANDOM)
            for c in PROBES_TEST
        ],
        code=lib("analyses/probes.py"),
    output:
        report(
            f"{PROBES_DIR}/edges.csv",
            caption="../report/probes_edges.rst",
            category=PROBES_CATEGORY,
            subcategory="{model}",
            labels={"model": "{model}", "result": "edge classifier (Coenen et al.)", "kind": "table"},
        ),
    params:
        attention=lambda wc: [wc.model, PROBES_RANDOM],
        tests=PROBES_TEST,
        seeds=PROBES_SEEDS,
        max_train_pairs=PROBES.get("edge_train_pairs", 100000),
    resources:
        mem_mb=3000,
    log:
        "logs/probes/{model}/{corpus}/edges.log",
    benchmark:
        "logs/benchmarks/probes/{model}/{corpus}/edges.tsv"
    conda:
        ENV
    script:
        "../scripts/probes_edges.py"


FINAL_TARGETS.append(
    lambda model: [
        f"{RESULTS}/{model}/{PROBES_TRAIN}/probes/{name}"
        for name in [
            "table3.csv",
            "table3.svg",
            "attn_only_weights.csv",
            "attn_only_weights.svg",
            "edges.csv",
        ]
    ]
    if PROBES_ON and model == PROBES_MODEL
    else []
)
