"""The trainable probes of :mod:`headatlas.analyses.probes` as torch modules (Clark et al. §4.2).

Apart so that the probes' reading rules (tables, claims, weights) do not import torch:
``headatlas.analyses.probes.AttentionProbe`` still names the class here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn

from headatlas.analyses.probes import HIDDEN, N_DISTANCE, Batch, distance_features, pair_features
from headatlas.heads import head_index


def _glove_pairs(embed: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
    """``[B, M, M+1, 2d]``: ``[v_j ; v_i]`` for dependent j and candidate i (v_ROOT = 0)."""
    v = embed(ids)
    m = v.shape[1]
    dep = v[:, :, None, :].expand(-1, -1, m + 1, -1)
    cand = torch.cat([torch.zeros_like(v[:, :1]), v], 1)[:, None, :, :].expand(-1, m, -1, -1)
    return torch.cat([dep, cand], -1)


class AttentionProbe(nn.Module):
    """Attn-only (``glove=None``) or Attn + GloVe probe over ``n_maps`` attention maps.

    Parameters
    ----------
    n_maps : int
        K = layers x heads; the probe weighs 2K maps (both directions).
    glove : ndarray ``[V+1, d]`` or None
        Frozen GloVe table (last row zeros = OOV) for per-pair weights.
    """

    def __init__(self, n_maps: int, glove: np.ndarray | None = None):
        super().__init__()
        self.root = nn.Parameter(torch.ones(2))  # start: ROOT score = attention to [CLS] + [SEP]
        if glove is None:
            bound = (3.0 / (2 * n_maps)) ** 0.5  # Glorot-uniform bound of a 2K vector
            self.weights = nn.Parameter(torch.empty(2 * n_maps).uniform_(-bound, bound))
        else:
            self.embed = nn.Embedding.from_pretrained(torch.as_tensor(glove), freeze=True)
            self.pair = nn.Linear(2 * glove.shape[1], 2 * n_maps)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits ``[B, M, M+1]`` (candidate 0 = ROOT); impossible candidates are -inf."""
        feats = pair_features(batch.maps, self.root)
        if hasattr(self, "pair"):
            # W [v_j ; v_i] + b is linear, so split it instead of building [B, M, M+1, 2K].
            d = self.embed.embedding_dim
            v = self.embed(batch.glove_ids)
            dep = v @ self.pair.weight[:, :d].T + self.pair.bias  # [B, M, 2K]
            cand = nn.functional.pad(v @ self.pair.weight[:, d:].T, (0, 0, 1, 0))  # [B, M+1, 2K]
            logits = (torch.einsum("bjk,bkjc->bjc", dep, feats)
                      + torch.einsum("bck,bkjc->bjc", cand, feats))
        else:
            logits = torch.einsum("k,bkjc->bjc", self.weights, feats)
        return logits.masked_fill(~batch.candidates, float("-inf"))

    def weight_table(self, n_layers: int, n_heads: int) -> pd.DataFrame | None:
        """Attn-only: the learned weight of every (layer, head, direction), 1-based."""
        if not hasattr(self, "weights"):
            return None
        w = self.weights.detach().numpy().reshape(2, n_layers, n_heads)
        layer, head = head_index(n_layers, n_heads)
        return pd.concat([pd.DataFrame({"direction": name, "layer": layer,
                                        "head": head, "weight": w[d].ravel()})
                          for d, name in enumerate(("dep->head", "head->dep"))], ignore_index=True)


class DistanceProbe(nn.Module):
    """Distances + GloVe baseline: MLP (one tanh hidden layer) over distance features and
    ``[v_j ; v_i]``, one score per (dependent, candidate); no attention."""

    def __init__(self, glove: np.ndarray, hidden: int = HIDDEN):
        super().__init__()
        self.embed = nn.Embedding.from_pretrained(torch.as_tensor(glove), freeze=True)
        self.mlp = nn.Sequential(nn.Linear(N_DISTANCE + 2 * glove.shape[1], hidden), nn.Tanh(),
                                 nn.Linear(hidden, 1))

    def forward(self, batch: Batch) -> torch.Tensor:
        m = batch.heads.shape[1]
        x = torch.cat([distance_features(batch.n_words, m),
                       _glove_pairs(self.embed, batch.glove_ids)], -1)
        return self.mlp(x).squeeze(-1).masked_fill(~batch.candidates, float("-inf"))
