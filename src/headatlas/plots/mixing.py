"""Which view of attention tells the truth (issue 35): the measures against blank-out, per layer,
and the deletion curves, in one figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from headatlas.plots.base import (HIGHLIGHT, atomic_savefig, captioned_figure, draw_head_heatmap, head_grid,
                                  legend_beside)

# One colour per measure in every panel (a rollout: its source's colour, dashed).
COLOURS = {"attention": "#1f77b4", "norm": "#ff7f0e", "globenc": "#2ca02c", "alti": HIGHLIGHT,
           "value_zeroing": "#9467bd", "grad_input": "#8c564b", "random": "#999999", "blank_out": "black"}
REFERENCE_STYLE = {"mask": ("o", "#333333", "blank-out: masked"), "remove": ("s", "#999999", "blank-out: removed")}


def plot_mixing(measures: pd.DataFrame, layers: pd.DataFrame, deletion: pd.DataFrame, aopc: pd.DataFrame,
                comparisons: pd.DataFrame, heads: pd.DataFrame, path: str | Path, caption: str) -> None:
    """First: each measure's Spearman ρ with blank-out (95% intervals), ranked by the masked
    reference. Second: each layered measure per layer, alone (solid) and rolled out (dashed).
    Third: the deletion curves, the fall in p(predicted tag) as the top-k context tokens of each
    order are masked. Last: each head's own α against blank-out."""
    fig = captioned_figure(19, 4.6, caption)
    left, middle, right, last = fig.subplots(1, 4, width_ratios=(1, 1, 1, 0.8))
    ranked = measures[measures.reference == "mask"].sort_values("rho")["measure"].tolist()
    y = {m: i for i, m in enumerate(ranked)}
    for offset, (reference, (marker, colour, label)) in zip((-0.15, 0.15), REFERENCE_STYLE.items()):
        rows = measures[measures.reference == reference]
        ys = rows["measure"].map(y).to_numpy() + offset
        left.errorbar(rows["rho"], ys, xerr=[rows["rho"] - rows["low"], rows["high"] - rows["rho"]], fmt=marker,
                      color=colour, label=label, markersize=5, capsize=2, linewidth=1)
    left.set_yticks(range(len(ranked)), ranked, fontsize=8)
    left.axvline(0, color="#bbbbbb", linewidth=0.8)
    left.set_xlabel("Spearman ρ with blank-out (mean over targets)")
    left.set_title("final reading of each measure", fontsize=10)
    legend_beside(left, fontsize=7)
    for (measure, reading), rows in layers[layers.reference == "mask"].groupby(["measure", "reading"], sort=False):
        middle.plot(rows["layer"], rows["rho"], color=COLOURS[measure], marker="o", markersize=3,
                    linestyle="-" if reading == "layer" else "--",
                    label=f"{measure}" if reading == "layer" else f"{measure}, rolled out")
    middle.set_xlabel("layer")
    middle.set_ylabel("ρ with blank-out (masked)")
    middle.set_xticks(sorted(layers["layer"].unique()))
    middle.set_title("per layer: alone (solid), rolled out (dashed)", fontsize=10)
    legend_beside(middle, fontsize=6)
    for order, rows in deletion.groupby("order", sort=False):
        source = order.removesuffix("_rollout")
        style = ":" if order == "random" else "--" if order != source or order == "blank_out" else "-"
        right.plot(rows["k"], rows["drop"], marker="o", markersize=3, label=order, color=COLOURS[source],
                   linestyle=style)
    right.set_xlabel("top-k context tokens masked")
    right.set_ylabel("fall in p(predicted tag)")
    right.set_xticks(sorted(deletion["k"].unique()))
    right.set_title("deletion curves (higher = the measure found what matters)", fontsize=10)
    legend_beside(right, fontsize=6)
    grid = head_grid(heads, "rho_attention")
    bound = max(float(np.nanmax(np.abs(grid))), 1e-9) if np.isfinite(grid).any() else 1.0
    image = draw_head_heatmap(last, grid, cmap="RdBu_r", vmin=-bound, vmax=bound)
    fig.colorbar(image, ax=last, label="ρ of the head's α with blank-out")
    last.set_title("each head's α", fontsize=10)
    atomic_savefig(fig, path)


def plot_mixing_by_model(table: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Each model's ρ per measure (blank-out by masking), with 95% intervals: one marker per model."""
    fig = captioned_figure(8, 4.2, caption)
    ax = fig.subplots()
    measures = table.groupby("measure", sort=False)["rho"].mean().sort_values().index.tolist()
    models = list(dict.fromkeys(table["model"]))
    for k, model in enumerate(models):
        rows = table[table.model == model].set_index("measure").loc[measures]
        ys = np.arange(len(measures)) + (k - (len(models) - 1) / 2) * 0.2
        ax.errorbar(rows["rho"], ys, xerr=[rows["rho"] - rows["low"], rows["high"] - rows["rho"]], fmt="o",
                    label=model, markersize=5, capsize=2, linewidth=1)
    ax.set_yticks(range(len(measures)), measures, fontsize=8)
    ax.axvline(0, color="#bbbbbb", linewidth=0.8)
    ax.set_xlabel("Spearman ρ with blank-out (masked)")
    legend_beside(ax, fontsize=7)
    atomic_savefig(fig, path)
