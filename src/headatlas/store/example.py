"""One stored example as analyses see it, and the token classes every analysis shares."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Sequence

import numpy as np

from headatlas.errors import StoreError
from headatlas.store.halves import arithmetic_row_entropy, norm_row_entropy, norm_weighted_and_totals, row_entropy
from headatlas.weightings import check_weighting

PUNCT_TOKENS = frozenset({".", ","})
# The classes a token falls in for the analyses that pool keys by class (Kobayashi's shares,
# rollout, Clark's special tokens): its own one-hot column each (Example.class_onehot).
TOKEN_CLASSES = ("cls", "sep", "punct", "other")
# Markers some tokenizers put before a word-initial piece (RoBERTa, SentencePiece).
_WORD_MARKERS = "Ġ▁"


def class_onehot_of(cls: np.ndarray, sep: np.ndarray, punct: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """float32 ``[..., N, 4]``: :attr:`Example.class_onehot` of token masks ``[..., N]``
    (:func:`token_masks`; ``valid``: the positions within each input, no class past its length)."""
    punct = punct & ~cls & ~sep
    return np.stack([cls, sep, punct, valid & ~(cls | sep | punct)], axis=-1).astype(np.float32)


def token_masks(tokens: Sequence[str], cls_token: str,
                sep_token: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean ``[n]`` masks of ``[CLS]``, ``[SEP]`` and period/comma tokens.

    The one definition of these token classes, shared by every analysis.
    ``cls_token`` and ``sep_token`` are the tokenizer's own strings (the
    store's attributes): every token equal to ``sep_token`` is a ``[SEP]``
    (RoBERTa's ``</s></s>`` between A and B are two). A period or comma may
    carry a word-start marker (``Ġ.``, ``▁,``).
    """
    cls = np.array([t == cls_token for t in tokens], dtype=bool)
    sep = np.array([t == sep_token for t in tokens], dtype=bool)
    punct = np.array([t.lstrip(_WORD_MARKERS) in PUNCT_TOKENS for t in tokens], dtype=bool)
    return cls, sep, punct


@dataclass
class Example:
    """One example's attention and tokens.

    ``attn`` has shape ``[layers, heads, query, key]`` (float32; rows sum to 1): the
    attention weights α, or under ``weighting == "norm"`` α_ij‖f_h(x_j)‖ renormalised
    per row (:mod:`headatlas.weightings`). ``value_norms`` ``[layers, heads, key]``
    (‖f_h(x_j)‖) and ``norm_map`` ``[layers, query, key]`` (‖Σ_h α^h_ij f_h(x_j)‖)
    are set when the store was opened with ``norms=True`` (``value_norms`` also under
    the norm weighting), else None. ``halves``: the float16 values ``attn`` was widened
    from, where it was (:meth:`widened_from`: a store's, a fused run's attention weights; None
    otherwise): some quantities are a lookup of them (:func:`headatlas.store.halves.row_entropy`).
    ``cls_token``/``sep_token`` are the tokenizer's (the store's attributes);
    the defaults, BERT's, only serve examples built by hand.
    """

    index: int
    id: str
    tokens: list[str]
    input_ids: np.ndarray
    token_type_ids: np.ndarray
    word_ids: np.ndarray
    attn: np.ndarray
    cls_token: str = "[CLS]"
    sep_token: str = "[SEP]"
    value_norms: np.ndarray | None = None
    norm_map: np.ndarray | None = None
    weighting: str = "attention"
    # Not fields: a copy made with replace() (other maps, another view) carries neither.
    halves = None  # the float16 values attn was widened from (widened_from)
    _norm_parts = None  # a norm view's: the attention's halves and the row sums it was divided by

    def widened_from(self, halves: np.ndarray) -> "Example":
        """This example, knowing that ``attn`` is exactly ``halves`` (float16) widened."""
        self.halves = halves
        return self

    def row_entropy(self) -> np.ndarray:
        """float32 ``[layers, heads, query]``: ``-Σ_k a log a`` of each row of ``attn`` (nats, 0 log
        0 = 0): looked up from the float16 values it was widened from, or for a norm view of
        them from its parts (:mod:`headatlas.store.halves`); else the arithmetic."""
        if self.halves is not None:
            return row_entropy(self.halves)
        if self._norm_parts is not None:
            halves, totals = self._norm_parts
            return norm_row_entropy(halves, self.attn, self.value_norms, totals)
        return arithmetic_row_entropy(self.attn)

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @cached_property
    def masks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # once per example: every analysis asks (a Python pass over the tokens, 1-2% of a fused run)
        return token_masks(self.tokens, self.cls_token, self.sep_token)

    @cached_property
    def class_onehot(self) -> np.ndarray:
        """float32 ``[n, 4]``: each token's :data:`TOKEN_CLASSES` ([CLS], [SEP], period/comma that
        is neither, other), one-hot (a token both [CLS] and [SEP] is in both columns)."""
        cls, sep, punct = self.masks
        return class_onehot_of(cls, sep, punct, np.ones_like(cls))

    @property
    def cls_mask(self) -> np.ndarray:
        return self.masks[0]

    @property
    def sep_mask(self) -> np.ndarray:
        return self.masks[1]

    @property
    def punct_mask(self) -> np.ndarray:
        """Tokens that are a period or a comma (Clark et al.'s punctuation)."""
        return self.masks[2]

    def weighted(self, weighting: str) -> "Example":
        """This example under ``weighting`` (needs ``value_norms`` for ``norm``).

        Only an example of the attention weights can be reweighted.
        """
        if check_weighting(weighting) == self.weighting:
            return self
        if self.weighting != "attention" or self.value_norms is None:
            raise StoreError(f"example {self.id}: the norm weighting needs the attention weights "
                             "and the value norms (open the store with norms=True)")
        attn, totals = norm_weighted_and_totals(self.attn, self.value_norms)
        weighted = replace(self, attn=attn, weighting=weighting)
        weighted.__dict__["masks"] = self.masks  # the same tokens
        if self.halves is not None:
            weighted._norm_parts = (self.halves, totals)
        return weighted

