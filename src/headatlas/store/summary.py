"""Corpus summary table: preparation counts plus what extraction kept and skipped."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headatlas.store.states import open_record


def corpus_summary(stats: dict, store_paths: list[str]) -> pd.DataFrame:
    """One ``quantity, value`` row per count, so the report shows every drop and skip, and the
    length distribution (wordpieces) of what was extracted (``store_paths``: the stores, or in
    fused mode the states files)."""
    rows = [(key, value) for key, value in stats.items() if not isinstance(value, dict)]
    for key, value in stats.items():
        if isinstance(value, dict):
            rows += [(f"{key}.{k}", v) for k, v in value.items()]
    kept, skipped, too_long, lengths = 0, [], 0, []
    for path in store_paths:
        with open_record(path) as store:
            kept += len(store)
            too_long += int(store.attrs.get("n_too_long", 0))
            skipped += store.skipped_ids
            lengths += store.lengths.tolist()
    rows += [("extracted", kept), ("skipped_over_max_length", too_long),
             ("skipped_total", len(skipped)),
             ("skipped_ids (first 20)", " ".join(skipped[:20]))]
    if lengths:  # wordpieces per extracted example, specials included
        p5, median, p95 = np.percentile(lengths, [5, 50, 95])
        rows += [("extracted_length_median", float(median)), ("extracted_length_p05", float(p5)),
                 ("extracted_length_p95", float(p95)), ("extracted_length_max", int(max(lengths)))]
    return pd.DataFrame(rows, columns=["quantity", "value"])
