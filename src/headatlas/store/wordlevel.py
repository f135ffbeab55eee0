"""Token-level attention -> word-level attention (Clark et al. §4.1).

Attention *to* a word split into several pieces is the sum over its pieces;
attention *from* it is the mean of its pieces' rows (the paper; ``first`` is
what the published code does, ``max`` is offered too). Special tokens stay
units of their own. Every word-level row still sums to 1.
"""

from __future__ import annotations

import numpy as np

FROM_MODES = ("mean", "first", "max")


def units(word_ids: np.ndarray) -> np.ndarray:
    """Map each token to a unit: specials (word id -1) are units of their own.

    Units are numbered in token order. For ``[CLS] w0 .. wK [SEP]`` word k is unit k+1.
    """
    word_ids = np.asarray(word_ids)
    unit = np.empty(len(word_ids), dtype=np.int64)
    current, last_word = -1, None
    for t, w in enumerate(word_ids):
        if w < 0 or w != last_word:
            current += 1
        unit[t] = current
        last_word = w if w >= 0 else None
    return unit


def word_level(attn: np.ndarray, word_ids: np.ndarray, how: str = "mean") -> np.ndarray:
    """Collapse ``attn [..., n, n]`` over word pieces to ``[..., U, U]`` units.

    ``word_ids`` gives each token's word (-1 for special tokens), as stored.
    """
    if how not in FROM_MODES:
        raise ValueError(f"word-level mode {how!r}; choose one of {FROM_MODES}")
    unit = units(word_ids)
    n_units = int(unit.max()) + 1
    onehot = np.zeros((len(unit), n_units), dtype=attn.dtype)
    onehot[np.arange(len(unit)), unit] = 1.0
    to_units = attn @ onehot  # [..., n, U]: sum over each unit's pieces
    if how == "mean":
        weights = onehot / onehot.sum(axis=0, keepdims=True)
        return np.swapaxes(np.swapaxes(to_units, -1, -2) @ weights, -1, -2)
    if how == "first":
        first = np.searchsorted(unit, np.arange(n_units))
        return to_units[..., first, :]
    out = np.stack([to_units[..., unit == u, :].max(axis=-2) for u in range(n_units)], axis=-2)
    return out / out.sum(axis=-1, keepdims=True)


def word_units(word_ids: np.ndarray) -> np.ndarray:
    """For each unit, the word it stands for (-1 for a special token)."""
    unit = units(word_ids)
    word_ids = np.asarray(word_ids)
    first = np.searchsorted(unit, np.arange(int(unit.max()) + 1))
    return word_ids[first]
