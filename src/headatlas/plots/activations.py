"""Massive activations (Sun et al. 2024) and dormant heads (Guo et al. 2024): one figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import ScalarFormatter

from headatlas.plots.base import COLOURS, HIGHLIGHT, atomic_savefig, captioned_figure, legend_beside


def plot_activations(layers: pd.DataFrame, heads: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Left: per hidden state, the largest |h| entry over the median (log scale), coloured by
    the token that carries it most often. Right: each head's sink share against its relative
    output, the dormant ones (on at least one input) marked."""
    fig = captioned_figure(10, 4, caption)
    left, right = fig.subplots(1, 2)
    roles = {"cls": "[CLS]", "sep": "[SEP]", "punct": ". ,", "first": "first word piece", "other": "other tokens"}
    colours = {"cls": COLOURS["cls"], "sep": COLOURS["sep"], "punct": COLOURS["punct"], "first": COLOURS["prev"],
               "other": COLOURS["other"]}
    carrier = layers[[f"on_{r}" for r in roles]].to_numpy().argmax(axis=1)
    left.plot(layers["layer"], layers["top_ratio"], color="#888888", linewidth=1, zorder=1)
    for k, role in enumerate(roles):
        rows = layers[carrier == k]
        if len(rows):
            left.scatter(rows["layer"], rows["top_ratio"], color=colours[role], label=f"top on {roles[role]}",
                         zorder=2, s=25)
    massive = layers["massive"].astype(bool)
    if massive.any():
        left.scatter(layers["layer"][massive], layers["top_ratio"][massive], facecolors="none",
                     edgecolors="black", s=80, label="massive", zorder=3)
    left.set_yscale("log")
    left.yaxis.set_major_formatter(ScalarFormatter())  # 20, 50, not 2 x 10^1
    left.yaxis.set_minor_formatter(ScalarFormatter())
    left.set_xlabel("hidden state (0 = embeddings)")
    left.set_ylabel("largest |h| / median |h|")
    left.set_xticks(layers["layer"])
    left.set_title("massive activations", fontsize=10)
    legend_beside(left, fontsize=7)
    asleep = heads["dormant_rate"] > 0
    right.scatter(heads["sink_share"][~asleep], heads["relative_output"][~asleep], s=12, color=COLOURS["other"],
                  label="heads")
    right.scatter(heads["sink_share"][asleep], heads["relative_output"][asleep], s=18, color=HIGHLIGHT,
                  label="dormant on some inputs")
    right.axhline(1.0, color="#888888", linewidth=0.8, linestyle="--")
    right.set_xlim(-0.02, 1.02)
    top = np.nanmax(heads["relative_output"].to_numpy()) if len(heads) else 1.0
    right.set_ylim(0, max(1.5, float(top) * 1.05))
    right.set_xlabel("sink share (attention on [CLS] and [SEP])")
    right.set_ylabel("output norm / layer's median head")
    right.set_title("each head's sink share and output", fontsize=10)
    legend_beside(right, fontsize=7)
    atomic_savefig(fig, path)
