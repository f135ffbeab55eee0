"""The scorecard: every paper claim of every configured model in one table.

Each analysis writes its claims as :class:`~headatlas.claims.Claim` rows to a claims table
under ``<results>/<model>/`` (``paper_claims.csv``, declared with ``claims(...)`` in its rules);
:func:`collect` reads every declared one (whatever analyses exist: a new analysis joins by
declaring its claims table),
:func:`scorecard` puts the models side by side — a row per claim, the paper's
number, then per model our number and the verdict, with the rule that decided
it — :func:`by_weighting` folds each claim's norm-weighted twin into the same row (a
column per model and weighting) and :func:`to_html` renders that for the report. Nothing in
it is typed by hand: every cell comes from a claims file.

A **control** is a model whose encoder is random (``random_init: true``, e.g. ``minilm_random``): its
columns come last and are marked, and a claim that holds on a control is flagged
(:func:`on_noise`): its rule cannot tell a trained model from noise, so holding on a trained one
says little.

Read by the scorecard rule (workflow/rules/scorecard.smk) and the findings page.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from headatlas.claims import COLUMNS, FAILS, HOLDS, NOT_APPLICABLE, VERDICTS, read_claims
from headatlas.weightings import SUFFIXES

CLAIMS_FILE = "paper_claims.csv"
NORM_SUFFIX = SUFFIXES["norm"]  # the folder suffix of the norm weighting
NORM_TAG = " [norm weighting]"
LONG_COLUMNS = ("model", *COLUMNS, "where")
ABSENT = "not run for this model"
COLOURS = {HOLDS: "#d9f2d9", FAILS: "#f8d7d5", NOT_APPLICABLE: "#eeeeee"}
CONTROL = "control: random encoder"
NOISE = "holds on the random control too: this rule cannot tell a trained model from noise"


def is_norm_folder(where: str) -> bool:
    """Whether a claims folder (``wikipedia/surface-norm``) holds norm-weighted results."""
    return any(part.endswith(NORM_SUFFIX) for part in where.split("/"))


def attention_folder(where: str) -> str:
    """The folder of the same analysis on the attention weights (``-norm`` removed)."""
    return "/".join(p[:-len(NORM_SUFFIX)] if p.endswith(NORM_SUFFIX) else p for p in where.split("/"))


def model_of(path, results: str | Path) -> tuple[str, str]:
    """(model, where) of a claims file ``<results>/<model>/<where>/paper_claims.csv``.

    ``where`` is the folder below the model (e.g. ``wikipedia/surface``); it
    tells claims with the same id apart when one model has several files that
    state them (e.g. the same analysis on two corpora or two weightings). The
    model need not be configured: the ablation's task model may be made by the
    workflow itself.
    """
    parts = Path(path).relative_to(Path(results)).parts
    if len(parts) < 2:
        raise ValueError(f"{path}: not a claims file of a model (expected {results}/<model>/.../{CLAIMS_FILE})")
    return parts[0], "/".join(parts[1:-1])


def models_of(long: pd.DataFrame, configured: Sequence[str], controls: Sequence[str] = ()) -> list[str]:
    """The scorecard's model columns: the configured models in config order, then any other model
    that has claims (e.g. a task model the workflow fine-tuned), then the ``controls``."""
    found = list(dict.fromkeys([*configured, *long["model"]]))
    return [m for m in found if m not in controls] + [m for m in found if m in controls]


def on_noise(long: pd.DataFrame, controls: Sequence[str], key: str = "id") -> pd.Series:
    """Per claim (``key``: ``id``, or ``claim_id`` of :func:`with_weighting` to fold the norm twin
    in): the control views that hold it (``"minilm_random attention"``), ``""`` where none does."""
    long = with_weighting(long)
    held = long[long["model"].isin(list(controls)) & (long["verdict"] == HOLDS)]
    views = (held["model"] + " " + held["weighting"]).groupby(held[key], sort=False).agg(", ".join)
    return views.reindex(list(dict.fromkeys(long[key])), fill_value="")


def collect(paths: Iterable, results: str | Path, models: Sequence[str]) -> pd.DataFrame:
    """Every claim of every file, one row per (model, claim), with :data:`LONG_COLUMNS`.

    ``models`` are the configured models; a model that has claims but is not
    among them is added after them (:func:`models_of`).

    A claim judged on Kobayashi's norm-weighted maps (a folder ending in ``-norm``) is its own
    row, ``id [norm weighting]``, below the claim on the attention weights. An id stated in
    several other files of one model gets the folder it came from appended (``id [where]``, for
    every model), so no claim hides another. A claim that some
    model has and another lacks is added for the latter as not applicable,
    ``ours`` = :data:`ABSENT` (the analysis is not run for that model, e.g.
    gradients of a random encoder, probes of any model but the probed one).
    Rows keep the order in which claims first appear, grouped by their source
    (paper and section) in :func:`source_key` order.
    """
    rows = []
    for path in paths:
        model, where = model_of(path, results)
        rows += [{"model": model, **vars(claim), "where": where} for claim in read_claims(path)]
    long = pd.DataFrame(rows, columns=list(LONG_COLUMNS))
    if long.empty:
        return long
    models = models_of(long, models)
    norm = long["where"].map(is_norm_folder)
    long.loc[norm, "id"] = long["id"] + NORM_TAG
    base = long["where"].map(attention_folder)  # a norm claim and its twin share the folder
    places = base.groupby([long["model"], long["id"]]).nunique().groupby(level="id").max()
    several = long["id"].map(places) > 1
    long.loc[several, "id"] = long["id"] + " [" + base + "]"
    order = list(dict.fromkeys(long["id"]))
    first = long.drop_duplicates("id").set_index("id")
    missing = [{"model": m, **{k: first.at[i, k] for k in ("source", "claim", "paper")},
                "id": i, "ours": ABSENT, "verdict": NOT_APPLICABLE, "rule": "", "note": "",
                "where": first.at[i, "where"]}
               for m in models for i in order
               if not ((long["model"] == m) & (long["id"] == i)).any()]
    long = pd.concat([long, pd.DataFrame(missing, columns=list(LONG_COLUMNS))], ignore_index=True)
    rank = {i: (source_key(first.at[i, "source"]), k) for k, i in enumerate(order)}
    model_rank = {m: k for k, m in enumerate(models)}
    long = long.assign(_r=long["id"].map(rank), _m=long["model"].map(model_rank))
    return long.sort_values(["_r", "_m"], kind="stable").drop(columns=["_r", "_m"]).reset_index(drop=True)


def source_key(source: str) -> tuple:
    """Sort key of a source ("Clark et al. 2019 §4.2, Table 1"): author, year, then section
    numbers compared as numbers (§3.2 before §3.10)."""
    parts = re.split(r"(\d+)", source)
    return tuple(int(p) if p.isdigit() else p for p in parts)


def _one(values: pd.Series, models: Sequence[str]) -> str:
    """One text for a column the models share: the value if they agree, else ``model: value`` parts."""
    stated = {m: v for m, v in zip(models, values) if v}
    distinct = list(dict.fromkeys(stated.values()))
    if len(distinct) <= 1:
        return distinct[0] if distinct else ""
    return " | ".join(f"{m}: {v}" for m, v in stated.items())


def scorecard(long: pd.DataFrame, models: Sequence[str], controls: Sequence[str] = ()) -> pd.DataFrame:
    """The wide scorecard: a row per claim; ``id, source, claim, paper, rule``, then per model
    ``<model>: ours`` and ``<model>: verdict``, then ``holds on a control`` (:func:`on_noise`)
    and ``note``.

    ``rule`` and ``note`` are one text when every model states the same, else
    ``model: text`` parts joined by `` | ``.
    """
    rows, noise = [], on_noise(long, controls)
    for claim_id, group in long.groupby("id", sort=False):
        by_model = group.set_index("model").reindex(list(models))
        row = {"id": claim_id, "source": group["source"].iloc[0], "claim": group["claim"].iloc[0],
               "paper": group["paper"].iloc[0],
               "rule": _one(by_model["rule"].fillna(""), models)}
        for m in models:
            row[f"{m}: ours"] = by_model.at[m, "ours"] if pd.notna(by_model.at[m, "ours"]) else ABSENT
            row[f"{m}: verdict"] = by_model.at[m, "verdict"] if pd.notna(by_model.at[m, "verdict"]) \
                else NOT_APPLICABLE
        row["holds on a control"] = noise.get(claim_id, "")
        row["note"] = _one(by_model["note"].fillna(""), models)
        rows.append(row)
    columns = ["id", "source", "claim", "paper", "rule",
               *[f"{m}: {k}" for m in models for k in ("ours", "verdict")], "holds on a control", "note"]
    return pd.DataFrame(rows, columns=columns)


def tally(long: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """Per model: how many claims hold, do not hold, are not applicable."""
    counts = pd.crosstab(long["model"], long["verdict"]).reindex(index=list(models), columns=list(VERDICTS),
                                                                 fill_value=0)
    return counts.rename_axis(index="model", columns=None).reset_index()


def with_weighting(long: pd.DataFrame) -> pd.DataFrame:
    """``long`` plus ``claim_id`` (the id without :data:`NORM_TAG`: a claim and its norm twin share
    it) and ``weighting`` (``attention`` or ``norm``, from the folder the claim came from)."""
    norm = long["where"].map(is_norm_folder).astype(bool)
    return long.assign(claim_id=long["id"].str.replace(NORM_TAG, "", regex=False),
                       weighting=norm.map({False: "attention", True: "norm"}))


def own_views(long: pd.DataFrame, models: Sequence[str]) -> list[tuple[str, str]]:
    """The (model, weighting) views that state a claim of their own (not :data:`ABSENT`): models in
    ``models`` order, attention before norm."""
    own = with_weighting(long[long["ours"] != ABSENT])
    present = set(zip(own["model"], own["weighting"]))
    return [(m, w) for m in models for w in ("attention", "norm") if (m, w) in present]


def own_columns(long: pd.DataFrame, models: Sequence[str]) -> list[tuple[str, str]]:
    """The scorecard page's columns: the views of :func:`own_views` that judge at least one claim
    (holds or does not hold). A helper model that states no claim (e.g. a random encoder read only
    by Table 3), or only claims it cannot judge, is no column of "not applicable"."""
    judged = with_weighting(long[(long["ours"] != ABSENT) & (long["verdict"] != NOT_APPLICABLE)])
    present = set(zip(judged["model"], judged["weighting"]))
    return [view for view in own_views(long, models) if view in present]


def by_weighting(long: pd.DataFrame, models: Sequence[str], controls: Sequence[str] = ()) -> pd.DataFrame:
    """The scorecard as the report shows it: a row per claim (its norm twin folded in), ``id, source,
    claim, paper, rule``, then per view of :func:`own_columns` ``<model> <weighting>: ours`` and
    ``...: verdict`` (:data:`ABSENT` where that view lacks the claim), then ``holds on a control``
    (:func:`on_noise`, either weighting) and ``note``."""
    long = with_weighting(long)
    views = own_columns(long, models)
    rows, noise = [], on_noise(long, controls, "claim_id")
    for claim_id, group in long.groupby("claim_id", sort=False):
        stated = group[group["ours"] != ABSENT]
        labels = [f"{m} {w}" for m, w in zip(stated["model"], stated["weighting"])]
        row = {"id": claim_id, "source": group["source"].iloc[0], "claim": group["claim"].iloc[0],
               "paper": group["paper"].iloc[0], "rule": _one(stated["rule"].fillna(""), labels)}
        indexed = group.set_index(["model", "weighting"])
        for m, w in views:
            found = (m, w) in indexed.index
            row[f"{m} {w}: ours"] = indexed.at[(m, w), "ours"] if found else ABSENT
            row[f"{m} {w}: verdict"] = indexed.at[(m, w), "verdict"] if found else NOT_APPLICABLE
        row["holds on a control"] = noise.get(claim_id, "")
        row["note"] = _one(stated["note"].fillna(""), labels)
        rows.append(row)
    columns = ["id", "source", "claim", "paper", "rule",
               *[f"{m} {w}: {k}" for m, w in views for k in ("ours", "verdict")], "holds on a control",
               "note"]
    return pd.DataFrame(rows, columns=columns)


def own_tally(long: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """Per view of :func:`own_views` (``model``, ``weighting``): how many of its own claims hold,
    do not hold, are not applicable (claims of analyses not run for it are not counted)."""
    own = with_weighting(long[long["ours"] != ABSENT])
    counts = pd.crosstab([own["model"], own["weighting"]], own["verdict"])
    counts = counts.reindex(index=pd.MultiIndex.from_tuples(own_views(long, models)),
                            columns=list(VERDICTS), fill_value=0)
    return counts.rename_axis(index=["model", "weighting"], columns=None).reset_index()


def to_html(view: pd.DataFrame, views: Sequence[tuple[str, str]], caption: str = "",
            controls: Sequence[str] = ()) -> str:
    """The scorecard (:func:`by_weighting`) as one self-contained HTML page: claim (with its source,
    id and notes), the paper, the rule, then a column per (model, weighting) view with the verdict
    over our number, verdict cells coloured. A control's columns are marked (:data:`CONTROL`) and a
    claim it holds is flagged (:data:`NOISE`)."""
    def esc(text) -> str:
        return html.escape(str(text))

    def marked(m: str) -> str:
        return ' class="control"' if m in controls else ""

    models = list(dict.fromkeys(m for m, _ in views))
    top = "".join(f'<th colspan="{sum(v == m for v, _ in views)}"{marked(m)}>{esc(m)}'
                  + (f'<br><span class="dim">{CONTROL}</span>' if m in controls else "") + "</th>"
                  for m in models)
    second = "".join(f"<th{marked(m)}>{esc(w)}</th>" for m, w in views)
    body = []
    for row in view.to_dict("records"):
        note = f'<br><span class="dim">{esc(row["note"])}</span>' if row["note"] else ""
        noise = (f'<br><span class="noise">{NOISE} ({esc(row["holds on a control"])})</span>'
                 if row.get("holds on a control") else "")
        tds = (f'<td><b>{esc(row["claim"])}</b><br><span class="dim">{esc(row["source"])} · '
               f'<code>{esc(row["id"])}</code></span>{noise}{note}</td><td>{esc(row["paper"])}</td>'
               f'<td class="dim">{esc(row["rule"])}</td>')
        for m, w in views:
            verdict, ours = row[f"{m} {w}: verdict"], row[f"{m} {w}: ours"]
            if ours == ABSENT:
                tds += f'<td class="absent{" control" if m in controls else ""}">not run</td>'
            else:
                tds += (f'<td{marked(m)} style="background:{COLOURS.get(verdict, "#fff")}"><b>{esc(verdict)}</b>'
                        f"<br>{esc(ours)}</td>")
        body.append(f"<tr>{tds}</tr>")
    style = ("body{font:13px/1.35 system-ui,sans-serif;margin:12px;color:#222}"
             "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:3px 5px;vertical-align:top}"
             "thead{position:sticky;top:0;z-index:1}thead th{background:#f3f3f3}"
             ".dim{color:#666}td.absent{color:#999;background:#f7f7f7}td{min-width:6em}"
             ".control{border-left:3px double #777;font-style:italic}thead th.control{background:#e8e8f4}"
             ".noise{color:#8a4b00}")
    text = f"<p>{esc(caption)}</p>" if caption else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Scorecard</title>'
            f'<style>{style}</style></head><body><div class="headatlas-scorecard">{text}'
            f'<table><thead><tr><th rowspan="2">claim</th><th rowspan="2">paper</th>'
            f'<th rowspan="2">rule</th>{top}</tr><tr>{second}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div></body></html>\n')


def caption(long: pd.DataFrame, models: Sequence[str], n_files: int, controls: Sequence[str] = ()) -> str:
    """What the scorecard is made of: claims, models, files, and how verdicts are decided."""
    n_claims = with_weighting(long)["claim_id"].nunique() if not long.empty else 0
    flagged = (on_noise(long, controls, "claim_id") != "").sum() if controls and not long.empty else 0
    control = (f" {', '.join(controls)}: a control (random encoder, last columns, marked); "
               f"{flagged} claims hold on it too and are flagged: their rule cannot tell a trained "
               "model from noise." if controls else "")
    return (f"{n_claims} claims of the papers, judged for {len(models)} models "
            f"({', '.join(models)}) from {n_files} claims files (paper_claims.csv), a column per model "
            "and weighting that states claims of its own. Each verdict is computed by the rule beside "
            "it; layer ranges are compared by relative depth (layer / number of layers); 'not run' "
            f"means the analysis is not run for that model or weighting.{control}")
