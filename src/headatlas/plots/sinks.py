"""Attention sinks (Gu et al. 2025): one figure."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from headatlas.plots.base import (COLOURS, atomic_savefig, captioned_figure, draw_head_heatmap, head_grid,
                                  layer_axis, legend_beside)

# headatlas.analyses.sinks.ROLE_LABELS, with "any" (not imported: a figure job needs no analysis)
ROLES = {"any": ("any key", "#000000"), "cls": ("[CLS]", COLOURS["cls"]), "sep": ("[SEP]", COLOURS["sep"]),
         "punct": (". ,", COLOURS["punct"]), "first": ("first word piece", COLOURS["prev"]),
         "other": ("other tokens", COLOURS["other"])}


def plot_sink_rate(heads: pd.DataFrame, layers: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Left: each head's sink rate (share of segments with a key above ε). Right: per layer, the
    mean over heads, for any key and for each role of the sink token."""
    fig = captioned_figure(10, 4, caption)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
    image = draw_head_heatmap(left, head_grid(heads, "sink_rate"), vmin=0, vmax=1, annotate="{:.2f}")
    fig.colorbar(image, ax=left, label="sink rate")
    left.set_title("sink rate per head", fontsize=10)
    for role, (label, colour) in ROLES.items():  # "any" dashed and on top: a role may equal it
        rows = layers[layers["role"] == role]
        right.plot(rows["layer"], rows["sink_rate"], marker="o", markersize=3, color=colour, label=label,
                   linestyle="--" if role == "any" else "-", zorder=3 if role == "any" else 2)
    layer_axis(right, int(layers["layer"].max()), "sink rate (mean over heads)")
    right.set_ylim(-0.02, 1.02)
    right.set_title("per layer, by the sink token's role", fontsize=10)
    legend_beside(right, fontsize=7)
    atomic_savefig(fig, path)
