# The template rules: included right after common.smk, so every rules file can use them.


# Every analysis that streams a store into its tables (and claims, and figure) is
# `use rule store_analysis as <rule> with:`, giving its inputs (``stores=stores,
# code=analysis_code("<module>")``, and files the analysis joins the store with), outputs (named
# as headatlas.pipeline.outputs writes them), log, benchmark and params (module, analysis,
# options). The template itself runs nothing: its output lies in no folder a run asks for.
rule store_analysis:
    input:
        stores=stores,
    output:
        f"{RESULTS}/.template/{{model}}/{{corpus}}/analysis{{weighting}}.csv",
    log:
        logs("template/{model}/{corpus}/analysis{weighting}"),
    benchmark:
        benchmarks("template/{model}/{corpus}/analysis{weighting}")
    conda:
        ENV
    resources:
        mem_mb=1000,  # they stream: a few per-head sums and the current batch
    params:
        options={},
        weighting=weighting,
        max_examples=None,
        float_formats={},
    script:
        "../scripts/analysis.py"
