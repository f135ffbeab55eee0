"""Naming attention heads and building per-head tables: the one definition.

A head is named ``"layer-head"``, both 1-based, as in the papers (``"5-4"`` is
the fourth head of the fifth layer). Heads are always listed layer-major, the
order of ``attn[layer, head]`` flattened, so row ``k`` of a per-head table is
head ``divmod(k, n_heads)`` (0-based).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


# --- what a per-head table adds to the head atlas ------------------------------------------

# How a per-head table's values relate to the two weightings of the maps.
WEIGHTED = "weighted"        # one table per weighting (surface/ and surface-norm/)
ATTENTION_ONLY = "attention"  # read from the attention weights only: empty in the norm rows
INDEPENDENT = "independent"   # a property of the head (an intervention): the same in both rows


@dataclass(frozen=True)
class Column:
    """One column of the head atlas: its name there (``{corpus}`` filled in for per-corpus
    tables), the column of the table it comes from, unit, meaning, and the paper's number
    where the papers give one (short text)."""

    name: str
    source: str
    unit: str
    meaning: str
    reference: str = ""


@dataclass(frozen=True)
class HeadColumns:
    """What one per-head table adds to the head atlas (``results/<m>/heads.csv``).

    Each analysis module exports these beside the code that computes the table (``ATLAS``:
    table name -> HeadColumns), and the rules declare which result is which
    (``result(..., heads="<module>:<table>")``), so the atlas reads declarations, not paths.

    ``rank`` places the table's columns among the others (lower first); ``reader``
    (``"module:function"``, ``function(path) -> DataFrame``) turns the table's file into a
    per-head frame with the columns' ``source`` names, for tables not already one row per head
    (other files of its folder it reads are declared with the table in the rules,
    ``companions=``, so the atlas waits for them). Column names and meanings may hold the
    path's wildcards (``{corpus}``, ``{base}``). A table a run lacks is listed in the column
    dictionary as absent, with its reason, unless ``listed_when_absent`` is False (a table that
    exists only for some pairs of models).
    """

    title: str
    paper: str
    columns: tuple[Column, ...]
    rank: float
    weighting: str = WEIGHTED
    per_corpus: bool = False
    reader: str | None = None
    listed_when_absent: bool = True

    def column_name(self, column: Column, **wildcards: str) -> str:
        """The atlas name of ``column`` with the path's wildcards filled in."""
        return fill(column.name, wildcards)


def fill(text: str, wildcards: dict) -> str:
    """``text`` with each ``{name}`` of ``wildcards`` replaced by its value (others left as they are)."""
    return re.sub(r"{(\w+)}", lambda m: str(wildcards.get(m.group(1), m.group(0))), text)
