#!/usr/bin/env python
"""Kovaleva's patterns (issue 37): several labellers' votes on the same maps -> one label table.

    .venv/bin/python benchmarks/patterns_merge_votes.py --maps TO_LABEL.csv --key KEY.csv \\
        --votes A.csv B.csv C.csv --sample SAMPLE.csv --fresh benchmarks/labels/patterns_fresh128.csv \\
        --out LABELS.csv

The maps were labelled under neutral ids (``q000``...: ``TO_LABEL.csv``, with ``KEY.csv`` mapping
them back to ``f*``, the 120 random maps of ``patterns_fresh128.csv`` renamed, and ``b*``, the
block-enriched sample of ``patterns_block_sample.py``); each labeller wrote ``map,pattern,note``.
A map's label is the majority of the votes; with no majority, the label the map had before
(``f*`` maps) if one of the votes, else the map is left out (counted). The note keeps every vote.
"""

from __future__ import annotations

import argparse
from collections import Counter

import pandas as pd

from headatlas.analyses.labels import COLUMNS, PATTERNS

CORPUS = "wikipedia segments of the default run: up to 128 wordpieces, seed 0"
SOURCE = "pictures (contact sheets with segment and sentence ticks), 3 AI helper sessions, each all 220 maps; majority"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("maps", "key", "sample", "fresh", "out"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--votes", nargs="+", required=True)
    args = parser.parse_args()
    read = dict(keep_default_na=False, dtype={"example_id": str})
    maps = pd.read_csv(args.maps, **read).merge(pd.read_csv(args.key), on="map")
    votes = [pd.read_csv(v, keep_default_na=False).set_index("map")["pattern"].str.strip() for v in args.votes]
    for path, v in zip(args.votes, votes):
        if set(v.index) != set(maps["map"]) or not set(v) <= set(PATTERNS):
            raise SystemExit(f"{path}: not one of {PATTERNS} for each of the {len(maps)} maps")
    fresh = pd.read_csv(args.fresh, **read)
    before = dict(zip(fresh["map"].str.replace("m", "f", regex=False), fresh["pattern"]))
    selection = dict(zip(fresh["map"].str.replace("m", "f", regex=False), fresh["selection"]))
    sample = pd.read_csv(args.sample, **read)
    selection.update(zip(sample["map"], sample["selection"]))
    rows, dropped = [], []
    for _, row in maps.iterrows():
        cast = [v[row["map"]] for v in votes]
        (top, count), *_ = Counter(cast).most_common()
        if count * 2 <= len(cast):
            top = before.get(row["orig"]) if before.get(row["orig"]) in cast else None
        if top is None:
            dropped.append(row["orig"])
            continue
        rows.append({**{c: row[c] for c in COLUMNS}, "map": row["orig"], "pattern": top,
                     "note": "votes " + " ".join(cast) + (f"; before: {before[row['orig']]}" if row["orig"] in before else ""),
                     "model": "minilm", "corpus": CORPUS, "selection": selection[row["orig"]], "source": SOURCE})
    table = pd.DataFrame(rows).sort_values("map").reset_index(drop=True)
    table.to_csv(args.out, index=False)
    agree = sum(len(set(v[m] for v in votes)) == 1 for m in maps["map"])
    print(f"{len(table)} maps -> {args.out}; all votes equal on {agree} of {len(maps)}; left out (no majority): {dropped}")
    print(table.groupby(["half"])["pattern"].value_counts().unstack(fill_value=0))


if __name__ == "__main__":
    main()
