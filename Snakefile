# headatlas: what do the attention heads of BERT-family encoders look at?
# The workflow lives in workflow/Snakefile (the Snakemake catalog's layout); this top-level
# Snakefile keeps `snakemake` working from the repository root.


include: "workflow/Snakefile"


# An included file's default target does not carry over to the including one: name it again.
workflow.default_target = "all"
