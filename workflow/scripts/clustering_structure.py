"""Rule clustering_structure: within- vs between-layer (and behaviour) distances, permutation tests."""

import pandas as pd

from headatlas.analyses.clustering import (distance_matrix, euclidean, group_structure, paper_claims,
                                           stress1)
from headatlas.io import atomic_open
from headatlas.pipeline import rule_logging

with rule_logging(snakemake) as log:
    p = snakemake.params
    dist = distance_matrix(pd.read_csv(snakemake.input.distances))
    coords = pd.read_csv(snakemake.input.coordinates)
    planar = euclidean(coords[["x", "y"]].to_numpy())
    labelled = (coords["behaviour"] != "other").to_numpy()  # 'other' is no behaviour cluster
    tests = {
        ("js", "layer"): (dist, coords["layer"]),
        ("mds", "layer"): (planar, coords["layer"]),
        ("js", "behaviour"): (dist[labelled][:, labelled], coords.loc[labelled, "behaviour"]),
    }
    parts = []
    for (space, grouping), (d, labels) in tests.items():
        part = group_structure(d, labels.to_numpy(), n_permutations=p.n_permutations, seed=p.seed)
        part.insert(0, "grouping", grouping)
        part.insert(0, "space", space)
        parts.append(part)
    structure = pd.concat(parts, ignore_index=True)
    claims = paper_claims(structure, stress1(dist, coords[["x", "y"]].to_numpy()), p.average)
    for key, table in (("structure", structure), ("claims", claims)):
        with atomic_open(snakemake.output[key]) as handle:
            table.to_csv(handle, index=False, float_format="%.6g")
    log.info("\n%s\n%s", structure.to_string(index=False), claims.to_string(index=False))
