# Head clustering (Clark et al. §6, Fig. 6) on the surface corpus. clustering_distances streams
# the store once (the heavy step); MDS, the permutation tests and the claims only read its
# square table. Options: `clustering:` in the config schema. Under each weighting: clustering/
# (attention weights) and clustering-norm/ (Kobayashi's norm weighting).
CLUSTERING = config["clustering"]
HEAD_CLUSTERS = Results(
    "clustering",
    f"{RESULTS}/{{model}}/{{corpus}}/clustering{{weighting}}",
    category="Head clustering (Clark §6)",
    corpus=[PLAN.surface_corpus] if PLAN.surface_corpus is not None else [],
)


use rule store_analysis as clustering_distances with:
    input:
        stores=stores,
        code=analysis_code("clustering"),
    output:
        table=HEAD_CLUSTERS.table(
            "distances.csv", "clustering_distances", "head distances (JS)", final=False
        ),
        provenance=f"{HEAD_CLUSTERS.folder}/distances.provenance.json",
    log:
        logs("clustering{weighting}/{model}/{corpus}/distances"),
    benchmark:
        benchmarks("clustering{weighting}/{model}/{corpus}/distances")
    params:
        module="clustering",
        analysis="head_distances",
        options={k: CLUSTERING[k] for k in ("average", "smoothing")},
        max_examples=CLUSTERING["max_examples"],


rule clustering_mds:
    input:
        unpack(surface_tables),
        distances=rules.clustering_distances.output.table,
        provenance=rules.clustering_distances.output.provenance,
        code=code("clustering_mds.py"),
    output:
        coordinates=HEAD_CLUSTERS.heads(
            "coordinates.csv", "clustering_mds", "MDS coordinates", final=False
        ),
        figure=HEAD_CLUSTERS.figure("mds.svg", "clustering_mds", "Fig. 6: heads in 2-D"),
    log:
        logs("clustering{weighting}/{model}/{corpus}/mds"),
    benchmark:
        benchmarks("clustering{weighting}/{model}/{corpus}/mds")
    conda:
        ENV
    params:
        **pick(CLUSTERING, "seed", "average"),
    script:
        "../scripts/clustering_mds.py"


rule clustering_structure:
    input:
        distances=rules.clustering_distances.output.table,
        coordinates=rules.clustering_mds.output.coordinates,
        code=code("clustering_structure.py"),
    output:
        structure=HEAD_CLUSTERS.table(
            "structure.csv", "clustering_structure", "within vs between layers"
        ),
        claims=HEAD_CLUSTERS.claims("paper_claims.csv", "clustering_structure", "paper vs ours"),
    log:
        logs("clustering{weighting}/{model}/{corpus}/structure"),
    benchmark:
        benchmarks("clustering{weighting}/{model}/{corpus}/structure")
    conda:
        ENV
    params:
        **pick(CLUSTERING, "seed", "n_permutations", "average"),
    script:
        "../scripts/clustering_structure.py"
