"""Rule probe_table3: Clark's Table 3 beside ours (mean +- sd over seeds), as CSV and bar chart."""

import pandas as pd

from headatlas.analyses.probes import table3
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging
from headatlas.plots.probes import plot_table3

with rule_logging(snakemake) as log:
    runs = pd.concat([pd.read_csv(path, keep_default_na=False, na_values=[""])
                      for path in snakemake.input.runs], ignore_index=True)
    table = table3(runs)
    with atomic_open(snakemake.output.table) as handle:
        table.to_csv(handle, index=False, float_format="%.4g")
    evals = list(dict.fromkeys(runs["eval"]))
    coverage = runs.drop_duplicates("eval").set_index("eval")
    counts = "; ".join(f"{e.replace('_', ' ')}: {coverage.loc[e, 'sentences']} sentences"
                       f" ({coverage.loc[e, 'corpus_sentences'] - coverage.loc[e, 'sentences']}"
                       " too long, left out)" for e in evals)
    p = snakemake.params
    caption = (f"Probe attention: {snakemake.wildcards.model} (random-encoder twin "
               f"{p.random_model}); trained on {snakemake.wildcards.corpus} train, epoch chosen on "
               f"dev; mean +- sd over {len(p.seeds)} seeds ({p.epochs} epoch(s), Adam lr 0.002, "
               f"{p.batch_size} sentence(s) per step). {counts}. Deviations: the paper probes "
               f"bert-base-cased on PTB/SD dev with 100-d GloVe; here {snakemake.wildcards.model} "
               "on UD treebanks with 50-d GloVe 6B.")
    plot_table3(table, evals, snakemake.output.figure, caption)
    log.info("Table 3:\n%s", table.to_string(index=False))
