"""Writing a store: examples appended batch by batch, the file renamed into place when complete."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Sequence

import h5py
import numpy as np

from headatlas.errors import StoreError
from headatlas.io import disk_full, is_disk_full, partial_path, remove_stale_partials
from headatlas.store import schema
from headatlas.store.schema import (NORM_DATASETS, NORMS_OFF, NORMS_RECORDED, NORMS_STATES, SCHEMA_VERSION,
                                    STRING_CRC_ATTR, dataset_dtype, strings_crc32)

def partial_name(path: str | Path) -> Path:
    """The name a store is written under until complete: unique to this process (host, pid, random).

    Two extractions of one store (two runs, a rerun beside a stale job) never write one file.
    """
    return partial_path(path)


class StoreWriter:
    """Append examples to a new store; the file appears only on :meth:`close`.

    Use as a context manager: on an exception the partial file (:func:`partial_name`) is
    deleted. With ``attrs["norms"] == "recorded"`` every :meth:`add` takes the example's value
    norms and norm map too; any other value (or none: ``not requested``) writes
    attention only. Every write error (a full disk) is a :class:`StoreError` naming the file.
    """

    # 128 Ki elements (256 KB of float16): HDF5 checks a filtered chunk whole, so a read of a
    # short example must not pull a large chunk (1 Mi-element chunks read sentence-level stores
    # 1.5-1.7x slower under fletcher32), and a chunk being appended to fits h5py's 1 MiB chunk
    # cache (benchmarks/integrity.py).
    _CHUNK = 1 << 17
    _TOKEN_CHUNK = 1 << 14

    def __init__(self, path: str | Path, attrs: dict):
        self.path = Path(path)
        self.norms = attrs.get("norms") or NORMS_OFF
        if self.norms not in NORMS_STATES:
            raise StoreError(f"store attribute norms={self.norms!r} is not one of {NORMS_STATES}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_partials(self.path)
        self.partial = partial_name(self.path)
        self.expected_bytes: float | None = None  # the predicted size, for a full disk's message
        self._file = None
        try:
            with self._writing():
                self._file = h5py.File(self.partial, "w", **({"libver": schema.LIBVER} if schema.CHECKSUMS else {}),
                                       **({"rdcc_nbytes": schema.CHUNK_CACHE} if schema.CHUNK_CACHE else {}))
                for key, value in attrs.items():
                    self._file.attrs[key] = "" if value is None else value
                self._file.attrs["norms"] = self.norms
                self._file.attrs["schema_version"] = SCHEMA_VERSION if schema.CHECKSUMS else 2
                self._file.attrs["complete"] = False
                self._attn = self._growing("attn", self._CHUNK)
                self._norm_sets = {name: self._growing(name, self._CHUNK)
                                   for name in NORM_DATASETS if self.norms == NORMS_RECORDED}
                self._tok = {name: self._growing(name, self._TOKEN_CHUNK)
                             for name in ("input_ids", "token_type_ids", "word_ids", "tokens")}
        except BaseException:
            self._discard()
            raise
        self._attn_offsets = [0]
        self._tok_offsets = [0]
        self._ids: list[str] = []
        self._index: list[int] = []
        self._n_words: list[int] = []
        self._tokens_crc: list[int] = []
        self.skipped_ids: list[str] = []  # examples left out (too long, empty), kept on record

    @staticmethod
    def _checksum(name: str) -> dict:
        """fletcher32 for every numeric dataset (HDF5 cannot filter variable-length strings)."""
        return {"fletcher32": True} if schema.CHECKSUMS and dataset_dtype(name) != h5py.string_dtype() else {}

    def _growing(self, name: str, chunk: int):
        return self._file.create_dataset(name, (0,), dataset_dtype(name), maxshape=(None,),
                                         chunks=(chunk,), **self._checksum(name))

    @contextlib.contextmanager
    def _writing(self):
        """Turn an OSError of HDF5 or the file system into a StoreError naming the store."""
        try:
            yield
        except OSError as err:
            if is_disk_full(err):
                raise disk_full(self.path, self.expected_bytes) from None
            raise StoreError(f"{self.path}: writing the attention store failed ({err}); check the "
                             f"folder's permissions and free space; nothing was written at {self.path}") from err

    def add(self, index: int, example_id: str, tokens: Sequence[str], input_ids, token_type_ids,
            word_ids, attn: np.ndarray, n_words: int | None = None, value_norms: np.ndarray | None = None,
            norm_map: np.ndarray | None = None) -> None:
        """Append one example; ``attn`` is ``[layers, heads, n, n]``.

        ``value_norms`` ``[layers, heads, n]`` and ``norm_map`` ``[layers, n, n]`` are
        required when the store records norms and refused otherwise.
        """
        n = len(tokens)
        if attn.ndim != 4 or attn.shape[2:] != (n, n):
            raise StoreError(f"attention of shape {attn.shape} does not match {n} tokens")
        norms = {"value_norms": value_norms, "norm_map": norm_map}
        if self._norm_sets:
            layers, heads = attn.shape[:2]
            expected = {"value_norms": (layers, heads, n), "norm_map": (layers, n, n)}
            for name, array in norms.items():
                if array is None or array.shape != expected[name]:
                    got = "none" if array is None else f"shape {array.shape}"
                    raise StoreError(f"{name} of example {example_id}: expected {expected[name]}, got {got}")
        elif any(a is not None for a in norms.values()):
            raise StoreError(f"this store records no norms (norms = {self.norms!r}); "
                             "open it with attrs norms='recorded' to write them")
        if n_words is None:
            n_words = int(np.max(word_ids, initial=-1)) + 1
        self.add_batch([index], [example_id], [tokens], [input_ids], [token_type_ids], [word_ids],
                       attn.ravel(), layers=attn.shape[0], heads=attn.shape[1], n_words=[n_words],
                       **({name: array.ravel() for name, array in norms.items()} if self._norm_sets else {}))

    def add_batch(self, indices: Sequence[int], example_ids: Sequence[str],
                  tokens: Sequence[Sequence[str]], input_ids, token_type_ids, word_ids,
                  attn: np.ndarray, *, layers: int, heads: int, n_words: Sequence[int],
                  value_norms: np.ndarray | None = None, norm_map: np.ndarray | None = None) -> None:
        """Append several examples in one write per dataset (what extraction does per batch).

        ``tokens``, ``input_ids``, ``token_type_ids``, ``word_ids``: one sequence per example.
        ``attn``: the examples' ``[layers, heads, n, n]`` maps back to back, flat (as
        :func:`headatlas.encoders.batching.pack_examples` lays them out); ``value_norms`` their
        ``[layers, heads, n]`` and ``norm_map`` their ``[layers, n, n]`` likewise, required when
        the store records norms and refused otherwise.
        """
        tokens = [list(t) for t in tokens]
        lengths = np.array([len(t) for t in tokens], dtype=np.int64)
        sizes = {"attn": layers * heads * lengths ** 2, "value_norms": layers * heads * lengths,
                 "norm_map": layers * lengths ** 2}
        arrays = {"attn": attn, "value_norms": value_norms, "norm_map": norm_map}
        if not self._norm_sets and (value_norms is not None or norm_map is not None):
            raise StoreError(f"this store records no norms (norms = {self.norms!r}); "
                             "open it with attrs norms='recorded' to write them")
        for name in ("attn", *self._norm_sets):
            array = arrays[name]
            if array is None or array.size != int(sizes[name].sum()):
                got = "none" if array is None else f"{array.size} values"
                raise StoreError(f"{name} of examples {example_ids[0]}..{example_ids[-1]}: expected "
                                 f"{int(sizes[name].sum())} values for {layers} layers, {heads} heads "
                                 f"and {lengths.tolist()} tokens, got {got}")
        with self._writing():
            for name, dataset in (("attn", self._attn), *self._norm_sets.items()):
                self._append(dataset, np.ascontiguousarray(arrays[name], dtype=np.float16).ravel())
            for name, values in (("input_ids", input_ids), ("token_type_ids", token_type_ids),
                                 ("word_ids", word_ids), ("tokens", tokens)):
                dtype = self._tok[name].dtype
                self._append(self._tok[name], np.concatenate([np.asarray(v, dtype=dtype) for v in values]))
        self._attn_offsets.extend((self._attn_offsets[-1] + np.cumsum(sizes["attn"])).tolist())
        self._tok_offsets.extend((self._tok_offsets[-1] + np.cumsum(lengths)).tolist())
        self._tokens_crc.extend(strings_crc32(t) for t in tokens)
        self._ids.extend(example_ids)
        self._index.extend(int(i) for i in indices)
        self._n_words.extend(int(n) for n in n_words)

    @staticmethod
    def _append(dataset, values) -> None:
        start = dataset.shape[0]
        dataset.resize((start + len(values),))
        dataset[start:] = values

    def close(self) -> None:
        """Write the per-example datasets, mark the file complete and rename it into place."""
        try:
            with self._writing():
                f = self._file
                for name, values in (("attn_offsets", self._attn_offsets),
                                     ("tok_offsets", self._tok_offsets), ("example_ids", self._ids),
                                     ("example_index", self._index), ("n_words", self._n_words),
                                     ("tokens_crc32", self._tokens_crc), ("skipped_ids", self.skipped_ids)):
                    if name == "tokens_crc32" and not schema.CHECKSUMS:
                        continue
                    dtype = dataset_dtype(name)
                    string = dtype == h5py.string_dtype()
                    data = np.asarray(values, dtype=object if string else dtype)
                    # fletcher32 needs a chunked layout; a chunk cannot be empty.
                    layout = {"chunks": (max(len(data), 1),), "maxshape": (None,)} if self._checksum(name) else {}
                    dataset = f.create_dataset(name, data=data, dtype=dtype, **layout, **self._checksum(name))
                    if string and schema.CHECKSUMS:
                        dataset.attrs[STRING_CRC_ATTR] = np.uint32(strings_crc32(values))
                f.attrs["n_examples"] = len(self._ids)
                f.attrs["complete"] = True
                f.close()
                os.replace(self.partial, self.path)
        finally:
            self._discard()

    def _discard(self) -> None:
        """Close the file if open and delete the partial file (after a rename: nothing left)."""
        try:
            if self._file is not None and self._file.id.valid:
                self._file.close()
        except OSError:  # a full disk fails the last flush too: the file goes anyway
            pass
        finally:
            self.partial.unlink(missing_ok=True)

    def __enter__(self) -> "StoreWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self._discard()

