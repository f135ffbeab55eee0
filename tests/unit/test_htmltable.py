"""A CSV shown as an HTML table: cells as written, escaped, numbers right-aligned, long tables cut."""

import pandas as pd

from headatlas.report import htmltable
from headatlas.report.htmltable import csv_page, page


def test_cells_are_escaped_and_kept_as_written(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("relation,acc,head\n<det>,86.80,8-10\n,nan,x & y\n")
    html = csv_page(csv, "Table 1 <tiny>", "note")
    assert html.startswith("<!DOCTYPE html>") and "<title>Table 1 &lt;tiny&gt;</title>" in html
    assert "<th>relation</th><th>acc</th><th>head</th>" in html
    assert '<td class="short">&lt;det&gt;</td><td class="num">86.80</td><td class="short">8-10</td>' in html  # "86.80" not 86.8
    assert "<td></td><td class=\"short\">nan</td><td class=\"short\">x &amp; y</td>" in html  # empty and "nan" as in the file
    assert '<p class="note">note</p>' in html and "<script" not in html


def test_long_tables_are_cut_and_say_so(monkeypatch):
    monkeypatch.setattr(htmltable, "MAX_ROWS", 2)
    html = page(pd.DataFrame({"a": [1, 2, 3]}), "t")
    assert html.count("<tr>") == 1 + 2 and "first 2 of 3 rows" in html


def test_a_cell_style():
    html = page(pd.DataFrame({"verdict": ["holds", "no"]}), "t",
                cell_style=lambda column, text: "background:#d9f2d9" if text == "holds" else "")
    assert '<tr><td class="short" style="background:#d9f2d9">holds</td></tr>' in html
    assert '<tr><td class="short">no</td></tr>' in html


def test_long_text_gets_a_wide_column_short_text_one_line():
    html = page(pd.DataFrame({"note": ["x" * 61], "head": ["head->dep"], "mid": ["y" * 30]}), "t")
    assert '<td class="long">' in html and '<td class="short">head-&gt;dep</td>' in html
    assert f"<td>{'y' * 30}</td>" in html


def test_the_papers_columns_sit_beside_ours(tmp_path):
    """Table 1 is 22 columns wide: the paper's (paper_acc, ...) came last, off-screen; now each
    sits after ours of the same name, and one without a twin keeps its place."""
    from headatlas.report.htmltable import paper_beside

    columns = ["relation", "head", "acc", "acc_low", "paper_relation", "paper_head", "paper_acc", "paper_baseline",
               "note"]
    assert paper_beside(columns) == ["relation", "paper_relation", "head", "paper_head", "acc", "paper_acc",
                                     "acc_low", "paper_baseline", "note"]
    csv = tmp_path / "t.csv"
    csv.write_text("relation,acc,paper_relation,paper_acc\nall,38.9,all,34.5\n,,prep,66.7\n")
    html = csv_page(csv)
    assert "<th>relation</th><th>paper_relation</th><th>acc</th><th>paper_acc</th>" in html
    assert '<td></td><td class="short">prep</td><td></td><td class="num">66.7</td>' in html
