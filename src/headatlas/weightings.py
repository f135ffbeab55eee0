"""Two views of every attention map: the weights, or the weights scaled by the value norms.

Kobayashi et al. (2020) "Attention is Not Only a Weight": head *h* adds
``α_ij f_h(x_j)`` to token *i*'s output, where ``f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h``
is token *j*'s transformed value vector. A large weight ``α_ij`` on a vector of
small norm contributes little, so the map ``α_ij ‖f_h(x_j)‖`` says more about what
a head passes on than ``α_ij`` alone.

* ``attention``: the attention weights α, as the model computed them (rows sum to 1).
* ``norm``: ``α_ij ‖f_h(x_j)‖`` divided by its row sum, so rows again sum to 1
  and every analysis written for α reads it unchanged.

The store holds ``‖f_h(x_j)‖`` per head and token (``value_norms``); the reader
(:func:`headatlas.store.reader.open_stores`) applies the weighting, so an analysis never
knows which view it was given. This module is light (numpy only): the config
checks import it when the Snakefile is parsed.
"""

from __future__ import annotations

import re

import numpy as np

WEIGHTINGS = ("attention", "norm")
# Output-folder suffix of each weighting: results/<m>/<c>/surface/ and surface-norm/.
SUFFIXES = {"attention": "", "norm": "-norm"}
#: Regular expression of the ``{weighting}`` wildcard: any suffix, the empty one included.
SUFFIX_PATTERN = "|".join(re.escape(suffix) for suffix in SUFFIXES.values())
DESCRIPTIONS = {
    "attention": "attention weights α",
    "norm": "norm-weighted attention α_ij‖f_h(x_j)‖ renormalised per row (Kobayashi et al. 2020)",
}


def check_weighting(weighting: str) -> str:
    """``weighting`` if it is one of :data:`WEIGHTINGS`, else a ValueError naming them."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting {weighting!r} is not one of {', '.join(WEIGHTINGS)}")
    return weighting


def weighting_of_suffix(suffix: str) -> str:
    """The weighting whose output folders end in ``suffix`` ('' -> attention, '-norm' -> norm)."""
    for name, value in SUFFIXES.items():
        if value == suffix:
            return name
    raise ValueError(f"no weighting has the folder suffix {suffix!r}; known: {SUFFIXES}")


def row_normalised(weights: np.ndarray) -> np.ndarray:
    """``weights`` divided by their sum over the last axis (rows summing to 0 stay 0)."""
    return row_normalised_and_totals(weights)[0]


def row_normalised_and_totals(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`row_normalised`, and the sums ``[..., 1]`` it divided by."""
    totals = weights.sum(axis=-1, keepdims=True)
    return weights / np.where(totals > 0, totals, 1), totals


def norm_weighted(attn: np.ndarray, value_norms: np.ndarray) -> np.ndarray:
    """Kobayashi's per-head view: ``α_ij ‖f_h(x_j)‖``, each row renormalised to sum to 1.

    Parameters
    ----------
    attn : float array ``[..., heads, query, key]``
        Attention weights α.
    value_norms : float array ``[..., heads, key]``
        ``‖f_h(x_j)‖`` of every key token under every head.

    Returns
    -------
    float32 array of ``attn``'s shape.
    """
    return norm_weighted_and_totals(attn, value_norms)[0]


def norm_weighted_and_totals(attn: np.ndarray, value_norms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`norm_weighted`, and the float32 row sums ``[..., query, 1]`` of α_ij‖f_h(x_j)‖ it
    divided by (what the norm view's entropy reads: :func:`headatlas.store.halves.norm_row_entropy`)."""
    if value_norms.shape != attn.shape[:-2] + attn.shape[-1:]:
        raise ValueError(f"value norms of shape {value_norms.shape} do not fit attention of shape "
                         f"{attn.shape} (expected {attn.shape[:-2] + attn.shape[-1:]})")
    weighted = attn.astype(np.float32, copy=False) * value_norms.astype(np.float32)[..., None, :]
    return row_normalised_and_totals(weighted)


def weighting_note(attrs: dict) -> str:
    """What a figure footnote adds for the weighting in ``attrs`` ('' for the attention weights)."""
    weighting = attrs.get("weighting") or "attention"
    return "" if weighting == "attention" else f"; weighting: {DESCRIPTIONS[weighting]}, not α"
