"""benchmarks/compare_tables.py: the check that a change leaves every table of a run unchanged."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "compare_tables.py"
spec = importlib.util.spec_from_file_location("compare_tables", SCRIPT)
compare_tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_tables)


def write(root: Path, name: str, text: str) -> None:
    path = root / "results" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def runs(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for root, seconds in ((old, 12.5), (new, 13.25)):
        write(root, "m/heads.csv", "layer,head,score\n0,0,0.125\n0,1,0.25\n")
        write(root, "m/probes/run.csv", f"probe,uas,train_seconds\nattn,71.5,{seconds}\n")
        write(root, "m/summary.csv", f"quantity,value\nsource,{root}/.venv/corpus.json\n")
        write(root, "m/metrics.csv", f"quantity,value\naccuracy,96.5\ntrain_seconds,{seconds}\n")
    return old / "results", new / "results"


def test_equal_runs_pass_with_timings_and_clone_paths_apart(runs, capsys):
    result = compare_tables.compare(*runs, set(compare_tables.TIMING_COLUMNS))
    # The summary's path differs only by where each clone sits; the probe run (a column) and the
    # metrics (a row of a long table) only in their timings.
    assert result == {"identical": ["m/heads.csv", "m/summary.csv"],
                      "equal_ignoring": ["m/metrics.csv", "m/probes/run.csv"], "different": [], "missing": []}
    assert compare_tables.main([str(p) for p in runs]) == 0
    assert "2 identical, 2 equal except seconds, train_seconds, 0 different" in capsys.readouterr().out


def test_a_changed_digit_is_reported_with_where_it_is(runs, capsys):
    old, new = runs
    (new / "m/heads.csv").write_text("layer,head,score\n0,0,0.125\n0,1,0.2500001\n")
    result = compare_tables.compare(old, new, set(compare_tables.TIMING_COLUMNS))
    assert result["different"] == [("m/heads.csv", ["line 3, column score: 0.25 -> 0.2500001"])]
    assert compare_tables.main([str(old), str(new)]) == 1
    assert "DIFFERENT m/heads.csv" in capsys.readouterr().out


def test_a_timing_column_counts_when_not_ignored(runs):
    result = compare_tables.compare(*runs, set())
    assert [name for name, _ in result["different"]] == ["m/metrics.csv", "m/probes/run.csv"]


def test_a_table_on_one_side_only_fails(runs, capsys):
    old, new = runs
    (old / "m/heads.csv").unlink()
    assert compare_tables.main([str(old), str(new)]) == 1
    assert f"MISSING m/heads.csv (only in {new})" in capsys.readouterr().out
