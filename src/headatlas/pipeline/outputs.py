"""Writing an analysis's result to a rule's outputs, by their names (the job side of the contract).

The one convention every rule of a store analysis follows (``workflow/scripts/analysis.py``,
and the scripts of analyses that need more than it does):

* an output named like one of the result's tables gets that table (CSV);
* ``table``: the result's table (:attr:`~headatlas.analyses.result.Result.table`);
* ``claims``: its claims (``paper_claims.csv``);
* ``result``: the whole result (:meth:`~headatlas.analyses.result.Result.save`, ``.npz``), for
  rules that read it later (its caption travels with it);
* ``provenance``: its provenance alone (JSON), for rules that read one of its tables and caption
  what they draw from it;
* ``figure``: drawn by ``headatlas.plots.<module>.plot_<analysis>(*tables, path, caption)``,
  the result's tables in order (a figure is the list of its files: headatlas.plots.files).
"""

from __future__ import annotations

import importlib
from typing import Mapping

from headatlas.analyses.result import Result
from headatlas.io import write_table

FLOAT_FORMAT = "%.6g"


def write_outputs(result: Result, outputs: Mapping[str, object], module: str, analysis: str,
                  float_formats: Mapping[str, str] | None = None) -> None:
    """Write ``result`` to every named output (see the module docstring); an output name that
    is none of these is an error naming the result's tables. ``float_formats``: output name ->
    how its floats are printed (default :data:`FLOAT_FORMAT`)."""
    formats = dict(float_formats or {})
    for name, path in outputs.items():
        float_format = formats.get(name, FLOAT_FORMAT)
        if name == "figure":
            plots = importlib.import_module(f"headatlas.plots.{module}")
            getattr(plots, f"plot_{analysis}")(*result.tables.values(), path, result.caption)
        elif name == "claims":
            write_table(result.claims_table(), path, float_format=float_format)
        elif name == "result":
            result.save(path)
        elif name == "provenance":
            result.save_provenance(path)
        elif name == "table":
            write_table(result.table, path, float_format=float_format)
        elif name in result.tables:
            write_table(result.tables[name], path, float_format=float_format)
        else:
            raise KeyError(f"output {name!r} of {analysis}: the result has the tables "
                           f"{', '.join(result.tables) or 'none'} (and claims, result, provenance, figure)")
