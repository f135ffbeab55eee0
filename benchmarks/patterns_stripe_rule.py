"""Kovaleva's pattern classifier: is a stripe threshold relative to uniform better? (issue 37)

    .venv/bin/python benchmarks/patterns_stripe_rule.py

A key column is a stripe (a dark column of the map) when its off-band mass per query is at least
``1/n + s`` today (additive: about 6x uniform at n = 128, 4x at n = 80). Issue 37 found maps with
several stripes of 3-6x uniform called heterogeneous at n = 128 and suggested a threshold that
scales with n. This script tunes both rules on the tune half of the packaged hand-labelled maps
(the grid search of ``headatlas.analyses.patterns.tune``; the relative rule's multiple m in
2, 3, 4, 6 or off, encoded as m/10 for the Thresholds record) and prints the held-out agreement
of each, for all maps and for the maps of n >= 120 wordpieces. No file is written.
"""

from __future__ import annotations

import numpy as np

from headatlas.analyses.patterns import (GRID, PATTERNS, above_chance, agreement, classify, features_for,
                                          map_features, tune)
from headatlas.pipeline.plan import packaged_pattern_labels
from headatlas.analyses.labels import load_maps, read_labels

MULTIPLES = (0.2, 0.3, 0.4, 0.6, 1.0)  # m/10; 1.0 = stripes off


def relative_features(maps, segments, columns: int, key: float) -> np.ndarray:
    """Features with a stripe at ``10 key / n`` (m times uniform) of each map's own n."""
    rows = []
    for attn, seg in zip(maps, segments):
        stripe = (10 * key - 1.0) / attn.shape[-1] if key < 1.0 else 1.0
        rows.append(above_chance(map_features(attn, seg, columns, stripe), seg, columns, stripe))
    return np.stack(rows)


def main() -> None:
    labels_path, maps_path = packaged_pattern_labels()
    labels = read_labels(labels_path)
    maps, segments, _ = load_maps(maps_path, labels)
    truth, halves = labels["pattern"].to_numpy(), labels["half"].to_numpy()
    tune_rows, test_rows = halves == "tune", halves == "test"
    long = np.array([m.shape[-1] >= 120 for m in maps])
    print(f"{len(labels)} labelled maps, {int(test_rows.sum())} held out; n >= 120: {int(long.sum())} "
          f"({int((long & test_rows).sum())} held out)")
    rules = {"additive 1/n + s": ({**GRID}, lambda k, s: features_for(maps, segments, k, s)),
             "relative m/n": ({**GRID, "stripe": MULTIPLES}, lambda k, s: relative_features(maps, segments, k, s))}
    for name, (grid, features_of) in rules.items():
        features = {(k, s): features_of(k, s) for k in grid["columns"] for s in grid["stripe"]}
        tuned, _ = tune({key: f[tune_rows] for key, f in features.items()}, list(truth[tune_rows]), grid)
        predicted = np.array(PATTERNS)[classify(features[(tuned.columns, tuned.stripe)], tuned)]
        held = agreement(list(truth[test_rows]), list(predicted[test_rows]))
        rows = long & test_rows
        print(f"{name}: columns {tuned.columns}, stripe {tuned.stripe}; held-out accuracy "
              f"{held['accuracy']:.1f}% [{held['accuracy_low']:.1f}, {held['accuracy_high']:.1f}], "
              f"kappa {held['kappa']:.3f}; n >= 120 held out: "
              f"{100 * float((predicted[rows] == truth[rows]).mean()):.1f}% of {int(rows.sum())}")


if __name__ == "__main__":
    main()
