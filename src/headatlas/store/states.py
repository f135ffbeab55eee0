"""Analysis states on disk: what a fused extraction keeps instead of the attention maps.

A fused extraction (:mod:`headatlas.analyses.fused`) runs every streaming analysis inside the
forward pass and writes, per (model, corpus, shard), one HDF5 file of their **states**
(:meth:`headatlas.analyses.base.Analysis.state`: plain arrays, small: counts, sums,
per-sentence rows), never the maps. Each analysis run is a group ``/runs/<key>`` holding its
arrays and its analysis, options and weighting; the file's attributes are those a store
would have (model, corpus and its sha256, shape, code version, shard, skipped records), and
it keeps each extracted example's corpus position and length, so a result made from states
has the provenance and caption a store's would have.

Integrity as for stores: ``fletcher32`` on every numeric dataset, written under a unique
partial name and renamed when complete; a reader refuses a missing, incomplete, damaged or
other-version file with a :class:`~headatlas.errors.StoreError` naming it and the command that
rebuilds it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

import h5py
import numpy as np

from headatlas.errors import StoreError
from headatlas.io import atomic_path, partial_path, remove_stale_partials
from headatlas.store.halves import exact_halves
from headatlas.store.reader import Store
from headatlas.store.schema import rebuild_hint

FORMAT = "headatlas-states-1"


def write_states(path: str | Path, runs: dict, attrs: dict, skipped_ids: Iterable[str] = (),
                 lengths: dict[int, int] | None = None, spilled: "Spill | None" = None) -> None:
    """Write the states of ``runs`` (key -> (analysis instance, weighting)) with the store-like
    ``attrs`` to ``path``, atomically; ``lengths``: corpus position -> wordpieces of every
    example extracted; ``spilled``: the states the runs wrote out on the way (:class:`Spill`),
    copied in beside them (``/spilled/<key>/<part>``; a run's result merges them all)."""
    lengths = dict(sorted((lengths or {}).items()))
    with atomic_path(path) as tmp, h5py.File(tmp, "w", libver=("v110", "v110")) as f:
        for key, value in attrs.items():
            f.attrs[key] = "" if value is None else value
        f.attrs["format"] = FORMAT
        f.create_dataset("skipped_ids", data=list(skipped_ids), dtype=h5py.string_dtype())
        f.create_dataset("example_index", data=np.fromiter(lengths, np.int64, len(lengths)))
        f.create_dataset("lengths", data=np.fromiter(lengths.values(), np.int32, len(lengths)))
        for key, (acc, weighting) in runs.items():
            group = f.create_group(f"runs/{key}")
            group.attrs.update(analysis=acc.name, weighting=weighting,
                               options=json.dumps(acc.settings(), default=str, sort_keys=True))
            _write_state(group, acc.state())
        if spilled is not None:
            spilled.copy_into(f)
        f.attrs["complete"] = True


def _write_state(group: h5py.Group, state: dict) -> None:
    """An analysis's state arrays as the group's datasets (checksummed; float16 where exact)."""
    for name, array in state.items():
        array, name = np.asarray(array), _escape(name)
        if array.dtype.kind == "U":
            group.create_dataset(name, data=array.astype(object), dtype=h5py.string_dtype())
            continue
        array, widened = _halved(array)
        data = group.create_dataset(name, data=array, **({"fletcher32": True, "chunks": True}
                                                         if array.ndim and array.size else {}))
        if widened:
            data.attrs["float32"] = True


def _read_state(group: h5py.Group) -> dict[str, np.ndarray]:
    """:func:`_write_state`'s arrays back (float16 widened where they were float32)."""
    state = {_unescape(name): (d.asstr()[()] if d.dtype.kind == "O" else
                               d[()].astype(np.float32) if d.attrs.get("float32") else d[()])
             for name, d in group.items()}
    return {k: (np.asarray(v, dtype=str) if isinstance(v, np.ndarray) and v.dtype == object else v)
            for k, v in state.items()}


class Spill:
    """Where a fused extraction writes its runs' states on the way (every so many examples,
    :func:`~headatlas.analyses.fused.fused_extract`'s ``spill_every``), so that what they
    keep per example (sampled pairs, per-example features) does not grow with the shard: a
    partial file beside the states file, copied into it when it is written and removed on
    :meth:`close` whatever happened."""

    def __init__(self, states_path: str | Path):
        name = Path(states_path).with_name(Path(states_path).name + ".spill")
        name.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_partials(name)  # a killed extraction's
        self.path = partial_path(name)
        self._file = h5py.File(self.path, "w", libver=("v110", "v110"))
        self.parts = 0

    def write(self, states: dict[str, dict]) -> None:
        """One part: each run's state (key -> state arrays)."""
        for key, state in states.items():
            _write_state(self._file.create_group(f"spilled/{key}/{self.parts}"), state)
        self._file.flush()
        self.parts += 1

    def copy_into(self, target: h5py.File) -> None:
        if "spilled" in self._file:
            target.copy(self._file["spilled"], "spilled")

    def close(self) -> None:
        self._file.close()
        self.path.unlink(missing_ok=True)


def _halved(array: np.ndarray) -> tuple[np.ndarray, bool]:
    """A float32 array every value of which is a float16 (maps and norms as a store keeps them,
    sampled by an analysis) as float16, and whether it was: half the bytes, nothing lost."""
    half = exact_halves(array) if array.dtype == np.float32 and array.size >= 1024 else None
    return (array, False) if half is None else (half, True)


def _escape(name: str) -> str:
    """A state array's name as an HDF5 dataset name (a '/' would make a group)."""
    return name.replace("%", "%25").replace("/", "%2F")


def _unescape(name: str) -> str:
    return name.replace("%2F", "/").replace("%25", "%")


class States:
    """One states file, read-only: its attributes, skipped records and runs."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.exists():
            raise StoreError(f"{self.path}: no such states file; run the fused extraction for it "
                             f"(snakemake {self.path})")
        try:
            self._file = h5py.File(self.path, "r", locking=False)
        except OSError as err:
            raise StoreError(f"{self.path}: not a readable states file ({err}); {rebuild_hint(self.path)}") from err
        attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in self._file.attrs.items()}
        if attrs.get("format") != FORMAT or not attrs.get("complete"):
            self._file.close()
            raise StoreError(f"{self.path}: not a complete states file of this version "
                             f"({attrs.get('format')!r}); {rebuild_hint(self.path)}")
        self.attrs = attrs

    @property
    def keys(self) -> list[str]:
        return sorted(self._file.get("runs", {}))

    @property
    def skipped_ids(self) -> list[str]:
        return self._file["skipped_ids"].asstr()[:].tolist()

    @property
    def lengths(self) -> np.ndarray:
        """Each extracted example's length in wordpieces, in corpus order."""
        return self._file["lengths"][:]

    @property
    def example_index(self) -> np.ndarray:
        """Each extracted example's corpus position, in corpus order."""
        return self._file["example_index"][:]

    def __len__(self) -> int:
        return len(self._file["lengths"])

    def run(self, key: str) -> tuple[dict, dict[str, np.ndarray]]:
        """``{analysis, weighting, options}`` and the state arrays of run ``key``."""
        if key not in self._file.get("runs", {}):
            raise StoreError(f"{self.path}: no analysis run {key!r} (it has {', '.join(self.keys) or 'none'}); "
                             f"the extraction ran with other analyses or options: {rebuild_hint(self.path)}")
        group = self._file["runs"][key]
        state = self._read(group, key)
        about = {"analysis": group.attrs["analysis"], "weighting": group.attrs["weighting"],
                 "options": json.loads(group.attrs["options"])}
        return about, state

    def parts(self, key: str) -> Iterator[dict[str, np.ndarray]]:
        """The states run ``key`` wrote out on the way (:class:`Spill`), one at a time; merged
        with :meth:`run`'s they are the run's whole state."""
        spilled = self._file.get(f"spilled/{key}", {})
        for part in sorted(spilled, key=int):
            yield self._read(spilled[part], key)

    def _read(self, group: h5py.Group, key: str) -> dict[str, np.ndarray]:
        try:
            return _read_state(group)
        except (OSError, ValueError) as err:
            raise StoreError(f"{self.path}: run {key!r} is damaged ({err}); {rebuild_hint(self.path)}") from err

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "States":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Source:
    """What an analysis's :meth:`~headatlas.analyses.base.Analysis.start` sees when its
    examples come from a fused extraction rather than a store: the store-like attributes and the
    records the extraction left out (no store paths: nothing to reopen)."""

    def __init__(self, attrs: dict, skipped_ids: Iterable[str] = ()):
        self.attrs, self.skipped_ids, self.paths = dict(attrs), list(skipped_ids), []


def is_states(path: str | Path) -> bool:
    """Whether ``path`` is a states file (rather than a store): by its format attribute."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            return f.attrs.get("format") == FORMAT
    except OSError:
        return False


def open_record(path: str | Path) -> "Store | States":
    """What an extraction left for ``path``'s (model, corpus, shard), read for its record (its
    attributes, skipped records, the corpus positions and lengths of what it extracted): a store
    (store mode) or a states file (fused mode)."""
    return States(path) if is_states(path) else Store(path)
