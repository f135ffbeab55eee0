"""Claims as data: records, verdicts, and their CSV layout."""

import pytest

from headatlas.claims import (COLUMNS, Claim, beats, claims_table, depth_layers, depth_text, holds_if,
                              pct, read_claims, verdict)


def test_verdicts_and_round_trip(tmp_path):
    assert [verdict(True), verdict(False), verdict(None)] == ["holds", "does not hold", "not applicable"]
    claims = [Claim("a.b", "Clark et al. 2019 §3", "heads attend to [SEP]", ">50%", "62%", verdict(True),
                    "mean share > 50%", "6 layers"),
              Claim("a.c", "Clark et al. 2019 §3", "x, y", "1", "", verdict(None), "no data")]
    table = claims_table(claims)
    assert list(table.columns) == list(COLUMNS)
    path = tmp_path / "paper_claims.csv"
    table.to_csv(path, index=False)
    assert read_claims(path) == claims


def test_a_verdict_must_be_one_of_three():
    with pytest.raises(ValueError, match="verdict"):
        Claim("a", "s", "c", "p", "o", "maybe", "r")


def test_depth_layers_map_the_papers_ranges_by_relative_depth():
    assert depth_layers(6, 10, 12) == (6, 10)
    assert depth_layers(6, 10, 6) == (3, 5)  # 3.0, 5.0
    assert depth_layers(1, 4, 6) == (1, 2)  # 0.5 -> 1, 2.0
    assert depth_layers(9, 12, 6) == (5, 6)  # 4.5 -> 5, 6.0
    assert depth_layers(6, 10, 24) == (12, 20)
    assert depth_layers(1, 1, 2) == (1, 1)  # 0.17 -> 0, kept at layer 1
    assert depth_text(6, 10) == "depth 0.50-0.83 (layers 6-10 of 12)"
    assert depth_text(5, 5) == "depth 0.42 (layer 5 of 12)"


def test_beats_needs_the_margin_and_apart_intervals():
    assert beats(60.0, (55.0, 65.0), 50.0, (45.0, 54.0)) is True
    assert beats(60.0, (55.0, 65.0), 50.0, (45.0, 56.0)) is False  # intervals overlap
    assert beats(54.0, None, 50.0, None) is False  # 4 points < 5
    assert beats(55.0, None, 50.0, None) is True
    assert beats(float("nan"), None, 50.0, None) is None
    assert [holds_if(True), holds_if(None), holds_if(float("nan"))] == ["holds", "not applicable",
                                                                        "not applicable"]
    assert (pct(0.423), pct(0.4235, 1), pct(float("nan"))) == ("42%", "42.4%", "n/a")
