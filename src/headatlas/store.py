"""The HDF5 attention store: the spine between extraction and the analyses.

One file per (model, corpus, shard). Ragged per-example arrays are stored flat
with offsets, so examples of any length share one dataset and an analysis can
stream one example at a time (memory independent of the corpus size).

The schema is the data below, its one definition: every dataset
(:data:`DATASETS`) and file attribute (:data:`ATTRIBUTES`) with its type,
shape and meaning. :class:`StoreWriter` takes the datasets' dtypes from it, and
``docs/store.md`` is generated from it (``python -m headatlas.store --markdown
> docs/store.md``; a unit test fails when the two differ).

Schema version 2 adds the value-vector norms of Kobayashi et al. (2020)
(``value_norms``, ``norm_map``; :mod:`headatlas.valuenorms`). Version 1 stores
are still read: every analysis of the attention weights runs on them, and
asking one for norms (the ``norm`` weighting, Kobayashi's shares, the norm
rollout) is an error naming the file and the command that re-extracts it.

Schema version 3 adds checksums: HDF5's ``fletcher32`` filter on every numeric
dataset, a CRC-32 of each example's token strings (``tokens_crc32``) and of the
id lists, and the HDF5 1.10 file format, whose metadata (superblock, object
headers, chunk indexes) carries checksums of its own. Any failure to read a
store (a checksum, damaged offsets or metadata) is a :class:`StoreError`
naming the file and the command that rebuilds it; nothing damaged is handed to
an analysis.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import h5py
import numpy as np

from headatlas.errors import EmptyStoreError, StoreError
from headatlas.halves import widen
from headatlas.io import partial_path, remove_stale_partials
from headatlas.weightings import check_weighting, norm_weighted

SCHEMA_VERSION = 3
# Version 1: no value norms (attention-only analyses still run); versions 1-2: no checksums.
READABLE_VERSIONS = (1, 2, 3)
# Integrity (version 3): fletcher32 on every numeric dataset, CRC-32 of the strings, and the
# HDF5 1.10 format (checksummed metadata). Module-level so benchmarks/integrity.py can time
# the store without them (False writes a version-2 store); the pipeline never turns them off.
CHECKSUMS = True
LIBVER = ("v110", "v110")
CHUNK_CACHE = None  # HDF5's chunk cache per open dataset, bytes (None: h5py's default, 1 MiB)
# The `norms` attribute: whether the value norms were recorded, and if not, why.
NORMS_RECORDED, NORMS_UNSUPPORTED, NORMS_OFF = "recorded", "unsupported", "not requested"
NORMS_STATES = (NORMS_RECORDED, NORMS_UNSUPPORTED, NORMS_OFF)


@dataclass(frozen=True)
class Field:
    """One dataset or file attribute of the store: name, type, shape, meaning (Markdown)."""

    name: str
    dtype: str
    shape: str
    meaning: str
    when: str = ""  # Markdown: when the dataset is present (always, if empty)


# L = layers, H = heads, N = examples, n_i = tokens of example i, S = records skipped.
DATASETS = (
    Field("attn", "float16", "[sum_i L*H*n_i*n_i]",
          "example *i*'s attention block `[layers, heads, query, key]`, C order; rows sum to 1 "
          "(within float16 rounding)"),
    Field("attn_offsets", "int64", "[N+1]", "start of each block in `attn`"),
    Field("tok_offsets", "int64", "[N+1]", "start of each example's tokens in the token datasets"),
    Field("input_ids", "int32", "[sum_i n_i]", "token ids"),
    Field("token_type_ids", "int8", "[sum_i n_i]",
          "segment ids fed to the model: 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`; all 0 for a model "
          "without a token-type table (DistilBERT, RoBERTa, DeBERTa-v3), which is given none"),
    Field("word_ids", "int32", "[sum_i n_i]",
          "token -> word index in the example (A's words, then B's), -1 for special tokens"),
    Field("tokens", "UTF-8 str", "[sum_i n_i]", "token strings, so analyses need no tokenizer"),
    Field("example_ids", "UTF-8 str", "[N]", "the corpus record ids"),
    Field("example_index", "int64", "[N]", "position of the record in the prepared corpus file"),
    Field("n_words", "int32", "[N]", "words in the record (a word with no wordpiece still counts)"),
    Field("tokens_crc32", "uint32", "[N]",
          "CRC-32 of example *i*'s token strings (UTF-8, joined by NUL), checked on every read "
          "(version 3)"),
    Field("skipped_ids", "UTF-8 str", "[S]",
          "records left out: longer than `max_length` wordpieces, or empty"),
    Field("value_norms", "float16", "[sum_i L*H*n_i]",
          "example *i*'s `[layers, heads, key]` block of ‖f_h(x_j)‖ = ‖(x_j W_V^h + b_V^h) W_O^h‖, "
          "the norm of head *h*'s transformed value vector of token *j* (Kobayashi et al. 2020); "
          "starts at `tok_offsets[i] * L * H`", "`norms` = recorded"),
    Field("norm_map", "float16", "[sum_i L*n_i*n_i]",
          "example *i*'s `[layers, query, key]` block of ‖Σ_h α^h_ij f_h(x_j)‖, what key *j* adds "
          "to query *i* through the whole attention layer (output bias left out); starts at "
          "`attn_offsets[i] / H`", "`norms` = recorded"),
)
ATTRIBUTES = (
    Field("schema_version", "int", "", "version of this layout; a reader refuses any other"),
    Field("model_name", "str", "", "the model's name in the configuration"),
    Field("model_id", "str", "", "where the weights came from: hub id, package or folder"),
    Field("model_revision", "str", "", "commit of the weights (empty when unknown)"),
    Field("tokenizer", "str", "", "the tokenizer's class"),
    Field("random_init", "bool", "", "encoder re-initialised at random (pretrained embeddings kept)"),
    Field("model_class", "str", "", "the encoder's class, e.g. `BertModel` (version 2)"),
    Field("norms", "str", "",
          "value norms: `recorded`; `unsupported` (the model lacks the BERT attention layout); "
          "`not requested` (the model's `weightings` exclude `norm`) (version 2)"),
    Field("n_layers", "int", "", "layers (L)"),
    Field("n_heads", "int", "", "heads per layer (H)"),
    Field("max_length", "int", "", "longest input in wordpieces; longer records are skipped"),
    Field("corpus", "str", "", "the corpus's name in the configuration"),
    Field("corpus_sha256", "str", "", "sha256 of the prepared JSON Lines file"),
    Field("package_version", "str", "", "version of headatlas that wrote the file"),
    Field("code_commit", "str", "", "git commit of the code that wrote the file ('unknown' outside a clone)"),
    Field("code_dirty", "bool", "", "whether tracked files differed from that commit"),
    Field("cls_token", "str", "",
          "the tokenizer's classification token, first in every example (`[CLS]`; RoBERTa `<s>`); "
          "analyses find `[CLS]` by it"),
    Field("sep_token", "str", "",
          "the tokenizer's separator token (`[SEP]`; RoBERTa `</s>`); every token equal to it counts "
          "as `[SEP]`, so RoBERTa's pairs `<s> A </s></s> B </s>` have three"),
    Field("shard", "int", "", "this shard, 0-based"),
    Field("n_shards", "int", "", "shards of the (model, corpus)"),
    Field("n_skipped", "int", "", "records left out (S)"),
    Field("n_too_long", "int", "", "of those, the ones over `max_length`"),
    Field("n_examples", "int", "", "examples stored (N)"),
    Field("complete", "bool", "", "true once every dataset is written (set last)"),
)
_NUMPY_DTYPES = {"float16": np.float16, "int64": np.int64, "int32": np.int32, "int8": np.int8,
                 "uint32": np.uint32, "UTF-8 str": h5py.string_dtype()}
_STRING = "UTF-8 str"
STRING_CRC_ATTR = "crc32"  # attribute of example_ids and skipped_ids: CRC-32 of the list (version 3)


def strings_crc32(strings: Iterable[str]) -> int:
    """CRC-32 of strings as UTF-8 joined by NUL: the checksum of a string dataset (version 3)."""
    return zlib.crc32("\x00".join(strings).encode("utf-8"))


def rebuild_hint(path: str | Path) -> str:
    """The command that rebuilds the store at ``path`` (with everything that read it)."""
    return (f"rebuild it: snakemake --cores all --force {path} (or delete it and rerun "
            "snakemake; the analyses that read it rerun after it)")


def dataset_dtype(name: str):
    """The numpy/h5py dtype of dataset ``name``, from :data:`DATASETS`."""
    return _NUMPY_DTYPES[next(f.dtype for f in DATASETS if f.name == name)]


NORM_DATASETS = tuple(f.name for f in DATASETS if f.when)


def expected_datasets(norms: str) -> list[str]:
    """The datasets a version-2 store holds, given its ``norms`` attribute."""
    return [f.name for f in DATASETS if not f.when or norms == NORMS_RECORDED]


_DOC_INTRO = """One file per (model, corpus, shard): `results/<model>/<corpus>/attention/shard-<i>.h5`.
Written by `headatlas.extract.extract` through `headatlas.store.StoreWriter`, read by
`headatlas.store.Store` / `open_stores` (several shards as one stream).

Ragged per-example arrays are stored flat with offsets, so examples of any length share one
dataset and analyses stream one example at a time: memory does not grow with the corpus.
L = layers, H = heads, N = examples, n_i = tokens of example *i*, S = records skipped."""
_DOC_ORDER = """Examples are stored in the order they were run (sorted by length for batching); use
`example_index` to join them with the corpus records. Readers (`Store`, and `StoreSet` over the
shards of one corpus) stream them in corpus order, `example_index` ascending, so what follows the
stream does not depend on the batching or the number of shards."""
_DOC_VERSIONS = """**Versions.** Version 3 (this one) adds the checksums (below) and `tokens_crc32`. Version 2
added `value_norms`, `norm_map` and the attributes `model_class` and `norms`. Readers accept
versions 1 to 3: a store of version 1 or 2 is read without checksums; a version-1 store serves
every analysis of the attention weights, and an analysis that needs the norms stops with the
file's name and the command that re-extracts it (`snakemake --cores all --force <store>`).

**Weightings.** `open_stores(paths, weighting="norm")` hands every analysis α_ij‖f_h(x_j)‖
renormalised per row instead of α_ij (`headatlas.weightings`); `norms=True` also puts the raw
`value_norms` and `norm_map` on each example."""
_DOC_NOTES = """**Integrity.** Every numeric dataset carries HDF5's `fletcher32` checksum (per chunk,
checked by HDF5 on every read); `tokens_crc32` covers each example's token strings, and a
`crc32` attribute on `example_ids` and on `skipped_ids` covers those lists (HDF5 cannot filter
variable-length strings). Numeric chunks are small (128 Ki elements for the maps) because
HDF5 checks a chunk whole to return any part of it. The file is written in the HDF5 1.10 format, whose metadata
(superblock, object headers, chunk indexes) is checksummed too. On opening, a reader also checks
that the offsets agree with each other, with the dataset lengths and with `n_layers`/`n_heads`.
Any failed check or read error is a `StoreError` naming the file and the command that rebuilds
it (`snakemake --cores all --force <store>`): a damaged store never reaches an analysis.

**Completeness.** The file is written as `.shard-<i>.h5.<host>-<pid>-<random>.partial`, a name
unique to the writing process (two extractions of one store never share it), and renamed only
after every dataset and `complete = True` are written. An interrupted extraction leaves no file
at the final path (and the partial file is removed; one left by a killed process on this host is
removed by the next extraction of that store); a write error (a full disk) is a `StoreError`
naming the file. A reader refuses any file whose `complete` attribute is not true or whose
`schema_version` it does not know.

**Empty is an error.** An extraction that keeps no example writes no store and stops naming
the corpus and why (records too long for `max_length`, empty, or none); `open_stores`, where
every analysis opens its stores, refuses shards that hold no example between them.

Size: `L*H*n^2*2` bytes per example for the attention, plus `L*n^2*2 + L*H*n*2` for the norms
(1/H more: +8% with 12 heads): about 1.4 GB for 1,000 Wikipedia segments on MiniLM (6x12
heads), about 2.8 GB on BERT-base (12x12)."""


def markdown() -> str:
    """``docs/store.md``: the schema of :data:`DATASETS` and :data:`ATTRIBUTES` as Markdown."""
    datasets = [f"| `{f.name}` | {f.dtype} | `{f.shape}` | {f.meaning} | {f.when or 'always'} |"
                for f in DATASETS]
    attributes = [f"| `{f.name}` | {f.dtype} | {f.meaning} |" for f in ATTRIBUTES]
    return "\n".join([
        "<!-- Generated by `python -m headatlas.store --markdown` from src/headatlas/store.py: "
        "edit there. -->",
        f"# The attention store (HDF5, schema version {SCHEMA_VERSION})", "", _DOC_INTRO, "",
        "| dataset | dtype | shape | meaning | present |", "|---|---|---|---|---|", *datasets, "",
        _DOC_ORDER, "",
        "| file attribute | type | meaning |", "|---|---|---|", *attributes, "",
        _DOC_VERSIONS, "", _DOC_NOTES, ""])
PUNCT_TOKENS = frozenset({".", ","})
# Markers some tokenizers put before a word-initial piece (RoBERTa, SentencePiece).
_WORD_MARKERS = "Ġ▁"


def token_masks(tokens: Sequence[str], cls_token: str,
                sep_token: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean ``[n]`` masks of ``[CLS]``, ``[SEP]`` and period/comma tokens.

    The one definition of these token classes, shared by every analysis.
    ``cls_token`` and ``sep_token`` are the tokenizer's own strings (the
    store's attributes): every token equal to ``sep_token`` is a ``[SEP]``
    (RoBERTa's ``</s></s>`` between A and B are two). A period or comma may
    carry a word-start marker (``Ġ.``, ``▁,``).
    """
    cls = np.array([t == cls_token for t in tokens], dtype=bool)
    sep = np.array([t == sep_token for t in tokens], dtype=bool)
    punct = np.array([t.lstrip(_WORD_MARKERS) in PUNCT_TOKENS for t in tokens], dtype=bool)
    return cls, sep, punct


@dataclass
class Example:
    """One example's attention and tokens.

    ``attn`` has shape ``[layers, heads, query, key]`` (float32; rows sum to 1): the
    attention weights α, or under ``weighting == "norm"`` α_ij‖f_h(x_j)‖ renormalised
    per row (:mod:`headatlas.weightings`). ``value_norms`` ``[layers, heads, key]``
    (‖f_h(x_j)‖) and ``norm_map`` ``[layers, query, key]`` (‖Σ_h α^h_ij f_h(x_j)‖)
    are set when the store was opened with ``norms=True`` (``value_norms`` also under
    the norm weighting), else None.
    ``cls_token``/``sep_token`` are the tokenizer's (the store's attributes);
    the defaults, BERT's, only serve examples built by hand.
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
    value_norms: np.ndarray | None = None
    norm_map: np.ndarray | None = None
    weighting: str = "attention"

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

    def weighted(self, weighting: str) -> "Example":
        """This example under ``weighting`` (needs ``value_norms`` for ``norm``).

        Only an example of the attention weights can be reweighted.
        """
        if check_weighting(weighting) == self.weighting:
            return self
        if self.weighting != "attention" or self.value_norms is None:
            raise StoreError(f"example {self.id}: the norm weighting needs the attention weights "
                             "and the value norms (open the store with norms=True)")
        return replace(self, attn=norm_weighted(self.attn, self.value_norms), weighting=weighting)


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
        self._file = None
        try:
            with self._writing():
                self._file = h5py.File(self.partial, "w", **({"libver": LIBVER} if CHECKSUMS else {}),
                                       **({"rdcc_nbytes": CHUNK_CACHE} if CHUNK_CACHE else {}))
                for key, value in attrs.items():
                    self._file.attrs[key] = "" if value is None else value
                self._file.attrs["norms"] = self.norms
                self._file.attrs["schema_version"] = SCHEMA_VERSION if CHECKSUMS else 2
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
        return {"fletcher32": True} if CHECKSUMS and dataset_dtype(name) != h5py.string_dtype() else {}

    def _growing(self, name: str, chunk: int):
        return self._file.create_dataset(name, (0,), dataset_dtype(name), maxshape=(None,),
                                         chunks=(chunk,), **self._checksum(name))

    @contextlib.contextmanager
    def _writing(self):
        """Turn an OSError of HDF5 or the file system into a StoreError naming the store."""
        try:
            yield
        except OSError as err:
            full = getattr(err, "errno", None) == errno.ENOSPC or "No space left" in str(err)
            why = (f"the disk is full (free space on {self.path.parent.resolve()}, or point "
                   "results/ elsewhere)") if full else "check the folder's permissions and free space"
            raise StoreError(f"{self.path}: writing the attention store failed ({err}); {why}; "
                             f"nothing was written at {self.path}") from err

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
        :func:`headatlas.batching.pack_examples` lays them out); ``value_norms`` their
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
                    if name == "tokens_crc32" and not CHECKSUMS:
                        continue
                    dtype = dataset_dtype(name)
                    string = dtype == h5py.string_dtype()
                    data = np.asarray(values, dtype=object if string else dtype)
                    # fletcher32 needs a chunked layout; a chunk cannot be empty.
                    layout = {"chunks": (max(len(data), 1),), "maxshape": (None,)} if self._checksum(name) else {}
                    dataset = f.create_dataset(name, data=data, dtype=dtype, **layout, **self._checksum(name))
                    if string and CHECKSUMS:
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
        finally:
            self.partial.unlink(missing_ok=True)

    def __enter__(self) -> "StoreWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self._discard()


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
                                   **({"rdcc_nbytes": CHUNK_CACHE} if CHUNK_CACHE else {}))
        except OSError as err:
            raise StoreError(f"{self.path}: not a readable HDF5 store ({err}); "
                             f"{rebuild_hint(self.path)}") from err
        try:
            self._open()
        except BaseException:
            self._file.close()
            raise

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
        attn = widen(self._attn[a0:a1]).reshape(self.n_layers, self.n_heads, n, n)
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


def pick_example(paths: Sequence[str | Path], index: int | None = None,
                 min_tokens: int = 24, weighting: str = "attention") -> Example:
    """The example with corpus ``index``, or else the shortest with at least ``min_tokens``.

    Reads only the chosen example's attention (under ``weighting``).
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
    with Store(path, weighting) as store:
        return store.example(i)


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


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m headatlas.store --markdown``: print the schema as Markdown (docs/store.md)."""
    parser = argparse.ArgumentParser(prog="python -m headatlas.store", description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print docs/store.md")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.error("nothing to do: pass --markdown")
    sys.stdout.write(markdown())


if __name__ == "__main__":
    main()
