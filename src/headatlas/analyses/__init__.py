"""One interface for every analysis over an attention store.

An analysis is an accumulator: it sees each :class:`~headatlas.store.Example`
once (``update``) and then returns a table (``result``). Streaming keeps
memory independent of the corpus size, and the same class runs from a
notebook, a test or a Snakemake rule::

    table = run_analysis("entropy", ["results/minilm/wikipedia/attention/shard0.h5"])

Tables are per head with 1-based ``layer`` and ``head`` columns, as in the papers.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from typing import ClassVar, Iterable

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from headatlas.store import Example, open_stores

REGISTRY: dict[str, type["Analysis"]] = {}


class Analysis(ABC):
    """Base class: subclasses set ``name`` and implement ``update`` and ``result``."""

    name: ClassVar[str]

    def __init__(self, n_layers: int, n_heads: int, **params):
        self.n_layers, self.n_heads = n_layers, n_heads
        self.params = params
        self.n_examples = 0

    @abstractmethod
    def update(self, example: Example) -> None:
        """Fold one example into the running statistics."""

    @abstractmethod
    def result(self) -> pd.DataFrame:
        """The finished table."""

    def head_table(self, /, **columns: np.ndarray) -> pd.DataFrame:
        """A per-head table from ``[layers, heads]`` arrays, with 1-based ids."""
        layer, head = np.meshgrid(np.arange(1, self.n_layers + 1), np.arange(1, self.n_heads + 1),
                                  indexing="ij")
        table = {"layer": layer.ravel(), "head": head.ravel()}
        table.update({k: np.asarray(v, dtype=float).ravel() for k, v in columns.items()})
        return pd.DataFrame(table)


def register(cls: type[Analysis]) -> type[Analysis]:
    """Class decorator: make an analysis available by name to rules and tests."""
    REGISTRY[cls.name] = cls
    return cls


def run_analysis(analysis: str | type[Analysis], stores, progress: bool = True,
                 max_examples: int | None = None, **params) -> pd.DataFrame:
    """Stream ``stores`` (a path, a list of shard paths, or examples) through one analysis.

    ``max_examples`` stops after that many examples (a quick look); the table's
    ``attrs["n_examples"]`` says how many were analysed.
    """
    cls = REGISTRY[analysis] if isinstance(analysis, str) else analysis
    examples, n_layers, n_heads, total = _examples(stores)
    if max_examples is not None:
        examples, total = itertools.islice(examples, max_examples), min(total, max_examples)
    acc = cls(n_layers, n_heads, **params)
    for example in tqdm(examples, total=total, desc=cls.name, disable=not progress, mininterval=2):
        acc.update(example)
        acc.n_examples += 1
    table = acc.result()
    table.attrs["n_examples"] = acc.n_examples
    return table


def _examples(stores) -> tuple[Iterable[Example], int, int, int | None]:
    if isinstance(stores, (list, tuple)) and stores and isinstance(stores[0], Example):
        layers, heads = stores[0].attn.shape[:2]
        return stores, layers, heads, len(stores)
    store_set = open_stores(stores)
    return store_set, store_set.n_layers, store_set.n_heads, len(store_set)


# Importing the modules registers their analyses.
from headatlas.analyses import clustering, coref, headtypes, surface, syntax  # noqa: E402,F401
