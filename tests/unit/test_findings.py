"""The report's opening summary: counts per model and weighting, the claims furthest from the papers."""

import pytest

from headatlas.claims import Claim, claims_table, verdict
from headatlas.report.findings import furthest, gap, summary_html
from headatlas.report.scorecard import collect


def write(path, claims):
    path.parent.mkdir(parents=True, exist_ok=True)
    claims_table(claims).to_csv(path, index=False)
    return path


def c(id_, source, holds, ours="x", paper="paper value"):
    return Claim(id_, source, f"claim {id_}", paper, ours, verdict(holds), "r")


@pytest.fixture
def long(tmp_path):
    results = tmp_path / "results"
    attention = [c("s.a", "S §1", True), c("t.a", "S §2", False, "50%", "10%"),
                 c("t.b", "S §2", False, "11%", "10%"), c("u.a", "S §3", True)]
    norm = [c("s.a", "S §1", False), c("t.a", "S §2", False, "40%", "10%"), c("t.b", "S §2", None)]
    paths = [write(results / "big" / "w" / "surface" / "paper_claims.csv", attention),
             write(results / "big" / "w" / "surface-norm" / "paper_claims.csv", norm),
             write(results / "helper" / "w" / "surface" / "paper_claims.csv", [c("s.a", "S §1", False, "1%")])]
    return collect(paths, results, ["big", "helper"])


def test_gap_of_the_first_numbers():
    assert gap("4 heads >50%", "0") == 1.0
    assert gap("10%", "50%") == pytest.approx(0.8)
    assert gap("about a third", "0.0%") == 0.0 and gap("0", "0") == 0.0  # nothing to compare


def test_the_furthest_claims_fail_in_most_views_one_per_section_first(long):
    # t.a and t.b fail in every judged view (t.b's norm view is not applicable: not judged), t.a
    # further from the paper (10% vs 50%); s.a fails in 2 of 3 views; u.a holds.
    found = furthest(long, 3)
    assert found["claim_id"].tolist() == ["t.a", "s.a", "t.b"]  # one per section (S §2, S §1) first
    assert found[["failed", "judged"]].values.tolist() == [[2, 2], [2, 3], [1, 1]]
    s_a = found.set_index("claim_id").loc["s.a"]  # big holds it under attention: helper's view shown
    assert (s_a["model"], s_a["weighting"], s_a["ours"]) == ("helper", "attention", "1%")
    assert furthest(long, 1)["claim_id"].tolist() == ["t.a"]


def test_the_summary_counts_and_sentences(long):
    page = summary_html(long, ["big", "helper"], "results", n=2)
    assert page.startswith('<div class="headatlas-scorecard-summary">')
    assert "4 claims of the papers" in page
    assert "<tr><td>big</td><td>norm</td><td>0</td><td>2</td><td>1</td></tr>" in page
    assert "<tr><td>helper</td><td>attention</td><td>0</td><td>1</td><td>0</td></tr>" in page
    assert page.count("<li>") == 2
    assert ("the paper has 10%; big (attention weighting) has 50% - does not hold in 2 of 2 judged views"
            in page)
    assert "app.showResultInfo('results/big/w/surface/paper_claims.csv')" in page


def test_a_summary_when_everything_holds(tmp_path):
    path = write(tmp_path / "results" / "m" / "w" / "surface" / "paper_claims.csv", [c("s.a", "S §1", True)])
    page = summary_html(collect([path], tmp_path / "results", ["m"]), ["m"], "results")
    assert "Every judged claim holds." in page and "<li>" not in page
