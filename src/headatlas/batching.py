"""Padding token sequences of different lengths into one batch of tensors."""

from __future__ import annotations

from typing import Mapping, Sequence

import torch


def pad_batch(examples: Sequence, fields: Mapping[str, int],
              mask: str | None = "attention_mask") -> dict[str, torch.Tensor]:
    """Right-pad per-token fields of ``examples`` into ``[batch, width]`` long tensors.

    Parameters
    ----------
    examples : sequence
        Objects with one list attribute per field (all of one length per example).
    fields : mapping of str -> int
        Attribute name -> the value its padding positions get (e.g.
        ``{"input_ids": pad_id, "token_type_ids": 0}``).
    mask : str or None
        Name of the ``[batch, width]`` 1/0 mask of real tokens added to the
        output; None for no mask.

    Returns
    -------
    dict of str -> Tensor
        One ``[batch, width]`` tensor per field (in the order given), then
        the mask; ``width`` is the longest example.
    """
    if not examples:
        raise ValueError("pad_batch needs at least one example")
    lengths = [len(getattr(example, next(iter(fields)))) for example in examples]
    width = max(lengths)
    out = {name: torch.full((len(examples), width), value, dtype=torch.long)
           for name, value in fields.items()}
    if mask is not None:
        out[mask] = torch.zeros((len(examples), width), dtype=torch.long)
    for row, (example, n) in enumerate(zip(examples, lengths)):
        for name in fields:
            values = getattr(example, name)
            if len(values) != n:
                raise ValueError(f"example {row}: {name} has {len(values)} values, expected {n}")
            out[name][row, :n] = torch.tensor(values)
        if mask is not None:
            out[mask][row, :n] = 1
    return out
