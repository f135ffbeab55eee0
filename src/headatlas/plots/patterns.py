"""Figures for Kovaleva et al.'s attention patterns (2019, Fig. 1-2).

* :func:`draw_contact_sheet`: attention maps side by side, each titled (the
  labelling sheets, and the held-out maps the classifier gets wrong);
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from headatlas.plots.base import atomic_savefig

SHEET_COLUMNS = 5


def draw_contact_sheet(maps: Sequence[np.ndarray], token_types: Sequence[np.ndarray],
                       titles: Sequence[str], path: str | Path, columns: int = SHEET_COLUMNS,
                       panel_inches: float = 2.6) -> None:
    """Maps ``[n, n]`` (query rows, key columns) in a grid, each under its title.

    Each map is drawn with a linear grey scale from 0 (white) to its own largest
    weight (black); red ticks outside the map mark where the token type (the
    segment) changes, i.e. after the first ``[SEP]``.
    """
    if not len(maps) == len(token_types) == len(titles):
        raise ValueError("need one token-type array and one title per map")
    rows = max(1, -(-len(maps) // columns))
    fig = Figure(figsize=(columns * panel_inches, rows * (panel_inches + 0.25)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns)).ravel()
    for ax in axes:
        ax.axis("off")
    for ax, attn, types, title in zip(axes, maps, token_types, titles):
        n = len(attn)
        ax.axis("on")
        ax.imshow(attn, cmap="Greys", vmin=0, vmax=max(float(attn.max()), 1e-6),
                  interpolation="nearest", extent=(-0.5, n - 0.5, n - 0.5, -0.5))
        ax.set_xticks([])
        ax.set_yticks([])
        for boundary in np.flatnonzero(np.diff(np.asarray(types)) != 0) + 0.5:
            ax.plot([boundary, boundary], [-0.5 - n * 0.04, -0.5], color="red", lw=1.5, clip_on=False)
            ax.plot([-0.5 - n * 0.04, -0.5], [boundary, boundary], color="red", lw=1.5, clip_on=False)
        ax.set_title(title, fontsize=9)
    atomic_savefig(fig, path)
