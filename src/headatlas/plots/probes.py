"""Figures for the probing classifiers (Clark et al. 2019 §5, Table 3).

* :func:`plot_table3`: UAS of every probe, ours (mean +- sd over seeds, one bar
  per evaluation set) beside the paper's number;
* :func:`plot_probe_weights`: the attn-only probe's learned weight of every
  head (layers x heads), one panel per direction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from headatlas.plots.base import atomic_savefig, captioned_figure, head_grid, head_heatmaps

_BAR_COLOURS = ("#3498db", "#e67e22", "#2ca25f", "#9b59b6")


def plot_table3(table: pd.DataFrame, evals: Sequence[str], path: str | Path, caption: str) -> None:
    """Horizontal bars: UAS per probe and evaluation set with sd error bars; paper as diamonds.

    ``table`` is :func:`headatlas.analyses.probes.table3`'s output; probes without
    our numbers (the structural probe) show the paper's value only, the uniform-maps
    control ours only; a row's attention entropy (share of uniform) is printed under its name.
    """
    ours = table[list(evals)].notna().any(axis=1)
    entropy = table["attention_entropy"] if "attention_entropy" in table else pd.Series(np.nan, table.index)
    probes = [(name if run else f"{name} (paper only)") + ("" if np.isnan(h) else f"\nentropy {h:.3f} of uniform")
              for name, run, h in zip(table["paper_name"], ours, entropy.astype(float))]
    fig = captioned_figure(8, 0.5 + 0.55 * len(probes), caption)
    ax = fig.subplots()
    y = np.arange(len(probes))
    height = 0.8 / max(len(evals), 1)
    for k, name in enumerate(evals):
        ax.barh(y - 0.4 + height * (k + 0.5), table[name], height, xerr=table[f"{name}_sd"],
                color=_BAR_COLOURS[k % len(_BAR_COLOURS)], label=f"ours, {name.replace('_', ' ')}",
                error_kw={"elinewidth": 0.8, "capsize": 2})
    ax.scatter(table["paper_uas"], y, marker="D", color="black", zorder=3, s=18,
               label="paper (PTB dev, BERT-base)")
    ax.set(yticks=y, yticklabels=probes, xlabel="UAS (%, punctuation excluded)", xlim=(0, 100))
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside, hiding no bar
    atomic_savefig(fig, path)


def plot_probe_weights(weights: pd.DataFrame, path: str | Path, caption: str) -> None:
    """Heat maps (layer x head) of the attn-only weights, averaged over seeds, per direction.

    ``weights`` has columns ``direction``, ``layer``, ``head``, ``weight`` (1-based
    ids, several seeds stacked).
    """
    mean = weights.groupby(["direction", "layer", "head"], as_index=False)["weight"].mean()
    directions = list(dict.fromkeys(weights["direction"]))
    n_layers, n_heads = int(weights["layer"].max()), int(weights["head"].max())
    bound = float(mean["weight"].abs().max()) or 1.0
    fig = captioned_figure(2 * (1 + 0.3 * n_heads), 1 + 0.3 * n_layers, caption)
    head_heatmaps(fig, [head_grid(mean[mean["direction"] == d], "weight") for d in directions],
                  [f"attn-only weights, {d}" for d in directions], cmap="RdBu_r", vmin=-bound,
                  vmax=bound, colorbar="weight")
    atomic_savefig(fig, path)
