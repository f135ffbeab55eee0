"""The head atlas: one profile per head, joined from the per-head tables a run wrote.

Every analysis writes its own per-head table (``layer``, ``head`` 1-based, one row per head)
into its folder, and its module describes what the table adds to the atlas beside the code
that computes it (``ATLAS``: table name -> :class:`~headatlas.heads.HeadColumns`). The rules
declare which result is which table (``result(..., heads="<module>:<table>")``,
workflow/rules/common.smk); :class:`AtlasPlan` turns those declarations into each model's
:class:`HeadTable` list, and :func:`build` reads those tables and nothing else (no store, no
model: nothing is recomputed) into one table per model, ``results/<m>/heads.csv``: one row per
(``weighting``, ``layer``, ``head``), where ``weighting`` is ``attention`` (the folders without
a suffix) or ``norm`` (the ``-norm`` folders, Kobayashi et al.'s norm-weighted maps).

* A column computed under one weighting only (the patterns, gradients, probes: read from
  the attention weights) is empty in the ``norm`` rows; a column that does not depend on
  the weighting (disabling a head, its importance) is repeated in both.
* A declared table the run did not produce leaves its columns out. The column dictionary
  (``heads_columns.csv``: column, unit, weightings, source, paper, reference, meaning,
  status) lists every column written, and every declared table that was missing with the reason.
* Analyses run on several corpora (dependency heads, coreference, patterns, probes) get
  the corpus in their column names (``syntax_gum_relation``, ``pattern_ewt``).

In a notebook::

    >>> import headatlas
    >>> table = headatlas.atlas("results", "minilm")         # doctest: +SKIP
    >>> headatlas.head("minilm", 3, 9, results="results")    # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from headatlas.heads import INDEPENDENT, WEIGHTED, HeadColumns, fill
from headatlas.weightings import weighting_of_suffix

if TYPE_CHECKING:  # pandas is imported where used: the rules import this module at parse time
    import pandas as pd

log = logging.getLogger(__name__)

KEYS = ["weighting", "layer", "head"]
# The atlas page's examples (headatlas.report.atlas_page): per (model, corpus) ``examples`` inputs of
# about 0.6 * ``max_units`` words, at least ``min_units`` where any is, cut to ``max_units``.
PAGE_OPTIONS = {"examples": 2, "max_units": 40, "min_units": 8}
WEIGHTINGS = ("attention", "norm")
MODEL_WILDCARDS = ("model", "task_model")  # the wildcard a result's folder names its model by


def atlas_entry(spec: str) -> HeadColumns:
    """The :class:`~headatlas.heads.HeadColumns` of ``"<dotted module>:<table>"`` (its ATLAS)."""
    module, _, key = spec.partition(":")
    entries = getattr(importlib.import_module(module), "ATLAS", {})
    if key not in entries:
        raise KeyError(f"{module}.ATLAS has no table {key!r} (it has {', '.join(entries) or 'none'})")
    return entries[key]


@dataclass(frozen=True)
class Declaration:
    """A per-head table as the rules declare it: path pattern, atlas entry (``module:table``,
    may hold the pattern's wildcards), the analysis it belongs to, and the other files of its
    folder its entry's reader reads (``companions``)."""

    pattern: str
    spec: str
    analysis: str
    companions: tuple[str, ...] = ()


@dataclass(frozen=True)
class HeadTable:
    """A per-head table a run writes for a model: its path, atlas entry and the path's wildcards."""

    path: str
    spec: str
    analysis: str
    wildcards: dict = field(default_factory=dict, hash=False)
    companions: tuple[str, ...] = ()

    @property
    def columns(self) -> HeadColumns:
        return atlas_entry(self.spec)

    @property
    def corpus(self) -> str:
        return self.wildcards.get("corpus", "")

    @property
    def weighting(self) -> str:
        return weighting_of_suffix(self.wildcards.get("weighting", ""))

    def companion_paths(self) -> list[str]:
        """The other files of its folder its reader reads (e.g. Table 1 beside the syntax heads)."""
        return [str(Path(self.path).with_name(name)) for name in self.companions]


def hint(declaration: Declaration, key: str) -> str:
    """Where a declared table would be, below ``results/<m>/``: e.g.
    ``<corpus>/syntax{,-norm}/heads.csv``."""
    folders = declaration.pattern.split("/")
    at = next(i for i, part in enumerate(folders) if part.strip("{}") in MODEL_WILDCARDS)
    rest = "/".join(folders[at + 1:])
    rest = rest.replace("{weighting}", "{,-norm}").replace("{corpus}", "<corpus>")
    spec_key = declaration.spec.partition(":")[2]
    if spec_key.startswith("{"):  # a pattern over several tables, e.g. surface/{analysis}.csv
        rest = rest.replace(spec_key, key)
    return rest


def expand(declaration: Declaration) -> list[tuple[str, HeadColumns, str]]:
    """(key, entry, file name) of every table a declaration covers: one, or every table of its
    module's ATLAS when the key is a wildcard (``surface:{analysis}``)."""
    module, _, key = declaration.spec.partition(":")
    if key.startswith("{"):
        entries = getattr(importlib.import_module(module), "ATLAS")
        keys = list(entries)
    else:
        keys = [key]
    name = Path(declaration.pattern).name
    return [(k, atlas_entry(f"{module}:{k}"), name.replace(key, k) if key.startswith("{") else name)
            for k in keys]


def absent(declared: Iterable[Declaration], present: Iterable[HeadTable]) -> list[dict]:
    """The declared tables a model's run does not write, in the order of their ``rank``, for
    the column dictionary: the entry, where the table would be, its file and analysis."""
    titles = {table.columns.title for table in present}
    rows = {}
    for declaration in declared:
        for key, entry, name in expand(declaration):
            if entry.title in titles or entry.title in rows or not entry.listed_when_absent:
                continue
            rows[entry.title] = {"spec": f"{declaration.spec.partition(':')[0]}:{key}",
                                 "hint": hint(declaration, key), "file": name,
                                 "analysis": declaration.analysis, "rank": entry.rank}
    return sorted(rows.values(), key=lambda row: row["rank"])


class AtlasPlan:
    """What the atlas rules read and write, from the declarations of the other rules, worked out
    when the DAG is built (the rules files declare their results after this one is read).

    ``plan`` is the workflow's :class:`headatlas.pipeline.plan.Plan`; ``declared()`` the per-head
    tables the rules declare (:class:`Declaration`); ``planned(model)`` the ones the run writes
    for a model (:class:`HeadTable`), and ``planned_paths()`` every final output the run plans;
    ``map_shards(model, corpus)`` the workflow's helper of that name (the store's shards, or in
    fused mode the exemplars').
    """

    def __init__(self, plan, models: Iterable[str], corpora: Iterable[str],
                 declared: Callable[[], list[Declaration]], planned: Callable[[str], list[HeadTable]],
                 planned_paths: Callable[[], list[str]], map_shards: Callable[[str, str], list[str]]):
        self.plan, self.declared, self.planned, self.planned_paths = plan, declared, planned, planned_paths
        self.models_configured, self.corpora, self.map_shards = list(models), list(corpora), map_shards
        task = plan.importance.task_model if plan.importance else None
        # the task model of `importance` has per-head tables under results/<task>/ even when it
        # is not a configured model
        self.task_model = task if task and task not in self.models_configured else None
        self.candidates = self.models_configured + ([self.task_model] if self.task_model else [])

    def tables(self, model: str) -> list[HeadTable]:
        return self.planned(model)

    def inputs(self, model: str) -> list[str]:
        """The files ``model``'s heads.csv is joined from: its tables and their companions."""
        return list(dict.fromkeys(f for t in self.tables(model) for f in [t.path, *t.companion_paths()]))

    def modules(self) -> list[str]:
        """Every module the atlas reads an entry from (its rule's code inputs; a reader named
        in an entry counts through the rerun tool, which follows modules named in strings)."""
        return list(dict.fromkeys(d.spec.partition(":")[0] for d in self.declared()))

    def models(self) -> list[str]:
        """The models with at least one per-head table (each gets a heads.csv)."""
        return [m for m in self.candidates if self.plan.asks(m, "atlas") and self.tables(m)]

    def stores(self) -> dict[str, dict[str, list[str]]]:
        """model -> corpus -> shards, for the page's examples: the stores kept after the run
        (`extraction.keep_stores`; in fused mode the exemplars) of corpora some planned
        analysis of the model reads."""
        planned, results = self.planned_paths(), self.plan.results
        return {m: {c: self.map_shards(m, c) for c in self.corpora if self.plan.runs_on(m, c)
                    and any(p.startswith(f"{results}/{m}/{c}/") for p in planned)}
                for m in self.models() if self.plan.keeps_maps(m)}

    def store_files(self) -> list[str]:
        return [path for corpora in self.stores().values() for shards in corpora.values()
                for path in shards]

    def asked(self, model: str) -> list[str]:
        """The models whose atlas is asked with ``model``'s outputs: itself, and the task model
        of the importance with the model it is fine-tuned from (as its importance is)."""
        models = [model]
        if self.task_model and model == (self.plan.ablation.base if self.plan.ablation else None):
            models.append(self.task_model)
        chosen = self.models()
        return [m for m in models if m in chosen]


@dataclass
class Atlas:
    """The joined table, its column dictionary, and what was left out (one sentence each)."""

    heads: pd.DataFrame
    columns: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def _read(table: HeadTable) -> pd.DataFrame:
    import pandas as pd

    entry = table.columns
    if entry.reader:
        module, _, function = entry.reader.partition(":")
        frame = getattr(importlib.import_module(module), function)(Path(table.path))
    else:
        frame = pd.read_csv(table.path)
    missing = {"layer", "head"} - set(frame.columns)
    if missing:
        raise ValueError(f"{table.path}: not a per-head table (no {', '.join(sorted(missing))} column)")
    if frame.duplicated(["layer", "head"]).any():
        raise ValueError(f"{table.path}: more than one row per head")
    return frame


def _where(path: str, results: str | Path) -> str:
    try:
        return Path(path).relative_to(results).as_posix()
    except ValueError:
        return str(path)


def build(tables: Iterable[HeadTable], results: str | Path, model: str,
          declared: Iterable[Declaration] = ()) -> Atlas:
    """Join ``model``'s per-head tables into one table.

    Returns the :class:`Atlas`: ``heads`` has ``weighting``, ``layer``, ``head``, then the
    columns of every table, in the order of their entries' ``rank``; ``columns`` is its
    dictionary, with a row for every ``declared`` table the run did not write
    (:func:`absent`). Raises ValueError for a table that is not one row per head.
    """
    import pandas as pd

    found = sorted(tables, key=lambda t: (t.columns.rank, t.corpus, t.weighting))
    weightings = [w for w in WEIGHTINGS if any(
        w == t.weighting for t in found if t.columns.weighting == WEIGHTED)] or ["attention"]
    frame: pd.DataFrame | None = None
    dictionary: dict[str, dict] = {}
    for table in found:
        entry, part = table.columns, _read(table)
        names = {c.source: entry.column_name(c, **table.wildcards) for c in entry.columns
                 if c.source in part.columns}
        part = part[["layer", "head", *names]].rename(columns=names)
        rows = weightings if entry.weighting == INDEPENDENT else [table.weighting]
        part = pd.concat([part.assign(weighting=w) for w in rows], ignore_index=True)
        frame = part if frame is None else _merge(frame, part)
        for column in entry.columns:
            if column.source not in names:
                continue
            name = names[column.source]
            item = dictionary.setdefault(name, {
                "column": name, "unit": column.unit, "weightings": set(), "source": [],
                "paper": entry.paper, "reference": column.reference,
                "meaning": fill(column.meaning, table.wildcards)
                + (f" ({table.corpus})" if table.corpus and not entry.per_corpus else ""),
                "status": "present"})
            item["weightings"].update(rows)
            item["source"].append(f"{_where(table.path, results)}:{column.source}")
    if frame is None:
        raise ValueError(f"no per-head table of {model} under {results}")
    frame = frame.sort_values(["weighting", "layer", "head"],
                              key=lambda s: s.map({w: i for i, w in enumerate(WEIGHTINGS)})
                              if s.name == "weighting" else s).reset_index(drop=True)
    frame = frame[KEYS + [c for c in dictionary if c in frame.columns]]
    columns = pd.DataFrame([{**e, "weightings": ", ".join(w for w in WEIGHTINGS if w in e["weightings"]),
                             "source": "; ".join(e["source"])} for e in dictionary.values()])
    notes = []
    for row in absent(declared, found):
        entry = atlas_entry(row["spec"])
        notes.append(f"left out: {entry.title} ({entry.paper}): no {row['hint']} in this run")
        named = [c.name.format_map(_Placeholders()) for c in entry.columns[:3]]
        columns = pd.concat([columns, pd.DataFrame([{
            "column": ", ".join(named) + (", ..." if len(entry.columns) > 3 else ""),
            "unit": "", "weightings": "", "source": row["hint"], "paper": entry.paper,
            "reference": "", "meaning": "",
            "status": f"absent: the run wrote no {row['file']} of the {row['analysis']} analysis for {model}"}])],
            ignore_index=True)
    for note in notes:
        log.info("%s: %s", model, note)
    return Atlas(frame, columns, notes)


class _Placeholders(dict):
    """A column name's wildcards shown as ``<corpus>`` in the dictionary's absent rows."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def _merge(left: pd.DataFrame, right: pd.DataFrame) -> pd.DataFrame:
    """Outer join on the keys; a column already present is filled in where it was empty (the
    same column from the other weighting's table)."""
    shared = [c for c in right.columns if c in left.columns and c not in KEYS]
    if not shared:
        return left.merge(right, on=KEYS, how="outer")
    merged = left.merge(right, on=KEYS, how="outer", suffixes=("", "__new"))
    for column in shared:
        merged[column] = merged[column].combine_first(merged.pop(f"{column}__new"))
    return merged


def write(atlas: Atlas, heads_path: str | Path, columns_path: str | Path) -> None:
    """Write ``heads.csv`` and its dictionary atomically."""
    from headatlas.io import write_table

    write_table(atlas.heads, heads_path, float_format="%.6g")
    write_table(atlas.columns, columns_path)


# --- notebook entry points -----------------------------------------------------------------

def load(results: str | Path = "results", model: str = "minilm") -> pd.DataFrame:
    """``results/<model>/heads.csv`` as a DataFrame (``headatlas.atlas``)."""
    import pandas as pd

    path = Path(results) / model / "heads.csv"
    if not path.exists():
        root = Path(results) / model
        why = "no results of that model" if not root.is_dir() else "the atlas rule has not run"
        raise FileNotFoundError(f"{path}: no head atlas ({why}); build it with "
                                f"`snakemake --cores all {path}`")
    return pd.read_csv(path)


def head_profile(model: str, layer: int, head: int, results: str | Path = "results",
                 weighting: str | None = None) -> pd.DataFrame | pd.Series:
    """One head's profile (``headatlas.head``): a Series of its columns under ``weighting``, or,
    when ``weighting`` is None, a frame with one column per weighting (rows: the atlas's
    columns). ``layer`` and ``head`` are 1-based, as in the papers ("3-9")."""
    table = load(results, model)
    rows = table[(table["layer"] == layer) & (table["head"] == head)]
    if rows.empty:
        raise KeyError(f"{model} has no head {layer}-{head} (layers 1-{table['layer'].max()}, "
                       f"heads 1-{table['head'].max()})")
    profile = rows.set_index("weighting").drop(columns=["layer", "head"]).T
    profile.columns.name = f"{model} {layer}-{head}"
    if weighting is not None:
        return profile[weighting].rename(f"{model} {layer}-{head} ({weighting})")
    return profile
