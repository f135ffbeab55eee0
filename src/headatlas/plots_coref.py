"""Figure for the coreference heads (Clark et al. 2019 §4.3): every head's accuracy.

Drawn with :class:`matplotlib.figure.Figure` directly and written with
:func:`headatlas.plots.atomic_savefig` (whole or not at all, byte-stable SVG).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from headatlas.plots import atomic_savefig


def plot_head_accuracy(heads: pd.DataFrame, panels: list[tuple[str, str, str | None]],
                       path: str | Path, caption: str) -> None:
    """Heat maps (layers x heads) of antecedent accuracy (%), one panel per column.

    Parameters
    ----------
    heads : DataFrame
        Per-head table with 1-based ``layer``, ``head`` and the panel columns.
    panels : list of (column, title, marked head)
        The marked head (``"layer-head"`` or None) is outlined, e.g. the one
        chosen on that panel's data.
    path : str or Path
        ``.svg`` or ``.png``.
    caption : str
        Model, corpus, N and deviations, printed under the panels.
    """
    n_layers, n_heads = int(heads["layer"].max()), int(heads["head"].max())
    width = len(panels) * (1.2 + 0.42 * n_heads)
    lines = textwrap.wrap(caption, width=int(width * 15))
    fig = Figure(figsize=(width, 1.2 + 0.38 * n_layers + 0.13 * len(lines)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True))
    for ax, (column, title, marked) in zip(axes, panels):
        grid = heads.pivot(index="layer", columns="head", values=column).to_numpy()
        image = _heat(ax, grid, title)
        if marked:
            layer, head = map(int, marked.split("-"))
            ax.add_patch(Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, lw=2, ec="#e74c3c"))
    axes[0].set_ylabel("layer")
    fig.colorbar(image, ax=list(axes), label="antecedent accuracy (%)", shrink=0.8)
    fig.supxlabel("\n".join(lines), fontsize=7, color="0.3", ha="left", x=0.01)
    atomic_savefig(fig, path)


def _heat(ax, grid: np.ndarray, title: str):
    """One layer x head panel with the values written in the cells."""
    n_layers, n_heads = grid.shape
    image = ax.imshow(grid, vmin=0, vmax=100, cmap="viridis", aspect="auto",
                      extent=(0.5, n_heads + 0.5, n_layers + 0.5, 0.5))
    for (row, col), value in np.ndenumerate(grid):
        if np.isfinite(value):
            ax.text(col + 1, row + 1, f"{value:.0f}", ha="center", va="center", fontsize=6,
                    color="white" if value < 50 else "black")
    ax.set(title=title, xlabel="head", xticks=range(1, n_heads + 1), yticks=range(1, n_layers + 1))
    return image
