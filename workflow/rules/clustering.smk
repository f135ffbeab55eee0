# Head clustering (Clark et al. §6, Fig. 6) on the surface corpus. clustering_distances streams
# the store once (the heavy step); MDS, the permutation tests and the claims only read its
# square table. Options: `clustering:` in the config schema. Under each weighting: clustering/
# (attention weights) and clustering-norm/ (Kobayashi's norm weighting).
CLUSTERING = config["clustering"]
CLUSTERING_DIR = f"{RESULTS}/{{model}}/{{corpus}}/clustering{{weighting}}"
targets(
    "clustering",
    category="Head clustering (Clark §6)",
    corpus=[PLAN.surface_corpus] if PLAN.surface_corpus is not None else [],
)


rule clustering_distances:
    input:
        stores=stores,
        code=code("clustering_distances.py"),
    output:
        result(
            "clustering",
            f"{CLUSTERING_DIR}/distances.csv",
            caption="../report/clustering_distances.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="head distances (JS)",
            ),
            final=False,
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
        distances=rules.clustering_distances.output[0],
        stores=stores,
        code=code("clustering_mds.py"),
    output:
        coordinates=result(
            "clustering",
            f"{CLUSTERING_DIR}/coordinates.csv",
            caption="../report/clustering_mds.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="MDS coordinates",
            ),
            final=False,
        ),
        figure=figure(
            "clustering",
            f"{CLUSTERING_DIR}/mds.svg",
            caption="../report/clustering_mds.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="Fig. 6: heads in 2-D",
            ),
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
        distances=rules.clustering_distances.output[0],
        coordinates=rules.clustering_mds.output.coordinates,
        code=code("clustering_structure.py"),
    output:
        structure=result(
            "clustering",
            f"{CLUSTERING_DIR}/structure.csv",
            caption="../report/clustering_structure.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="within vs between layers",
            ),
        ),
        claims=result(
            "clustering",
            f"{CLUSTERING_DIR}/paper_claims.csv",
            caption="../report/clustering_structure.rst",
            labels=labelled(
                model="{model}",
                corpus="{corpus}",
                result="paper vs ours",
            ),
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
