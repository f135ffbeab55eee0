# Key tables shown as tables in the report, not only as CSV downloads: a result declared
# ``result(..., as_table=True)`` (common.smk) is also written as <csv>.html by this one rule, in
# the CSV's report category with its labels (result "... (table)"). The CSV stays the data.
from types import SimpleNamespace


def pattern_regex(path):
    """A result's path pattern as a regular expression naming its wildcards."""
    parts, seen = [], set()
    for literal, name in re.findall(r"([^{]*)(?:{(\w+)(?:,[^}]*)?})?", path):
        parts.append(re.escape(literal))
        if name:
            parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>[^/]*)")
            seen.add(name)
    return re.compile("".join(parts))


def table_entry(csv):
    """(report entry, wildcards) of the table declared for ``csv``, a concrete path."""
    for path, entry in TABLE_PAGES:
        found = pattern_regex(path).fullmatch(csv)
        if found:
            return entry, found.groupdict()
    raise ValueError(f"{csv}: no result(..., as_table=True) declares it")


def table_report(key):
    """A function giving the report field ``key`` of a table page, its wildcards filled in."""

    def fill(value, values):
        if callable(value):
            value = value(SimpleNamespace(**values))
        if isinstance(value, dict):
            return {k: fill(v, values) for k, v in value.items()}
        return value.format(**values) if isinstance(value, str) else value

    def field(wildcards):
        entry, values = table_entry(f"{wildcards.table}.csv")
        value = fill(entry[key], values)
        return as_table_labels(value) if key == "labels" else value

    return field


def as_table_labels(labels):
    """The CSV's labels, its name (``result`` or ``table``) marked as the table view."""
    name = next((k for k in ("result", "table") if k in labels), "result")
    text = labels.get(name, "")
    return {
        **labels,
        name: text if text.endswith("(table)") else f"{text} (table)".strip(),
    }


def table_title(wildcards):
    """The page's heading: the CSV's name, then its other labels ('Table 1 · model tiny · ...')."""
    labels = table_report("labels")(wildcards)
    names = [
        labels.pop(k).removesuffix(" (table)")
        for k in ("result", "table")
        if k in labels
    ]
    return " · ".join([*names, *(f"{k} {v}" for k, v in labels.items() if v != "")])


rule table_page:
    input:
        table="{table}.csv",
        code=code("table_page.py"),
    output:
        report(
            "{table}.csv.html",
            caption="../report/table_page.rst",
            category=table_report("category"),
            subcategory=table_report("subcategory"),
            labels=table_report("labels"),
        ),
    log:
        f"{LOGS}/tables/{{table}}.log",
    benchmark:
        f"{LOGS}/benchmarks/tables/{{table}}.tsv"
    conda:
        ENV
    params:
        title=table_title,
    script:
        "../scripts/table_page.py"
