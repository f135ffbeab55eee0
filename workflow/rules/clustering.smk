# Head clustering (Clark et al. §6, Fig. 6) on the surface corpus. clustering_distances streams
# the store once (the heavy step); MDS, the permutation tests and the claims only read its
# square table. Options: `clustering:` in the config schema. Under each weighting: clustering/
# (attention weights) and clustering-norm/ (Kobayashi's norm weighting).
CLUSTERING = config["clustering"]
CLUSTERING_DIR = f"{RESULTS}/{{model}}/{{corpus}}/clustering{{weighting}}"
CLUSTERING_REPORT = {"category": "Head clustering (Clark §6)", "subcategory": "{model}"}


rule clustering_distances:
    input:
        stores=stores,
        code=code("clustering_distances.py"),
    output:
        report(
            f"{CLUSTERING_DIR}/distances.csv",
            caption="../report/clustering_distances.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="head distances (JS)",
            ),
            **CLUSTERING_REPORT,
        ),
    log:
        f"{LOGS}/clustering{{weighting}}/{{model}}/{{corpus}}/distances.log",
    benchmark:
        f"{LOGS}/benchmarks/clustering{{weighting}}/{{model}}/{{corpus}}/distances.tsv"
    conda:
        ENV
    resources:
        mem_mb=1000,
    params:
        average=CLUSTERING["average"],
        smoothing=CLUSTERING["smoothing"],
        max_examples=CLUSTERING["max_examples"],
        weighting=weighting,
    script:
        "../scripts/clustering_distances.py"


rule clustering_mds:
    input:
        unpack(surface_tables),
        distances=f"{CLUSTERING_DIR}/distances.csv",
        stores=stores,
        code=code("clustering_mds.py"),
    output:
        coordinates=report(
            f"{CLUSTERING_DIR}/coordinates.csv",
            caption="../report/clustering_mds.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="MDS coordinates",
            ),
            **CLUSTERING_REPORT,
        ),
        figure=report(
            f"{CLUSTERING_DIR}/mds.svg",
            caption="../report/clustering_mds.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="Fig. 6: heads in 2-D",
            ),
            **CLUSTERING_REPORT,
        ),
    log:
        f"{LOGS}/clustering{{weighting}}/{{model}}/{{corpus}}/mds.log",
    benchmark:
        f"{LOGS}/benchmarks/clustering{{weighting}}/{{model}}/{{corpus}}/mds.tsv"
    conda:
        ENV
    params:
        seed=CLUSTERING["seed"],
        average=CLUSTERING["average"],
        max_examples=CLUSTERING["max_examples"],
        weighting=weighting,
    script:
        "../scripts/clustering_mds.py"


rule clustering_structure:
    input:
        distances=f"{CLUSTERING_DIR}/distances.csv",
        coordinates=f"{CLUSTERING_DIR}/coordinates.csv",
        code=code("clustering_structure.py"),
    output:
        structure=report(
            f"{CLUSTERING_DIR}/structure.csv",
            caption="../report/clustering_structure.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="within vs between layers",
            ),
            **CLUSTERING_REPORT,
        ),
        claims=report(
            f"{CLUSTERING_DIR}/paper_claims.csv",
            caption="../report/clustering_structure.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="paper vs ours",
            ),
            **CLUSTERING_REPORT,
        ),
    log:
        f"{LOGS}/clustering{{weighting}}/{{model}}/{{corpus}}/structure.log",
    benchmark:
        f"{LOGS}/benchmarks/clustering{{weighting}}/{{model}}/{{corpus}}/structure.tsv"
    conda:
        ENV
    params:
        seed=CLUSTERING["seed"],
        n_permutations=CLUSTERING["n_permutations"],
        average=CLUSTERING["average"],
    script:
        "../scripts/clustering_structure.py"


FINAL_TARGETS["clustering"] = lambda model: [
    f"{RESULTS}/{model}/{PLAN.surface_corpus}/clustering{suffix}/{name}"
    for suffix in PLAN.suffixes(model)
    for name in ("mds.svg", "structure.csv", "paper_claims.csv")
    if PLAN.surface_corpus is not None
]
