"""The report a tiny run builds opens on what was found (issue 22): a short landing page that starts
with the generated summary, the scorecard its own item with the weightings as columns, the key
tables shown as HTML tables, the atlas an item of its own that the landing page links to."""

from __future__ import annotations

import base64
import json
import re
import time

import pandas as pd
import pytest

from headatlas.report.scorecard import ABSENT, by_weighting, models_of, own_columns
from tests.workflow.conftest import snakemake
from tests.workflow.test_atlas_browser import browser  # noqa: F401 (a fixture)

pytestmark = pytest.mark.workflow

# The landing container centres its content: a long landing text cannot be scrolled to its top.
LANDING_MAX_CHARS = 20_000


def report_data(html: str) -> tuple[str, dict]:
    """(the landing page's HTML, path -> entry of every report item) from Snakemake's report."""
    desc = re.search(r"^\s*var workflow_desc = (\".*\");?\s*$", html, re.M)
    items = re.search(r"^\s*var results = (\{.*\});?\s*$", html, re.M)
    assert desc and items, "the report's layout changed: no workflow_desc / results"
    return json.loads(desc.group(1)), json.loads(items.group(1))


def item_text(entry: dict) -> str:
    return base64.b64decode(entry["data_uri"].split("base64,", 1)[1]).decode()


@pytest.fixture(scope="module")
def report_file(tiny_workflow):
    # Beside results/, not in it: test_slurm compares results/ with a SLURM run file by file.
    snakemake(tiny_workflow, "--report", "landing-report.html")
    return tiny_workflow / "landing-report.html"


@pytest.fixture(scope="module")
def report(report_file):
    html = report_file.read_text()
    return (len(html), *report_data(html))


def test_the_landing_page_is_short_and_starts_with_the_summary(report):
    _, landing, _ = report
    assert len(landing) < LANDING_MAX_CHARS and "<table" in landing  # the counts, nothing longer
    summary = landing.index('class="headatlas-scorecard-summary"')
    # the title paragraph, then the summary: before every other part of the landing text
    assert landing.count("<p>", 0, summary) <= 1
    assert summary < landing.index("scorecard.html") < landing.index("showResultInfo('results/atlas.html')")
    for model in ("tiny", "tiny_roberta", "tiny_upos"):
        assert f"<td>{model}</td>" in landing  # counts per model
    assert landing.count("<li>") >= 1 and "app.showResultInfo(" in landing
    assert "</script>" not in landing  # the report embeds the landing text in a <script> element
    assert "does not hold in" in landing and "paper_claims.csv" in landing


def test_the_scorecard_item_has_the_weightings_as_columns(report, tiny_workflow):
    _, _, items = report
    entry = items["results/scorecard.html"]
    page = item_text(entry)
    assert "<th>attention</th><th>norm</th>" in page
    long = pd.read_csv(tiny_workflow / "results" / "scorecard_long.csv", keep_default_na=False)
    models = models_of(long, ["tiny", "tiny_roberta"])
    views = own_columns(long, models)
    assert ("tiny_upos", "norm") not in views  # the task model runs under attention only
    view = by_weighting(long, models)
    assert len(view) == page.count("<tr>") - 2  # a row per claim, the norm twins folded in
    for model, weighting in views:  # no column of "not applicable" / "not run" alone
        verdicts = view[f"{model} {weighting}: verdict"][view[f"{model} {weighting}: ours"] != ABSENT]
        assert (verdicts != "not applicable").any(), (model, weighting)


def test_the_key_tables_are_shown_as_tables_and_the_atlas_is_linked(report):
    size, _, items = report
    for table in ("tiny/tb/syntax/table1", "tiny/tb/syntax-norm/table1", "tiny/tb_docs/coref/accuracy",
                  "tiny/wikipedia/headtypes/type_shares", "tiny/patterns/shares", "tiny/heads"):
        entry = items[f"results/{table}.csv.html"]
        page = item_text(entry)
        assert entry["data_uri"].startswith("data:text/html") and "<table>" in page and "<td" in page
        assert f"results/{table}.csv" in items  # the CSV beside it, the data
        assert entry["labels"]["model"] == "tiny"
    # the atlas is an item of its own (a report sent alone keeps it), shown in the report's frame
    atlas = items["results/atlas.html"]
    assert atlas["data_uri"].startswith("data:text/html") and "headatlas: the head atlas" in item_text(atlas)
    assert "results/findings.html" in items
    assert not any(path.endswith("attention_lines.svg") for path in items)
    print(f"report: {size / 1e6:.1f} MB, {len(items)} items")


def test_the_landing_page_is_reachable_in_a_browser(report_file, browser, tmp_path):  # noqa: F811
    """On a laptop's 1280 x 800 window, lower and narrower than the rule graph, the landing text
    starts in view right of the menu (Snakemake centres it: its top and left were cut off where
    nothing scrolls to, the left under the menu), the summary table fits, and every link of the
    summary names an item. The summary as its own item (no report app in its frame) is styled and
    its links do nothing there instead of throwing."""
    browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=800, deviceScaleFactor=1,
                 mobile=False)
    browser.call("Page.navigate", url=report_file.as_uri())
    browser.wait_for("Page.loadEventFired", 60)
    for _ in range(100):
        if browser.js("!!document.querySelector('.headatlas-scorecard-summary')"):
            break
        time.sleep(0.1)
    browser.screenshot(tmp_path / "landing.png")
    layout = browser.js("""(() => { const text = document.querySelector('.prose');
        const graph = text.parentElement.parentElement;
        const menu = document.querySelector('#app .flex-row > .text-white.h-screen').getBoundingClientRect();
        const table = document.querySelector('.headatlas-scorecard-summary table').getBoundingClientRect();
        return {top: text.getBoundingClientRect().top, left: text.getBoundingClientRect().left,
                menu: menu.right, table: table.right, graph: graph.getBoundingClientRect().height,
                graph_width: graph.scrollWidth, width: window.innerWidth,
                window: window.innerHeight}; })()""")
    assert layout["graph"] > layout["window"], "the rule graph fits: the check proves nothing"
    assert 0 <= layout["top"] < 100, layout
    assert layout["menu"] <= layout["left"] and layout["table"] <= layout["width"], layout
    missing = browser.js("""[...document.querySelectorAll('.headatlas-scorecard-summary a')]
        .map(a => decodeURIComponent(a.href.match(/showResultInfo\\('([^']*)'\\)/)[1]))
        .filter(path => !(path in results))""")
    assert missing == [] and browser.js("typeof app.showResultInfo") == "function"
    assert not browser.errors()
    print(f"landing: {layout}; screenshot {tmp_path / 'landing.png'}")
    # The summary's own item: the fragment in a frame of its own, where `app` is not defined.
    item = tmp_path / "findings-item.html"
    item.write_bytes((report_file.parent / "results" / "findings.html").read_bytes())
    browser.call("Page.navigate", url=item.as_uri())
    browser.wait_for("Page.loadEventFired", 60)
    padding = browser.js("getComputedStyle(document.querySelector('.headatlas-scorecard-summary td')).paddingLeft")
    assert padding == "10px", padding
    browser.click(".headatlas-scorecard-summary li a")
    time.sleep(0.3)
    assert not browser.errors()
