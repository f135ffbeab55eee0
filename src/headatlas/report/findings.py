"""The report's opening summary: what the run found, read from the scorecard's claims.

:func:`summary_html` writes a short HTML fragment that the report's landing page (workflow.rst)
embeds: per model and weighting, how many of its own claims hold, do not hold, are not applicable;
then the findings furthest from the papers (:func:`furthest`), each one sentence with the paper's
number, ours, and a link to the claims table it comes from; then the claims that hold on a
control (a random encoder: :func:`~headatlas.report.scorecard.on_noise`), which say little.
Nothing is typed by hand: every sentence is built from a claims row.

Light module (pandas only).
"""

from __future__ import annotations

import html
import re
from typing import Sequence
from urllib.parse import quote

import pandas as pd

from headatlas.claims import FAILS, HOLDS, NOT_APPLICABLE
from headatlas.report.scorecard import ABSENT, CLAIMS_FILE, CONTROL, on_noise, own_tally, with_weighting

N_FINDINGS = 5
# The fragment is the landing page's summary and its own report item (an iframe): styled by itself
# (scoped to its class). It holds no script: the report embeds it in a JavaScript string inside a
# <script> element, which a "</script>" would end.
STYLE = ("<style>.headatlas-scorecard-summary{font:14px/1.45 system-ui,sans-serif;color:#222}"
         ".headatlas-scorecard-summary table{border-collapse:collapse;margin:6px 0}"
         ".headatlas-scorecard-summary th,.headatlas-scorecard-summary td{border-bottom:1px solid #ddd;"
         "padding:3px 10px;text-align:left}.headatlas-scorecard-summary li{margin:4px 0}</style>")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def first_number(text: str) -> float | None:
    found = _NUMBER.search(str(text))
    return float(found.group()) if found else None


def gap(paper: str, ours: str) -> float:
    """Relative difference of the first numbers of ``paper`` and ``ours`` (0 to 1; 0 when either
    has none): only a tie-break between claims failed as often, the verdict's rule is the judge."""
    a, b = first_number(paper), first_number(ours)
    if a is None or b is None or max(abs(a), abs(b)) == 0:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def furthest(long: pd.DataFrame, n: int = N_FINDINGS, controls: Sequence[str] = ()) -> pd.DataFrame:
    """The claims furthest from the papers: one row per claim (the first model's first view that
    does not hold it), ranked by the share of its judged views (model, weighting; holds or does not
    hold) that do not hold it, then by :func:`gap`; at most one per paper section (``source``)
    while other sections remain, so the summary is not n relations of one table. The ``controls``
    (random encoders: a claim failing there is expected) are left out. Adds ``failed``,
    ``judged``."""
    views = with_weighting(long[(long["ours"] != ABSENT) & ~long["model"].isin(list(controls))])
    judged = views[views["verdict"].isin([HOLDS, FAILS])]
    failing = judged[judged["verdict"] == FAILS]
    if failing.empty:
        return failing.assign(failed=[], judged=[])
    counts = judged.groupby("claim_id", sort=False)["verdict"].agg(
        failed=lambda v: int((v == FAILS).sum()), judged="size")
    first = failing.drop_duplicates("claim_id").set_index("claim_id").join(counts)
    first["_share"] = first["failed"] / first["judged"]
    first["_gap"] = [gap(p, o) for p, o in zip(first["paper"], first["ours"])]
    ranked = first.sort_values(["_share", "_gap"], ascending=False, kind="stable")
    distinct = ranked.drop_duplicates("source")
    chosen = pd.concat([distinct, ranked.drop(distinct.index)]).head(n)
    return chosen.drop(columns=["_share", "_gap"]).reset_index()


def claims_path(results: str, model: str, where: str) -> str:
    """The claims file a row came from, as the report names it (its key for a link)."""
    return "/".join(p for p in (results.rstrip("/"), model, where, CLAIMS_FILE) if p)


def report_link(path: str, text: str) -> str:
    """A link that opens ``path``'s entry in Snakemake's report (as its own workflow.rst links do);
    where the report's ``app`` is out of reach (the summary's own item, in a frame of its own) it
    does nothing rather than throw."""
    return (f"<a href=\"javascript:void(typeof app !== 'undefined' &amp;&amp; app.showResultInfo('{quote(path)}'))\">"
            f"{html.escape(text)}</a>")


def sentence(row, results: str) -> str:
    """One finding: the claim, the paper's number and ours, how many views agree, and its table."""
    path = claims_path(results, row["model"], row["where"])
    esc = html.escape
    return (f"<b>{esc(row['claim'])}</b> ({esc(row['source'])}): the paper has {esc(row['paper'])}; "
            f"{esc(row['model'])} ({esc(row['weighting'])} weighting) has {esc(row['ours'])} - does not "
            f"hold in {row['failed']} of {row['judged']} judged views. "
            f"From {report_link(path, path)}.")


def counts_table(counts: pd.DataFrame, controls: Sequence[str] = ()) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("model", "weighting", "holds", "does not hold", "n/a"))
    rows = "".join(
        f"<tr><td>{html.escape(r['model'])}{f' ({CONTROL})' if r['model'] in controls else ''}</td>"
        f"<td>{r['weighting']}</td><td>{r[HOLDS]}</td>"
        f"<td>{r[FAILS]}</td><td>{r[NOT_APPLICABLE]}</td></tr>" for r in counts.to_dict("records"))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def noise_paragraph(long: pd.DataFrame, controls: Sequence[str]) -> str:
    """The claims a control holds too, by id: a trained model holding them says little."""
    if not controls:
        return ""
    held = on_noise(long, controls, "claim_id")
    held = held[held != ""]
    if held.empty:
        return (f"<p><b>On noise</b>: no claim holds on the random control ({', '.join(controls)}): "
                "every rule can tell a trained model from noise.</p>")
    ids = ", ".join(f"<code>{html.escape(i)}</code>" for i in held.index)
    return (f"<p><b>On noise</b>: {len(held)} claims hold on the random control "
            f"({', '.join(controls)}) too, so their rule cannot tell a trained model from noise and "
            f"holding them says little: {ids}.</p>")


def summary_html(long: pd.DataFrame, models: Sequence[str], results: str, n: int = N_FINDINGS,
                 controls: Sequence[str] = ()) -> str:
    """The landing page's summary (an HTML fragment; class ``headatlas-scorecard-summary``)."""
    counts = own_tally(long, models) if not long.empty else pd.DataFrame(
        columns=["model", "weighting", HOLDS, FAILS, NOT_APPLICABLE])
    found = furthest(long, n, controls) if not long.empty else pd.DataFrame()
    noise = noise_paragraph(long, controls) if not long.empty else ""
    items = "".join(f"<li>{sentence(r, results)}</li>" for r in found.to_dict("records"))
    findings = (f"<p><b>Furthest from the papers</b> (claims that do not hold in the most views):</p>"
                f"<ol>{items}</ol>") if items else "<p>Every judged claim holds.</p>"
    n_claims = with_weighting(long)["claim_id"].nunique() if not long.empty else 0
    return (f'<div class="headatlas-scorecard-summary">{STYLE}<p><b>What was found.</b> {n_claims} claims '
            f"of the papers, each judged per model and weighting on the model's own results "
            f"(n/a: not applicable, e.g. a relation too rare to score):</p>{counts_table(counts, controls)}"
            f"{findings}{noise}</div>\n")
