"""The HDF5 attention store: the spine between extraction and the analyses.

One file per (model, corpus, shard). Ragged per-example arrays are stored flat
with offsets, so examples of any length share one dataset and an analysis can
stream one example at a time (memory independent of the corpus size).

Schema (version 1)::

    /attn            float16 [sum_i L*H*n_i*n_i]  example i's [L, H, n_i, n_i] block, C order
    /attn_offsets    int64   [N+1]                 start of each block in /attn
    /tok_offsets     int64   [N+1]                 start of each example's tokens below
    /input_ids       int32   [sum_i n_i]
    /token_type_ids  int8    [sum_i n_i]
    /word_ids        int32   [sum_i n_i]           token -> word index in the example, -1 = special token
    /tokens          str     [sum_i n_i]           token strings (so analyses need no tokenizer)
    /example_ids     str     [N]                   corpus record ids
    /example_index   int64   [N]                   position of the record in the corpus file
    /n_words         int32   [N]                   words in the example (A and B together)
    /skipped_ids     str     [S]                   records left out (over max_length, or empty)

File attributes: schema_version, model_name, model_id, model_revision,
tokenizer, n_layers, n_heads, max_length, corpus, corpus_sha256,
package_version, cls_token, sep_token, shard, n_shards, n_skipped,
n_too_long, complete (set last).
The file is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import h5py
import numpy as np

from headatlas.errors import StoreError
from headatlas.io import atomic_path

SCHEMA_VERSION = 1
PUNCT_TOKENS = frozenset({".", ","})
# Markers some tokenizers put before a word-initial piece (RoBERTa, SentencePiece).
_WORD_MARKERS = "Ġ▁"


def token_masks(tokens: Sequence[str], cls_token: str = "[CLS]",
                sep_token: str = "[SEP]") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean ``[n]`` masks of ``[CLS]``, ``[SEP]`` and period/comma tokens.

    The one definition of these token classes, shared by every analysis.
    """
    cls = np.array([t == cls_token for t in tokens], dtype=bool)
    sep = np.array([t == sep_token for t in tokens], dtype=bool)
    punct = np.array([t.lstrip(_WORD_MARKERS) in PUNCT_TOKENS for t in tokens], dtype=bool)
    return cls, sep, punct


@dataclass
class Example:
    """One example's attention and tokens.

    ``attn`` has shape ``[layers, heads, query, key]`` (float32; rows sum to 1).
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

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def cls_mask(self) -> np.ndarray:
        return token_masks(self.tokens, self.cls_token, self.sep_token)[0]

    @property
    def sep_mask(self) -> np.ndarray:
        return token_masks(self.tokens, self.cls_token, self.sep_token)[1]

    @property
    def punct_mask(self) -> np.ndarray:
        """Tokens that are a period or a comma (Clark et al.'s punctuation)."""
        return token_masks(self.tokens, self.cls_token, self.sep_token)[2]


class StoreWriter:
    """Append examples to a new store; the file appears only on :meth:`close`.

    Use as a context manager: on an exception the partial file is deleted.
    """

    _CHUNK = 1 << 20

    def __init__(self, path: str | Path, attrs: dict):
        self.path = Path(path)
        self._atomic = atomic_path(self.path)
        tmp = self._atomic.__enter__()
        self._file = h5py.File(tmp, "w")
        for key, value in attrs.items():
            self._file.attrs[key] = "" if value is None else value
        self._file.attrs["schema_version"] = SCHEMA_VERSION
        self._file.attrs["complete"] = False
        f = self._file
        self._attn = f.create_dataset("attn", (0,), np.float16, maxshape=(None,), chunks=(self._CHUNK,))
        self._tok = {
            "input_ids": f.create_dataset("input_ids", (0,), np.int32, maxshape=(None,), chunks=(1 << 14,)),
            "token_type_ids": f.create_dataset("token_type_ids", (0,), np.int8, maxshape=(None,), chunks=(1 << 14,)),
            "word_ids": f.create_dataset("word_ids", (0,), np.int32, maxshape=(None,), chunks=(1 << 14,)),
            "tokens": f.create_dataset("tokens", (0,), h5py.string_dtype(), maxshape=(None,), chunks=(1 << 14,)),
        }
        self._attn_offsets = [0]
        self._tok_offsets = [0]
        self._ids: list[str] = []
        self._index: list[int] = []
        self._n_words: list[int] = []
        self.skipped_ids: list[str] = []  # examples left out (too long, empty), kept on record

    def add(self, index: int, example_id: str, tokens: Sequence[str], input_ids, token_type_ids,
            word_ids, attn: np.ndarray, n_words: int | None = None) -> None:
        """Append one example; ``attn`` is ``[layers, heads, n, n]``."""
        n = len(tokens)
        if attn.ndim != 4 or attn.shape[2:] != (n, n):
            raise StoreError(f"attention of shape {attn.shape} does not match {n} tokens")
        self._append(self._attn, np.ascontiguousarray(attn, dtype=np.float16).ravel())
        self._attn_offsets.append(self._attn_offsets[-1] + attn.size)
        for name, values in (("input_ids", input_ids), ("token_type_ids", token_type_ids),
                             ("word_ids", word_ids), ("tokens", list(tokens))):
            self._append(self._tok[name], np.asarray(values, dtype=self._tok[name].dtype))
        self._tok_offsets.append(self._tok_offsets[-1] + n)
        self._ids.append(example_id)
        self._index.append(index)
        if n_words is None:
            n_words = int(np.max(word_ids, initial=-1)) + 1
        self._n_words.append(n_words)

    @staticmethod
    def _append(dataset, values) -> None:
        start = dataset.shape[0]
        dataset.resize((start + len(values),))
        dataset[start:] = values

    def close(self) -> None:
        f = self._file
        f.create_dataset("attn_offsets", data=np.asarray(self._attn_offsets, np.int64))
        f.create_dataset("tok_offsets", data=np.asarray(self._tok_offsets, np.int64))
        f.create_dataset("example_ids", data=np.asarray(self._ids, dtype=object), dtype=h5py.string_dtype())
        f.create_dataset("example_index", data=np.asarray(self._index, np.int64))
        f.create_dataset("n_words", data=np.asarray(self._n_words, np.int32))
        f.create_dataset("skipped_ids", data=np.asarray(self.skipped_ids, dtype=object),
                         dtype=h5py.string_dtype())
        f.attrs["n_examples"] = len(self._ids)
        f.attrs["complete"] = True
        f.close()
        self._atomic.__exit__(None, None, None)

    def __enter__(self) -> "StoreWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self._file.close()
            self._atomic.__exit__(exc_type, exc, tb)


class Store:
    """Read-only view of one store file; iterate to stream :class:`Example` s."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.exists():
            raise StoreError(f"{self.path}: no such attention store; run the extract rule for it "
                             f"(snakemake {self.path})")
        try:
            self._file = h5py.File(self.path, "r", locking=False)
        except OSError as err:
            raise StoreError(f"{self.path}: not a readable HDF5 store ({err}); delete it and rerun "
                             "the extract rule") from err
        attrs = self._file.attrs
        if not bool(attrs.get("complete", False)):
            raise StoreError(f"{self.path}: store is incomplete (extraction was interrupted); delete "
                             "it and rerun the extract rule")
        if int(attrs.get("schema_version", -1)) != SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema version {attrs.get('schema_version')} but this "
                             f"code reads {SCHEMA_VERSION}; rerun the extract rule")
        self.attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in attrs.items()}
        self.n_layers = int(attrs["n_layers"])
        self.n_heads = int(attrs["n_heads"])
        self._attn_offsets = self._file["attn_offsets"][:]
        self._tok_offsets = self._file["tok_offsets"][:]
        self.example_ids = self._file["example_ids"].asstr()[:].tolist()
        self.example_index = self._file["example_index"][:]
        self.n_words = self._file["n_words"][:]
        # Dataset handles looked up once: h5py's name lookup dominates small reads otherwise.
        self._attn = self._file["attn"]
        self._tokens = self._file["tokens"].asstr()
        self._ids = {name: self._file[name] for name in ("input_ids", "token_type_ids", "word_ids")}

    def __len__(self) -> int:
        return len(self.example_ids)

    @property
    def lengths(self) -> np.ndarray:
        """Tokens per example, without reading any attention."""
        return np.diff(self._tok_offsets)

    @property
    def skipped_ids(self) -> list[str]:
        """Records extraction left out (over ``max_length`` or empty)."""
        return self._file["skipped_ids"].asstr()[:].tolist()

    def example(self, i: int) -> Example:
        t0, t1 = self._tok_offsets[i], self._tok_offsets[i + 1]
        a0, a1 = self._attn_offsets[i], self._attn_offsets[i + 1]
        n = int(t1 - t0)
        attn = self._attn[a0:a1].astype(np.float32).reshape(self.n_layers, self.n_heads, n, n)
        return Example(
            index=int(self.example_index[i]), id=self.example_ids[i],
            tokens=self._tokens[t0:t1].tolist(), input_ids=self._ids["input_ids"][t0:t1],
            token_type_ids=self._ids["token_type_ids"][t0:t1], word_ids=self._ids["word_ids"][t0:t1],
            attn=attn,
            cls_token=self.attrs.get("cls_token", "[CLS]"), sep_token=self.attrs.get("sep_token", "[SEP]"),
        )

    def __iter__(self) -> Iterator[Example]:
        for i in range(len(self)):
            yield self.example(i)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class StoreSet:
    """Several shard stores of one (model, corpus), read as one stream in order."""

    def __init__(self, paths: Iterable[str | Path]):
        self.paths = [Path(p) for p in paths]
        if not self.paths:
            raise StoreError("no attention store given")
        first = Store(self.paths[0])
        self.attrs, self.n_layers, self.n_heads = first.attrs, first.n_layers, first.n_heads
        self._len = len(first)
        first.close()
        for path in self.paths[1:]:
            with Store(path) as shard:
                if (shard.n_layers, shard.n_heads) != (self.n_layers, self.n_heads):
                    raise StoreError(f"{path}: shard has a different model shape than {self.paths[0]}")
                self._len += len(shard)

    def __len__(self) -> int:
        return self._len

    @property
    def skipped_ids(self) -> list[str]:
        """Records extraction left out, over every shard."""
        skipped = []
        for path in self.paths:
            with Store(path) as shard:
                skipped += shard.skipped_ids
        return skipped

    def __iter__(self) -> Iterator[Example]:
        for path in self.paths:
            with Store(path) as shard:
                yield from shard


def pick_example(paths: Sequence[str | Path], index: int | None = None,
                 min_tokens: int = 24) -> Example:
    """The example with corpus ``index``, or else the shortest with at least ``min_tokens``.

    Reads only the chosen example's attention.
    """
    candidates = []  # (n_tokens, shard path, position in shard)
    for path in paths:
        with Store(path) as store:
            for i, (n, k) in enumerate(zip(store.lengths, store.example_index)):
                if index is None or k == index:
                    candidates.append((int(n), Path(path), i))
    if not candidates:
        raise StoreError(f"no example with corpus index {index} in {list(map(str, paths))}")
    readable = [c for c in candidates if c[0] >= min_tokens]
    _, path, i = min(readable or candidates)
    with Store(path) as store:
        return store.example(i)


def open_stores(paths: str | Path | Iterable[str | Path]) -> StoreSet:
    """Open one store path or a list of shard paths as one stream."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    return StoreSet(paths)
