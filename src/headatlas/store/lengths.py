"""Each record's wordpieces, counted once per (model, corpus) for every shard of a fused extraction.

A fused extraction cuts its batches over the whole corpus and deals them to its shards, so that
an example's batch (and so its maps, to the last bit) does not depend on how many shards there
are. To cut them, every shard needs every record's length: a pass of the tokenizer over the
whole corpus. Made in each shard job, k shards cost k passes, and at k = 100 on 10⁶ segments
each shard's pass (~280 CPU-s on MiniLM) is longer than its own forward pass over its 10⁴. The
``corpus_lengths`` rule counts them once (:func:`~headatlas.encoders.inputs.corpus_lengths`,
the tokenisation the batches get) and writes them here; a shard reads 4 bytes a record.

Integrity as for states: ``fletcher32``, written under a partial name and renamed when complete;
:func:`read_lengths` refuses a missing, incomplete or damaged file, one of another corpus
(sha256), model or number of records, naming the file and the command that rebuilds it; and
each batch's records are checked to have their counted lengths as they are encoded.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from headatlas.errors import StoreError
from headatlas.io import atomic_path
from headatlas.store.schema import rebuild_hint

FORMAT = "headatlas-lengths-1"


def write_lengths(path: str | Path, lengths: np.ndarray, attrs: dict) -> None:
    """Write ``lengths`` (int32, one per record, 0 for an empty one) with ``attrs`` (the corpus,
    its ``corpus_sha256``, the model and tokenizer) to ``path``, atomically."""
    lengths = np.asarray(lengths, dtype=np.int32)
    with atomic_path(path) as tmp, h5py.File(tmp, "w", libver=("v110", "v110")) as f:
        for key, value in attrs.items():
            f.attrs[key] = "" if value is None else value
        f.attrs.update(format=FORMAT, n_records=len(lengths))
        f.create_dataset("lengths", data=lengths, **({"fletcher32": True, "chunks": True} if len(lengths) else {}))
        f.attrs["complete"] = True


def read_lengths(path: str | Path, n_records: int, **expected) -> np.ndarray:
    """The lengths :func:`write_lengths` wrote to ``path``, checked against the corpus they are
    for: its number of records and the attributes in ``expected`` that are not None (the
    corpus's ``corpus_sha256``, the ``model_name`` whose tokenizer counted them)."""
    path = Path(path)
    if not path.exists():
        raise StoreError(f"{path}: no such lengths file; count them first (snakemake {path})")
    try:
        with h5py.File(path, "r", locking=False) as f:
            attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
            if attrs.get("format") != FORMAT or not attrs.get("complete"):
                raise StoreError(f"{path}: not a complete lengths file of this version "
                                 f"({attrs.get('format')!r}); {rebuild_hint(path)}")
            lengths = f["lengths"][()]
    except (OSError, KeyError) as err:
        raise StoreError(f"{path}: not a readable lengths file ({err}); {rebuild_hint(path)}") from err
    for key, value in expected.items():
        if value is not None and attrs.get(key) != value:
            raise StoreError(f"{path}: counted for {key} {attrs.get(key)!r}, and this job's is {value!r} "
                             f"(the corpus changed since, or a file copied over another's); {rebuild_hint(path)}")
    if len(lengths) != n_records or attrs.get("n_records") != n_records:
        raise StoreError(f"{path}: {len(lengths)} records' lengths for a corpus of {n_records}; "
                         f"{rebuild_hint(path)}")
    return lengths.astype(np.int32, copy=False)
