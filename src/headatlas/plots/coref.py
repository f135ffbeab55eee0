"""Figure for the coreference heads (Clark et al. 2019 §4.3): every head's accuracy."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from headatlas.heads import parse_head_name
from headatlas.plots.base import atomic_savefig, captioned_figure, head_grid, head_heatmaps


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
    fig = captioned_figure(len(panels) * (1.2 + 0.42 * n_heads), 1.2 + 0.38 * n_layers, caption)
    head_heatmaps(fig, [head_grid(heads, column) for column, _, _ in panels],
                  [title for _, title, _ in panels],
                  outlines=[parse_head_name(marked) if marked else None
                            for _, _, marked in panels],
                  outline_colour="#e74c3c", vmin=0, vmax=100, annotate="{:.0f}",
                  colorbar="antecedent accuracy (%)")
    atomic_savefig(fig, path)
