"""Individual attention maps, for the figures that draw them (Fig. 1, Fig. 5, the atlas cards).

In store mode every map is in the stores. A fused extraction (:mod:`headatlas.analyses.fused`)
keeps none but an **exemplar store** of a few, and its states files record which examples were
extracted and how long each is. :class:`Maps` hides the difference: a figure chooses among
every extracted example (:meth:`Maps.lengths`) and asks for the maps of those it draws
(:meth:`Maps.examples`); in fused mode those the exemplars lack are extracted again by
``extract_missing`` (a function of the corpus positions), so a figure draws the same examples
in both modes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from headatlas.errors import StoreError
from headatlas.store.example import Example
from headatlas.store.reader import Store
from headatlas.store.states import open_record

ExtractMissing = Callable[[Sequence[int], str], dict[int, Example]]


class Maps:
    """Where a figure's maps come from.

    Parameters
    ----------
    stores : the store shards (store mode) or the exemplar store's (fused mode).
    records : what lists every extracted example: the states files in fused mode; by default
        the stores themselves.
    extract_missing : ``(corpus positions, weighting) -> {position: Example}`` for examples the
        stores lack (fused mode); None: a missing example is an error.
    """

    def __init__(self, stores: Iterable[str | Path], records: Iterable[str | Path] | None = None,
                 extract_missing: ExtractMissing | None = None):
        self.stores = [Path(p) for p in stores]
        self.records = [Path(p) for p in records] if records is not None else list(self.stores)
        self.extract_missing = extract_missing

    def lengths(self) -> dict[int, int]:
        """Corpus position -> wordpieces, of every extracted example."""
        found: dict[int, int] = {}
        for path in self.records:
            with open_record(path) as record:
                found.update(zip(record.example_index.tolist(), record.lengths.tolist()))
        return found

    def examples(self, indices: Iterable[int], weighting: str = "attention") -> dict[int, Example]:
        """The examples at these corpus positions under ``weighting``; a position no extraction
        kept is absent."""
        wanted, found = set(indices), {}
        for path in self.stores:
            with Store(path, weighting) as store:
                for position in np.flatnonzero(np.isin(store.example_index, list(wanted))):
                    found[int(store.example_index[position])] = store.example(int(position))
        missing = sorted(wanted.intersection(self.lengths()) - set(found))
        if missing and self.extract_missing is not None:
            found.update(self.extract_missing(missing, weighting))
        return found


def as_maps(maps: "Maps | str | Path | Iterable[str | Path]") -> Maps:
    """A :class:`Maps`, or the store paths made one."""
    if isinstance(maps, Maps):
        return maps
    return Maps([maps] if isinstance(maps, (str, Path)) else list(maps))


def pick_example(maps, index: int | None = None, min_tokens: int = 24,
                 weighting: str = "attention") -> Example:
    """The example with corpus ``index``, or else the shortest with at least ``min_tokens``
    (ties: the first in corpus order). Reads only the chosen example's attention."""
    maps = as_maps(maps)
    lengths = maps.lengths()
    if index is not None:
        if index not in lengths:
            raise StoreError(f"no example with corpus index {index} in {list(map(str, maps.records))}")
        chosen = index
    else:
        if not lengths:
            raise StoreError(f"no example in {list(map(str, maps.records))}")
        readable = {i: n for i, n in lengths.items() if n >= min_tokens} or lengths
        chosen = min(readable, key=lambda i: (readable[i], i))
    return maps.examples([chosen], weighting)[chosen]
