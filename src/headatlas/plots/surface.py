"""Figures for the surface analyses (Clark et al. 2019 Fig. 1, 2, 4 and a relative-position map).

* :func:`plot_relative_position`: layer x head maps of attention to the
  previous, current and next token;
* :func:`plot_special_tokens`: Fig. 2, attention to [CLS], [SEP], . and , by layer;
* :func:`plot_entropy`: Fig. 4, attention entropy by layer against uniform attention;
* :func:`plot_attention_lines`: Fig. 1, four heads drawn as lines on one segment.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from headatlas.plots.base import (BEHAVIOURS, COLOURS, atomic_savefig, captioned_figure,
                                  draw_attention_lines, head_grid, head_heatmaps, layer_axis,
                                  points_by_layer)
from headatlas.heads import head_name
from headatlas.store.example import Example


def plot_relative_position(rel: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Heat maps (layer x head) of attention to the previous, current and next token."""
    panels = (("prev", "previous token"), ("self", "current token"), ("next", "next token"))
    grids = [head_grid(rel, column) for column, _ in panels]
    n_layers, n_heads = grids[0].shape
    # at least 7.5 inches: with few heads the three titles would run into each other
    fig = captioned_figure(max(7.5, 3 * (1 + 0.3 * n_heads)), 1.3 + 0.3 * n_layers, caption)
    head_heatmaps(fig, grids, [f"attention to the\n{title}" for _, title in panels], cmap="Blues",
                  vmin=0, vmax=1, colorbar="average attention")
    atomic_savefig(fig, path)


def plot_special_tokens(special: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Fig. 2: attention to [CLS], [SEP], ./, by layer (top) and to [SEP] from [SEP] vs others (bottom)."""
    n_layers = int(special["layer"].max())
    fig = captioned_figure(5.5, 7, caption)
    top, bottom = fig.subplots(2, 1, sharex=True)
    for column, label in (("cls", "[CLS]"), ("sep", "[SEP]"), ("punct", ". or ,")):
        points_by_layer(top, special, column, label, COLOURS[column])
    for column, label, colour in (("sep_from_sep", "[SEP] → [SEP]", COLOURS["sep"]),
                                  ("sep_from_other", "other → [SEP]", COLOURS["other"])):
        points_by_layer(bottom, special, column, label, colour)
    for ax in (top, bottom):
        ax.set_ylim(-0.02, 1.02)
        layer_axis(ax, n_layers, "avg. attention")
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
        points_by_layer(ax, entropy, column, "heads (line: layer mean)", COLOURS["prev"])
        ax.axhline(uniform, color="k", linestyle="--", linewidth=1,
                   label=f"uniform attention ({uniform:.2f})")
        ax.set_title(f"attention entropy, {title}")
        layer_axis(ax, n_layers, "avg. attention entropy (nats)", legend=ax is axes[-1])
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
            raise ValueError(f"head {head_name(layer, head)} ({behaviour}) is outside the model's "
                             f"{n_layers} layers x {n_heads} heads")
    fig = captioned_figure(2.6 * len(heads), 1 + 0.16 * example.n_tokens, caption)
    axes = np.atleast_1d(fig.subplots(1, len(heads)))
    for ax, (behaviour, (layer, head)) in zip(axes, heads.items()):
        draw_attention_lines(ax, example.attn[layer - 1, head - 1], example.tokens,
                             colour=COLOURS.get(behaviour, COLOURS["other"]))
        ax.set_title(f"Head {head_name(layer, head)}\n{BEHAVIOURS.get(behaviour, behaviour)}", fontsize=9)
    atomic_savefig(fig, path)
