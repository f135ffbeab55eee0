"""Attention rollout (Abnar & Zuidema 2020) from α and from Kobayashi's norm maps: one figure."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

from headatlas.plots.base import COLOURS, atomic_savefig, captioned_figure, layer_axis, legend_beside

# headatlas.analyses.rollout.SOURCE_LABELS and the token classes (not imported: scipy, via norms)
SOURCES = {"attention": "from α", "norm": "from ‖Σ_h αf(x)‖"}
CLASS_LABELS = {"cls": "[CLS]", "sep": "[SEP]", "punct": ". or ,", "special": "all three"}
STYLES = {"attention": "-", "norm": "--"}


def plot_rollout(shares: pd.DataFrame, profile: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Left: share of the rolled-out rows on special tokens per layer, both sources (solid: α,
    dashed: norm maps). Right: the relative-position profile, one panel per source (log scale:
    the token itself keeps the residual's half)."""
    fig = captioned_figure(13, 4, caption)
    left, *maps = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.2, 1, 1]})
    for source, style in STYLES.items():
        rows = shares[shares["source"] == source]
        for name, label in CLASS_LABELS.items():
            left.plot(rows["layer"], rows[name], linestyle=style, marker="o", markersize=3,
                      color=COLOURS[name], label=f"{label} ({SOURCES[source]})")
    layer_axis(left, int(shares["layer"].max()), "share of rolled-out attention")
    left.set_title("rollout on special tokens", fontsize=10)
    n_layers = int(profile["layer"].max())
    colours = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, n_layers))
    for ax, source in zip(maps, SOURCES):
        rows = profile[profile["source"] == source]
        for layer, group in rows.groupby("layer"):
            ax.plot(group["offset"], group["mass"], marker="o", markersize=2.5,
                    color=colours[int(layer) - 1], label=f"layer {int(layer)}")
        ax.set_yscale("log")
        ax.set(xlabel="key position - query position", ylabel="mean rolled-out weight")
        ax.set_title(f"rollout {SOURCES[source]}, by offset", fontsize=10)
        ax.grid(alpha=0.3)
    legend_beside(maps[-1], fontsize=6)  # the layers, the same in both panels
    low = min(ax.get_ylim()[0] for ax in maps)
    high = max(ax.get_ylim()[1] for ax in maps)
    for ax in maps:
        ax.set_ylim(low, high)
    atomic_savefig(fig, path)
