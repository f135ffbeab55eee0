"""Rule probe_edges: Coenen et al.'s edge classifier on attention vectors of word pairs."""

from headatlas.analyses.probes import edge_runs
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    p = snakemake.params
    table = edge_runs(p.attention, snakemake.input.train, snakemake.wildcards.corpus, p.test,
                      snakemake.input.tests, p.seeds, max_train_pairs=p.edge_train_pairs)
    write_table(table, snakemake.output[0], float_format="%.4g")
    log.info("edge classifier:\n%s", table.to_string(index=False))
