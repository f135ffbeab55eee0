"""Figures for the dependency analysis (Clark et al. 2019 §4.2, Table 1, Fig. 5).

* :func:`plot_relation_heatmap`: every head's accuracy at one relation,
  layers x heads, one panel per direction, the best head boxed;
* :func:`plot_dependency_lines`: Fig. 5-style pictures, one head on one
  sentence per panel, lines from word *i* (left) to word *j* (right) with
  opacity = attention, the relation's words and their lines in red;
* :func:`plot_regimes`: per relation, the best head picked on the evaluation
  data itself (the paper's regime) against the head picked on separate data
  (honest, with its bootstrap interval) and the offset baseline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from headatlas.analyses.syntax import DIRECTIONS, LinePanel
from headatlas.heads import head_name
from headatlas.plots.base import (HIGHLIGHT, atomic_savefig, captioned_figure, draw_attention_lines,
                                  head_grid, head_heatmaps)

BASE = "#4a6fa5"  # the lines and points not of interest


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
    best_head = (int(best["layer"]), int(best["head"]))
    head_heatmaps(fig, [head_grid(rows[rows["direction"] == d], "accuracy") for d in DIRECTIONS],
                  DIRECTIONS, outlines=[best_head if d == best["direction"] else None
                                        for d in DIRECTIONS],
                  vmin=0, vmax=1, colorbar="accuracy")
    offset, base_acc = baseline
    fig.suptitle(f"{relation} (n = {int(best['n'])}): best head {head_name(*best_head)} "
                 f"{best['direction']} {100 * best['accuracy']:.1f}%, "
                 f"best offset {offset:+d} {100 * base_acc:.1f}%", fontsize=10)
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
    axes = fig.subplots(n_rows, len(panels), squeeze=False)
    for c, column in enumerate(panels):
        for r in range(n_rows):
            axes[r, c].axis("off")
            if r < len(column):
                panel = column[r]
                draw_attention_lines(axes[r, c], panel.attn, panel.labels, colour=BASE,
                                     highlight=panel.highlight, linewidth=1.2, label_room=0.9)
                axes[r, c].set_title(panel.title, fontsize=8)
    atomic_savefig(fig, path)


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
