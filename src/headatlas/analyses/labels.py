"""The hand-labelled attention maps (Kovaleva et al.'s patterns): the label table and the frozen
maps beside it, read and checked. The pattern classifier is tuned (rules) or learned (forest)
on them; drawing sheets, sampling and freezing maps: :mod:`headatlas.report.labelling`."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from headatlas.errors import HeadAtlasError

PATTERNS = ("vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous")
HALVES = ("tune", "test")
COLUMNS = ("map", "example_index", "example_id", "n_tokens", "layer", "head", "half", "pattern",
           "note")
# Optional columns: where a map came from and how it was chosen and labelled.
PROVENANCE = ("model", "corpus", "selection", "source")
LABELS = "pattern_labels.csv"
MAPS = "pattern_maps.npz"


def packaged_labels() -> Path:
    """Path of the packaged labelled set (``headatlas/data/pattern_labels.csv``)."""
    return Path(str(resources.files("headatlas") / "data" / LABELS))


def packaged_maps() -> Path:
    """Path of the packaged labelled maps (``headatlas/data/pattern_maps.npz``)."""
    return Path(str(resources.files("headatlas") / "data" / MAPS))



def read_labels(path: str | Path | None = None) -> pd.DataFrame:
    """The labelled set (default: the packaged one), checked: columns, patterns, halves, ids."""
    path = packaged_labels() if path is None else Path(path)
    table = pd.read_csv(path, keep_default_na=False, dtype={"example_id": str})
    missing = set(COLUMNS) - set(table.columns)
    if missing:
        raise HeadAtlasError(f"{path}: not a pattern-label table (missing columns {sorted(missing)})")
    unknown = sorted(set(table["pattern"]) - set(PATTERNS))
    if unknown:
        raise HeadAtlasError(f"{path}: unknown pattern(s) {unknown}; one of {PATTERNS} per map")
    halves = sorted(set(table["half"]) - set(HALVES))
    if halves:
        raise HeadAtlasError(f"{path}: unknown half/halves {halves}; use {HALVES}")
    if table["map"].duplicated().any():
        raise HeadAtlasError(f"{path}: map ids are not unique")
    for column in PROVENANCE:
        if column not in table:
            table[column] = ""
    return table


def load_maps(path: str | Path | None, labels: pd.DataFrame
              ) -> tuple[list[np.ndarray], list[np.ndarray], dict]:
    """The labelled maps (float32 ``[n, n]``), their sentence ids and ``meta``, in ``labels`` order.

    ``path`` is a :func:`freeze_maps` file (default: the packaged one). Every labelled map must
    be in it, with ``n_tokens`` rows. A map's segments are ``segments/<id>`` where the file has
    them (a model without token types), else its token types
    (:func:`headatlas.analyses.patterns.segments_of`); its sentences are found in its
    ``tokens/<id>`` (:func:`headatlas.analyses.patterns.sentence_units`), or are its segments
    where the file has no tokens for it (MPNet-base's maps ``x*``: their inputs could not be
    rebuilt).
    """
    from headatlas.analyses.patterns import sentence_units

    path = packaged_maps() if path is None else Path(path)
    if not path.exists():
        raise HeadAtlasError(f"{path}: no labelled maps (`patterns.labels.maps`; write them with "
                             "`headatlas label freeze`)")
    maps, units = [], []
    with np.load(path, allow_pickle=False) as archive:
        names = set(archive.files)
        meta = json.loads(str(archive["meta"])) if "meta" in names else {}
        absent = [m for m in labels["map"] if f"map/{m}" not in names]
        if absent:
            raise HeadAtlasError(f"{path}: {len(absent)} labelled map(s) missing (first: {absent[0]}); "
                                 "the maps file belongs to another label table")
        for name, n in zip(labels["map"], labels["n_tokens"]):
            m = archive[f"map/{name}"].astype(np.float32)
            if m.shape != (int(n), int(n)):
                raise HeadAtlasError(f"{path}: map {name} is {m.shape}, the labels say {n} tokens")
            maps.append(m)
            segments = _segments(archive, name, names)
            if len(segments) != m.shape[0]:
                raise HeadAtlasError(f"{path}: the segments of map {name} have {len(segments)} tokens, "
                                     f"the map {m.shape[0]}")
            if f"tokens/{name}" in names:
                tokens = [str(t) for t in archive[f"tokens/{name}"]]
                segments = sentence_units(tokens, archive[f"word_ids/{name}"].astype(np.int64), segments)
            units.append(segments)
    return maps, units, meta


def _segments(archive, name: str, names: set[str]) -> np.ndarray:
    """Map ``name``'s segment ids in a :func:`freeze_maps` archive (whose keys are ``names``):
    ``segments/<id>`` where the file has them (a model without token types), else its token types."""
    from headatlas.analyses.patterns import segments_of

    key = f"segments/{name}" if f"segments/{name}" in names else f"types/{name}"
    return segments_of(archive[key])


def map_segments(path: str | Path | None, labels: pd.DataFrame) -> list[np.ndarray]:
    """The labelled maps' segment ids (:func:`load_maps` gives their sentences), in ``labels``
    order: where the contact sheets put their red ticks."""
    path = packaged_maps() if path is None else Path(path)
    with np.load(path, allow_pickle=False) as archive:
        names = set(archive.files)
        return [_segments(archive, name, names) for name in labels["map"]]


