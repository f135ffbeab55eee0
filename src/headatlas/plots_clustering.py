"""Figures for head clustering (Clark et al. 2019 Fig. 6) and gradient importance (Fig. 3).

Built with :class:`matplotlib.figure.Figure` (no pyplot state) and written with
:func:`headatlas.plots.atomic_savefig`: whole or not at all, byte-stable SVG.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

from headatlas.plots import BEHAVIOURS, COLOURS, captioned_figure, atomic_savefig

# Behaviour colours follow the surface figures; "broad" and "other" get their own.
BEHAVIOUR_COLOURS = {"broad": "#f39c12", "next": COLOURS["next"], "prev": COLOURS["prev"],
                     "cls": COLOURS["cls"], "sep": COLOURS["sep"], "punct": "#1abc9c",
                     "other": "#bdc3c7"}
# Key kinds of headatlas.analyses.gradients.KINDS (not imported: that module pulls in torch).
KIND_LABELS = {"sep": "[SEP]", "punct": ". or ,", "cls": "[CLS]", "other": "other"}
KIND_COLOURS = {"sep": COLOURS["sep"], "punct": "#e67e22", "cls": COLOURS["cls"], "other": "#7f8c8d"}


def plot_mds(coords: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Fig. 6: heads in 2-D (metric MDS), coloured by behaviour (left) and by layer (right).

    ``coords`` has one row per head with ``layer``, ``head``, ``behaviour``,
    ``x``, ``y``. Each point is labelled with its layer number (left panel);
    the right panel joins each layer's heads to the layer's centroid.
    """
    fig = captioned_figure(11, 5.2, caption)
    left, right = fig.subplots(1, 2)
    for behaviour, group in coords.groupby("behaviour", sort=False):
        left.scatter(group["x"], group["y"], s=40, color=BEHAVIOUR_COLOURS.get(behaviour, "k"),
                     label=BEHAVIOURS.get(behaviour, behaviour), edgecolors="white", linewidths=0.5)
    for x, y, layer in zip(coords["x"], coords["y"], coords["layer"]):
        left.text(x, y, str(layer), fontsize=6, ha="center", va="center")
    left.legend(fontsize=7, loc="best")
    left.set_title("heads coloured by behaviour (number = layer)", fontsize=10)
    n_layers = int(coords["layer"].max())
    cmap = matplotlib.colormaps["viridis"]
    for layer, group in coords.groupby("layer"):
        colour = cmap((layer - 1) / max(1, n_layers - 1))
        cx, cy = group["x"].mean(), group["y"].mean()
        for x, y in zip(group["x"], group["y"]):
            right.plot([cx, x], [cy, y], color=colour, linewidth=0.6, alpha=0.6)
        right.scatter(group["x"], group["y"], s=25, color=colour, label=f"layer {layer}")
    right.legend(fontsize=7, loc="best", ncol=2 if n_layers > 6 else 1)
    right.set_title("heads coloured by layer (lines to the layer's centroid)", fontsize=10)
    for ax in (left, right):
        ax.set_aspect("equal", adjustable="datalim")
        ax.set(xticks=[], yticks=[])
    atomic_savefig(fig, path)


def plot_gradients(heads: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Fig. 3: mean |dL/d attention| by layer for keys [SEP], ./, [CLS], other.

    Left: the values (points = heads, lines = layer means), as in the paper.
    Right: each kind relative to "other" tokens (log scale), so layers with
    different gradient scales can be compared.
    """
    layers = heads.groupby("layer", as_index=False)[list(KIND_LABELS)].mean()
    fig = captioned_figure(10, 4, caption)
    left, right = fig.subplots(1, 2)
    for kind in KIND_LABELS:
        colour = KIND_COLOURS[kind]
        left.scatter(heads["layer"], heads[kind], s=8, color=colour, alpha=0.35, linewidths=0)
        left.plot(layers["layer"], layers[kind], color=colour, marker="o", markersize=3,
                  label=KIND_LABELS[kind])
        if kind != "other":
            right.plot(layers["layer"], layers[kind] / layers["other"], color=colour, marker="o",
                       markersize=3, label=f"{KIND_LABELS[kind]} / other")
    right.axhline(1.0, color="k", linewidth=0.8, linestyle="--")
    right.set_yscale("log")
    left.set(ylabel="avg. |dL / d attention|")
    right.set(ylabel="relative to other tokens")
    for ax, title in ((left, "gradient w.r.t. attention weights"), (right, "ratio to other tokens")):
        ax.set(xlabel="layer", xticks=np.arange(1, int(layers["layer"].max()) + 1))
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    atomic_savefig(fig, path)
