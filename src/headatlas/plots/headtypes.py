"""Figures for the head types of Guan et al. (2020): Fig. 1 (bottom), 2, 3 and 5.

* :func:`plot_tsne`: t-SNE map of all heads coloured by type (Fig. 2);
* :func:`plot_feature_boxes`: the 21 distance features per type (Fig. 1 bottom);
* :func:`plot_layer_shares`: share of each type per layer (Fig. 3);
* :func:`plot_type_grid`: layers x heads coloured by type (Fig. 5's colouring),
  heads not clustered consistently in the stability fits marked;
* :func:`plot_type_changes`: heads whose type changed between two models (Fig. 4's comparison).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from headatlas.analyses.headtypes import TYPES, feature_columns, layer_shares
from headatlas.heads import head_name
from headatlas.plots.base import (atomic_savefig, captioned_figure, draw_head_heatmap, head_grid,
                                  legend_beside)

TYPE_COLOURS = {"dense": "#4c72b0", "diagonal": "#dd8452", "dense&vertical": "#55a868",
                "vertical": "#c44e52"}
_EXTRA_COLOURS = ["#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd"]
_LABEL_HEADS_UP_TO = 150  # beyond this many heads, "layer-head" labels on the t-SNE map clutter it


def type_colours(types) -> dict[str, str]:
    """A fixed colour per type name (the paper's four, then extras for other k)."""
    names = [t for t in TYPES if t in set(types)] + sorted(set(types) - set(TYPES))
    extra = iter(_EXTRA_COLOURS * (1 + len(names) // len(_EXTRA_COLOURS)))
    return {n: TYPE_COLOURS.get(n) or next(extra) for n in names}


def _tick_labels(columns) -> list[str]:
    short = {"cls": "[CLS]", "sep": "[SEP]", "comma": ",", "period": ".", "self": "self"}
    return [short.get(c, c.removeprefix("win").lstrip("0")) for c in columns]


def plot_tsne(types: pd.DataFrame, xy: np.ndarray, path: str | Path, caption: str) -> None:
    """Fig. 2: the heads' t-SNE coordinates ``xy`` [heads, 2], coloured by ``types["type"]``."""
    if len(xy) != len(types):
        raise ValueError(f"{len(xy)} t-SNE points for {len(types)} heads")
    colours = type_colours(types["type"])
    fig = captioned_figure(6, 5, caption)
    ax = fig.subplots()
    for name, colour in colours.items():
        sel = (types["type"] == name).to_numpy()
        ax.scatter(xy[sel, 0], xy[sel, 1], s=30, color=colour, label=f"{name} ({sel.sum()})",
                   edgecolors="white", linewidths=0.5)
    if len(types) <= _LABEL_HEADS_UP_TO:
        for (x, y), layer, head in zip(xy, types["layer"], types["head"]):
            ax.annotate(head_name(layer, head), (x, y), fontsize=5, color="0.35", xytext=(2, 2),
                        textcoords="offset points")
    try:
        features = f"{len(feature_columns(types))}-d distance features"
    except ValueError:  # a table of types alone
        features = "distance features"
    # two lines: one is wider than the axes beside the legend
    ax.set(title=f"t-SNE of the {features}\n(colour: k-means type)",
           xticks=[], yticks=[])
    legend_beside(ax, fontsize=8)
    atomic_savefig(fig, path)


def plot_feature_boxes(types: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Fig. 1 bottom: per type, a box plot over its heads of each distance feature."""
    columns = feature_columns(types)
    x = types[columns].to_numpy(float)
    colours = type_colours(types["type"])
    fig = captioned_figure(3.2 * len(colours), 3.8, caption)
    axes = np.atleast_1d(fig.subplots(1, len(colours), sharey=True))
    for ax, (name, colour) in zip(axes, colours.items()):
        sel = (types["type"] == name).to_numpy()
        ax.boxplot(x[sel], widths=0.6, patch_artist=True, showfliers=True,
                   boxprops={"facecolor": colour, "alpha": 0.6}, medianprops={"color": "k"},
                   flierprops={"markersize": 2})
        ax.set_xticks(range(1, x.shape[1] + 1), _tick_labels(columns), rotation=90, fontsize=6)
        ax.set_title(f"{name} ({sel.sum()} heads)", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("share of attention")
    fig.supxlabel("special tokens, self, distance windows 1-16 (nearest first)", fontsize=8)
    atomic_savefig(fig, path)


def plot_layer_shares(types: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Fig. 3: stacked share of each type among the heads of each layer."""
    shares = layer_shares(types)
    colours = type_colours(types["type"])
    fig = captioned_figure(1.5 + 0.45 * len(shares), 3.5, caption)
    ax = fig.subplots()
    bottom = np.zeros(len(shares))
    for name in shares.columns:
        ax.bar(shares.index, shares[name], bottom=bottom, color=colours[name], label=name, width=0.8)
        bottom += shares[name].to_numpy()
    ax.set(xlabel="layer", ylabel="share of the layer's heads", xticks=shares.index, ylim=(0, 1),
           title="head types by layer")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    atomic_savefig(fig, path)


def _type_image(ax, types: pd.DataFrame, colours: dict[str, str], column: str = "type") -> None:
    """Draw ``types[column]`` as a layers x heads image, one colour per type."""
    codes = types.assign(code=types[column].map({name: i for i, name in enumerate(colours)}))
    draw_head_heatmap(ax, head_grid(codes, "code"), cmap=ListedColormap(list(colours.values())),
                      vmin=-0.5, vmax=len(colours) - 0.5)


def plot_type_grid(types: pd.DataFrame, path: str | Path, caption: str,
                   consistent: pd.Series | None = None) -> None:
    """Layers x heads coloured by type; heads with ``consistent == False`` get a black dot."""
    colours = type_colours(types["type"])
    n_layers, n_heads = int(types["layer"].max()), int(types["head"].max())
    fig = captioned_figure(2.5 + 0.35 * n_heads, 1.2 + 0.35 * n_layers, caption)
    ax = fig.subplots()
    _type_image(ax, types, colours)
    handles = [Patch(color=c, label=n) for n, c in colours.items()]
    if consistent is not None:
        unstable = types[~consistent.to_numpy(bool)]
        ax.scatter(unstable["head"], unstable["layer"], marker="o", s=12, color="k")
        handles.append(ax.scatter([], [], marker="o", s=12, color="k",
                                  label="type changes between stability fits"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    ax.set_title("head type of every head")
    atomic_savefig(fig, path)


def plot_type_changes(changes: pd.DataFrame, by_layer: pd.DataFrame, labels: tuple[str, str],
                      path: str | Path, caption: str) -> None:
    """Left: the ``after`` types, heads that changed type crossed; right: changed heads per layer.

    ``labels`` names the two models (before, after).
    """
    colours = type_colours(pd.concat([changes["before"], changes["after"]]))
    n_layers, n_heads = int(changes["layer"].max()), int(changes["head"].max())
    fig = captioned_figure(6 + 0.35 * n_heads, 1.5 + 0.35 * n_layers, caption)
    left, right = fig.subplots(1, 2, width_ratios=[n_heads, max(4, n_heads // 2)])
    _type_image(left, changes.rename(columns={"after": "type"}), colours)
    moved = changes[changes["changed"]]
    left.scatter(moved["head"], moved["layer"], marker="x", s=30, color="k")
    handles = [Patch(color=c, label=n) for n, c in colours.items()]
    handles.append(left.scatter([], [], marker="x", s=30, color="k", label=f"changed since {labels[0]}"))
    left.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.2), ncol=3)
    left.set_title(f"types in {labels[1]}", fontsize=9)
    right.barh(by_layer["layer"], by_layer["changed"], color="0.4")
    right.set(ylim=(n_layers + 0.5, 0.5), yticks=range(1, n_layers + 1), xlabel="heads that changed type",
              ylabel="layer", xlim=(0, n_heads))
    right.set_title(f"{labels[0]} → {labels[1]}: {int(moved.shape[0])} of {len(changes)} heads", fontsize=9)
    atomic_savefig(fig, path)
