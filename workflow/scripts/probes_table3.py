"""Rule probe_table3: Clark's Table 3 beside ours (mean +- sd over seeds), as CSV and bar chart."""

from headatlas.analyses.probes import evaluations, read_runs, table3, table3_caption
from headatlas.pipeline import rule_logging, write_table
from headatlas.plots.probes import plot_table3

with rule_logging(snakemake) as log:
    p, wc = snakemake.params, snakemake.wildcards
    runs = read_runs(snakemake.input.runs)
    table = table3(runs)
    write_table(table, snakemake.output.table, float_format="%.4g")
    plot_table3(table, evaluations(runs), snakemake.output.figure,
                table3_caption(runs, wc.model, wc.corpus, p.random_model, len(p.seeds), p.epochs,
                               p.batch_size))
    log.info("Table 3:\n%s", table.to_string(index=False))
