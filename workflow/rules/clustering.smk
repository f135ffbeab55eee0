# Head clustering (Clark et al. §6, Fig. 6). clustering_distances streams the store once (the heavy
# step); MDS, the permutation tests and the claims only read its square table. Options (all
# optional) under `clustering:` in config.yaml:
#   average: true        distance = JS per token (paper); false = summed over tokens (Clark's code)
#   smoothing: 0.001     rows smoothed to (1 - s) a + s / n first (Clark's code)
#   max_examples: null   stop after this many segments
#   seed: 0              MDS random state and permutation-test seed
#   n_permutations: 1000
CLUSTERING = config.get("clustering", {})
CLUSTERING_DIR = f"{RESULTS}/{{model}}/{{corpus}}/clustering"
CLUSTERING_REPORT = {"category": "Head clustering (Clark §6)", "subcategory": "{model}"}


rule clustering_distances:
    input:
        stores=stores,
        code=lib("analyses/clustering.py"),
    output:
        report(
            f"{CLUSTERING_DIR}/distances.csv",
            caption="../report/clustering_distances.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "head distances (JS)"},
            **CLUSTERING_REPORT,
        ),
    params:
        average=CLUSTERING.get("average", True),
        smoothing=CLUSTERING.get("smoothing", 0.001),
        max_examples=CLUSTERING.get("max_examples"),
    resources:
        mem_mb=1000,
    log:
        "logs/clustering/{model}/{corpus}/distances.log",
    conda:
        ENV
    script:
        "../scripts/clustering_distances.py"


rule clustering_mds:
    input:
        unpack(surface_table_files),
        distances=f"{CLUSTERING_DIR}/distances.csv",
        stores=stores,
        code=lib("analyses/clustering.py"),
        plot=lib("plots/clustering.py"),
    output:
        coordinates=report(
            f"{CLUSTERING_DIR}/coordinates.csv",
            caption="../report/clustering_mds.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "MDS coordinates"},
            **CLUSTERING_REPORT,
        ),
        figure=report(
            f"{CLUSTERING_DIR}/mds.svg",
            caption="../report/clustering_mds.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "Fig. 6: heads in 2-D"},
            **CLUSTERING_REPORT,
        ),
    params:
        seed=CLUSTERING.get("seed", 0),
        average=CLUSTERING.get("average", True),
        max_examples=CLUSTERING.get("max_examples"),
    log:
        "logs/clustering/{model}/{corpus}/mds.log",
    conda:
        ENV
    script:
        "../scripts/clustering_mds.py"


rule clustering_structure:
    input:
        distances=f"{CLUSTERING_DIR}/distances.csv",
        coordinates=f"{CLUSTERING_DIR}/coordinates.csv",
        code=lib("analyses/clustering.py"),
    output:
        structure=report(
            f"{CLUSTERING_DIR}/structure.csv",
            caption="../report/clustering_structure.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "within vs between layers"},
            **CLUSTERING_REPORT,
        ),
        claims=report(
            f"{CLUSTERING_DIR}/paper_claims.csv",
            caption="../report/clustering_structure.rst",
            labels={"model": "{model}", "corpus": "{corpus}", "result": "paper vs ours"},
            **CLUSTERING_REPORT,
        ),
    params:
        seed=CLUSTERING.get("seed", 0),
        n_permutations=CLUSTERING.get("n_permutations", 1000),
        average=CLUSTERING.get("average", True),
    log:
        "logs/clustering/{model}/{corpus}/structure.log",
    conda:
        ENV
    script:
        "../scripts/clustering_structure.py"


FINAL_TARGETS.append(
    lambda model: (
        [
            f"{RESULTS}/{model}/{SURFACE_CORPUS}/clustering/{name}"
            for name in ("mds.svg", "structure.csv", "paper_claims.csv")
        ]
        if SURFACE_CORPUS in CORPORA
        else []
    )
)
