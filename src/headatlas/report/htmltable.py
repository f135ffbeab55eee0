"""A table as one small self-contained HTML page, for the report to show it rather than offer a download.

Snakemake's report shows an ``.html`` result in a frame and offers any other file (a CSV) only as a
download; :func:`page` renders a table's cells exactly as given (escaped, no number reformatting:
the CSV beside it stays the data), with inline styles, a header that stays in view, and numbers
right-aligned. No script, no network.

Light module (pandas only).
"""

from __future__ import annotations

import html
import re
from typing import Callable

import pandas as pd

# Rows shown at most: a page of several thousand rows is no longer read, the CSV is.
MAX_ROWS = 2000
NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?%?$")
STYLE = """
body { font: 13px/1.35 system-ui, sans-serif; margin: 12px; color: #222; }
h1 { font-size: 16px; margin: 0 0 4px; }
p.note { color: #555; margin: 0 0 8px; max-width: 70em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; }
thead th { position: sticky; top: 0; background: #f3f3f3; text-align: left; }
tbody tr:nth-child(even) td { background-color: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.short, td.num { white-space: nowrap; }
td.long { min-width: 24em; }
"""
# A cell of at most SHORT characters is kept on one line; one of more than LONG gets a wide column,
# so a table with a long note column does not wrap it into a tall, narrow strip.
SHORT, LONG = 16, 60


def escape(value) -> str:
    return html.escape("" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value))


def is_number(text: str) -> bool:
    return bool(NUMBER.match(text.strip()))


def cell_class(text: str) -> str:
    """``num`` (right-aligned), ``short`` (one line), ``long`` (a wide column) or nothing."""
    if is_number(text):
        return "num"
    if 0 < len(text) <= SHORT:
        return "short"
    return "long" if len(text) > LONG else ""


def rows_html(table: pd.DataFrame, cell_style: Callable[[str, str], str] | None = None) -> str:
    """The ``<tbody>`` rows; ``cell_style(column, text)`` may give a cell an inline style."""
    rows = []
    for record in table.head(MAX_ROWS).itertuples(index=False):
        cells = []
        for column, value in zip(table.columns, record):
            text = escape(value)
            style = cell_style(column, text) if cell_style else ""
            kind = cell_class(text)
            attributes = (f' class="{kind}"' if kind else "") + (f' style="{style}"' if style else "")
            cells.append(f"<td{attributes}>{text}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return "\n".join(rows)


def page(table: pd.DataFrame, title: str, note: str = "",
         cell_style: Callable[[str, str], str] | None = None) -> str:
    """``table`` as a complete HTML page headed by ``title`` and ``note`` (plain text, escaped);
    rows past :data:`MAX_ROWS` are left out and the note says so."""
    if len(table) > MAX_ROWS:
        note = f"{note} Showing the first {MAX_ROWS} of {len(table)} rows; the CSV has them all.".strip()
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    note_html = f'<p class="note">{escape(note)}</p>' if note else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body><h1>{escape(title)}</h1>{note_html}\n"
            f"<table><thead><tr>{head}</tr></thead><tbody>\n{rows_html(table, cell_style)}\n"
            f"</tbody></table></body></html>\n")


PAPER = "paper_"  # a column of the paper's numbers: paper_<ours>, or paper_<name> of its own


def paper_beside(columns: list[str]) -> list[str]:
    """``columns`` with each paper column right after ours of the same name (``paper_acc`` after
    ``acc``), so a wide table shows the paper's number beside ours rather than off-screen; a paper
    column without a twin keeps its place."""
    ours = [c for c in columns if not (c.startswith(PAPER) and c[len(PAPER):] in columns)]
    return [x for c in ours for x in (c, PAPER + c) if x in columns]


def csv_page(csv_path, title: str | None = None, note: str = "") -> str:
    """The CSV at ``csv_path`` as a page, its cells as written in the file (read as text), each
    paper column beside ours (:func:`paper_beside`)."""
    table = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    return page(table[paper_beside(list(table.columns))], title or str(csv_path), note)
