"""Corpus summary table: preparation counts plus what extraction kept and skipped."""

from __future__ import annotations

import pandas as pd

from headatlas.store import Store


def corpus_summary(stats: dict, store_paths: list[str]) -> pd.DataFrame:
    """One ``quantity, value`` row per count, so the report shows every drop and skip."""
    rows = [(key, value) for key, value in stats.items() if not isinstance(value, dict)]
    for key, value in stats.items():
        if isinstance(value, dict):
            rows += [(f"{key}.{k}", v) for k, v in value.items()]
    kept, skipped, too_long = 0, [], 0
    for path in store_paths:
        with Store(path) as store:
            kept += len(store)
            too_long += int(store.attrs.get("n_too_long", 0))
            skipped += store.skipped_ids
    rows += [("extracted", kept), ("skipped_over_max_length", too_long),
             ("skipped_total", len(skipped)),
             ("skipped_ids (first 20)", " ".join(skipped[:20]))]
    return pd.DataFrame(rows, columns=["quantity", "value"])
