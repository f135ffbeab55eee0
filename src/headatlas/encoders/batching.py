"""Padding token sequences of different lengths into one batch of tensors, and back:
the per-example blocks of a padded batch, packed for the store ("pack_examples")."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import torch


def to_device(tensors: Mapping[str, torch.Tensor], device) -> dict[str, torch.Tensor]:
    """A batch's named tensors (model inputs) on ``device``."""
    return {name: tensor.to(device) for name, tensor in tensors.items()}


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
    # filled as numpy arrays, each made a tensor once: a torch operation per example and field
    # costs the host far more (on a GPU's host, a few ms a batch)
    out = {name: np.full((len(examples), width), value, dtype=np.int64) for name, value in fields.items()}
    if mask is not None:
        out[mask] = np.zeros((len(examples), width), dtype=np.int64)
    for row, (example, n) in enumerate(zip(examples, lengths)):
        for name in fields:
            values = getattr(example, name)
            if len(values) != n:
                raise ValueError(f"example {row}: {name} has {len(values)} values, expected {n}")
            out[name][row, :n] = values
        if mask is not None:
            out[mask][row, :n] = 1
    return {name: torch.from_numpy(array) for name, array in out.items()}


def equal_runs(lengths: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(start, stop, n)`` of each run of equal neighbouring lengths (a length-sorted batch has few)."""
    runs: list[tuple[int, int, int]] = []
    for row, n in enumerate(lengths):
        if runs and runs[-1][2] == n:
            runs[-1] = (runs[-1][0], row + 1, n)
        else:
            runs.append((row, row + 1, n))
    return runs


def pack_examples(layers: Sequence[torch.Tensor], lengths: Sequence[int], token_dims: int,
                  dtype: torch.dtype = torch.float16) -> torch.Tensor:
    """Cut the padding off a batch's per-layer arrays and lay the examples out back to back.

    Parameters
    ----------
    layers : one ``[batch, *middle, width, ...]`` tensor per layer, ``token_dims`` trailing
        token axes (2 for attention maps ``[batch, heads, width, width]``, 1 for per-token
        values ``[batch, heads, width]``).
    lengths : the real tokens of each example (``<= width``).
    token_dims : how many trailing axes are token axes.
    dtype : of the result (float16, as stored).

    Returns
    -------
    Tensor
        Flat, on the layers' device: example 0's ``[layers, *middle, n0, ...]`` block in C
        order, then example 1's, ... (what the store keeps, ready for one write). Each value is
        converted and copied once (no stacked float32 or float16 copy of the padded batch), in
        one copy per layer and run of equal lengths.
    """
    first = layers[0]
    middle = tuple(first.shape[1:first.dim() - token_dims])
    per_token_block = len(layers) * math.prod(middle)
    out = torch.empty(sum(per_token_block * n ** token_dims for n in lengths), dtype=dtype,
                      device=first.device)
    offset = 0
    for start, stop, n in equal_runs(lengths):
        size = (stop - start) * per_token_block * n ** token_dims
        block = out[offset:offset + size].view(stop - start, len(layers), *middle, *(n,) * token_dims)
        cut = (slice(start, stop), Ellipsis) + (slice(0, n),) * token_dims
        for index, layer in enumerate(layers):
            block[:, index].copy_(layer[cut])
        offset += size
    return out


class HostArray:
    """A tensor's copy in host memory, started without waiting for the device.

    On CUDA the copy goes into pinned memory with ``non_blocking=True`` and :meth:`numpy`
    waits for it (an event), so the caller can queue the next batch's forward pass at once:
    one transfer per batch, no per-example synchronisation. On the CPU it is the tensor
    itself (no copy); other devices copy synchronously.
    """

    def __init__(self, tensor: torch.Tensor):
        self._event = None
        if tensor.device.type == "cuda":  # pragma: no cover (no GPU in the test environment)
            self._host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
            self._host.copy_(tensor, non_blocking=True)
            self._event = torch.cuda.Event()
            self._event.record()
        else:
            self._host = tensor.cpu()

    def numpy(self):
        """The array (waits for the copy on CUDA)."""
        if self._event is not None:  # pragma: no cover
            self._event.synchronize()
        return self._host.numpy()
