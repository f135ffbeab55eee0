"""Kobayashi et al. (2020) Fig. 3-4 in one figure: where attention goes under α and under ‖αf(x)‖.

Imports nothing from :mod:`headatlas.analyses.norms` (which pulls in scipy): the
token classes and views are repeated here as labels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from headatlas.plots.base import COLOURS, atomic_savefig, captioned_figure, legend_beside

# headatlas.analyses.norms.CLASS_LABELS / VIEW_LABELS (not imported: that module pulls in scipy)
CLASS_LABELS = {"cls": "[CLS]", "sep": "[SEP]", "punct": ". or ,", "other": "other"}
VIEW_TITLES = {"attention": "weight α", "norm": "‖αf(x)‖ per head", "layer_norm": "‖Σ_h αf(x)‖ per layer"}


def stacked_shares(ax, table: pd.DataFrame, column: str, title: str, ylabel: str | None) -> None:
    """Per layer, the shares of the four token classes stacked to 1 (one bar per layer)."""
    wide = table.pivot(index="layer", columns="class", values=column)
    bottom = np.zeros(len(wide))
    for name, label in CLASS_LABELS.items():
        values = wide[name].fillna(0).to_numpy() if name in wide else np.zeros(len(wide))
        ax.bar(wide.index, values, bottom=bottom, color=COLOURS[name], label=label, width=0.8)
        bottom += values
    ax.set(title=title, xlabel="layer", ylim=(0, 1), xticks=list(wide.index))
    if ylabel:
        ax.set_ylabel(ylabel)


def plot_norm_shares(shares: pd.DataFrame, correlation: pd.DataFrame, path: str | Path,
                     caption: str) -> None:
    """Three stacked-bar panels (α, ‖αf(x)‖, ‖Σ_h αf(x)‖) and the α-‖f(x)‖ correlation per class."""
    fig = captioned_figure(13, 3.8, caption)
    axes = fig.subplots(1, 4, gridspec_kw={"width_ratios": [1, 1, 1, 1.1]})
    for i, (view, title) in enumerate(VIEW_TITLES.items()):
        stacked_shares(axes[i], shares, view, title, "share of each query's row" if i == 0 else None)
    ax = axes[3]
    names = list(CLASS_LABELS)
    corr = correlation.set_index("class").reindex(names)
    ax.bar(range(len(names)), corr["spearman"].fillna(0), color=[COLOURS[n] for n in names],
           width=0.6, label="all layers")
    layer_columns = [c for c in corr.columns if c.startswith("layer_")]
    for k, name in enumerate(names):
        values = corr.loc[name, layer_columns].to_numpy(float)
        ax.scatter(np.full(len(values), k) + np.linspace(-0.2, 0.2, len(values)), values, s=10,
                   color="k", zorder=3, label="per layer" if k == 0 else None)
    ax.axhline(0, color="k", linewidth=0.8)
    ax.set(xticks=range(len(names)), xticklabels=[CLASS_LABELS[n] for n in names], ylim=(-1, 1),
           ylabel="Spearman ρ of α and ‖f(x)‖", title="α vs ‖f(x)‖ by key token")
    # one legend for all four panels, beside the last (the stacked bars fill their axes)
    handles, labels = axes[0].get_legend_handles_labels()
    dots = [h for h, label in zip(*ax.get_legend_handles_labels()) if label == "per layer"]
    legend_beside(ax, handles=handles + dots, labels=labels + ["ρ per layer"] * len(dots))
    atomic_savefig(fig, path)
