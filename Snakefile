# headatlas: what do the attention heads of BERT-family encoders look at?
# corpora -> extraction -> HDF5 store -> analyses -> report.  See README.md.
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")
# The light library modules (config checks, code inputs) are read from this workflow's own copy.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from headatlas.config import load_config


configfile: "config.yaml"


# Fills every default from the schema and checks names; errors name their config key.
load_config(
    config, Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
)


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/corpora.smk"
include: "workflow/rules/extract.smk"
include: "workflow/rules/surface.smk"
include: "workflow/rules/syntax.smk"
include: "workflow/rules/coref.smk"
include: "workflow/rules/clustering.smk"
include: "workflow/rules/gradients.smk"
include: "workflow/rules/headtypes.smk"
include: "workflow/rules/norms.smk"
include: "workflow/rules/probes.smk"
include: "workflow/rules/finetune.smk"
include: "workflow/rules/ablation.smk"
include: "workflow/rules/patterns.smk"
include: "workflow/rules/importance.smk"
include: "workflow/rules/scorecard.smk"


rule all:
    default_target: True
    input:
        all_outputs(),
