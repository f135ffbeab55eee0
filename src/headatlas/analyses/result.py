"""The one result type every analysis returns: named tables, arrays, claims and attrs.

A :class:`Result` holds what an analysis found:

* ``tables``: named DataFrames (a per-head table is ``tables["heads"]``, 1-based ``layer`` and
  ``head`` columns, as in the papers);
* ``arrays``: named numpy arrays, for what a table would not hold (per-sentence counts, every
  input's features);
* ``claims``: the paper claims it judges (:class:`~headatlas.claims.Claim`);
* ``attrs``: the analysis's settings and, once :func:`~headatlas.analyses.base.run_analysis`
  returns it, ``provenance`` (model, corpus, options, N, lengths), ``caption`` (the figure
  footnote) and ``weighting``.

:meth:`Result.save` writes all of it to one ``.npz`` file (no pickle) and :meth:`Result.load`
reads it back, caption and provenance included: a rule that reads a saved result writes its
figure's footnote without reopening the store. Domain results (the syntax scores, the
per-input distance features) subclass it and add methods over their arrays; the file layout
is the same.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from headatlas.claims import COLUMNS, Claim, claims_table
from headatlas.io import atomic_path

FORMAT = "headatlas-result-1"  # the file layout's version, checked on load


@dataclass
class Result:
    """What an analysis returns (see the module docstring)."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    attrs: dict = field(default_factory=dict)

    @property
    def table(self) -> pd.DataFrame:
        """The result's table: ``heads`` when there is one, else the only table."""
        if "heads" in self.tables:
            return self.tables["heads"]
        if len(self.tables) != 1:
            raise KeyError(f"this result has {len(self.tables)} tables ({', '.join(self.tables)}): "
                           "name one (result.tables[name])")
        return next(iter(self.tables.values()))

    @property
    def caption(self) -> str:
        """The figure footnote (model, corpus, N, deviations), set by ``run_analysis``."""
        return self.attrs.get("caption", "")

    @property
    def provenance(self) -> dict:
        return self.attrs.get("provenance", {})

    def save_provenance(self, path: str | Path) -> None:
        """Write :attr:`provenance` (model, corpus, options, N, lengths) to ``path`` as JSON: what
        a later rule's caption needs from a result it reads as a table."""
        with atomic_path(path) as tmp:
            Path(tmp).write_text(json.dumps(self.provenance, default=_plain, indent=1))

    def claims_table(self) -> pd.DataFrame:
        """The claims as a ``paper_claims.csv`` table (:data:`headatlas.claims.COLUMNS`)."""
        return claims_table(self.claims)

    def save(self, path: str | Path) -> None:
        """Write everything to ``path`` (``.npz``) atomically: it appears complete or not at all."""
        payload = {f"array/{name}": np.asarray(value) for name, value in self.arrays.items()}
        for name, frame in self.tables.items():
            payload.update(_frame_arrays(f"table/{name}", frame))
        meta = {"format": FORMAT, "type": type(self).__name__, "tables": list(self.tables),
                "columns": {name: [str(c) for c in frame.columns] for name, frame in self.tables.items()},
                "claims": [asdict(c) for c in self.claims], "attrs": self.attrs}
        payload["meta"] = np.asarray(json.dumps(meta, default=_plain))
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.savez_compressed(handle, **payload)

    @classmethod
    def load(cls, path: str | Path) -> "Result":
        """Read a file written by :meth:`save` (as this class: a subclass gets its methods back)."""
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("format") != FORMAT:
                raise ValueError(f"{path}: not a saved analysis result of this version "
                                 f"({meta.get('format')!r}, expected {FORMAT!r}); rebuild it")
            arrays = {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith("array/")}
            tables = {name: _frame_from(data, f"table/{name}", meta["columns"][name]) for name in meta["tables"]}
        claims = [Claim(**{k: c[k] for k in COLUMNS}) for c in meta["claims"]]
        return cls(tables=tables, arrays=arrays, claims=claims, attrs=meta["attrs"])


def _frame_arrays(prefix: str, frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """A DataFrame as plain arrays: numbers and booleans as they are; anything else as unicode
    with a mask of its missing values (no pickling)."""
    out = {}
    for i, column in enumerate(frame.columns):
        values = frame[column]
        key = f"{prefix}/{i}"
        if pd.api.types.is_bool_dtype(values) or pd.api.types.is_numeric_dtype(values):
            out[key] = values.to_numpy()
        else:
            missing = values.isna().to_numpy()
            out[key] = np.where(missing, "", values.astype(str).to_numpy()).astype(str)
            out[f"{key}.missing"] = missing
    return out


def _frame_from(data, prefix: str, columns: list[str]) -> pd.DataFrame:
    frame = {}
    for i, column in enumerate(columns):
        values = data[f"{prefix}/{i}"]
        if f"{prefix}/{i}.missing" in data.files:
            values = values.astype(object)
            values[data[f"{prefix}/{i}.missing"]] = np.nan
        frame[column] = values
    return pd.DataFrame(frame, columns=columns)


def _plain(value):
    """JSON for numpy scalars and arrays in attrs."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def read_provenance(path: str | Path) -> dict:
    """The provenance :meth:`Result.save_provenance` wrote."""
    return json.loads(Path(path).read_text())
