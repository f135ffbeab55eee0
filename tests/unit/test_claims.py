"""Claims as data: records, verdicts, and their CSV layout."""

import pytest

from headatlas.claims import COLUMNS, Claim, claims_table, read_claims, verdict


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
