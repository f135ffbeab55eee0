#!/usr/bin/env python
"""Kovaleva's patterns (issue 37): a block-enriched sample of 128-wordpiece maps to label by eye.

    .venv/bin/python benchmarks/patterns_block_sample.py \\
        [--store results/minilm/wikipedia/attention/shard-0.h5] \\
        [--exclude benchmarks/labels/patterns_fresh128.csv] --out labels.csv

Block maps are rare at random (1 of 120 in ``patterns_fresh128.csv``), so the held-out block
precision and recall need maps chosen for it. From the default run's kept MiniLM store (the
segments the claims read), one map per input, no input of ``--exclude``:

- 40 **block candidates**: ranked by ``block`` (:func:`headatlas.analyses.patterns.map_features`),
  10 each from the top 0.1%, 0.1-1%, 1-3% and 3-10% of all maps, so the sample spans the
  threshold. The labelled 100 (``b*``) were drawn at c9d7755, whose block was the in-sentence mass
  beyond each offset's share of in-sentence pairs, with stripes at 1/n + 0.04; run this script
  at that commit to draw them again (today's feature ranks the maps differently);
- 10 **local windows**: the top of the former block feature (in-segment mass more than 3 tokens
  away, no distance correction), which the new one should not call block;
- 10 **multi-stripe** maps (4 or more stripes);
- 40 **random** maps, balanced over layers.

Each stratum is split into ``tune`` / ``test`` halves alternately in a seeded order; the rows are
shuffled (the sheets show neither the stratum nor the layer and head). Draw the sheets with
``headatlas label sheets STORE --labels OUT --out sheets/``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from headatlas.analyses.patterns import (BLOCK_LOCAL, Thresholds, above_chance, example_segments, example_units,
                                         map_features)
from headatlas.pipeline.config import default_config
from headatlas.analyses.labels import COLUMNS
from headatlas.store.reader import Store

HERE = Path(__file__).resolve().parent
STRATA = (("block, top 0.1%", 0.999, 1.0), ("block, top 0.1-1%", 0.99, 0.999),
          ("block, top 1-3%", 0.97, 0.99), ("block, top 3-10%", 0.90, 0.97))


def features(store_path: str, thresholds: Thresholds) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Per map: the features above chance ``[E, L, H, 5]``, the former (in-segment) block
    ``[E, L, H]``, and the inputs (index, id, length)."""
    found, former, inputs = [], [], []
    with Store(store_path) as store:
        for position in range(len(store)):
            e = store.example(position)
            units = example_units(e)
            f = map_features(e.attn, units, thresholds.columns, thresholds.stripe)
            found.append(above_chance(f, units, thresholds.columns, thresholds.stripe))
            former.append(_in_segment(e, f))
            inputs.append((int(store.example_index[position]), e.id, e.n_tokens))
    return np.stack(found), np.stack(former), pd.DataFrame(inputs, columns=["example_index", "example_id", "n_tokens"])


def _in_segment(e, f: np.ndarray) -> np.ndarray:
    """The former block feature: of the rest (not band, not top columns), the share within the
    query's segment more than 3 tokens away (top columns left in: a ranking, not the feature)."""
    segments = example_segments(e.token_type_ids, e.sep_mask)
    pos = np.arange(e.n_tokens)
    far = (segments[:, None] == segments[None, :]) & (np.abs(pos[:, None] - pos[None, :]) > BLOCK_LOCAL)
    within = (e.attn.astype(np.float32) * far).sum((-2, -1)) / e.n_tokens
    return within / np.clip(1 - f[..., 0] - f[..., 1], 1e-3, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default="results/minilm/wikipedia/attention/shard-0.h5")
    parser.add_argument("--exclude", default=HERE / "labels" / "patterns_fresh128.csv")
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--prefix", default="b")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    thresholds = Thresholds.from_dict(default_config()["patterns"]["thresholds"])
    f, former, inputs = features(args.store, thresholds)
    n_inputs, n_layers, n_heads = f.shape[:3]
    rng = np.random.default_rng(args.seed)
    used = set(pd.read_csv(args.exclude)["example_index"]) if args.exclude else set()
    chosen: list[tuple[str, int, int, int]] = []

    def take(stratum: str, candidates: np.ndarray, k: int) -> None:
        """k maps of the flat candidate indices, at random, one per unused input."""
        for flat in rng.permutation(candidates):
            e, layer, head = np.unravel_index(flat, f.shape[:3])
            if inputs["example_index"][e] in used:
                continue
            used.add(inputs["example_index"][e])
            chosen.append((stratum, int(e), int(layer), int(head)))
            k -= 1
            if not k:
                return
        raise SystemExit(f"{stratum}: not enough candidates")

    block = np.nan_to_num(f[..., 2], nan=-np.inf).ravel()
    for stratum, low, high in STRATA:
        lo, hi = np.quantile(block, [low, high])
        take(stratum, np.flatnonzero((block >= lo) & (block <= hi)), 10)
    take("local window (former block top 1%)",
         np.flatnonzero(former.ravel() >= np.quantile(former, 0.99)), 10)
    take("multi-stripe (>= 4 stripes)", np.flatnonzero(f[..., 4].ravel() >= 4), 10)
    for layer in range(n_layers):
        per_layer = 40 // n_layers + (layer < 40 % n_layers)
        take("random, balanced over layers", np.ravel_multi_index(
            np.nonzero(np.broadcast_to((np.arange(n_layers) == layer)[None, :, None], f.shape[:3])), f.shape[:3]),
            per_layer)
    rows = []
    for stratum in dict.fromkeys(s for s, *_ in chosen):
        members = [c for c in chosen if c[0] == stratum]
        halves = ["tune", "test"] * len(members)
        for (_, e, layer, head), half in zip([members[i] for i in rng.permutation(len(members))], halves):
            rows.append({**inputs.iloc[e].to_dict(), "layer": layer + 1, "head": head + 1, "half": half,
                         "pattern": "", "note": "", "selection": stratum, "block": round(float(f[e, layer, head, 2]), 4)})
    table = pd.DataFrame(rows).sample(frac=1, random_state=args.seed).reset_index(drop=True)
    table.insert(0, "map", [f"{args.prefix}{i:03d}" for i in range(len(table))])
    table[[*COLUMNS, "selection", "block"]].to_csv(args.out, index=False)
    print(f"{len(table)} maps -> {args.out}")
    print(table.groupby(["selection", "half"]).size().unstack())


if __name__ == "__main__":
    main()
