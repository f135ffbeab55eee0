"""Figure for the head-type ablation (Guan et al. 2020, Tables 2 and 3 as a chart)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from headatlas.plots.base import atomic_savefig, captioned_figure

GROUP_COLOURS = {"baseline": "#7f8c8d", "prune one": "#e74c3c", "prune two": "#c0392b",
                 "keep only": "#e67e22", "substitute": "#3498db", "remove one": "#27ae60",
                 "only one keeps intra": "#8e44ad", "only one keeps inter": "#16a085"}


def plot_ablation(table: pd.DataFrame, metric: str, path: str | Path, caption: str) -> None:
    """One bar per variant: the share of what attention gives that it keeps, the paper's F1 beside.

    0 is the floor with every head pruned, 100 the unablated model; the floors
    (all pruned, all uniform) are drawn as reference lines. When attention
    contributes nothing measurable (no ``<metric>_pct_of_attention``), the bars
    fall back to % of the unablated score.

    Parameters
    ----------
    table : DataFrame
        :func:`headatlas.interventions.ablation.run_grid` output (row 0 = unablated), with
        ``variant``, ``group``, ``paper_id``, ``heads_changed``, ``<metric>``,
        ``<metric>_pct_of_attention``, ``<metric>_pct_of_unablated`` and
        ``paper_f1_pct_of_unablated``.
    metric : str
        Our headline metric (``accuracy`` or ``f1``).
    path : str or Path
        ``.svg`` or ``.png``.
    caption : str
        Model, task, data, head-type source and deviations, printed below.
    """
    n = len(table)
    fig = captioned_figure(8.0, 1.4 + 0.22 * n, caption)
    ax = fig.subplots()
    y = np.arange(n)
    share = table.get(f"{metric}_pct_of_attention", pd.Series(np.nan, index=table.index))
    by_attention = bool(np.isfinite(share.to_numpy(float)).any())
    ours = (share if by_attention else table[f"{metric}_pct_of_unablated"]).to_numpy(float)
    unit = "% of what attention gives" if by_attention else "% of the unablated score"
    colours = [GROUP_COLOURS.get(g, "#95a5a6") for g in table["group"]]
    ax.barh(y, ours, color=colours, height=0.7, label=f"ours: {metric}, {unit} (colour: group)")
    paper = table["paper_f1_pct_of_unablated"].to_numpy(float)
    known = np.isfinite(paper)
    ax.scatter(paper[known], y[known], marker="D", color="black", s=18, zorder=3,
               label="Guan et al.: F1, % of unablated (SQuAD's floor near 0; where readable)")
    if by_attention:
        _floor_lines(ax, table, metric, ours)
    for row, value in zip(y[np.isfinite(ours)], ours[np.isfinite(ours)]):
        ax.text(value + 1, row, f"{value:.0f}", va="center", fontsize=6)
    labels = [f"{v} ({h} heads)" + (f" [{p}]" if p else "")
              for v, h, p in zip(table["variant"], table["heads_changed"], table["paper_id"])]
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.axvline(100, color="0.5", lw=0.8, ls="--")
    top = np.nanmax(ours, initial=0) if np.isfinite(ours).any() else 0
    bottom = np.nanmin(ours, initial=0) if np.isfinite(ours).any() else 0
    ax.set(xlim=(min(0, bottom - 8), max(110, top + 8)), xlabel=unit)
    ax.set_title("Head-type ablation without re-training ([n] = row of Guan et al. Tables 2-3)",
                 fontsize=9)
    fig.legend(loc="outside upper center", ncol=2, fontsize=7, frameon=False)
    atomic_savefig(fig, path)


def _floor_lines(ax, table: pd.DataFrame, metric: str, shares: np.ndarray) -> None:
    """The floors as vertical lines on the share axis: all pruned at 0, all uniform and no head
    attending across sentences where they fall."""
    for name, label, colour, style in (("prune all", "every head pruned", "#c0392b", "-"),
                                       ("uniform all", "every head uniform", "#2980b9", ":"),
                                       ("no inter all", "no inter-sentence attention", "#8e44ad", "-.")):
        rows = np.flatnonzero(table["variant"].to_numpy() == name)
        if rows.size and np.isfinite(shares[rows[0]]):
            score = float(table[metric].iloc[rows[0]])
            ax.axvline(shares[rows[0]], color=colour, lw=1.0, ls=style, label=f"{label}: {metric} {score:.1f}")
