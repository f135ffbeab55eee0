"""The store's schema: every dataset and file attribute with its type, shape and meaning.

The one definition of the layout: :class:`~headatlas.store.writer.StoreWriter` takes the
datasets' dtypes from it, readers check against it, and ``docs/store.md`` is generated from it
(``python -m headatlas.store --markdown > docs/store.md``; a unit test fails when the two differ).
"""

from __future__ import annotations

import argparse
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
import os
from typing import Iterable, Sequence

import h5py
import numpy as np

SCHEMA_VERSION = 3
# Version 1: no value norms (attention-only analyses still run); versions 1-2: no checksums.
READABLE_VERSIONS = (1, 2, 3)
# Integrity (version 3): fletcher32 on every numeric dataset, CRC-32 of the strings, and the
# HDF5 1.10 format (checksummed metadata). Module-level so benchmarks/integrity.py can time
# the store without them (False writes a version-2 store); the pipeline never turns them off.
CHECKSUMS = True
# A store without checksums (versions 1-2, written by older code) is refused unless this is set:
# HEADATLAS_READ_UNCHECKED=1 reads it, with a warning that damage would go unseen.
READ_UNCHECKED = os.environ.get("HEADATLAS_READ_UNCHECKED") == "1"
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


def store_bytes(lengths, n_layers: int, n_heads: int, norms: bool) -> int:
    """Bytes of a store of examples of these lengths (wordpieces): float16 maps
    ``2·L·H·n²``, with value norms ``2·L·H·n`` and the layer norm maps ``2·L·n²`` when recorded
    (docs/scaling.md); the per-example strings and offsets are small beside them."""
    n = np.asarray(lengths, dtype=np.int64)
    per = 2 * n_layers * n_heads * n * n
    if norms:
        per = per + 2 * n_layers * n_heads * n + 2 * n_layers * n * n
    return int(per.sum())


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
Written by `headatlas.encoders.extract.extract` through `headatlas.store.writer.StoreWriter`, read by
`headatlas.store.reader.Store` / `open_stores` (several shards as one stream).

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
        "<!-- Generated by `python -m headatlas.store --markdown` from src/headatlas/store/schema.py: "
        "edit there. -->",
        f"# The attention store (HDF5, schema version {SCHEMA_VERSION})", "", _DOC_INTRO, "",
        "| dataset | dtype | shape | meaning | present |", "|---|---|---|---|---|", *datasets, "",
        _DOC_ORDER, "",
        "| file attribute | type | meaning |", "|---|---|---|", *attributes, "",
        _DOC_VERSIONS, "", _DOC_NOTES, ""])


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m headatlas.store --markdown``: print the schema as Markdown (docs/store.md)."""
    parser = argparse.ArgumentParser(prog="python -m headatlas.store", description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print docs/store.md")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.error("nothing to do: pass --markdown")
    sys.stdout.write(markdown())


