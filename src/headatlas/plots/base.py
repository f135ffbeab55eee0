"""What every figure shares: saving, captioning, colours, and the two recurring pictures.

* :func:`atomic_savefig`: the one way a figure is written (SVG or PNG by the
  path's suffix, under a temporary name renamed into place, byte-stable SVG);
* :func:`captioned_figure`, :func:`plot_note`: the one way a figure gets its
  caption (model, corpus, N, deviations) in a band at its bottom;
* :func:`head_grid`, :func:`draw_head_heatmap`, :func:`head_heatmaps`: the
  layer x head heat map (layer 1 at the top, head 1 on the left);
* :func:`draw_attention_lines`: one head's map as lines from token *i* (left
  column) to token *j* (right column), opacity = weight (Clark et al. Fig. 1, 5);
* :func:`points_by_layer`, :func:`layer_axis`: per-head values against their
  layer, the layer means as a line (Clark et al. Fig. 2, 3, 4).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from headatlas.io import atomic_path

FORMATS = ("svg", "png")
# Fixed hash salt and no date: the same data gives a byte-identical SVG.
_SAVE_RC = {"svg.hashsalt": "headatlas", "svg.fonttype": "none"}
_CAPTION_LINE_INCHES = 0.13  # caption band height per line of 7-pt text
# Lines fainter than this are invisible anyway; dropping them keeps SVGs small.
MIN_LINE_WEIGHT = 0.01

COLOURS = {"cls": "#9b59b6", "sep": "#2ca25f", "punct": "#159d82", "other": "#95a5a6",
           "prev": "#3498db", "self": "#7f8c8d", "next": "#e74c3c"}
BEHAVIOURS = {"broad": "attends broadly", "next": "attends to next token",
              "prev": "attends to previous token", "sep": "attends to [SEP]",
              "cls": "attends to [CLS]", "punct": "attends to . and ,"}
HIGHLIGHT = "#d62728"  # Clark's Fig. 5: the words of interest, their lines, a chosen head


def atomic_savefig(fig: Figure, path: str | Path) -> None:
    """Write ``fig`` to ``path`` (format from the suffix) atomically.

    Raises ``ValueError`` for a suffix other than ``.svg``/``.png``.
    """
    fmt = Path(path).suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise ValueError(f"{path}: figure format {fmt!r} not supported; use one of {FORMATS}")
    metadata = {"Date": None} if fmt == "svg" else {}
    with matplotlib.rc_context(_SAVE_RC), atomic_path(path) as tmp:
        # The temporary name has no figure suffix, hence the explicit format.
        fig.savefig(tmp, format=fmt, metadata=metadata)


def captioned_figure(width: float, height: float, caption: str) -> Figure:
    """A ``width`` x ``height`` inch constrained-layout figure plus a caption band below it."""
    lines = textwrap.wrap(caption, width=int(width * 15)) or [""]
    band_inches = 0.15 + _CAPTION_LINE_INCHES * len(lines)
    fig = Figure(figsize=(width, height + band_inches), layout="constrained")
    band = band_inches / (height + band_inches)
    fig.get_layout_engine().set(rect=(0, band, 1, 1 - band))  # axes stay above the band
    fig.text(0.01, band / 2, "\n".join(lines), ha="left", va="center", fontsize=7, color="0.3")
    return fig


def plot_note(message: str, path: str | Path, caption: str) -> None:
    """A figure that only states why there is nothing to draw (e.g. a relation with no instances)."""
    fig = captioned_figure(6, 2, caption)
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    atomic_savefig(fig, path)


# ----------------------------------------------------------------------------
# the layer x head heat map
# ----------------------------------------------------------------------------

def head_grid(table: pd.DataFrame, column: str) -> np.ndarray:
    """``table[column]`` as a ``[layers, heads]`` float array: ``[l - 1, h - 1]`` is head l-h.

    ``table`` has one row per head with 1-based ``layer`` and ``head``; a head
    missing from it is NaN (drawn blank), so a cell's place is always its id.
    """
    wide = table.pivot(index="layer", columns="head", values=column)
    n_layers, n_heads = int(table["layer"].max()), int(table["head"].max())
    return wide.reindex(index=range(1, n_layers + 1), columns=range(1, n_heads + 1)).to_numpy(float)


def draw_head_heatmap(ax, grid: np.ndarray, *, cmap="viridis", vmin: float | None = None,
                      vmax: float | None = None, title: str | None = None,
                      annotate: str | None = None, outline: tuple[int, int] | None = None,
                      outline_colour: str = HIGHLIGHT, ylabel: str | None = "layer"):
    """Draw a ``[layers, heads]`` grid (:func:`head_grid`) on ``ax``; return the image.

    Layer 1 is the top row and head 1 the left column, each cell centred on
    its 1-based ids (so ``ax.scatter(head, layer)`` marks a head).

    Parameters
    ----------
    cmap, vmin, vmax
        Colour map and its limits, as for :meth:`~matplotlib.axes.Axes.imshow`.
    annotate : str, optional
        A format (e.g. ``"{:.0f}"``) to write each finite value in its cell,
        white on the lower half of ``[vmin, vmax]``, black on the upper.
    outline : (layer, head), optional
        A head to box (1-based), in ``outline_colour``.
    ylabel : str or None
        None for a panel that shares the layer axis of its left neighbour.
    """
    n_layers, n_heads = grid.shape
    image = ax.imshow(grid, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto",
                      extent=(0.5, n_heads + 0.5, n_layers + 0.5, 0.5))
    if annotate is not None:
        low, high = image.get_clim()
        for (row, col), value in np.ndenumerate(grid):
            if np.isfinite(value):
                ax.text(col + 1, row + 1, annotate.format(value), ha="center", va="center",
                        fontsize=6, color="white" if value < (low + high) / 2 else "black")
    if outline is not None:
        layer, head = outline
        ax.add_patch(Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False,
                               edgecolor=outline_colour, linewidth=2))
    ax.set(xlabel="head", xticks=range(1, n_heads + 1), yticks=range(1, n_layers + 1))
    if title is not None:
        ax.set_title(title)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    return image


def head_heatmaps(fig: Figure, grids: Sequence[np.ndarray], titles: Sequence[str], *,
                  colorbar: str | None = None,
                  outlines: Sequence[tuple[int, int] | None] | None = None, **style) -> np.ndarray:
    """A row of :func:`draw_head_heatmap` panels sharing the layer axis; return the axes.

    ``colorbar`` labels one colour bar for all panels; unless ``style`` sets
    ``vmin``/``vmax``, they span all grids, so one bar reads every panel.
    ``outlines`` gives each panel's boxed head (or None).
    """
    finite = np.concatenate([np.ravel(g) for g in grids])
    finite = finite[np.isfinite(finite)]
    style.setdefault("vmin", float(finite.min()) if finite.size else None)
    style.setdefault("vmax", float(finite.max()) if finite.size else None)
    outlines = [None] * len(grids) if outlines is None else outlines
    axes = np.atleast_1d(fig.subplots(1, len(grids), sharey=True))
    for i, (ax, grid, title, outline) in enumerate(zip(axes, grids, titles, outlines)):
        image = draw_head_heatmap(ax, grid, title=title, outline=outline,
                                  ylabel="layer" if i == 0 else None, **style)
    if colorbar is not None:
        fig.colorbar(image, ax=list(axes), label=colorbar, shrink=0.8)
    return axes


# ----------------------------------------------------------------------------
# the attention-lines picture
# ----------------------------------------------------------------------------

def draw_attention_lines(ax, attn: np.ndarray, labels: Sequence[str], *, colour,
                         highlight: np.ndarray | None = None, highlight_colour: str = HIGHLIGHT,
                         linewidth: float = 1.5, label_room: float = 0.6) -> None:
    """Draw one head's ``[n, n]`` map as lines between two columns of ``labels``.

    Row *i* attends to column *j*: a line joins label *i* on the left to label
    *j* on the right with opacity = ``attn[i, j]`` (weights below
    :data:`MIN_LINE_WEIGHT` are not drawn). Where ``highlight`` (``[n]`` bool)
    marks a label, the label and every line touching it are in
    ``highlight_colour``. ``label_room`` is the width left for labels on each
    side, in units of the gap between the columns.
    """
    n = len(labels)
    query, key = np.nonzero(attn >= MIN_LINE_WEIGHT)
    segments = np.stack([np.stack([np.zeros(len(query)), -query], 1),
                         np.stack([np.ones(len(key)), -key], 1)], axis=1)  # [lines, 2 ends, xy]
    rgba = np.tile(matplotlib.colors.to_rgba(colour), (len(query), 1))
    marked = np.zeros(n, bool) if highlight is None else np.asarray(highlight, bool)
    rgba[marked[query] | marked[key], :3] = matplotlib.colors.to_rgb(highlight_colour)
    rgba[:, 3] = np.clip(attn[query, key], 0, 1)  # float16 maps can sum a hair above 1
    ax.add_collection(LineCollection(segments, colors=rgba, linewidths=linewidth))
    for x, ha in ((-0.05, "right"), (1.05, "left")):
        for i, label in enumerate(labels):
            ax.text(x, -i, label, ha=ha, va="center", fontsize=7,
                    color=highlight_colour if marked[i] else "black")
    ax.set(xlim=(-label_room, 1 + label_room), ylim=(-n + 0.5, 0.5))
    ax.axis("off")


# ----------------------------------------------------------------------------
# per-head values by layer
# ----------------------------------------------------------------------------

def points_by_layer(ax, table: pd.DataFrame, column: str, label: str, colour,
                    alpha: float = 0.45) -> None:
    """Each head as a faint point at its layer; the layer mean over heads as a line."""
    ax.scatter(table["layer"], table[column], s=8, color=colour, alpha=alpha, linewidths=0)
    means = table.groupby("layer", as_index=False)[column].mean()
    ax.plot(means["layer"], means[column], color=colour, marker="o", markersize=3, label=label)


def layer_axis(ax, n_layers: int, ylabel: str) -> None:
    """Layer ticks 1..``n_layers`` on x, a light grid and the legend."""
    ax.set(xlabel="layer", ylabel=ylabel, xticks=range(1, n_layers + 1))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
