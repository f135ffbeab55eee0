"""Cross-model comparisons: one measurement of every configured model, side by side.

Each function takes the per-model tables an analysis already wrote and stacks
them into one long table with a ``model`` column, ready for one figure
(:mod:`headatlas.plots.compare`):

* :func:`special_by_depth`: attention to ``[CLS]``, ``[SEP]`` and ``.``/``,``
  per layer, against relative depth (layer / number of layers), so models of
  different depths share one axis;
* :func:`table1_by_model`: Table 1's best-head and offset accuracies per
  relation and treebank, with the paper's number beside;
* :func:`shares_by_model`: the share of each Guan et al. head type per model,
  with BERT-large's shares as a last row;
* :func:`sinks_by_depth`: Gu et al.'s sink rate per layer and key role, against
  relative depth, under each weighting a model has.

Light module (pandas only).
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd

SPECIAL = ("cls", "sep", "punct")
PAPER_MODEL = "paper (BERT-large)"


def special_by_depth(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per model and layer: mean attention (over heads) to [CLS], [SEP] and . , and the relative depth.

    ``tables`` maps a model to its ``special_tokens`` table (per head). Columns:
    ``model``, ``layer``, ``n_layers``, ``depth`` (layer / n_layers), ``cls``, ``sep``, ``punct``.
    """
    parts = [with_depth(table.groupby("layer", as_index=False)[list(SPECIAL)].mean(), model=model)
             for model, table in tables.items()]
    columns = ["model", "layer", "n_layers", "depth", *SPECIAL]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def with_depth(table: pd.DataFrame, **columns) -> pd.DataFrame:
    """``table`` (a ``layer`` column, 1-based) with ``columns``, ``n_layers`` (its deepest layer)
    and ``depth`` = layer / n_layers, so models of different depths share one axis."""
    n_layers = int(table["layer"].max())
    return table.assign(**columns, n_layers=n_layers, depth=table["layer"] / n_layers)


def table1_by_model(tables: Mapping[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """Table 1 of every (model, treebank), stacked: the rows we measured, the paper's number beside.

    ``tables`` maps ``(model, treebank)`` to its :func:`~headatlas.analyses.syntax.table1`
    (read back from CSV). Columns: ``model``, ``corpus``, ``relation``,
    ``paper_relation``, ``head``, ``acc`` (+ ``acc_low``, ``acc_high`` when the
    table has intervals), ``baseline_offset``, ``baseline_acc``, ``paper_acc``.
    """
    keep = ["relation", "paper_relation", "head", "acc", "acc_low", "acc_high", "baseline_offset",
            "baseline_acc", "paper_acc"]
    parts = []
    for (model, corpus), table in tables.items():
        rows = table[table["relation"].fillna("").astype(str) != ""]
        parts.append(rows.reindex(columns=keep).assign(model=model, corpus=corpus))
    columns = ["model", "corpus", *keep]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def shares_by_model(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Share (%) of each head type per model, and the paper's (BERT-large) as the last "model".

    ``tables`` maps a model to its ``type_shares`` table (``type``, ``heads``,
    ``share_pct``, ``paper_pct``, ``mean_depth``; a model without distinct types has one
    row, ``no distinct types``, and no paper shares). Columns: ``model``, ``type``,
    ``heads``, ``share_pct``, ``mean_depth``.
    """
    parts = [t[["type", "heads", "share_pct", "mean_depth"]].assign(model=m) for m, t in tables.items()]
    named = [t for t in tables.values() if t["paper_pct"].notna().any()]  # not "no distinct types"
    if named:
        paper = named[0][named[0]["paper_pct"].notna()]
        parts.append(pd.DataFrame({"type": paper["type"], "heads": pd.NA, "share_pct": paper["paper_pct"],
                                   "mean_depth": pd.NA, "model": PAPER_MODEL}))
    columns = ["model", "type", "heads", "share_pct", "mean_depth"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def caption(what: str, models, corpora) -> str:
    """Footnote of a cross-model figure: what, which models, which corpora."""
    return (f"{what}; models: {', '.join(models)}; corpora: {', '.join(corpora)}. Each model's own "
            "figures and tables give N, its deviations from the paper and its input lengths.")


def sinks_by_depth(tables: Mapping[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """Sink rate per model, weighting, layer and key role, with the relative depth.

    ``tables`` maps ``(model, weighting)`` to that run's sinks ``layers`` table (``layer``,
    ``role``, ``sink_rate``: :class:`headatlas.analyses.sinks.SinkRate`). Columns: ``model``,
    ``weighting``, ``layer``, ``n_layers``, ``depth`` (layer / n_layers), ``role``, ``sink_rate``.
    """
    parts = [with_depth(table[["layer", "role", "sink_rate"]], model=model, weighting=weighting)
             for (model, weighting), table in tables.items()]
    columns = ["model", "weighting", "layer", "n_layers", "depth", "role", "sink_rate"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


ROLES = ("cls", "sep", "punct", "first", "other")  # headatlas.analyses.sinks.ROLES (no torch here)


def activations_by_depth(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Massive activations per model and hidden state against relative depth.

    ``tables`` maps a model to its activations ``layers`` table (``layer`` 0 = the embeddings'
    output .. L, ``top_ratio``, ``on_<role>``: :mod:`headatlas.analyses.activations`). Columns:
    ``model``, ``layer``, ``n_layers``, ``depth`` (layer / n_layers: 0 = the embeddings),
    ``top_ratio``, ``carrier`` (the role whose token most often carries the top entry) and its
    ``carrier_share``."""
    columns = ["model", "layer", "n_layers", "depth", "top_ratio", "carrier", "carrier_share"]
    parts = []
    for model, table in tables.items():
        shares = table[[f"on_{r}" for r in ROLES]].to_numpy()
        parts.append(with_depth(table[["layer", "top_ratio"]], model=model,
                                carrier=[ROLES[k] for k in shares.argmax(axis=1)],
                                carrier_share=shares.max(axis=1)))
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)
