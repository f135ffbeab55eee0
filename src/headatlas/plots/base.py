"""What every figure shares: saving, captioning, colours, and the two recurring pictures.

* :func:`atomic_savefig`: the one way a figure is written (SVG, PNG or PDF by the
  path's suffix, under a temporary name renamed into place, byte-stable SVG), to
  every file of the figure (:mod:`headatlas.plots.files`: other formats, the
  caption-free copy) from one drawing;
* :func:`captioned_figure`, :func:`plot_note`: the one way a figure gets its
  caption (model, corpus, N, deviations) in a band at its bottom, which the
  caption-free copy leaves out (:class:`CaptionedFigure`);
* :data:`COLOURS`: one colour-blind-safe colour per token class and behaviour;
  :func:`text_colour_on`: annotation text readable on any cell;
  :func:`legend_beside`: a legend outside the axes, over no data;
* :func:`head_grid`, :func:`draw_head_heatmap`, :func:`head_heatmaps`: the
  layer x head heat map (layer 1 at the top, head 1 on the left);
* :func:`draw_attention_lines`: one head's map as lines from token *i* (left
  column) to token *j* (right column), opacity = weight (Clark et al. Fig. 1, 5);
* :func:`points_by_layer`, :func:`layer_axis`: per-head values against their
  layer, the layer means as a line (Clark et al. Fig. 2, 3, 4).
"""

from __future__ import annotations

import textwrap
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Rectangle
from matplotlib.transforms import Bbox
from matplotlib.ticker import MaxNLocator

from headatlas.io import atomic_path
from headatlas.plots.files import is_caption_free, split_format

# Fixed hash salt and no date: the same data gives a byte-identical SVG (and PDF).
_SAVE_RC = {"svg.hashsalt": "headatlas", "svg.fonttype": "none"}
_NO_DATE = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "png": {}}
_CAPTION_LINE_INCHES = 0.13  # caption band height per line of 7-pt text
# Lines fainter than this are invisible anyway; dropping them keeps SVGs small.
MIN_LINE_WEIGHT = 0.01

# Token classes and head behaviours, one colour each, from Okabe & Ito's colour-blind-safe
# palette (plus a light grey for "other"), so [CLS], [SEP], punctuation, ... stay apart in every figure
# and for every kind of colour vision. Every figure drawing a class takes its colour from here.
COLOURS = {"cls": "#CC79A7", "sep": "#009E73", "punct": "#E69F00", "other": "#BBBBBB",
           "prev": "#0072B2", "next": "#D55E00", "self": "#000000", "broad": "#56B4E9",
           "special": "#000000"}
BEHAVIOURS = {"broad": "attends broadly", "next": "attends to next token",
              "prev": "attends to previous token", "sep": "attends to [SEP]",
              "cls": "attends to [CLS]", "punct": "attends to . and ,"}
HIGHLIGHT = "#d62728"  # Clark's Fig. 5: the words of interest, their lines, a chosen head


def atomic_savefig(fig: Figure, paths: str | Path | Sequence[str | Path]) -> None:
    """Write ``fig`` to ``paths`` (one path or the list of a figure's files,
    :func:`headatlas.plots.files.figure_files`), each atomically, format from its suffix.

    A caption-free name (``<name>.nocaption.<format>``) gets the figure without its
    caption band. The layout is computed once, by the first file's save, and kept for the
    others (each file is then one draw instead of a layout draw and a print draw; a
    caption-free copy is the same drawing less its band). Raises ``ValueError`` for a
    suffix other than ``.svg``/``.png``/``.pdf``.
    """
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    for path in paths:
        split_format(path)  # refuse an unknown format before writing anything
    if not paths:
        return
    first, *rest = paths
    _save(fig, first)  # runs the layout engine
    with layout_kept(fig):
        for path in rest:
            _save(fig, path)


def _save(fig: Figure, path: str | Path) -> None:
    fmt = split_format(path)[1]
    with matplotlib.rc_context(_SAVE_RC), atomic_path(path) as tmp, \
            (without_caption(fig) if is_caption_free(path) else nullcontext()) as crop:
        # The temporary name has no figure suffix, hence the explicit format.
        fig.savefig(tmp, format=fmt, metadata=_NO_DATE[fmt], bbox_inches=crop)


@contextmanager
def layout_kept(fig: Figure):
    """Inside, the axes stay where the layout engine last put them (no engine runs at a draw);
    the figure's engine is back on leaving."""
    engine = fig.get_layout_engine()
    # No engine at all (not "none", a placeholder): savefig then skips its layout draw too.
    with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)
    try:
        yield
    finally:
        if engine is not None:
            fig.set_layout_engine(engine)


class CaptionedFigure(Figure):
    """A constrained-layout figure whose caption band can be left out (:func:`without_caption`)."""

    def __init__(self, width: float, height: float, caption: str):
        lines = textwrap.wrap(caption, width=int(width * 15)) or [""]
        self.band_inches = 0.15 + _CAPTION_LINE_INCHES * len(lines)
        super().__init__(figsize=(width, height + self.band_inches), layout="constrained")
        band = self.band_inches / (height + self.band_inches)
        self.get_layout_engine().set(rect=(0, band, 1, 1 - band))  # axes stay above the band
        self.caption = self.text(0.01, band / 2, "\n".join(lines), ha="left", va="center",
                                 fontsize=7, color="0.3")


@contextmanager
def without_caption(fig: Figure):
    """``fig`` without its caption while inside; yields the part of the figure above the caption
    band (inches, for ``savefig(bbox_inches=...)``): the layout keeps the axes out of the band,
    so cutting it off leaves the same drawing. A figure with no caption (not a
    :class:`CaptionedFigure`) yields None: it is saved whole."""
    if not isinstance(fig, CaptionedFigure):
        yield None
        return
    width, height = fig.get_size_inches()
    fig.caption.set_visible(False)
    try:
        yield Bbox.from_bounds(0, fig.band_inches, width, height - fig.band_inches)
    finally:
        fig.caption.set_visible(True)


def captioned_figure(width: float, height: float, caption: str) -> CaptionedFigure:
    """A ``width`` x ``height`` inch constrained-layout figure plus a caption band below it."""
    return CaptionedFigure(width, height, caption)


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
        in black or white, whichever reads better on the cell (:func:`text_colour_on`).
    outline : (layer, head), optional
        A head to box (1-based), in ``outline_colour``.
    ylabel : str or None
        None for a panel that shares the layer axis of its left neighbour.
    """
    n_layers, n_heads = grid.shape
    image = ax.imshow(grid, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto",
                      extent=(0.5, n_heads + 0.5, n_layers + 0.5, 0.5))
    if annotate is not None:
        for (row, col), value in np.ndenumerate(grid):
            if np.isfinite(value):
                ax.text(col + 1, row + 1, annotate.format(value), ha="center", va="center",
                        fontsize=6, color=text_colour_on(image.to_rgba(value)))
    if outline is not None:
        layer, head = outline
        ax.add_patch(Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False,
                               edgecolor=outline_colour, linewidth=2))
    ax.set(xlabel="head")
    head_ticks(ax.xaxis)
    head_ticks(ax.yaxis)
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


def head_ticks(axis) -> None:
    """Whole-number ticks (layer or head ids) on ``axis``: every id where its labels fit,
    thinned at draw time to what its length holds, so 16 or 24 ids on a narrow panel do not
    collide."""
    axis.set_major_locator(IdLocator())


class IdLocator(MaxNLocator):
    """Whole-number ticks, as many as fit the axis with one label's width (x) or height (y),
    plus a gap, between neighbours (matplotlib's "auto" allows 3 font sizes whatever the label)."""

    def __init__(self):
        super().__init__(integer=True, min_n_ticks=1)

    def tick_values(self, vmin, vmax):
        if self.axis is not None:
            self.set_params(nbins=self._room(vmin, vmax))
        return super().tick_values(vmin, vmax)

    def _room(self, vmin, vmax) -> int:
        axis = self.axis
        name = axis.axis_name
        size = FontProperties(size=matplotlib.rcParams[f"{name}tick.labelsize"]).get_size_in_points()
        bbox = axis.axes.bbox
        length = (bbox.width if name == "x" else bbox.height) / axis.axes.figure.dpi * 72
        digits = len(str(int(max(abs(vmin), abs(vmax)))))
        label = (0.6 * digits + 0.8) * size if name == "x" else 1.6 * size
        return max(1, int(length / label) - 1)


def text_colour_on(background) -> str:
    """``"black"`` or ``"white"``, whichever has the higher WCAG contrast with ``background``
    (any matplotlib colour, e.g. a cell's RGBA from ``image.to_rgba(value)``).

    Chosen from the cell's actual luminance, not its value: on a diverging map the cells
    near 0 are near white whatever the value's sign.
    """
    rgb = np.asarray(matplotlib.colors.to_rgb(background))
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    luminance = float(linear @ [0.2126, 0.7152, 0.0722])
    on_white, on_black = 1.05 / (luminance + 0.05), (luminance + 0.05) / 0.05
    return "white" if on_white > on_black else "black"


def legend_beside(ax, **options):
    """``ax``'s legend to the right of its axes (constrained layout makes room), so it covers
    no data; ``options`` go to :meth:`~matplotlib.axes.Axes.legend`."""
    options = {"fontsize": 7, "frameon": False, **options}
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, **options)


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


def layer_axis(ax, n_layers: int, ylabel: str, legend: bool = True) -> None:
    """Layer ticks 1..``n_layers`` on x, a light grid and (``legend``) the legend beside it."""
    ax.set(xlabel="layer", ylabel=ylabel, xlim=(0.5, n_layers + 0.5))
    head_ticks(ax.xaxis)
    ax.grid(alpha=0.3)
    if legend:
        legend_beside(ax)
