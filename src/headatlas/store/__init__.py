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
(``value_norms``, ``norm_map``; :mod:`headatlas.encoders.valuenorms`). Version 1 stores
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

Modules: :mod:`~headatlas.store.schema` (the layout, its one definition),
:mod:`~headatlas.store.writer`, :mod:`~headatlas.store.reader` (``open_stores``),
:mod:`~headatlas.store.example` (what an analysis sees), :mod:`~headatlas.store.halves`
(float16 reads), :mod:`~headatlas.store.wordlevel` (word-level maps),
:mod:`~headatlas.store.summary` (the corpus summary table).
"""
