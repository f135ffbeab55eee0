"""Figure for gradient importance (Clark et al. 2019 §3.2, Fig. 3): mean |dL/d attention| by layer.

Imports nothing from :mod:`headatlas.analyses.gradients`, which pulls in torch:
the key kinds are repeated here as labels.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from headatlas.plots.base import COLOURS, atomic_savefig, captioned_figure, layer_axis, points_by_layer

# Key kinds of headatlas.analyses.gradients.KINDS (not imported: that module pulls in torch).
KIND_LABELS = {"sep": "[SEP]", "punct": ". or ,", "cls": "[CLS]", "other": "other (incl. [CLS])"}


def plot_gradients(heads: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Fig. 3: mean |dL/d attention| by layer for keys [SEP], ./, other ([CLS] included), and [CLS] alone.

    Left: the values (points = heads, lines = layer means), as in the paper.
    Right: each kind relative to "other" tokens (log scale), so layers with
    different gradient scales can be compared.
    """
    layers = heads.groupby("layer", as_index=False)[list(KIND_LABELS)].mean()
    fig = captioned_figure(10, 4, caption)
    left, right = fig.subplots(1, 2)
    for kind, label in KIND_LABELS.items():
        points_by_layer(left, heads, kind, label, COLOURS[kind], alpha=0.35)
        if kind != "other":
            right.plot(layers["layer"], layers[kind] / layers["other"], color=COLOURS[kind],
                       marker="o", markersize=3, label=f"{label} / other")
    right.axhline(1.0, color="k", linewidth=0.8, linestyle="--")
    right.set_yscale("log")
    n_layers = int(layers["layer"].max())
    for ax, ylabel, title in ((left, "avg. |dL / d attention|", "gradient w.r.t. attention weights"),
                              (right, "relative to other tokens", "ratio to other tokens")):
        layer_axis(ax, n_layers, ylabel)  # each panel its legend, beside it
        ax.set_title(title, fontsize=10)
    atomic_savefig(fig, path)
