"""Rule ablation_claims: Guan et al.'s ablation findings, judged on our grid (paper_claims.csv),
each verdict on the paired bootstrap interval over the grid's per-unit scores; not applicable when
the head types ablated are unstable across refits."""

import pandas as pd

from headatlas.analyses.result import Result
from headatlas.claims import claims_table
from headatlas.interventions.ablation import paper_claims, saved_units, type_stability, unstable_types
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    grid = Result.load(snakemake.input.result)
    units = saved_units(grid.arrays, grid.attrs)
    boot = snakemake.params.bootstrap
    found = paper_claims(pd.read_csv(snakemake.input.table), grid.attrs["task"], units,
                         n_boot=boot["n"], seed=boot["seed"])
    if snakemake.input.stability:  # types from the workflow's clustering, not a table given by hand
        found = unstable_types(found, type_stability(pd.read_csv(snakemake.input.stability)),
                               snakemake.params.min_type_stability)
    claims = claims_table(found)
    write_table(claims, snakemake.output[0])
    log.info("\n%s", claims[["id", "ours", "verdict"]].to_string(index=False))
