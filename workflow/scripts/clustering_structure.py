"""Rule clustering_structure: within- vs between-layer (and behaviour) distances, permutation tests."""

import pandas as pd

from headatlas.analyses.clustering import distance_matrix, paper_claims, structure_table
from headatlas.claims import claims_table
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table

with rule_logging(snakemake) as log:
    p = snakemake.params
    structure = structure_table(distance_matrix(pd.read_csv(snakemake.input.distances)),
                                pd.read_csv(snakemake.input.coordinates),
                                n_permutations=p.n_permutations, seed=p.seed)
    claims = claims_table(paper_claims(structure, structure.attrs["stress"], p.average))
    write_table(structure, snakemake.output.structure, float_format="%.6g")
    write_table(claims, snakemake.output.claims, float_format="%.6g")
    log.info("\n%s\n%s", structure.to_string(index=False), claims.to_string(index=False))
