"""Fused mode (issue 32) gives the store run's tables, in three shards, with no map stored.

The tiny configuration runs again with ``extraction.mode: fused`` and ``extraction.shards: 3``,
its BERT alone (the fine-tuning, ablation and importance left out: they run their own forward
passes, the same in both modes; the second family too: the forward pass and the analyses are
the same code for every family, and tests/unit/test_fused.py checks each analysis's states).
Every table both runs write must be identical, as written, to the store run's (tiny_workflow:
one shard, store mode); the scorecard's verdicts too.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from headatlas.store.states import States
from tests.workflow.conftest import snakemake, tiny_config, tiny_folder

pytestmark = pytest.mark.workflow
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "compare_tables.py"
_spec = importlib.util.spec_from_file_location("compare_tables", SCRIPT)
compare_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_tables)


def fused_config(root: Path) -> dict:
    config = tiny_config(root)
    del config["models"]["tiny_roberta"]
    config["extraction"].update(mode="fused", shards=3, exemplars=2)
    config["finetune"]["models"] = []
    config["ablation"]["model"] = None
    config["plots"]["formats"] = ["svg"]
    return config


@pytest.fixture(scope="module")
def fused_workflow(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fused")
    root = tiny_folder(folder, fused_config(folder))
    snakemake(root, "--cores", "2")
    return root


def test_fused_tables_equal_the_store_run(fused_workflow, tiny_workflow):  # the fused run first
    store, fused = tiny_workflow / "results", fused_workflow / "results"
    found = compare_tables.compare(store, fused, ignored={"seconds", "train_seconds"})
    both = found["identical"] + [n for n, _ in found["different"]]
    assert len(both) > 40  # every analysis of the maps is among them
    scorecards = {"scorecard.csv", "scorecard_long.csv"}
    # tables of every model side by side (compare/): the fused run's model's rows are the store run's
    across = [n for n, _ in found["different"] if n.startswith("compare/")]
    different = [(n, d) for n, d in found["different"] if n not in scorecards and n not in across]
    assert not different, "\n".join(f"{n}: {d}" for n, d in different)
    for name in across:
        ours, theirs = (pd.read_csv(r / name, dtype=str, keep_default_na=False) for r in (store, fused))
        ours = ours[ours["model"].isin(set(theirs["model"]))].reset_index(drop=True)
        pd.testing.assert_frame_equal(ours, theirs, obj=name)
    # the scorecards have the left-out task model's claims too: every claim of the models both
    # runs have is the same, value and verdict
    ours, theirs = (pd.read_csv(r / "scorecard_long.csv", dtype=str, keep_default_na=False)
                    for r in (store, fused))
    assert set(theirs["model"]) == {"tiny"} and len(theirs) > 50
    key = ["model", "id", "where"]
    pd.testing.assert_frame_equal(ours.set_index(key).loc[theirs.set_index(key).index],
                                  theirs.set_index(key))
    # what only the store run has: the claims of the left-out ablation, importance and mixing
    shared = ours[ours["model"].isin(set(theirs["model"]))]
    only = shared.set_index(key).index.difference(theirs.set_index(key).index)
    assert set(only.get_level_values("where")) <= {"ablation", "importance", "mixing"}


def test_no_map_is_stored_but_the_exemplars(fused_workflow):
    results = fused_workflow / "results" / "tiny" / "wikipedia"
    assert not list(results.glob("attention/shard-*.h5"))
    exemplars = sorted(results.glob("attention/exemplars-*.h5"))
    states = sorted(results.glob("states/shard-*.h5"))
    assert len(exemplars) == len(states) == 3
    with States(states[0]) as first:
        keys = first.keys
    assert "surface_table:analysis=entropy,weighting=-norm" in keys
    assert "clustering_distances:weighting=" in keys
    # every record's length, counted once for the three shards, is what they extracted
    from headatlas.store.lengths import read_lengths

    corpus = fused_workflow / "data" / "corpora" / "wikipedia" / "tiny.jsonl"
    n_records = len(corpus.read_text().splitlines())
    lengths = read_lengths(results / "states" / "lengths.h5", n_records)
    extracted = {}
    for path in states:
        with States(path) as shard:
            extracted.update(zip(shard.example_index.tolist(), shard.lengths.tolist()))
    config = yaml.safe_load((fused_workflow / "config.yaml").read_text())
    fits = (lengths > 0) & (lengths <= config["extraction"]["max_length"])
    assert sorted(extracted) == np.flatnonzero(fits).tolist()
    assert all(lengths[i] == n for i, n in extracted.items())


def test_an_option_change_reruns_the_extraction(fused_workflow):
    """The limit README states: no store to read again, so the states are made again."""
    config = yaml.safe_load((fused_workflow / "config.yaml").read_text())
    config.setdefault("clustering", {})["smoothing"] = 0.01  # the default is 0.001
    changed = fused_workflow / "changed.yaml"
    changed.write_text(yaml.safe_dump(config))
    plan = snakemake(fused_workflow, "-n", "--cores", "1", "--configfile", str(changed)).stdout
    assert "fused_extract" in plan and "clustering_distances" in plan
    assert "corpus_lengths" not in plan  # the records' lengths do not depend on an analysis
