"""Rule probe_table3: Clark's Table 3 beside ours (mean +- sd over seeds), as CSV and bar chart.

Optional inputs ``entropy`` and ``random_entropy`` (the surface ``entropy.csv`` of the probed
model and of its random twin) put each one's attention entropy beside the rows reading it.
"""

import pandas as pd

from headatlas.analyses.probes import evaluations, read_runs, table3, table3_caption
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.probes import plot_table3

with rule_logging(snakemake) as log:
    inp, p, wc = snakemake.input, snakemake.params, snakemake.wildcards
    runs = read_runs(inp.runs)
    entropy = {model: pd.read_csv(paths[0]) for model, paths in
               ((wc.model, inp.entropy), (p.random_model, inp.random_entropy)) if paths}
    table = table3(runs, entropy)
    write_table(table, snakemake.output.table, float_format="%.4g")
    plot_table3(table, evaluations(runs), snakemake.output.figure,
                table3_caption(runs, wc.model, wc.corpus, p.random_model, len(p.seeds), p.epochs,
                               p.batch_size, p.entropy_corpus if entropy else None))
    log.info("Table 3:\n%s", table.to_string(index=False))
