# headatlas: what do the attention heads of BERT-family encoders look at?
# corpora -> extraction -> HDF5 store -> analyses -> report.  See README.md.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


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
include: "workflow/rules/probes.smk"
include: "workflow/rules/finetune.smk"
include: "workflow/rules/ablation.smk"


rule all:
    input:
        all_outputs(),
    default_target: True
