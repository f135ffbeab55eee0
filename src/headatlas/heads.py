"""Naming attention heads and building per-head tables: the one definition.

A head is named ``"layer-head"``, both 1-based, as in the papers (``"5-4"`` is
the fourth head of the fifth layer). Heads are always listed layer-major, the
order of ``attn[layer, head]`` flattened, so row ``k`` of a per-head table is
head ``divmod(k, n_heads)`` (0-based).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

_NAME = re.compile(r"(\d+)-(\d+)")


def head_name(layer: int, head: int) -> str:
    """``"layer-head"`` of a 1-based (layer, head) pair, e.g. ``head_name(5, 4) == "5-4"``."""
    return f"{int(layer)}-{int(head)}"


def head_names(n_layers: int, n_heads: int) -> list[str]:
    """Every head's name, layer-major: ``["1-1", "1-2", ..., f"{n_layers}-{n_heads}"]``."""
    return [head_name(layer, head) for layer, head in zip(*head_index(n_layers, n_heads))]


def is_head_name(name: str) -> bool:
    """Whether ``name`` has the form ``"layer-head"`` (e.g. a column of a per-mention table)."""
    return _NAME.fullmatch(str(name)) is not None


def parse_head_name(name: str) -> tuple[int, int]:
    """``"5-4"`` -> ``(5, 4)``; a ``ValueError`` for anything else."""
    match = _NAME.fullmatch(str(name))
    if match is None:
        raise ValueError(f"{name!r} is not a head name of the form 'layer-head' (1-based)")
    return int(match.group(1)), int(match.group(2))


def head_index(n_layers: int, n_heads: int) -> tuple[np.ndarray, np.ndarray]:
    """The 1-based ``layer`` and ``head`` of every head, layer-major: two int arrays ``[L*H]``."""
    layer, head = np.divmod(np.arange(n_layers * n_heads), n_heads)
    return layer + 1, head + 1


def head_table(n_layers: int, n_heads: int, /, **columns) -> pd.DataFrame:
    """A per-head table: ``layer``, ``head`` (1-based), then one float column per keyword.

    Each value is an array with ``n_layers * n_heads`` elements in layer-major
    order (e.g. ``[layers, heads]``), flattened into the column. Any column
    name works, ``self`` included.
    """
    layer, head = head_index(n_layers, n_heads)
    table = {"layer": layer, "head": head}
    table.update({name: np.asarray(values, dtype=float).ravel() for name, values in columns.items()})
    return pd.DataFrame(table)
