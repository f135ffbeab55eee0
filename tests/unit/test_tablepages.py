"""Table pages find the CSV's declaration and fill its report entry with the path's wildcards."""

from types import SimpleNamespace

import pytest

from headatlas.report.tablepages import TablePages, pattern_regex


def test_a_page_gets_its_csvs_category_and_labels():
    pages = TablePages([
        ("results/{model}/{corpus}/syntax{weighting}/table1.csv",
         {"category": "Syntax", "subcategory": "{model}", "caption": "c.rst",
          "labels": lambda w: {"model": "{model}", "result": "Table 1", "weighting": w.weighting or "attention"}}),
        ("results/{model}/patterns/shares.csv",
         {"category": "Patterns", "subcategory": "{model}", "caption": "c.rst",
          "labels": {"model": "{model}", "result": "shares (table)"}})])
    wildcards = SimpleNamespace(table="results/tiny/tb/syntax-norm/table1")
    assert pages.field("subcategory")(wildcards) == "tiny"
    assert pages.field("labels")(wildcards) == {"model": "tiny", "result": "Table 1 (table)", "weighting": "-norm"}
    assert pages.title(wildcards) == "Table 1 · model tiny · weighting -norm"
    shares = SimpleNamespace(table="results/m/patterns/shares")
    assert pages.field("labels")(shares)["result"] == "shares (table)"  # not marked twice
    with pytest.raises(ValueError, match="no result.*as_table"):
        pages.entry("results/m/other.csv")


def test_a_repeated_wildcard_must_match_the_same_text():
    regex = pattern_regex("r/{model}/x/{model}.csv")
    assert regex.fullmatch("r/a/x/a.csv") and not regex.fullmatch("r/a/x/b.csv")
