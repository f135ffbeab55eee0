"""Report entries of the table pages (rule table_page, workflow/rules/tables.smk).

``result(..., as_table=True)`` (common.smk) records a CSV's path pattern and report entry; the one
generic rule writing ``<csv>.html`` finds, for a concrete path, the pattern it matches and fills
the entry's category, subcategory and labels with that pattern's wildcards, so the page sits in
the CSV's category with the CSV's labels (its name marked ``(table)``).

Light module (standard library only): the workflow imports it when the Snakefile is parsed.
"""

from __future__ import annotations

import re
from types import SimpleNamespace


def pattern_regex(path: str) -> re.Pattern:
    """A result's path pattern as a regular expression naming its wildcards."""
    parts, seen = [], set()
    for literal, name in re.findall(r"([^{]*)(?:{(\w+)(?:,[^}]*)?})?", path):
        parts.append(re.escape(literal))
        if name:
            parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>[^/]*)")
            seen.add(name)
    return re.compile("".join(parts))


def as_table_labels(labels: dict) -> dict:
    """The CSV's labels, its name (``result`` or ``table``) marked as the table view."""
    name = next((k for k in ("result", "table") if k in labels), "result")
    text = labels.get(name, "")
    return {**labels, name: text if text.endswith("(table)") else f"{text} (table)".strip()}


def _fill(value, values: dict):
    if callable(value):
        value = value(SimpleNamespace(**values))
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    return value.format(**values) if isinstance(value, str) else value


class TablePages:
    """The declared table pages: a list of (CSV path pattern, report entry), filled as declared."""

    def __init__(self, declared: list):
        self.declared = declared

    def entry(self, csv: str) -> tuple[dict, dict]:
        """(report entry, wildcards) of the table declared for ``csv``, a concrete path."""
        for path, entry in self.declared:
            found = pattern_regex(path).fullmatch(csv)
            if found:
                return entry, found.groupdict()
        raise ValueError(f"{csv}: no result(..., as_table=True) declares it")

    def field(self, key: str):
        """A function of a table_page job's wildcards giving its report ``key``, wildcards filled."""
        def value(wildcards):
            entry, values = self.entry(f"{wildcards.table}.csv")
            filled = _fill(entry[key], values)
            return as_table_labels(filled) if key == "labels" else filled

        return value

    def title(self, wildcards) -> str:
        """The page's heading: the CSV's name, then its other labels ('Table 1 · model tiny · ...')."""
        labels = self.field("labels")(wildcards)
        names = [labels.pop(k).removesuffix(" (table)") for k in ("result", "table") if k in labels]
        return " · ".join([*names, *(f"{k} {v}" for k, v in labels.items() if v != "")])
