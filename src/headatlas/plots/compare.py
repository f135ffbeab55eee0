"""Cross-model figures (:mod:`headatlas.report.compare`): every configured model in one picture."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.ticker import ScalarFormatter

from headatlas.plots.base import COLOURS, atomic_savefig, captioned_figure, legend_beside, text_colour_on
from headatlas.plots.headtypes import type_colours

SPECIAL_LABELS = {"cls": "[CLS]", "sep": "[SEP]", "punct": ". or ,"}
SINK_ROLE_LABELS = {"any": "any key", "cls": "[CLS]", "sep": "[SEP]", "punct": ". or ,"}
PAPER_SEP_DEPTH = (6 / 12, 10 / 12)  # Clark et al.: over half of the attention on [SEP] in layers 6-10 of 12


def model_colours(models) -> dict[str, str]:
    """One colour per model, in order (matplotlib's tab10)."""
    cycle = matplotlib.colormaps["tab10"].colors
    return {m: matplotlib.colors.to_hex(cycle[i % len(cycle)]) for i, m in enumerate(models)}


def plot_special_by_depth(table: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Attention to [CLS], [SEP] and . , per layer against relative depth, one line per model."""
    models = list(dict.fromkeys(table["model"]))
    colours = model_colours(models)
    fig = captioned_figure(11, 3.6, caption)
    axes = fig.subplots(1, 3, sharey=True)
    for ax, (kind, label) in zip(axes, SPECIAL_LABELS.items()):
        if kind == "sep":
            ax.axvspan(*PAPER_SEP_DEPTH, color=COLOURS["sep"], alpha=0.12,
                       label="paper: >50% on [SEP] (layers 6-10 of 12)")
        for model in models:
            rows = table[table["model"] == model]
            ax.plot(rows["depth"], rows[kind], marker="o", markersize=3, color=colours[model],
                    label=f"{model} ({int(rows['n_layers'].iloc[0])} layers)")
        ax.set(title=f"attention to {label}", xlabel="relative depth (layer / layers)", xlim=(0, 1.02),
               ylim=(0, 1))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean attention (over heads and tokens)")
    legend_beside(axes[-1])
    atomic_savefig(fig, path)


def plot_sinks_by_depth(table: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Gu et al.'s sink rate per layer against relative depth, a panel per key role (any key,
    [CLS], [SEP], . ,), a colour per model, solid under the attention weights and dashed under
    the norm weighting (where Kobayashi's small [SEP] values should shrink the sinks)."""
    models = list(dict.fromkeys(table["model"]))
    colours = model_colours(models)
    fig = captioned_figure(13, 3.6, caption)
    axes = fig.subplots(1, len(SINK_ROLE_LABELS), sharey=True)
    for ax, (role, label) in zip(axes, SINK_ROLE_LABELS.items()):
        for model in models:
            for weighting, style in (("attention", "-"), ("norm", "--")):
                rows = table[(table["model"] == model) & (table["weighting"] == weighting)
                             & (table["role"] == role)]
                if len(rows):
                    ax.plot(rows["depth"], rows["sink_rate"], style, marker="o", markersize=3,
                            color=colours[model], label=f"{model}, {weighting} "
                            f"({int(rows['n_layers'].iloc[0])} layers)")
        ax.set(title=f"sink on {label}", xlabel="relative depth (layer / layers)", xlim=(0, 1.02),
               ylim=(-0.02, 1.02))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("sink rate (share of segments x heads)")
    handles, labels = axes[0].get_legend_handles_labels()  # "any key": every run has a line there
    legend_beside(axes[-1], handles=handles, labels=labels, handlelength=3.5)  # shows the dashes
    atomic_savefig(fig, path)


def plot_table1_by_model(table: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Table 1 side by side: per treebank, each relation's best-head accuracy of every model
    (bars, 95% intervals), its best offset (grey tick) and the paper's best head (black x)."""
    models = list(dict.fromkeys(table["model"]))
    corpora = list(dict.fromkeys(table["corpus"]))
    colours = model_colours(models)
    relations = {c: list(dict.fromkeys(table.loc[table["corpus"] == c, "relation"])) for c in corpora}
    height = 0.9 + 0.28 * max(len(r) for r in relations.values()) * max(1, len(models)) / 2
    fig = captioned_figure(5.5 * len(corpora), height, caption)
    axes = np.atleast_1d(fig.subplots(1, len(corpora), squeeze=False)[0])
    width = 0.8 / len(models)
    for ax, corpus in zip(axes, corpora):
        rels = relations[corpus]
        y = np.arange(len(rels))
        for k, model in enumerate(models):
            rows = table[(table["corpus"] == corpus) & (table["model"] == model)].set_index("relation")
            rows = rows.reindex(rels)
            pos = y - 0.4 + width * (k + 0.5)
            errors = None
            if rows["acc_low"].notna().any():
                errors = np.vstack([rows["acc"] - rows["acc_low"], rows["acc_high"] - rows["acc"]]).astype(float)
            ax.barh(pos, rows["acc"].astype(float), height=width, color=colours[model], xerr=errors,
                    error_kw={"elinewidth": 0.7, "capsize": 1.5}, label=model)
            ax.scatter(rows["baseline_acc"].astype(float), pos, marker="|", color="0.35", s=60, zorder=3,
                       label="best offset" if k == 0 else None)
        paper = table[table["corpus"] == corpus].drop_duplicates("relation").set_index("relation").reindex(rels)
        ax.scatter(paper["paper_acc"].astype(float), y, marker="x", color="k", zorder=4,
                   label="paper (bert-base, PTB/SD)")
        ax.set(yticks=y, yticklabels=rels, xlim=(0, 100), xlabel="accuracy (%)", title=corpus)
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    legend_beside(axes[-1])
    atomic_savefig(fig, path)


def plot_shares_by_model(table: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Share of each head type per model (stacked bars), the paper's BERT-large last."""
    models = list(dict.fromkeys(table["model"]))
    types = list(dict.fromkeys(table["type"]))
    colours = type_colours(types)
    fig = captioned_figure(8, 0.8 + 0.45 * len(models), caption)
    ax = fig.add_subplot()
    left = np.zeros(len(models))
    for kind in types:
        shares = table[table["type"] == kind].set_index("model").reindex(models)["share_pct"].astype(float)
        values = shares.fillna(0).to_numpy()
        ax.barh(models, values, left=left, color=colours[kind], label=kind)
        for y, (x0, v) in enumerate(zip(left, values)):
            if v >= 6:
                ax.text(x0 + v / 2, y, f"{v:.0f}%", ha="center", va="center", fontsize=7,
                        color=text_colour_on(colours[kind]))
        left += values
    ax.set(xlim=(0, 100), xlabel="share of heads (%)")
    ax.invert_yaxis()
    ax.legend(fontsize=7, ncol=len(types), loc="lower center", bbox_to_anchor=(0.5, 1.0))
    atomic_savefig(fig, path)


CARRIERS = {"cls": ("[CLS]", "o"), "sep": ("[SEP]", "s"), "punct": (". ,", "^"), "first": ("first word piece", "D"),
            "other": ("other tokens", "x")}


def plot_activations_by_depth(table: pd.DataFrame, path: str | Path, caption: str) -> None:
    """The largest |h| entry over the median per hidden state against relative depth (0: the
    embeddings), a colour per model, the marker the token role that most often carries it."""
    models = list(dict.fromkeys(table["model"]))
    colours = model_colours(models)
    fig = captioned_figure(8, 4, caption)
    ax = fig.subplots()
    for model in models:
        rows = table[table["model"] == model]
        ax.plot(rows["depth"], rows["top_ratio"], color=colours[model], linewidth=1,
                label=f"{model} ({int(rows['n_layers'].iloc[0])} layers)")
        for role, (label, marker) in CARRIERS.items():
            part = rows[rows["carrier"] == role]
            ax.scatter(part["depth"], part["top_ratio"], color=colours[model], marker=marker, s=30)
    for role, (label, marker) in CARRIERS.items():  # the markers' key, once
        if (table["carrier"] == role).any():
            ax.scatter([], [], color="#555555", marker=marker, label=f"top on {label}")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())  # 20, 50, not 2 x 10^1
    ax.yaxis.set_minor_formatter(ScalarFormatter())
    ax.set(xlabel="relative depth (0 = embeddings, 1 = last layer)", ylabel="largest |h| / median |h|",
           xlim=(-0.02, 1.02), title="massive activations by depth")
    ax.grid(alpha=0.3)
    legend_beside(ax, fontsize=7)
    atomic_savefig(fig, path)
