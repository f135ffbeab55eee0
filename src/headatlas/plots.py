"""Figures for the surface analyses (Clark et al. 2019 Fig. 1, 2, 4 and a relative-position map).

Each function draws one figure from a per-head table (or one example) and
writes it with :func:`atomic_savefig`: SVG or PNG by the path's suffix, under
a temporary name renamed into place, so a failed plot leaves no file. Every
figure carries ``caption`` (model, corpus, N, deviations) at its bottom.
Figures are built with :class:`matplotlib.figure.Figure` directly, not pyplot,
so nothing depends on a display or on global figure state.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from headatlas.analyses.surface import layer_means
from headatlas.io import atomic_path
from headatlas.store import Example

FORMATS = ("svg", "png")
# Fixed hash salt and no date: the same data gives a byte-identical SVG.
_SAVE_RC = {"svg.hashsalt": "headatlas", "svg.fonttype": "none"}
_CAPTION_LINE_INCHES = 0.13  # caption band height per line of 7-pt text
# Lines fainter than this are invisible anyway; dropping them keeps SVGs small.
_MIN_LINE_WEIGHT = 0.01
COLOURS = {"cls": "#9b59b6", "sep": "#2ca25f", "punct": "#159d82", "other": "#95a5a6",
           "prev": "#3498db", "self": "#7f8c8d", "next": "#e74c3c"}
BEHAVIOURS = {"broad": "attends broadly", "next": "attends to next token",
              "prev": "attends to previous token", "sep": "attends to [SEP]",
              "cls": "attends to [CLS]", "punct": "attends to . and ,"}


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


def _grid(table: pd.DataFrame, column: str) -> np.ndarray:
    """``table[column]`` as a ``[layers, heads]`` array (row 0 = layer 1)."""
    return table.pivot(index="layer", columns="head", values=column).to_numpy()


def plot_relative_position(rel: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Heat maps (layer x head) of attention to the previous, current and next token."""
    panels = (("prev", "previous token"), ("self", "current token"), ("next", "next token"))
    grids = [_grid(rel, column) for column, _ in panels]
    n_layers, n_heads = grids[0].shape
    fig = captioned_figure(3 * (1 + 0.3 * n_heads), 1 + 0.3 * n_layers, caption)
    axes = fig.subplots(1, 3, sharey=True)
    for ax, grid, (_, title) in zip(axes, grids, panels):
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="Blues", aspect="auto",
                          extent=(0.5, n_heads + 0.5, n_layers + 0.5, 0.5))
        ax.set(title=f"attention to the {title}", xlabel="head", xticks=range(1, n_heads + 1),
               yticks=range(1, n_layers + 1))
    axes[0].set_ylabel("layer")
    fig.colorbar(image, ax=axes, label="average attention", shrink=0.8)
    atomic_savefig(fig, path)


def _points_by_layer(ax, table: pd.DataFrame, column: str, label: str, colour: str) -> None:
    """Each head as a faint point at its layer; the layer mean as a line (Clark's Fig. 2/4 style)."""
    ax.scatter(table["layer"], table[column], s=8, color=colour, alpha=0.45, linewidths=0)
    means = layer_means(table, [column])
    ax.plot(means["layer"], means[column], color=colour, marker="o", markersize=3, label=label)


def _layer_axis(ax, n_layers: int, ylabel: str) -> None:
    ax.set(xlabel="layer", ylabel=ylabel, xticks=range(1, n_layers + 1))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def plot_special_tokens(special: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Fig. 2: attention to [CLS], [SEP], ./, by layer (top) and to [SEP] from [SEP] vs others (bottom)."""
    n_layers = int(special["layer"].max())
    fig = captioned_figure(5.5, 7, caption)
    top, bottom = fig.subplots(2, 1, sharex=True)
    for column, label in (("cls", "[CLS]"), ("sep", "[SEP]"), ("punct", ". or ,")):
        _points_by_layer(top, special, column, label, COLOURS[column])
    for column, label, colour in (("sep_from_sep", "[SEP] → [SEP]", COLOURS["sep"]),
                                  ("sep_from_other", "other → [SEP]", COLOURS["other"])):
        _points_by_layer(bottom, special, column, label, colour)
    for ax in (top, bottom):
        ax.set_ylim(-0.02, 1.02)
        _layer_axis(ax, n_layers, "avg. attention")
    top.set_title("attention to special tokens (points: heads; lines: layer means)", fontsize=10)
    bottom.set_title("attention to [SEP], by query token", fontsize=10)
    atomic_savefig(fig, path)


def plot_entropy(entropy: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Fig. 4: per-head entropy of all rows and of the [CLS] row, by layer, against uniform."""
    n_layers = int(entropy["layer"].max())
    uniform = float(entropy["uniform_entropy"].mean())
    fig = captioned_figure(10, 4, caption)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, column, title in zip(axes, ("entropy", "cls_entropy"),
                                 ("all query tokens", "[CLS] query token only")):
        _points_by_layer(ax, entropy, column, "heads (line: layer mean)", COLOURS["prev"])
        ax.axhline(uniform, color="k", linestyle="--", linewidth=1,
                   label=f"uniform attention ({uniform:.2f})")
        ax.set_title(f"attention entropy, {title}")
        _layer_axis(ax, n_layers, "avg. attention entropy (nats)")
    atomic_savefig(fig, path)


def plot_attention_lines(example: Example, heads: dict[str, tuple[int, int]], path: str | Path,
                         caption: str) -> None:
    """Fig. 1: per head, lines from each token (left) to each token (right), opacity = weight.

    ``heads`` maps a behaviour (e.g. ``"next"``) to a 1-based ``(layer, head)``.
    Weights below 0.01 are not drawn (they would be invisible).
    """
    n_layers, n_heads = example.attn.shape[:2]
    for behaviour, (layer, head) in heads.items():
        if not (1 <= layer <= n_layers and 1 <= head <= n_heads):
            raise ValueError(f"head {layer}-{head} ({behaviour}) is outside the model's "
                             f"{n_layers} layers x {n_heads} heads")
    n = example.n_tokens
    fig = captioned_figure(2.6 * len(heads), 1 + 0.16 * n, caption)
    axes = np.atleast_1d(fig.subplots(1, len(heads)))
    for ax, (behaviour, (layer, head)), colour in zip(axes, heads.items(),
                                                      matplotlib.colormaps["tab10"].colors):
        _draw_lines(ax, example.attn[layer - 1, head - 1], example.tokens, colour)
        ax.set_title(f"Head {layer}-{head}\n{BEHAVIOURS.get(behaviour, behaviour)}", fontsize=9)
    atomic_savefig(fig, path)


def _draw_lines(ax, attn: np.ndarray, tokens: list[str], colour) -> None:
    """Draw one head's ``[n, n]`` attention as weighted lines between two token columns."""
    n = len(tokens)
    query, key = np.nonzero(attn >= _MIN_LINE_WEIGHT)
    segments = np.stack([np.stack([np.zeros(len(query)), -query], 1),
                         np.stack([np.ones(len(key)), -key], 1)], axis=1)  # [lines, 2 ends, xy]
    rgba = np.tile(matplotlib.colors.to_rgba(colour), (len(query), 1))
    rgba[:, 3] = attn[query, key]
    ax.add_collection(LineCollection(segments, colors=rgba, linewidths=1.5))
    for x, ha in ((-0.05, "right"), (1.05, "left")):
        for i, token in enumerate(tokens):
            ax.text(x, -i, token, ha=ha, va="center", fontsize=7)
    ax.set(xlim=(-0.6, 1.6), ylim=(-n + 0.5, 0.5))
    ax.axis("off")
