"""Figures for which heads matter (Kovaleva et al. 2019 Fig. 7; Michel et al. 2019 Fig. 4).

* :func:`plot_single_heads`: the change in the task score when each head (left) or each
  layer (right) is disabled, significant changes marked;
* :func:`plot_importance`: Michel et al.'s layer-normalised importance of every head;
* :func:`plot_pruning`: the task score against the share of heads removed, per order;
* :func:`plot_compare`: importance against the single-head change, coloured by pattern.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from headatlas.plots.base import (atomic_savefig, captioned_figure, draw_head_heatmap, head_grid,
                                  legend_beside)

ORDER_COLOURS = {"importance": "#1f77b4", "reverse": "#d62728", "random": "#7f7f7f"}


def plot_single_heads(heads: pd.DataFrame, layers: pd.DataFrame, metric: str, path: str | Path,
                      caption: str) -> None:
    """Left: layer x head map of the change (points) when the head is disabled; right: per layer.

    A dot marks a head whose paired 95% interval excludes 0 (white: a significant gain).
    """
    grid = head_grid(heads, "delta")
    n_layers, n_heads = grid.shape
    bound = max(float(np.nanmax(np.abs(grid))), 1e-6)
    fig = captioned_figure(4 + 0.5 * n_heads, 1.6 + 0.4 * n_layers, caption)
    left, right = fig.subplots(1, 2, width_ratios=[n_heads, 4])
    image = draw_head_heatmap(left, grid, cmap="RdBu", vmin=-bound, vmax=bound, annotate="{:.2f}")
    sig = heads[heads["significant"]]
    left.scatter(sig["head"] + 0.35, sig["layer"] - 0.3, marker="o", s=10,
                 c=np.where(sig["delta"] > 0, "white", "black"), edgecolors="black", linewidths=0.5)
    left.set_title(f"one head disabled: change in {metric} (points); dot: 95% interval excludes 0",
                   fontsize=8)
    fig.colorbar(image, ax=left, shrink=0.8, label="points")
    colours = np.where(layers["delta"] >= 0, "#2166ac", "#b2182b")
    right.barh(layers["layer"], layers["delta"], color=colours,
               xerr=np.abs(np.stack([layers["delta"] - layers["ci_low"],
                                     layers["ci_high"] - layers["delta"]])), ecolor="0.3")
    right.set(ylim=(n_layers + 0.5, 0.5), yticks=range(1, n_layers + 1), xlabel="points",
              ylabel="layer")
    right.axvline(0, color="0.5", lw=0.8)
    right.set_title("whole layer disabled", fontsize=8)
    atomic_savefig(fig, path)


def plot_importance(heads: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Layer x head map of the layer-normalised importance, each head's rank written in."""
    grid = head_grid(heads, "importance")
    n_layers, n_heads = grid.shape
    fig = captioned_figure(2.5 + 0.45 * n_heads, 1.3 + 0.35 * n_layers, caption)
    ax = fig.subplots()
    image = draw_head_heatmap(ax, grid, cmap="viridis", vmin=0, vmax=float(np.nanmax(grid)),
                              annotate="{:.2f}")
    ax.set_title("head importance I_h = E|dL/dxi_h|, normalised per layer (l2)", fontsize=9)
    fig.colorbar(image, ax=ax, shrink=0.8)
    atomic_savefig(fig, path)


def plot_pruning(curves: pd.DataFrame, base: float, metric: str, tolerance: float,
                 path: str | Path, caption: str) -> None:
    """Score against the share of heads removed: importance order, reverse, random (mean and range)."""
    fig = captioned_figure(6, 4, caption)
    ax = fig.subplots()
    for order in ("importance", "reverse"):
        part = curves[curves["order"] == order]
        ax.plot(part["share_pct"], part["score"], marker="o", ms=3, color=ORDER_COLOURS[order],
                label={"importance": "least important first", "reverse": "most important first"}[order])
    random = curves[curves["order"] == "random"].groupby("share_pct")["score"]
    if len(random):
        seeds = curves.loc[curves["order"] == "random", "seed"].nunique()
        stats = random.agg(["mean", "min", "max"])
        ax.plot(stats.index, stats["mean"], marker="o", ms=3, color=ORDER_COLOURS["random"],
                label=f"random order (mean of {seeds} seeds; band: range)")
        ax.fill_between(stats.index, stats["min"], stats["max"], color=ORDER_COLOURS["random"],
                        alpha=0.2)
    ax.axhline(base, color="0.3", lw=0.8, ls="--", label=f"intact ({base:.2f})")
    ax.axhline(base - tolerance, color="0.6", lw=0.8, ls=":", label=f"intact - {tolerance:g}")
    ax.set(xlabel="% of heads removed", ylabel=metric, xlim=(-2, 102))
    ax.grid(alpha=0.3)
    legend_beside(ax)
    ax.set_title("pruning heads without re-training (Michel et al. Fig. 4)", fontsize=9)
    atomic_savefig(fig, path)


def plot_compare(heads: pd.DataFrame, groups: pd.Series | None, metric: str, path: str | Path,
                 caption: str) -> None:
    """Importance (x) against the change when the head alone is disabled (y), coloured by ``groups``."""
    from headatlas.plots.patterns import PATTERN_COLOURS

    fig = captioned_figure(6, 4.2, caption)
    ax = fig.subplots()
    if groups is None:
        groups = pd.Series(["all heads"] * len(heads), index=heads.index)
    for name in sorted(set(groups)):
        sel = (groups == name).to_numpy()
        ax.scatter(heads.loc[sel, "importance"], heads.loc[sel, "delta"], s=18,
                   color=PATTERN_COLOURS.get(name), label=f"{name} ({sel.sum()})", alpha=0.8)
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set(xlabel="importance (normalised per layer)", ylabel=f"change in {metric} (points)")
    ax.grid(alpha=0.3)
    legend_beside(ax, title="dominant pattern", title_fontsize=7)
    atomic_savefig(fig, path)
