"""The atlas page in a real browser: headless Chromium driven over the DevTools protocol.

The page is the tiny workflow's own ``results/atlas.html`` (real tables, real stores, the
``atlas_page`` rule). The test loads it from ``file://``, checks that no console error or
uncaught exception occurs, clicks a head in the grid with real mouse events, checks that the
card shows that head's numbers from ``heads.csv``, toggles the weighting and checks that the
numbers change to the norm rows' values, and writes screenshots under the test's temp folder.
Skipped, with the reason, where Chromium, chromedriver's browser or ``websocket-client`` is
missing (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import base64
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--remote-allow-origins=*", "--window-size=1500,1800"]


def chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """A headless Chromium and one page, spoken to over the DevTools protocol (websocket)."""

    def __init__(self, binary: str, profile: Path):
        import websocket

        port = _free_port()
        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", f"--remote-debugging-port={port}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)  # its own process group: close() ends its helpers too
        deadline = time.time() + 30
        targets = None
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    targets = [t for t in json.load(r) if t.get("type") == "page"]
                if targets:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if not targets:
            self.close()
            raise RuntimeError("Chromium started but offered no page target over DevTools")
        self.ws = websocket.create_connection(targets[0]["webSocketDebuggerUrl"], timeout=30,
                                              suppress_origin=True)
        self.next_id = 0
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str, timeout: float = 30) -> dict:
        import websocket

        deadline = time.time() + timeout
        while time.time() < deadline:
            for event in self.events:
                if event.get("method") == method:
                    self.events.remove(event)
                    return event
            self.ws.settimeout(max(0.1, deadline - time.time()))
            try:
                self.events.append(json.loads(self.ws.recv()))
            except websocket.WebSocketTimeoutException:
                pass
            finally:
                self.ws.settimeout(30)
        raise TimeoutError(method)

    def js(self, expression: str, context: int | None = None):
        where = {"contextId": context} if context is not None else {}
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True, **where)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click at the centre of the element (scrolled into view first)."""
        box = self.js(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            if (!e) return null; e.scrollIntoView({{block: "center"}});
            const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
        assert box is not None, f"no element {selector}"
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left",
                      clickCount=1)

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(params["entry"].get("text", ""))
        return found

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:
            pass
        # Chromium's renderer and GPU processes outlive the browser process for a moment and keep
        # writing to the profile folder; end the whole group before the folder is removed.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(10)
                break
            except subprocess.TimeoutExpired:
                pass  # then SIGKILL


@pytest.fixture
def browser(tmp_path):
    binary = chromium()
    if binary is None:
        reason = "Chromium is not installed (Debian: apt-get install chromium chromium-driver)"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    try:
        import websocket  # noqa: F401
    except ImportError:
        reason = "the websocket-client package is not installed (pip install websocket-client)"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    # A late write of a Chromium helper must not fail the test at teardown.
    with tempfile.TemporaryDirectory(prefix="chromium-profile-", ignore_cleanup_errors=True) as profile:
        b = Browser(binary, Path(profile))
        try:
            yield b
        finally:
            b.close()


def close(shown: str, expected) -> bool:
    """Whether the card's text ``shown`` is ``expected`` (a value of heads.csv) as the page prints it."""
    if pd.isna(expected):
        return shown == "—"
    if isinstance(expected, str):
        return shown == expected
    if isinstance(expected, (bool,)) or str(expected) in ("True", "False"):
        return shown == ("yes" if expected else "no")
    return math.isclose(float(shown), float(expected), rel_tol=5e-3, abs_tol=1e-9)


def check_atlas_page(browser: Browser, results: Path, shots: Path, model: str | None = None) -> dict:
    """Load ``results/atlas.html`` and check it against ``results/<m>/heads.csv``; screenshots
    go to ``shots``. Returns what was checked (for the test's report)."""
    page = results / "atlas.html"
    browser.call("Page.navigate", url=page.resolve().as_uri())
    browser.wait_for("Page.loadEventFired")
    assert browser.js("document.querySelectorAll('td.cell').length") > 0, "no grid drawn"
    models = browser.js("[...document.querySelectorAll('table.grid')].map(t => t.dataset.model)")
    # The first colouring colours every grid it can (the column most models have); the choices
    # are grouped by analysis; the table opens with model, head and that column, model and head
    # frozen when it scrolls sideways.
    coloured = browser.js("[...document.querySelectorAll('table.grid')].map(t => "
                          "t.querySelectorAll('td.cell:not(.empty)').length)")
    colour = browser.js("document.getElementById('colour').value")
    tables = {m: pd.read_csv(results / m / "heads.csv") for m in models if (results / m / "heads.csv").exists()}
    covering = {m: t.get(colour, pd.Series(dtype=float)).notna().any() for m, t in tables.items()}
    assert [n > 0 for m, n in zip(models, coloured) if m in tables] == list(covering.values()), (colour, coloured)
    tables = list(tables.values())
    shared = set.intersection(*[{c for c in t.select_dtypes("number") if t[c].notna().any()} for t in tables])
    assert not shared - {"layer", "head"} or all(covering.values()), (colour, covering)
    assert browser.js("document.querySelectorAll('#colour optgroup').length") >= 2
    first = browser.js("[...document.querySelectorAll('#heads-table thead th')].slice(0, 3).map(t => t.dataset.col)")
    assert first == ["model", "head", colour], first
    assert browser.js("getComputedStyle(document.querySelector('#heads-table tbody td:nth-child(2)')).position") == "sticky"
    model = model or models[0]
    heads = pd.read_csv(results / model / "heads.csv")
    # The last head of the grid's last layer: a cell away from the first one drawn.
    layer, head = int(heads["layer"].max()), int(heads["head"].max())
    browser.click(f'td.cell[data-model="{model}"][data-layer="{layer}"][data-head="{head}"]')
    title = browser.js("(document.getElementById('card-title') || {}).textContent || ''")
    assert title == f"{model} head {layer}-{head}", title

    def card() -> dict[str, str]:
        return browser.js("Object.fromEntries([...document.querySelectorAll('#card-numbers td.val')]"
                          ".map(td => [td.dataset.col, td.textContent]))")

    def expected(weighting: str) -> pd.Series:
        row = heads[(heads["weighting"] == weighting) & (heads["layer"] == layer) & (heads["head"] == head)]
        assert len(row) == 1, f"heads.csv has no {weighting} row for {layer}-{head}"
        return row.iloc[0]

    shown = card()
    row = expected("attention")
    numeric = [c for c in shown if c in heads.columns and pd.api.types.is_float_dtype(heads[c])
               and pd.notna(row[c])]
    assert numeric, f"the card shows no number of heads.csv: {sorted(shown)}"
    wrong = {c: (shown[c], row[c]) for c in shown if c in heads.columns and not close(shown[c], row[c])}
    assert not wrong, f"card differs from heads.csv (shown, csv): {wrong}"
    browser.screenshot(shots / "atlas_attention.png")
    checked = {"model": model, "head": f"{layer}-{head}", "columns": len(shown), "numeric": len(numeric)}

    if "norm" in set(heads["weighting"]):
        browser.click('label[for="w-norm"]')
        assert browser.js("document.getElementById('w-norm').checked")
        shown_norm = card()
        norm = expected("norm")
        wrong = {c: (shown_norm[c], norm[c]) for c in shown_norm
                 if c in heads.columns and not close(shown_norm[c], norm[c])}
        assert not wrong, f"norm card differs from heads.csv (shown, csv): {wrong}"
        changed = [c for c in numeric if shown_norm.get(c) != shown[c]]
        weighted = [c for c in numeric if pd.notna(norm[c]) and not math.isclose(norm[c], row[c], rel_tol=1e-2)]
        assert set(weighted) <= set(changed), f"not updated by the toggle: {set(weighted) - set(changed)}"
        assert changed, "the weighting toggle changed no number"
        checked["changed_by_toggle"] = len(changed)
        browser.screenshot(shots / "atlas_norm.png")
    # Examples drawn: the line view and heat map exist for a model with stores.
    checked["examples"] = browser.js("document.querySelectorAll('#example-select option').length")
    if checked["examples"]:
        assert browser.js("document.querySelectorAll('#lines line').length") > 0
        assert browser.js("document.getElementById('heat').width") > 0
    # Sorting and filtering the table.
    browser.click('#heads-table th[data-col="head"]')
    rows = browser.js("document.querySelectorAll('#heads-table tbody tr').length")
    browser.js("(() => { const f = document.getElementById('filter'); f.value = 'layer=1';"
               " f.dispatchEvent(new Event('input')); })()")
    filtered = browser.js("[...document.querySelectorAll('#heads-table tbody tr')].map(r => r.dataset.layer)")
    assert filtered and set(filtered) == {"1"} and len(filtered) < rows
    # A head addressed in the URL opens its card; a "look at first" link opens another.
    browser.call("Page.navigate", url="about:blank")
    browser.wait_for("Page.loadEventFired")
    browser.call("Page.navigate", url=page.resolve().as_uri() + f"#{model}/1-1")
    browser.wait_for("Page.loadEventFired")
    assert browser.js("document.getElementById('card-title').textContent") == f"{model} head 1-1"
    if browser.js("document.querySelectorAll('#highlights a').length"):
        browser.click("#highlights a")
        assert browser.js("location.hash") != f"#{model}/1-1" or \
            browser.js("document.getElementById('card-title').textContent").endswith("1-1")
    errors = browser.errors()
    assert not errors, f"console errors: {errors}"
    return checked


def check_in_report_frame(browser: Browser, results: Path, shots: Path) -> None:
    """The page as Snakemake's report shows it: in an iframe whose src is a data: URI (an opaque
    origin, no URL of its own). It loads without an error and a real click opens a card."""
    page = (results / "atlas.html").read_bytes()
    wrapper = shots / "report_frame.html"
    wrapper.write_text('<!DOCTYPE html><html><body style="margin:0"><iframe id="f" '
                       'style="width:1400px;height:1400px;border:0" src="data:text/html;charset=utf8;'
                       f'filename=atlas.html;base64,{base64.b64encode(page).decode()}"></iframe></body></html>')
    browser.events.clear()
    browser.call("Page.navigate", url=wrapper.resolve().as_uri())
    browser.wait_for("Page.loadEventFired")
    main = browser.call("Page.getFrameTree")["frameTree"]["frame"]["id"]
    deadline = time.time() + 10
    frame = None
    while frame is None and time.time() < deadline:  # the iframe's own JavaScript context
        browser.js("1")
        frame = next((c["id"] for c in (e["params"]["context"] for e in browser.events
                                        if e.get("method") == "Runtime.executionContextCreated")
                      if c.get("auxData", {}).get("isDefault")
                      and c.get("auxData", {}).get("frameId") != main), None)
    assert frame is not None, "no JavaScript context in the report frame"
    assert browser.js("document.querySelectorAll('td.cell').length", frame) > 0
    x, y = browser.js("(() => { const r = document.querySelector('td.cell').getBoundingClientRect();"
                      " return [r.x + r.width / 2, r.y + r.height / 2]; })()", frame)
    for kind in ("mousePressed", "mouseReleased"):  # the frame sits at the page's origin
        browser.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
    assert browser.js("document.getElementById('card-title').textContent", frame).endswith("head 1-1")
    errors = browser.errors()
    assert not errors, f"console errors in the report frame: {errors}"


def test_atlas_page_in_chromium(browser, tiny_workflow, tmp_path):
    checked = check_atlas_page(browser, tiny_workflow / "results", tmp_path)
    check_in_report_frame(browser, tiny_workflow / "results", tmp_path)
    print(f"checked {checked}, and in a report frame; screenshots in {tmp_path}")
    assert (tmp_path / "atlas_attention.png").stat().st_size > 10_000


def test_a_corpus_word_cannot_break_the_page(browser, tiny_workflow, tmp_path):
    """Words go into the page's embedded JSON: one that opens a comment or a script element
    inside it (``<!--<script>``, ``</script>``) must leave the grid, the table and the card."""
    from headatlas.report.atlas_page import script_json

    text = (tiny_workflow / "results" / "atlas.html").read_text(encoding="utf-8")
    start = text.index('id="atlas-data">') + len('id="atlas-data">')
    end = text.index("</script>", start)
    data = json.loads(text[start:end])
    payload = ["The", "<!--<script>", "cat", "</script>", "&amp;", "\u2028", "mat", "."]
    examples = [e for m in data["models"] for e in m["examples"]]
    assert examples, "the tiny page has no example to put the words in"
    for example in examples:
        example["words"] = (payload * len(example["words"]))[:len(example["words"])]
    (tmp_path / "results").mkdir()
    shutil.copytree(tiny_workflow / "results" / "tiny", tmp_path / "results" / "tiny")
    (tmp_path / "results" / "atlas.html").write_text(text[:start] + script_json(data) + text[end:],
                                                     encoding="utf-8")
    check_atlas_page(browser, tmp_path / "results", tmp_path, model="tiny")
    assert browser.js("document.querySelectorAll('#heads-table tbody tr').length") > 0
