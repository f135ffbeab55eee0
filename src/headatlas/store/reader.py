"""Reading stores: one file (:class:`Store`) or the shards of a corpus (:class:`StoreSet`),
streamed in corpus order, every read checked (a damaged store is a :class:`~headatlas.errors.StoreError`)."""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import h5py
import numpy as np

from headatlas.errors import EmptyStoreError, StoreError
from headatlas.store import schema
from headatlas.store.example import Example
from headatlas.store.halves import widen
from headatlas.store.schema import (NORM_DATASETS, NORMS_OFF, NORMS_RECORDED, NORMS_UNSUPPORTED,
                                    READABLE_VERSIONS, STRING_CRC_ATTR, rebuild_hint, strings_crc32)
from headatlas.weightings import check_weighting

class Store:
    """Read-only view of one store file; iterate to stream :class:`Example` s.

    Parameters
    ----------
    path : the store file.
    weighting : ``attention`` (α) or ``norm`` (α_ij‖f_h(x_j)‖ renormalised per row)
        in every example's ``attn`` (:mod:`headatlas.weightings`).
    norms : also read ``value_norms`` and ``norm_map`` onto every example.

    Raises
    ------
    StoreError
        For a missing, incomplete or unreadable file, an unknown schema version, and
        when norms are needed but the store has none (the message names the file and
        what to do).
    """

    def __init__(self, path: str | Path, weighting: str = "attention", norms: bool = False):
        self.path = Path(path)
        self.weighting = check_weighting(weighting)
        self.read_norms = norms
        if not self.path.exists():
            raise StoreError(f"{self.path}: no such attention store; run the extract rule for it "
                             f"(snakemake {self.path})")
        try:
            self._file = h5py.File(self.path, "r", locking=False,
                                   **({"rdcc_nbytes": schema.CHUNK_CACHE} if schema.CHUNK_CACHE else {}))
        except OSError as err:
            raise StoreError(f"{self.path}: not a readable HDF5 store ({err}); "
                             f"{rebuild_hint(self.path)}") from err
        try:
            self._open()
        except BaseException:
            self._file.close()
            raise

    def _unchecked(self) -> None:
        """A store of schema 1-2 (older code, no checksums): refused, unless asked for."""
        what = (f"{self.path}: schema version {self.attrs['schema_version']}, written by older code "
                "without checksums (damage in it would go unseen)")
        if not schema.READ_UNCHECKED:
            raise StoreError(f"{what}; {rebuild_hint(self.path)}; or read it as it is with "
                             "HEADATLAS_READ_UNCHECKED=1")
        warnings.warn(f"{what}: read as it is (HEADATLAS_READ_UNCHECKED=1)", stacklevel=3)

    def _open(self) -> None:
        with self._reading():
            attrs = self._file.attrs
            if not bool(attrs.get("complete", False)):
                raise StoreError(f"{self.path}: store is incomplete (extraction was interrupted); "
                                 f"{rebuild_hint(self.path)}")
            if int(attrs.get("schema_version", -1)) not in READABLE_VERSIONS:
                raise StoreError(f"{self.path}: schema version {attrs.get('schema_version')} but this "
                                 f"code reads {', '.join(map(str, READABLE_VERSIONS))}; "
                                 f"{rebuild_hint(self.path)}")
            self.attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in attrs.items()}
            self.norms = self.attrs.get("norms", NORMS_OFF)
            self.checksums = int(self.attrs["schema_version"]) >= 3
            if not self.checksums:
                self._unchecked()
            if self.weighting == "norm" or self.read_norms:
                self._check_norms("the norm weighting" if self.weighting == "norm" else "this analysis")
            self.n_layers = int(attrs["n_layers"])
            self.n_heads = int(attrs["n_heads"])
            self._attn_offsets = self._file["attn_offsets"][:]
            self._tok_offsets = self._file["tok_offsets"][:]
            self.example_ids = self._strings("example_ids")
            self.example_index = self._file["example_index"][:]
            self.n_words = self._file["n_words"][:]
            self._tokens_crc = self._file["tokens_crc32"][:] if self.checksums else None
            # Dataset handles looked up once: h5py's name lookup dominates small reads otherwise.
            self._attn = self._file["attn"]
            self._tokens = self._file["tokens"].asstr()
            self._ids = {name: self._file[name] for name in ("input_ids", "token_type_ids", "word_ids")}
            self._norm_sets = {name: self._file[name] for name in NORM_DATASETS
                               if self.norms == NORMS_RECORDED}
            self._check_layout()

    def _damaged(self, problem: str) -> StoreError:
        return StoreError(f"{self.path}: the attention store is damaged: {problem}; "
                          f"{rebuild_hint(self.path)}")

    @contextlib.contextmanager
    def _reading(self):
        """Every failure to read the file (a checksum, damaged metadata or offsets) as a StoreError."""
        try:
            yield
        except StoreError:
            raise
        except (OSError, ValueError, KeyError, TypeError, IndexError, RuntimeError) as err:
            raise self._damaged(f"{type(err).__name__}: {err}") from err

    def _strings(self, name: str) -> list[str]:
        """A whole string dataset, checked against its CRC-32 (version 3)."""
        dataset = self._file[name]
        values = dataset.asstr()[:].tolist()
        if self.checksums and int(dataset.attrs[STRING_CRC_ATTR]) != strings_crc32(values):
            raise self._damaged(f"`{name}` fails its checksum")
        return values

    def _check_layout(self) -> None:
        """The offsets agree with each other, the dataset lengths and the model's shape."""
        n = len(self.example_ids)
        tok, att = self._tok_offsets, self._attn_offsets
        lengths = {"tok_offsets": len(tok) - 1, "attn_offsets": len(att) - 1,
                   "example_index": len(self.example_index), "n_words": len(self.n_words)}
        if self._tokens_crc is not None:
            lengths["tokens_crc32"] = len(self._tokens_crc)
        if "n_examples" in self.attrs:
            lengths["n_examples"] = int(self.attrs["n_examples"])
        wrong = {k: v for k, v in lengths.items() if v != n}
        if wrong:
            raise self._damaged(f"{n} example ids but " + ", ".join(f"{k} {v}" for k, v in wrong.items()))
        sizes = np.diff(tok)
        expected = np.concatenate([[0], np.cumsum(self.n_layers * self.n_heads * sizes ** 2)])
        if len(tok) and (tok[0] != 0 or (sizes < 0).any() or not np.array_equal(att, expected)):
            raise self._damaged("`tok_offsets` and `attn_offsets` disagree with each other or with "
                                f"{self.n_layers}x{self.n_heads} heads")
        ends = {"attn": (self._attn, att[-1] if len(att) else 0)}
        ends.update({name: (d, tok[-1] if len(tok) else 0) for name, d in [*self._ids.items(),
                                                                           ("tokens", self._tokens)]})
        if self._norm_sets:
            ends["value_norms"] = (self._norm_sets["value_norms"],
                                   (tok[-1] if len(tok) else 0) * self.n_layers * self.n_heads)
            ends["norm_map"] = (self._norm_sets["norm_map"], (att[-1] if len(att) else 0) // self.n_heads)
        short = [f"{name} holds {len(d)}, the offsets say {end}" for name, (d, end) in ends.items()
                 if len(d) != end]
        if short:
            raise self._damaged("; ".join(short))

    @property
    def has_norms(self) -> bool:
        """Whether the store holds value norms (schema version 2, a BERT-layout model)."""
        return self.norms == NORMS_RECORDED

    def _check_norms(self, what: str) -> None:
        """Raise the StoreError that says why this store has no norms and what to do."""
        if self.norms == NORMS_RECORDED:
            return
        redo = f"snakemake --cores all --force {self.path}"
        version = int(self.attrs.get("schema_version", 0))
        if version < 2:
            why = (f"schema version {version} stores were written before value norms were recorded; "
                   f"re-extract it with the current code: {redo}")
        elif self.norms == NORMS_UNSUPPORTED:
            why = (f"norms are unsupported for {self.attrs.get('model_class') or 'this model'} "
                   f"(model {self.attrs.get('model_name')!r}): value norms need the BERT attention "
                   "layout; set `weightings: [attention]` for this model in the config")
        else:
            why = (f"extraction did not record them (`weightings` of model "
                   f"{self.attrs.get('model_name')!r} exclude norm); add norm and re-extract: {redo}")
        self._file.close()
        raise StoreError(f"{self.path}: {what} needs value norms, and this store has none: {why}")

    def __len__(self) -> int:
        return len(self.example_ids)

    @property
    def lengths(self) -> np.ndarray:
        """Tokens per example, without reading any attention."""
        return np.diff(self._tok_offsets)

    @property
    def skipped_ids(self) -> list[str]:
        """Records extraction left out (over ``max_length`` or empty)."""
        with self._reading():
            return self._strings("skipped_ids")

    def example(self, i: int) -> Example:
        """The example stored at position ``i``; a damaged one raises :class:`StoreError`."""
        with self._reading():
            return self._example(i)

    def _example(self, i: int) -> Example:
        t0, t1 = self._tok_offsets[i], self._tok_offsets[i + 1]
        a0, a1 = self._attn_offsets[i], self._attn_offsets[i + 1]
        n = int(t1 - t0)
        halves = self._attn[a0:a1].reshape(self.n_layers, self.n_heads, n, n)
        attn = widen(halves)
        value_norms = norm_map = None
        if self.read_norms or self.weighting == "norm":
            size = self.n_layers * self.n_heads
            value_norms = widen(self._norm_sets["value_norms"][t0 * size:t1 * size]) \
                .reshape(self.n_layers, self.n_heads, n)
        if self.read_norms:
            norm_map = widen(self._norm_sets["norm_map"][a0 // self.n_heads:a1 // self.n_heads]) \
                .reshape(self.n_layers, n, n)
        tokens = self._tokens[t0:t1].tolist()
        if self._tokens_crc is not None and strings_crc32(tokens) != int(self._tokens_crc[i]):
            raise self._damaged(f"the tokens of example {self.example_ids[i]} fail their checksum")
        example = Example(
            index=int(self.example_index[i]), id=self.example_ids[i],
            tokens=tokens, input_ids=self._ids["input_ids"][t0:t1],
            token_type_ids=self._ids["token_type_ids"][t0:t1], word_ids=self._ids["word_ids"][t0:t1],
            attn=attn,
            **{name: self.attrs[name] for name in ("cls_token", "sep_token") if name in self.attrs},
            value_norms=value_norms, norm_map=norm_map,
        )
        if halves.dtype == np.float16:
            example.widened_from(halves)
        return example.weighted(self.weighting)

    def __iter__(self) -> Iterator[Example]:
        """The examples in corpus order (``example_index``), not the length order they are stored in."""
        for _, i in corpus_order([self]):
            yield self.example(i)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class StoreSet:
    """Several shard stores of one (model, corpus), read as one stream in corpus order.

    ``weighting`` and ``norms`` are those of :class:`Store`, for every shard;
    ``attrs`` are the first shard's attributes. Shards that hold no example between them
    are refused (:class:`StoreError` naming the corpus and why): every analysis opens its
    stores here, so none computes a table from nothing.
    """

    def __init__(self, paths: Iterable[str | Path], weighting: str = "attention", norms: bool = False):
        self.paths = [Path(p) for p in paths]
        if not self.paths:
            raise StoreError("no attention store given")
        self.weighting, self.norms = check_weighting(weighting), norms
        first = self._open(self.paths[0])
        self.attrs, self.n_layers, self.n_heads = first.attrs, first.n_layers, first.n_heads
        self._len = len(first)
        skipped = [int(first.attrs.get("n_skipped", 0)), int(first.attrs.get("n_too_long", 0))]
        first.close()
        for path in self.paths[1:]:
            with self._open(path) as shard:
                if (shard.n_layers, shard.n_heads) != (self.n_layers, self.n_heads):
                    raise StoreError(f"{path}: shard has a different model shape than {self.paths[0]}")
                self._len += len(shard)
                skipped[0] += int(shard.attrs.get("n_skipped", 0))
                skipped[1] += int(shard.attrs.get("n_too_long", 0))
        if not self._len:
            raise EmptyStoreError(empty_store_message(self.attrs, *skipped, where=", ".join(map(str, self.paths))))

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

    def _open(self, path: Path) -> Store:
        return Store(path, self.weighting, self.norms)

    def find(self, which: int | str) -> Example:
        """One example without streaming the others: the ``which``-th in corpus order (an int,
        as :meth:`__iter__` counts), or the one whose record id is ``which`` (a str)."""
        shards = [self._open(path) for path in self.paths]
        try:
            order = corpus_order(shards)
            if isinstance(which, str):
                k, i = next(((k, i) for k, i in order if shards[k].example_ids[i] == which), (None, None))
                if k is None:
                    raise KeyError(f"no example {which!r} in {', '.join(map(str, self.paths))}")
            else:
                if not -len(order) <= which < len(order):
                    raise IndexError(f"example {which}: the stores hold {len(order)} (0-{len(order) - 1})")
                k, i = order[which]
            return shards[k].example(i)
        finally:
            for shard in shards:
                shard.close()

    def __iter__(self) -> Iterator[Example]:
        """Every shard's examples merged into corpus order, so the stream (and every table that
        follows it: row order, bootstrap units, probe training order) does not depend on how
        many shards the corpus was extracted in."""
        shards = [self._open(path) for path in self.paths]
        try:
            for k, i in corpus_order(shards):
                yield shards[k].example(i)
        finally:
            for shard in shards:
                shard.close()


def empty_store_message(attrs: dict, n_skipped: int, n_too_long: int, where: str = "") -> str:
    """Why a (model, corpus) has no example to analyse, and what to do: one message for the
    extraction that keeps none and every analysis asked to read such a store."""
    model, corpus = attrs.get("model_name") or "?", attrs.get("corpus") or "?"
    why = (f"{n_skipped} records were left out, {n_too_long} of them longer than max_length "
           f"{attrs.get('max_length', '?')} wordpieces and {n_skipped - n_too_long} empty"
           if n_skipped else "the corpus (or this shard of it) has no records")
    return (f"{where + ': ' if where else ''}no example of corpus {corpus!r} for model {model!r}: "
            f"{why}. Nothing is analysed from an empty store.\n  how to fix: check the prepared "
            "corpus (its stats file says how many records it has), the corpus source, and "
            "`extraction.max_length`")


def corpus_order(shards: Sequence[Store]) -> list[tuple[int, int]]:
    """``(shard, position)`` of every stored example, sorted by corpus index (``example_index``).

    Raises StoreError when two shards hold the same corpus record (shards of one corpus are disjoint).
    """
    keys = [(int(index), k, i) for k, shard in enumerate(shards) for i, index in enumerate(shard.example_index)]
    keys.sort()
    for (a, k, _), (b, m, _) in zip(keys, keys[1:]):
        if a == b:
            raise StoreError(f"corpus record {a} is stored twice ({shards[k].path}, {shards[m].path}): "
                             "the shards are not of one extraction; re-extract the corpus")
    return [(k, i) for _, k, i in keys]


def open_stores(paths: str | Path | Iterable[str | Path], weighting: str = "attention",
                norms: bool = False) -> StoreSet:
    """Open one store path or a list of shard paths as one stream.

    Parameters
    ----------
    paths : a store, or its shards in order.
    weighting : what every example's ``attn`` holds: ``attention`` (α) or ``norm``
        (α_ij‖f_h(x_j)‖ renormalised per row, Kobayashi et al. 2020).
    norms : also put ``value_norms`` and ``norm_map`` on every example.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    return StoreSet(paths, weighting, norms)

