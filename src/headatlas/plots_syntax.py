"""Figures for the dependency analysis (Clark et al. 2019 §4.2, Table 1, Fig. 5).

* :func:`plot_relation_heatmap`: every head's accuracy at one relation,
  layers x heads, one panel per direction, the best head boxed;
* :func:`plot_dependency_lines`: Fig. 5-style pictures, one head on one
  sentence per panel, lines from word *i* (left) to word *j* (right) with
  opacity = attention, the relation's words and their lines in red;
* :func:`plot_regimes`: per relation, the best head picked on the evaluation
  data itself (the paper's regime) against the head picked on separate data
  (honest, with its bootstrap interval) and the offset baseline.

Figures are written with :func:`headatlas.plots.atomic_savefig` and carry
``caption`` (model, corpus, N, deviations) at the bottom.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection

from headatlas.analyses.syntax import DIRECTIONS, LinePanel
from headatlas.plots import captioned_figure, atomic_savefig

HIGHLIGHT = "#d62728"  # Clark's Fig. 5: attention to/from the words of interest in red
BASE = "#4a6fa5"
_MIN_LINE_WEIGHT = 0.01  # fainter lines are invisible; leaving them out keeps SVGs small


def plot_relation_heatmap(table: pd.DataFrame, relation: str, baseline: tuple[int, float],
                          path: str | Path, caption: str) -> None:
    """Heat maps (layer x head) of each head's accuracy at ``relation``, both directions.

    Parameters
    ----------
    table : DataFrame
        The long table (``relation, direction, layer, head, n, accuracy``);
        only ``relation``'s rows are used.
    baseline : (offset, accuracy)
        The best offset baseline, drawn into the titles (accuracy as a fraction).
    """
    rows = table[table["relation"] == relation]
    if rows.empty:
        raise ValueError(f"relation {relation!r} has no scored dependency in this table")
    n_layers, n_heads = int(rows["layer"].max()), int(rows["head"].max())
    best = rows.loc[rows["accuracy"].idxmax()]
    fig = captioned_figure(2 * (1 + 0.32 * n_heads), 1.2 + 0.32 * n_layers, caption)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, direction in zip(axes, DIRECTIONS):
        grid = rows[rows["direction"] == direction].pivot(index="layer", columns="head",
                                                          values="accuracy").to_numpy()
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto",
                          extent=(0.5, n_heads + 0.5, n_layers + 0.5, 0.5))
        ax.set(title=direction, xlabel="head", xticks=range(1, n_heads + 1),
               yticks=range(1, n_layers + 1))
        if direction == best["direction"]:
            ax.add_patch(matplotlib.patches.Rectangle(
                (best["head"] - 0.5, best["layer"] - 0.5), 1, 1, fill=False, edgecolor=HIGHLIGHT,
                linewidth=2))
    axes[0].set_ylabel("layer")
    offset, base_acc = baseline
    fig.suptitle(f"{relation} (n = {int(best['n'])}): best head {int(best['layer'])}-"
                 f"{int(best['head'])} {best['direction']} {100 * best['accuracy']:.1f}%, "
                 f"best offset {offset:+d} {100 * base_acc:.1f}%", fontsize=10)
    fig.colorbar(image, ax=axes, label="accuracy", shrink=0.8)
    atomic_savefig(fig, path)


def plot_dependency_lines(panels: Sequence[Sequence[LinePanel]], path: str | Path,
                          caption: str) -> None:
    """Fig. 5: a grid of panels, ``panels[column][row]`` (one column per head).

    In each panel a line joins word *i* (left column) to word *j* (right column)
    with opacity = the attention from *i* to *j*; lines touching a highlighted
    word, and the word itself, are red. Weights below 0.01 are not drawn.
    """
    n_rows = max(len(column) for column in panels)
    longest = max(len(p.labels) for column in panels for p in column)
    fig = captioned_figure(2.8 * len(panels), n_rows * (0.6 + 0.15 * longest), caption)
    axes = np.atleast_2d(fig.subplots(n_rows, len(panels), squeeze=False))
    for c, column in enumerate(panels):
        for r in range(n_rows):
            ax = axes[r, c]
            ax.axis("off")
            if r < len(column):
                _draw_panel(ax, column[r])
    atomic_savefig(fig, path)


def _draw_panel(ax, panel: LinePanel) -> None:
    """One head's word-level map as weighted lines between two word columns."""
    attn, n = panel.attn, len(panel.labels)
    query, key = np.nonzero(attn >= _MIN_LINE_WEIGHT)
    segments = np.stack([np.stack([np.zeros(len(query)), -query], 1),
                         np.stack([np.ones(len(key)), -key], 1)], axis=1)  # [lines, 2 ends, xy]
    marked = panel.highlight[query] | panel.highlight[key]
    rgba = np.array([matplotlib.colors.to_rgba(HIGHLIGHT if m else BASE) for m in marked]).reshape(-1, 4)
    rgba[:, 3] = np.clip(attn[query, key], 0, 1)
    ax.add_collection(LineCollection(segments, colors=rgba, linewidths=1.2))
    for x, ha in ((-0.05, "right"), (1.05, "left")):
        for i, label in enumerate(panel.labels):
            ax.text(x, -i, label, ha=ha, va="center", fontsize=7,
                    color=HIGHLIGHT if panel.highlight[i] else "black")
    ax.set(xlim=(-0.9, 1.9), ylim=(-n + 0.5, 0.5))
    ax.set_title(panel.title, fontsize=8)


def plot_regimes(table: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Per relation and evaluation set: same-data best head vs honest head vs baseline.

    ``table`` is :func:`headatlas.analyses.syntax.honest_table` (percentages):
    ``acc`` with ``acc_low``/``acc_high`` (honest), ``baseline_acc`` with its
    interval, ``same_data_acc`` (paper's regime); one panel per ``evaluated_on``.
    """
    sets = list(pd.unique(table["evaluated_on"]))
    relations = list(pd.unique(table["relation"]))
    fig = captioned_figure(4.2 * len(sets), 0.8 + 0.28 * len(relations), caption)
    axes = np.atleast_1d(fig.subplots(1, len(sets), sharey=True))
    y = np.arange(len(relations))
    for ax, label in zip(axes, sets):
        rows = table[table["evaluated_on"] == label].set_index("relation").loc[relations]
        for name, colour, shift, marker in (("acc", BASE, -0.15, "o"),
                                            ("baseline_acc", "0.5", 0.15, "s")):
            err = np.abs(rows[[f"{name}_low", f"{name}_high"]].to_numpy().T - rows[name].to_numpy())
            ax.errorbar(rows[name], y + shift, xerr=err, fmt=marker, color=colour, markersize=4,
                        capsize=2, label="head chosen on selection data" if name == "acc"
                        else "offset chosen on selection data")
        ax.scatter(rows["same_data_acc"], y - 0.15, marker="x", color=HIGHLIGHT, zorder=3,
                   label="best head on this data (paper's regime)")
        ax.set(title=f"evaluated on {label}", xlabel="accuracy (%, 95% bootstrap interval)",
               xlim=(0, 100), ylim=(len(relations) - 0.5, -0.5),  # first relation on top
               yticks=y, yticklabels=relations)
        ax.grid(axis="x", alpha=0.3)
    # Above the panels: inside, it would hide the points of the bottom relations.
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=3, fontsize=7)
    atomic_savefig(fig, path)
