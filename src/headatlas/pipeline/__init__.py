"""The workflow's glue: light modules the Snakefile imports when it is parsed, and the job helpers.

* :mod:`~headatlas.pipeline.config`: the schema check and did-you-mean errors
* :mod:`~headatlas.pipeline.plan`: what a valid config runs, as frozen keyword-built plans
* :mod:`~headatlas.pipeline.codedeps`: each rule's code inputs, from what its script imports
* :mod:`~headatlas.pipeline.fingerprints`: content fingerprints of corpora and models
* :mod:`~headatlas.pipeline.resources`: SLURM requests from measured runs
* :mod:`~headatlas.pipeline.configdocs`: ``config/README.md`` from the schema
* :mod:`~headatlas.pipeline.jobs`: what every rule's script does first (its log, its threads)
"""
