"""Figure for head clustering (Clark et al. 2019 Fig. 6): the heads in 2-D by metric MDS."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pandas as pd

from headatlas.plots.base import BEHAVIOURS, COLOURS, atomic_savefig, captioned_figure, legend_beside



def plot_mds(coords: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Fig. 6: heads in 2-D (metric MDS), coloured by behaviour (left) and by layer (right).

    ``coords`` has one row per head with ``layer``, ``head``, ``behaviour``,
    ``x``, ``y``. Each point is labelled with its layer number (left panel);
    the right panel joins each layer's heads to the layer's centroid.
    """
    fig = captioned_figure(11, 5.2, caption)
    left, right = fig.subplots(1, 2)
    for behaviour, group in coords.groupby("behaviour", sort=False):
        left.scatter(group["x"], group["y"], s=40, color=COLOURS.get(behaviour, "k"),
                     label=BEHAVIOURS.get(behaviour, behaviour), edgecolors="white", linewidths=0.5)
    for x, y, layer in zip(coords["x"], coords["y"], coords["layer"]):
        left.text(x, y, str(layer), fontsize=6, ha="center", va="center")
    legend_beside(left)
    left.set_title("heads coloured by behaviour (number = layer)", fontsize=10)
    n_layers = int(coords["layer"].max())
    cmap = matplotlib.colormaps["viridis"]
    for layer, group in coords.groupby("layer"):
        colour = cmap((layer - 1) / max(1, n_layers - 1))
        cx, cy = group["x"].mean(), group["y"].mean()
        for x, y in zip(group["x"], group["y"]):
            right.plot([cx, x], [cy, y], color=colour, linewidth=0.6, alpha=0.6)
        right.scatter(group["x"], group["y"], s=25, color=colour, label=f"layer {layer}")
    legend_beside(right, ncol=2 if n_layers > 12 else 1)
    right.set_title("heads coloured by layer (lines to the layer's centroid)", fontsize=10)
    for ax in (left, right):
        ax.set_aspect("equal", adjustable="datalim")
        ax.set(xticks=[], yticks=[])
    atomic_savefig(fig, path)
