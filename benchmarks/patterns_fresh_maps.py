"""Kovaleva's pattern classifier on fresh maps labelled by eye (issue 37): agreement at 128 wordpieces.

    .venv/bin/python benchmarks/patterns_fresh_maps.py \\
        [--labels benchmarks/labels/patterns_fresh220.csv] [--half test] \\
        [--store results/minilm/wikipedia/attention/shard-0.h5]

``patterns_fresh220.csv``: the 220 maps of the default run's segments in the packaged set
(``f*``, ``b*``: :mod:`headatlas.report.labelling`), labelled by three labellers, the majority;
its tune half is part of the set the config's thresholds were tuned on, so ``--half test``
(default) scores the held-out maps only (``--half all``: every map).
``patterns_fresh128.csv``: the first 120 of them, each labelled once (before the block change).

The claims read the default run's 128-wordpiece Wikipedia segments. This scores the
classifier (``--classifier``, default the embedded config's: the forest learned from the
packaged labels' tune half, or the rules with the config's thresholds) on labelled maps of
those segments, read
from the default run's kept MiniLM store (``selection`` and ``source`` columns: how each was
chosen and by whom it was labelled, from contact sheets that show the id, the length and the
segment and sentence boundaries only). The store must be the one they were sampled from
(``make reproduce`` keeps it; the script checks every map's input id and length).
Prints the agreement with a Wilson 95% interval, Cohen's kappa, per-pattern precision and
recall, and the confusion matrix. No file is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from headatlas.analyses.patterns import (CLASSIFIERS, PATTERNS, Thresholds, agreement, classify, confusion,
                                          features_for, per_class, trained_forest)
from headatlas.pipeline.config import default_config
from headatlas.report.labelling import labelled_maps

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", default=HERE / "labels" / "patterns_fresh220.csv")
    parser.add_argument("--half", choices=("test", "tune", "all"), default="test")
    parser.add_argument("--store", default="results/minilm/wikipedia/attention/shard-0.h5")
    parser.add_argument("--classifier", choices=CLASSIFIERS, default=default_config()["patterns"]["classifier"])
    args = parser.parse_args()
    labels = pd.read_csv(args.labels, keep_default_na=False, dtype={"example_id": str})
    if args.half != "all":
        labels = labels[labels["half"] == args.half].reset_index(drop=True)
    unknown = sorted(set(labels["pattern"]) - set(PATTERNS))
    if unknown:
        raise SystemExit(f"{args.labels}: patterns {unknown} are not among {PATTERNS}")
    thresholds = Thresholds.from_dict(default_config()["patterns"]["thresholds"])
    maps, segments = labelled_maps([args.store], labels)
    if args.classifier == "forest":
        features = features_for(maps, segments, thresholds.columns, thresholds.stripe, shape=True)
        predicted = list(np.array(PATTERNS)[trained_forest(thresholds.columns, thresholds.stripe).predict(features)])
    else:
        features = features_for(maps, segments, thresholds.columns, thresholds.stripe)
        predicted = list(np.array(PATTERNS)[classify(features, thresholds)])
    truth = list(labels["pattern"])
    found = agreement(truth, predicted)
    print(f"{len(labels)} maps ({', '.join(sorted(set(labels['source'])))}), {args.classifier}, "
          f"thresholds {thresholds}")
    print(f"agreement {found['accuracy']:.1f}% [{found['accuracy_low']:.1f}, {found['accuracy_high']:.1f}], "
          f"kappa {found['kappa']:.3f} [{found['kappa_low']:.3f}, {found['kappa_high']:.3f}]")
    print(per_class(truth, predicted).to_string(index=False))
    print("confusion (rows: labelled by eye, columns: classifier)")
    print(confusion(truth, predicted).to_string())


if __name__ == "__main__":
    main()
