"""Figures for Kovaleva et al.'s attention patterns (2019, Fig. 1-2).

* :func:`draw_contact_sheet`: attention maps side by side, each titled (the
  labelling sheets, and the held-out maps the classifier gets wrong);
* :func:`plot_patterns`: the figure of the ``patterns`` analysis: per pattern, a layer x head
  heat map of the share of inputs whose map shows it;
* :func:`plot_corpus_shares`: Kovaleva et al.'s Fig. 2, one stacked bar per corpus;
* :func:`plot_layer_shares`: the same per layer, one panel per corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from headatlas.analyses.patterns import PATTERNS
from headatlas.plots.base import (atomic_savefig, captioned_figure, head_grid, head_heatmaps,
                                  text_colour_on)

SHEET_COLUMNS = 5


def draw_contact_sheet(maps: Sequence[np.ndarray], token_types: Sequence[np.ndarray],
                       titles: Sequence[str], path: str | Path, columns: int = SHEET_COLUMNS,
                       panel_inches: float = 2.6, sentences: Sequence[np.ndarray] | None = None) -> None:
    """Maps ``[n, n]`` (query rows, key columns) in a grid, each under its title.

    Each map is drawn with a linear grey scale from 0 (white) to its own largest
    weight (black), inside a white margin (the frame line would hide the first column, ``[CLS]``,
    one of the commonest stripes: issue 37); red ticks outside the map mark where the token type
    (the segment) changes, i.e. after the first ``[SEP]``; shorter grey ticks where a sentence
    ends within a segment (``sentences``: each token's sentence, where given).
    """
    if not len(maps) == len(token_types) == len(titles):
        raise ValueError("need one token-type array and one title per map")
    if not len(maps):
        fig = Figure(figsize=(4, 1), layout="constrained")
        fig.text(0.5, 0.5, "no maps", ha="center", va="center")
        atomic_savefig(fig, path)
        return
    rows = max(1, -(-len(maps) // columns))
    fig = Figure(figsize=(columns * panel_inches, rows * (panel_inches + 0.25)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns)).ravel()
    for ax in axes:
        ax.axis("off")
    sentences = [None] * len(maps) if sentences is None else sentences
    if len(sentences) != len(maps):
        raise ValueError("need one sentence-id array per map")
    for ax, attn, types, units, title in zip(axes, maps, token_types, sentences, titles):
        n = len(attn)
        edge = -0.5 - max(1.0, 0.02 * n)  # the margin between the frame and the map
        ax.axis("on")
        ax.imshow(attn, cmap="Greys", vmin=0, vmax=max(float(attn.max()), 1e-6),
                  interpolation="nearest", extent=(-0.5, n - 0.5, n - 0.5, -0.5))
        ax.set_xticks([])
        ax.set_yticks([])
        changes = np.flatnonzero(np.diff(np.asarray(types)) != 0)
        for boundary in changes + 0.5:
            ax.plot([boundary, boundary], [edge - n * 0.04, edge], color="red", lw=1.5, clip_on=False)
            ax.plot([edge - n * 0.04, edge], [boundary, boundary], color="red", lw=1.5, clip_on=False)
        ends = [] if units is None else np.flatnonzero(np.diff(np.asarray(units)) != 0)
        for boundary in np.setdiff1d(ends, changes) + 0.5:
            ax.plot([boundary, boundary], [edge - n * 0.025, edge], color="0.45", lw=1.2, clip_on=False)
            ax.plot([edge - n * 0.025, edge], [boundary, boundary], color="0.45", lw=1.2, clip_on=False)
        # the ticks outside must not widen the limits
        ax.set(xlim=(edge, n - 1 - edge), ylim=(n - 1 - edge, edge))
        ax.set_title(title, fontsize=9 if len(title) <= 24 else 7)
    atomic_savefig(fig, path)


PATTERN_COLOURS = {"vertical": "#c44e52", "diagonal": "#dd8452", "vertical+diagonal": "#8172b3",
                   "block": "#55a868", "heterogeneous": "#4c72b0"}


def plot_patterns(heads: pd.DataFrame, path: str | Path, caption: str) -> None:
    """One layer x head panel per pattern: the share of inputs whose map shows it (``heads``: the
    per-head table of :class:`~headatlas.analyses.patterns.AttentionPatterns`)."""
    grids = [head_grid(heads, p) for p in PATTERNS]
    n_layers, n_heads = grids[0].shape
    fig = captioned_figure(2.2 + 2.1 * len(PATTERNS) * max(1, n_heads / 12), 1.3 + 0.3 * n_layers,
                           caption)
    head_heatmaps(fig, grids, list(PATTERNS), colorbar="share of inputs", cmap="magma_r",
                  vmin=0, vmax=1)
    atomic_savefig(fig, path)


def plot_corpus_shares(shares: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Kovaleva et al.'s Fig. 2: one stacked bar per corpus, the share of maps of each pattern."""
    wide = shares.pivot(index="corpus", columns="pattern", values="share_pct")
    wide = wide.reindex(index=list(dict.fromkeys(shares["corpus"])), columns=list(PATTERNS))
    fig = captioned_figure(2.5 + 1.0 * len(wide), 3.8, caption)
    ax = fig.subplots()
    bottom = np.zeros(len(wide))
    x = np.arange(len(wide))
    for pattern in PATTERNS:
        values = wide[pattern].to_numpy(float)
        ax.bar(x, values, bottom=bottom, color=PATTERN_COLOURS[pattern], label=pattern, width=0.6)
        for xi, b, v in zip(x, bottom, values):
            if v >= 4:
                ax.text(xi, b + v / 2, f"{v:.0f}", ha="center", va="center", fontsize=7,
                        color=text_colour_on(PATTERN_COLOURS[pattern]))
        bottom += values
    ax.set_xticks(x, wide.index)
    ax.set(ylabel="% of (head, input) maps", ylim=(0, 100), title="attention patterns per corpus")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    atomic_savefig(fig, path)


def plot_layer_shares(layers: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Per corpus, one stacked bar per layer: the share of the layer's maps of each pattern."""
    corpora = list(dict.fromkeys(layers["corpus"]))
    n_layers = int(layers["layer"].max())
    fig = captioned_figure(1.5 + (0.9 + 0.3 * n_layers) * len(corpora), 3.5, caption)
    axes = np.atleast_1d(fig.subplots(1, len(corpora), sharey=True))
    for ax, corpus in zip(axes, corpora):
        part = layers[layers["corpus"] == corpus].sort_values("layer")
        bottom = np.zeros(len(part))
        for pattern in PATTERNS:
            values = part[pattern].to_numpy(float)
            ax.bar(part["layer"], values, bottom=bottom, color=PATTERN_COLOURS[pattern],
                   label=pattern, width=0.8)
            bottom += values
        ax.set(xlabel="layer", xticks=range(1, n_layers + 1), ylim=(0, 100), title=corpus)
    axes[0].set_ylabel("% of the layer's maps")
    axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    atomic_savefig(fig, path)
