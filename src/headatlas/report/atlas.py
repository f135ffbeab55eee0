"""The head atlas: one profile per head, joined from the per-head tables a run wrote.

Every analysis writes its own per-head table (``layer``, ``head`` 1-based, one row per
head) into its folder: ``results/<m>/<c>/surface/entropy.csv``,
``.../headtypes/features.csv``, ``results/<task>/importance/heads.csv``, ... This module
reads those tables and nothing else (no store, no model: nothing is recomputed) and joins
them into one table per model, ``results/<m>/heads.csv``: one row per (``weighting``,
``layer``, ``head``), where ``weighting`` is ``attention`` (the folders without a suffix)
or ``norm`` (the ``-norm`` folders, Kobayashi et al.'s norm-weighted maps).

* A column computed under one weighting only (the patterns, gradients, probes: read from
  the attention weights) is empty in the ``norm`` rows; a column that does not depend on
  the weighting (disabling a head, its importance) is repeated in both.
* An analysis the run did not produce leaves its columns out. The column dictionary
  (``heads_columns.csv``: column, unit, weightings, source, paper, reference, meaning,
  status) lists every column written, and every source that was missing with the reason.
* Analyses run on several corpora (dependency heads, coreference, patterns, probes) get
  the corpus in their column names (``syntax_gum_relation``, ``pattern_ewt``).

The sources are :data:`SOURCES`; :func:`planned_tables` picks, from the paths a run
plans, those this module reads (the rule's inputs), :func:`build` joins them.

In a notebook::

    >>> import headatlas
    >>> table = headatlas.atlas("results", "minilm")         # doctest: +SKIP
    >>> headatlas.head("minilm", 3, 9, results="results")    # doctest: +SKIP
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where used: the rules import this module at parse time
    import pandas as pd

log = logging.getLogger(__name__)

KEYS = ["weighting", "layer", "head"]
# The atlas page's examples (headatlas.report.atlas_page): per (model, corpus) ``examples`` inputs of
# about 0.6 * ``max_units`` words, at least ``min_units`` where any is, cut to ``max_units``.
PAGE_OPTIONS = {"examples": 2, "max_units": 40, "min_units": 8}
WEIGHTINGS = ("attention", "norm")
SUFFIX = {"": "attention", "-norm": "norm"}
# How a source's values relate to the weightings.
WEIGHTED = "weighted"        # one table per weighting (surface/ and surface-norm/)
ATTENTION_ONLY = "attention"  # read from the attention weights only: empty in the norm rows
INDEPENDENT = "independent"   # a property of the head (an intervention): the same in both rows

CLARK = "Clark et al. 2019"
GUAN = "Guan et al. 2020"
KOVALEVA = "Kovaleva et al. 2019"
MICHEL = "Michel et al. 2019"
KOBAYASHI = "Kobayashi et al. 2020"

PATTERNS = ("vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous")
GUAN_FEATURES = ("cls", "sep", "comma", "period", "self") + tuple(f"win{i:02d}" for i in range(1, 17))


@dataclass(frozen=True)
class Column:
    """One column of the atlas: its name (``{corpus}`` filled in for per-corpus sources),
    unit, meaning, and the paper's number where the papers give one (short text)."""

    name: str
    source: str            # the column of the source table it comes from
    unit: str
    meaning: str
    reference: str = ""


@dataclass(frozen=True)
class Source:
    """One per-head table a run can write.

    ``folder`` is a regular expression for the table's folder relative to ``results/<m>/``
    (named groups ``corpus`` and ``suffix``); ``file`` its name; ``witness`` the file of the
    same folder whose presence among the planned outputs means the table is written (a rule
    output beside a final target); ``per_corpus`` puts the corpus in the column names.
    ``reader`` turns the table (and its folder) into a per-head frame with the columns'
    ``source`` names, for tables not already one row per head.
    """

    name: str
    analysis: str
    folder: str
    file: str
    paper: str
    columns: tuple[Column, ...]
    weighting: str = WEIGHTED
    witness: str | None = None
    per_corpus: bool = False
    reader: Callable[[Path], pd.DataFrame] | None = None
    companions: tuple[str, ...] = ()  # other files of the folder the reader reads

    def is_companion(self, relative: str) -> bool:
        return any(re.fullmatch(f"(?:{self.folder})/{re.escape(name)}", relative)
                   for name in self.companions)

    def match(self, relative: str) -> re.Match | None:
        """The folder match when ``relative`` (a path under ``results/<m>/``) is this source's
        table or its witness."""
        for name in {self.file, self.witness or self.file}:
            found = re.fullmatch(f"(?:{self.folder})/{re.escape(name)}", relative)
            if found:
                return found
        return None

    def column_name(self, column: Column, corpus: str) -> str:
        return column.name.format(corpus=corpus)

    def folder_hint(self) -> str:
        """Where the table would be, for a note: e.g. ``<treebank>/syntax{,-norm}/heads.csv``."""
        folder = re.sub(r"\(\?P<corpus>\[\^/\]\+\)", "<corpus>", self.folder)
        folder = folder.replace("(?P<suffix>-norm)?", "{,-norm}")
        return f"{folder}/{self.file}"


def _syntax(path: Path) -> pd.DataFrame:
    """Per head: accuracy on every dependency (``all``, dep->head), and the relation of Table 1
    on which the head beats that relation's best offset baseline by the most (either
    direction), with its accuracy, baseline and margin. Reads heads.csv, offsets.csv and
    table1.csv of one folder (Table 1's relations are the run's own choice of rows)."""
    import pandas as pd

    heads = pd.read_csv(path)
    offsets = pd.read_csv(path.with_name("offsets.csv"))
    table1 = pd.read_csv(path.with_name("table1.csv"))
    rows = [r for r in table1["relation"].dropna().unique() if not str(r).startswith("all")]
    base = offsets.sort_values("accuracy", ascending=False).drop_duplicates("relation")
    base = base.set_index("relation")[["offset", "accuracy"]].rename(
        columns={"offset": "baseline_offset", "accuracy": "baseline"})
    all_rows = heads[(heads["relation"] == "all") & (heads["direction"] == "dep->head")]
    out = all_rows.set_index(["layer", "head"])[["accuracy"]].rename(columns={"accuracy": "all"})
    cand = heads[heads["relation"].isin(rows)].join(base, on="relation")
    cand = cand.assign(margin=cand["accuracy"] - cand["baseline"]).dropna(subset=["margin"])
    if len(cand):
        best = cand.sort_values(["margin", "accuracy"], ascending=False).drop_duplicates(["layer", "head"])
        paper = table1.dropna(subset=["relation"]).set_index("relation")
        best = best.assign(paper=[_paper_row(paper, r) for r in best["relation"]])
        best = best.set_index(["layer", "head"])[
            ["relation", "direction", "accuracy", "baseline", "baseline_offset", "margin", "n", "paper"]]
        out = out.join(best, how="outer")
    return out.reset_index()


def _paper_row(table1: pd.DataFrame, relation: str) -> str:
    """Table 1's paper row for ``relation`` (e.g. 'det: 8-11 94.3% vs 51.7% (+1), BERT-base, SD')."""
    import pandas as pd

    if relation not in table1.index:
        return ""
    row = table1.loc[relation]
    if isinstance(row, pd.DataFrame):
        row = row.iloc[0]
    if pd.isna(row.get("paper_acc")):
        return ""
    offset = row.get("paper_baseline_offset")
    offset = f" ({int(offset):+d})" if pd.notna(offset) else ""
    return (f"{row['paper_relation']}: head {row['paper_head']} {row['paper_acc']:.1f}% vs baseline "
            f"{row['paper_baseline_acc']:.1f}%{offset} (BERT-base, PTB/SD)")


def _coref(path: Path) -> pd.DataFrame:
    """Per head: accuracy (%) on the split the table reports last (the evaluation split), and
    by mention type where the table has it."""
    import pandas as pd

    table = pd.read_csv(path)
    scopes = [c[4:] for c in table.columns if re.fullmatch(r"acc_[^_]+", c)]
    if not scopes:
        raise ValueError(f"{path}: no acc_<split> column")
    scope = scopes[-1]
    out = table[["layer", "head"]].assign(accuracy=table[f"acc_{scope}"], split=scope)
    for kind in ("pronoun", "proper", "nominal"):
        column = next((c for c in table.columns if c.startswith("acc_") and c.endswith(f"_{kind}")), None)
        if column:
            out[kind] = table[column]
    return out


def _probes(path: Path) -> pd.DataFrame:
    """Per head: the attn-only probe's weight per direction, averaged over seeds."""
    import pandas as pd

    table = pd.read_csv(path)
    wide = table.groupby(["layer", "head", "direction"])["weight"].mean().unstack("direction")
    return wide.rename(columns={"dep->head": "w_dep", "head->dep": "w_head"}).reset_index()


def _changes(path: Path) -> pd.DataFrame:
    """Per head: its type in the model before fine-tuning, and whether it changed."""
    import pandas as pd

    table = pd.read_csv(path)
    return table.rename(columns={"before": "type_before"})


_SYNTAX_COLS = (
    Column("syntax_{corpus}_all", "all", "fraction",
           "share of all words whose most-attended other word is their syntactic head (dep->head; "
           "root words count as wrong, the paper's 'all' row)", "best head 7-6: 34.5% (BERT-base, PTB/SD)"),
    Column("syntax_{corpus}_relation", "relation", "UD relation",
           "the Table 1 relation on which the head beats that relation's best fixed-offset baseline "
           "by the most"),
    Column("syntax_{corpus}_direction", "direction", "dep->head | head->dep",
           "which way the head points for that relation"),
    Column("syntax_{corpus}_accuracy", "accuracy", "fraction", "the head's accuracy on that relation"),
    Column("syntax_{corpus}_baseline", "baseline", "fraction",
           "the relation's best fixed-offset baseline (offsets -3..+2)"),
    Column("syntax_{corpus}_baseline_offset", "baseline_offset", "tokens", "that baseline's offset"),
    Column("syntax_{corpus}_margin", "margin", "fraction", "accuracy minus baseline"),
    Column("syntax_{corpus}_n", "n", "dependencies", "instances of the relation scored"),
    Column("syntax_{corpus}_paper", "paper", "text",
           "the paper's Table 1 row for that relation (its best head, accuracy and baseline)"),
)

SOURCES: tuple[Source, ...] = (
    Source("relative position", "surface", r"(?P<corpus>[^/]+)/surface(?P<suffix>-norm)?",
           "relative_position.csv", f"{CLARK} §3.1", (
               Column("prev", "prev", "share", "mean attention to the previous token",
                      "4 heads of BERT-base put >50% here (layers 2, 4, 7, 8)"),
               Column("self", "self", "share", "mean attention to the token itself"),
               Column("next", "next", "share", "mean attention to the next token",
                      "5 heads of BERT-base put >50% here (layers 1, 2, 2, 3, 6)"),
           )),
    Source("special tokens", "surface", r"(?P<corpus>[^/]+)/surface(?P<suffix>-norm)?",
           "special_tokens.csv", f"{CLARK} §3.1 (norm rows: {KOBAYASHI} §4)", (
               Column("cls", "cls", "share", "mean attention to [CLS]",
                      "early layers favour [CLS] (BERT-base)"),
               Column("sep", "sep", "share", "mean attention to [SEP]",
                      ">50% in layers 6-10 of BERT-base; collapses under the norm weighting (Kobayashi)"),
               Column("punct", "punct", "share", "mean attention to '.' and ','",
                      "deep layers favour periods and commas (BERT-base)"),
               Column("sep_from_sep", "sep_from_sep", "share", "attention of [SEP] tokens to [SEP]",
                      ">90% for heads that process [SEP] (Fig. 2)"),
               Column("sep_from_other", "sep_from_other", "share", "attention of other tokens to [SEP]"),
           )),
    Source("entropy", "surface", r"(?P<corpus>[^/]+)/surface(?P<suffix>-norm)?",
           "entropy.csv", f"{CLARK} §3.3", (
               Column("entropy", "entropy", "nats", "mean entropy of the attention rows",
                      "early heads broad: at most ~10% on any single word"),
               Column("uniform_entropy", "uniform_entropy", "nats", "the same for uniform attention"),
               Column("cls_entropy", "cls_entropy", "nats", "entropy of the [CLS] row",
                      "last layer 3.89 nats (BERT-base)"),
               Column("max_weight", "max_weight", "share", "mean largest weight of a row"),
           )),
    Source("MDS coordinates", "clustering", r"(?P<corpus>[^/]+)/clustering(?P<suffix>-norm)?",
           "coordinates.csv", f"{CLARK} §6", (
               Column("mds_x", "x", "JS distance", "2-D metric MDS of the Jensen-Shannon distances "
                      "between heads, first axis", "heads of one layer sit close together"),
               Column("mds_y", "y", "JS distance", "second axis"),
               Column("behaviour", "behaviour", "label", "Clark's Fig. 6 colour (broad, next, "
                      "previous, [CLS], [SEP], punctuation, other)"),
           ), witness="mds.svg"),
    Source("head type", "headtypes", r"(?P<corpus>[^/]+)/headtypes(?P<suffix>-norm)?",
           "features.csv", f"{GUAN}", (
               Column("type", "type", "label", "Guan et al.'s type of the head (k-means, k = 4)",
                      "BERT-large: dense 26.0%, diagonal 25.6%, dense&vertical 34.1%, vertical 13.3%"),
               Column("cluster", "cluster", "id", "its k-means cluster"),
           ) + tuple(Column(f"guan_{f}", f, "share", f"distance feature '{f}' (21-d, Guan et al.)")
                     for f in GUAN_FEATURES)),
    Source("type stability", "headtypes", r"(?P<corpus>[^/]+)/headtypes(?P<suffix>-norm)?",
           "stability_heads.csv", f"{GUAN} (von Luxburg 2010)", (
               Column("type_fits", "fits_in_type_heads", "fits of 10",
                      "fits on half of the heads that gave the head its type", "95.98% of heads stable"),
           ), witness="stability.csv"),
    Source("patterns", "patterns", r"(?P<corpus>[^/]+)/patterns", "heads.csv", f"{KOVALEVA} §4", (
        Column("pattern_{corpus}", "dominant", "label", "the pattern most of its maps show",
               "about a third of BERT's maps are vertical"),
    ) + tuple(Column(f"pattern_{{corpus}}_{p}", p, "share of inputs", f"share of its maps classified {p}")
              for p in PATTERNS), weighting=ATTENTION_ONLY, per_corpus=True),
    Source("dependency heads", "syntax", r"(?P<corpus>[^/]+)/syntax(?P<suffix>-norm)?", "heads.csv",
           f"{CLARK} §4.2, Table 1", _SYNTAX_COLS, per_corpus=True, reader=_syntax,
           companions=("offsets.csv", "table1.csv")),
    Source("coreference", "coref", r"(?P<corpus>[^/]+)/coref(?P<suffix>-norm)?", "head_accuracy.csv",
           f"{CLARK} §4.3, Table 2", (
               Column("coref_{corpus}", "accuracy", "%",
                      "share of mentions (evaluation split) whose head word attends most to an "
                      "antecedent's head word", "best head 5-4: 65% (BERT-base, CoNLL-2012)"),
               Column("coref_{corpus}_split", "split", "split", "the split that accuracy is on"),
           ) + tuple(Column(f"coref_{{corpus}}_{kind}", kind, "%", f"... {kind} mentions only",
                            reference) for kind, reference in (
               ("pronoun", "head 5-4: 64%"), ("proper", "head 5-4: 73%"), ("nominal", "head 5-4: 58%"))),
           per_corpus=True, reader=_coref),
    Source("gradients", "gradients", r"(?P<corpus>[^/]+)/gradients", "heads.csv", f"{CLARK} §3.2", (
        Column("grad_sep", "sep", "|dL/dα|", "gradient magnitude of the loss w.r.t. attention to [SEP]",
               "very small from layer 5 on (BERT-base)"),
        Column("grad_punct", "punct", "|dL/dα|", "... to '.' and ','"),
        Column("grad_cls", "cls", "|dL/dα|", "... to [CLS]"),
        Column("grad_other", "other", "|dL/dα|", "... to other tokens"),
    ), weighting=ATTENTION_ONLY, witness="gradients.svg"),
    Source("probe weights", "probes", r"(?P<corpus>[^/]+)/probes", "attn_only_weights.csv",
           f"{CLARK} §5", (
               Column("probe_{corpus}_dep", "w_dep", "weight", "attention-only probe's weight on the head's "
                      "dependent->head map"),
               Column("probe_{corpus}_head", "w_head", "weight", "... on its head->dependent map "
                      "(mean over seeds)"),
           ), weighting=ATTENTION_ONLY, per_corpus=True, reader=_probes),
    Source("importance", "importance", r"importance", "heads.csv", f"{MICHEL}; {KOVALEVA} §6", (
        Column("importance", "importance", "normalised per layer",
               "Michel et al.'s I_h = E|dL/dξ_h| on the task's dev data, l2-normalised per layer"),
        Column("importance_rank", "rank", "rank", "rank of I_h over all heads (1 = least important)"),
        Column("disable_score", "score", "task score", "the task score with this head disabled"),
        Column("disable_delta", "delta", "points", "change of the task score when this head alone "
               "is disabled", "Kovaleva: disabling single heads can raise the score"),
        Column("disable_ci_low", "ci_low", "points", "paired bootstrap 95% interval, low"),
        Column("disable_ci_high", "ci_high", "points", "paired bootstrap 95% interval, high"),
        Column("disable_significant", "significant", "bool", "the interval excludes 0"),
    ), weighting=INDEPENDENT),
)


def _changes_source(base: str) -> Source:
    """The head-type comparison with model ``base`` (``changes_from_<base>.csv``)."""
    return Source(f"type before fine-tuning ({base})", "headtypes",
                  r"(?P<corpus>[^/]+)/headtypes(?P<suffix>-norm)?", f"changes_from_{base}.csv",
                  GUAN, (
                      Column(f"type_in_{base}", "type_before", "label", f"the head's type in {base}"),
                      Column(f"type_changed_from_{base}", "changed", "bool",
                             f"whether its type differs from {base}'s"),
                  ), reader=_changes)


def _sources_for(relative: str) -> list[tuple[Source, re.Match]]:
    found = []
    changes = re.fullmatch(r"(?:[^/]+)/headtypes(?:-norm)?/changes_from_(?P<base>.+)\.csv", relative)
    candidates = list(SOURCES)
    if changes and not changes.group("base").endswith("_by_layer"):
        candidates.append(_changes_source(changes.group("base")))
    for source in candidates:
        match = source.match(relative)
        if match:
            found.append((source, match))
    return found


def _relative(path: str | Path, results: str | Path, model: str) -> str | None:
    try:
        return Path(path).relative_to(Path(results) / model).as_posix()
    except ValueError:
        return None


def planned_tables(paths: Iterable[str], results: str | Path, model: str) -> list[str]:
    """The per-head tables of ``model`` that the run writes, given the paths it plans (its final
    targets): each table named, or written beside a planned file (its witness), with the files
    its reader also reads (its companions)."""
    tables = []
    for path in paths:
        relative = _relative(path, results, model)
        if relative is None:
            continue
        for source, match in _sources_for(relative):
            folder = Path(path).parent
            tables += [str(folder / name) for name in (source.file, *source.companions)]
    return list(dict.fromkeys(tables))


class AtlasPlan:
    """What the atlas rules read and write, worked out from the other rules' final targets when
    the DAG is built (the rules files register their targets after this one is read).

    ``final_targets`` is the workflow's ``FINAL_TARGETS`` (analysis -> model -> paths), ``plan``
    its :class:`headatlas.pipeline.config.Plan`, ``runs_here(model, path)`` and ``store_shards(model,
    corpus)`` the workflow's helpers of the same names.
    """

    def __init__(self, final_targets: dict, plan, models: Iterable[str], corpora: Iterable[str],
                 runs_here: Callable[[str, str], bool], store_shards: Callable[[str, str], list[str]]):
        self.final_targets, self.plan, self.runs_here = final_targets, plan, runs_here
        self.models_configured, self.corpora, self.store_shards = list(models), list(corpora), store_shards
        task = (plan.importance or {}).get("task_model")
        # the task model of `importance` has per-head tables under results/<task>/ even when it
        # is not a configured model
        self.task_model = task if task and task not in self.models_configured else None
        self.candidates = self.models_configured + ([self.task_model] if self.task_model else [])

    def planned_paths(self) -> list[str]:
        """The final outputs of every analysis but the atlas, and the tables the task model's
        importance reads (written although its `analyses` may not ask for them)."""
        paths = [path for model in self.models_configured
                 for analysis, targets in self.final_targets.items()
                 if analysis != "atlas" and self.plan.asks(model, analysis)
                 for path in targets(model) if self.runs_here(model, path)]
        importance = self.plan.importance or {}
        paths += [importance[key] for key in ("patterns", "types") if importance.get(key)]
        return list(dict.fromkeys(paths))

    def tables(self, model: str) -> list[str]:
        """The per-head tables of ``model`` this run writes: the inputs of its heads.csv."""
        return planned_tables(self.planned_paths(), self.plan.results, model)

    def models(self) -> list[str]:
        """The models with at least one per-head table (each gets a heads.csv)."""
        return [m for m in self.candidates if self.plan.asks(m, "atlas") and self.tables(m)]

    def stores(self) -> dict[str, dict[str, list[str]]]:
        """model -> corpus -> shards, for the page's examples: the stores kept after the run
        (`extraction.keep_stores`) of corpora some planned analysis of the model reads."""
        planned = self.planned_paths()
        results = self.plan.results
        return {m: {c: self.store_shards(m, c) for c in self.corpora if self.plan.runs_on(m, c)
                    and any(p.startswith(f"{results}/{m}/{c}/") for p in planned)}
                for m in self.models() if m in self.plan.kept_stores}

    def store_files(self) -> list[str]:
        return [path for corpora in self.stores().values() for shards in corpora.values()
                for path in shards]

    def targets(self, model: str) -> list[str]:
        """``FINAL_TARGETS["atlas"]``: ``model``'s heads.csv and dictionary (and the task model's,
        asked with the model it is fine-tuned from, as its importance is), and the page."""
        models = [model]
        if self.task_model and model == (self.plan.ablation or {}).get("base"):
            models.append(self.task_model)
        chosen = self.models()
        return [f"{self.plan.results}/{m}/{name}" for m in models if m in chosen
                for name in ("heads.csv", "heads_columns.csv")] + \
            ([f"{self.plan.results}/atlas.html"] if chosen else [])


@dataclass
class Atlas:
    """The joined table, its column dictionary, and what was left out (one sentence each)."""

    heads: pd.DataFrame
    columns: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def _read(source: Source, path: Path) -> pd.DataFrame:
    import pandas as pd

    table = source.reader(path) if source.reader else pd.read_csv(path)
    missing = {"layer", "head"} - set(table.columns)
    if missing:
        raise ValueError(f"{path}: not a per-head table (no {', '.join(sorted(missing))} column)")
    if table.duplicated(["layer", "head"]).any():
        raise ValueError(f"{path}: more than one row per head")
    return table


def build(tables: Iterable[str | Path], results: str | Path, model: str) -> Atlas:
    """Join ``model``'s per-head tables (paths under ``results/<model>/``) into one table.

    Returns the :class:`Atlas`: ``heads`` has ``weighting``, ``layer``, ``head``, then the
    columns of every source found, in :data:`SOURCES` order; ``columns`` is its dictionary.
    Raises ValueError for a path that is no known per-head table or a table that is not one.
    """
    import pandas as pd

    found: list[tuple[Source, str, str, Path]] = []  # source, corpus, weighting, path
    for path in tables:
        path = Path(path)
        relative = _relative(path, results, model)
        if relative and any(s.is_companion(relative) for s in SOURCES):
            continue  # read by its table's reader (e.g. Table 1 beside the syntax heads)
        matches = [(s, m) for s, m in _sources_for(relative or "") if relative and s.file == path.name]
        if not matches:
            raise ValueError(f"{path}: not a per-head table the atlas knows "
                             f"(under {Path(results) / model}/)")
        source, match = matches[0]
        groups = match.groupdict()
        found.append((source, groups.get("corpus") or "", SUFFIX[groups.get("suffix") or ""], path))
    weightings = [w for w in WEIGHTINGS if any(
        w == wt for s, _, wt, _ in found if s.weighting == WEIGHTED)] or ["attention"]
    frame: pd.DataFrame | None = None
    dictionary: dict[str, dict] = {}
    order = {s.name: i for i, s in enumerate(SOURCES)}
    found.sort(key=lambda f: (order.get(f[0].name, order["type stability"] + 0.5), f[1], f[2]))
    for source, corpus, weighting, path in found:
        table = _read(source, path)
        names = {c.source: source.column_name(c, corpus) for c in source.columns if c.source in table.columns}
        part = table[["layer", "head", *names]].rename(columns=names)
        rows = weightings if source.weighting == INDEPENDENT else [weighting]
        part = pd.concat([part.assign(weighting=w) for w in rows], ignore_index=True)
        frame = part if frame is None else _merge(frame, part)
        where = Path(path).relative_to(results).as_posix() if _relative(path, results, model) else str(path)
        for column in source.columns:
            if column.source not in table.columns:
                continue
            name = source.column_name(column, corpus)
            entry = dictionary.setdefault(name, {
                "column": name, "unit": column.unit, "weightings": set(), "source": [],
                "paper": source.paper, "reference": column.reference,
                "meaning": column.meaning + (f" ({corpus})" if corpus and not source.per_corpus else ""),
                "status": "present"})
            entry["weightings"].update(rows)
            entry["source"].append(f"{where}:{column.source}")
    if frame is None:
        raise ValueError(f"no per-head table of {model} under {results}")
    frame = frame.sort_values(["weighting", "layer", "head"],
                              key=lambda s: s.map({w: i for i, w in enumerate(WEIGHTINGS)})
                              if s.name == "weighting" else s).reset_index(drop=True)
    frame = frame[KEYS + [c for c in dictionary if c in frame.columns]]
    columns = pd.DataFrame([{**e, "weightings": ", ".join(w for w in WEIGHTINGS if w in e["weightings"]),
                             "source": "; ".join(e["source"])} for e in dictionary.values()])
    notes = []
    present = {s.name for s, *_ in found}
    for source in SOURCES:
        if source.name in present:
            continue
        note = f"left out: {source.name} ({source.paper}): no {source.folder_hint()} in this run"
        notes.append(note)
        columns = pd.concat([columns, pd.DataFrame([{
            "column": ", ".join(source.column_name(c, "<corpus>") for c in source.columns[:3])
            + (", ..." if len(source.columns) > 3 else ""),
            "unit": "", "weightings": "", "source": source.folder_hint(), "paper": source.paper,
            "reference": "", "meaning": "", "status": f"absent: the run wrote no {source.file} "
                                                      f"of the {source.analysis} analysis for {model}"}])],
            ignore_index=True)
    for note in notes:
        log.info("%s: %s", model, note)
    return Atlas(frame, columns, notes)


def _merge(left: pd.DataFrame, right: pd.DataFrame) -> pd.DataFrame:
    """Outer join on the keys; a column already present is filled in where it was empty (the
    same column from the other weighting's table)."""
    import pandas as pd

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
    """``results/<model>/heads.csv`` as a DataFrame (``headatlas.report.atlas``).

    If the run has not written it yet (an older run), the table is joined from the per-head
    tables found on disk, the same way the pipeline's ``atlas`` rule does.
    """
    import pandas as pd

    path = Path(results) / model / "heads.csv"
    if path.exists():
        return pd.read_csv(path)
    root = Path(results) / model
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no results of model {model!r} (run the pipeline first)")
    tables = planned_tables((str(p) for p in sorted(root.rglob("*")) if p.is_file()), results, model)
    tables = [t for t in tables if Path(t).exists()]
    return build(tables, results, model).heads


def head_profile(model: str, layer: int, head: int, results: str | Path = "results",
                 weighting: str | None = None) -> pd.DataFrame | pd.Series:
    """One head's profile (``headatlas.head``): a Series of its columns under ``weighting``, or,
    when ``weighting`` is None, a frame with one column per weighting (rows: the atlas's
    columns). ``layer`` and ``head`` are 1-based, as in the papers ("3-9")."""
    import pandas as pd

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
