"""README "Compare your models": its configuration and command dry-run as written; its snippet runs."""

from __future__ import annotations

import re
import shlex

import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT
from tests.workflow.conftest import snakemake
from tests.workflow.test_pipeline import planned_jobs

pytestmark = pytest.mark.workflow


def recipe() -> tuple[dict, list[str], str]:
    """The section's YAML configuration, its snakemake command's arguments and its Python snippet."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Compare your models", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    blocks = dict(re.findall(r"```(\w+)\n(.*?)```", section, re.S))
    command = shlex.split(blocks["bash"].strip())
    assert command[0] == ".venv/bin/snakemake"
    return yaml.safe_load(blocks["yaml"]), command[1:], blocks["python"]


def test_the_recipe_plans_surface_and_table1_for_every_model(tmp_path):
    config, args, _ = recipe()
    assert len(config["models"]) >= 6
    path = tmp_path / "compare.yaml"
    path.write_text(yaml.safe_dump(config))
    args = [str(path) if a == "compare.yaml" else a for a in args]
    args = [a for a in args if not a.startswith("--cores")] + ["--cores", "1"]
    jobs = planned_jobs(snakemake(ROOT, "-n", *[a for a in args if a != "all"]))
    n_models = len(config["models"])
    assert jobs["extract"] == n_models * 2  # wikipedia, ewt
    assert jobs["surface_table"] == n_models * 3  # relative position, special tokens, entropy
    assert jobs["syntax_table1"] == n_models
    assert not [rule for rule in jobs if rule.startswith(("gradients", "headtypes", "clustering", "probes"))]


def test_the_side_by_side_snippet_runs(tmp_path, monkeypatch, capsys):
    config, _, snippet = recipe()
    for i, model in enumerate(config["models"]):  # tables in the shape the rules write them
        surface = tmp_path / "results" / model / "wikipedia" / "surface"
        surface.mkdir(parents=True)
        pd.DataFrame({"layer": [1, 1], "head": [1, 2], "cls": [0.1, 0.3], "sep": [0.5, 0.2],
                      "punct": [0.1, 0.1 * i]}).to_csv(surface / "special_tokens.csv", index=False)
        syntax = tmp_path / "results" / model / "ewt" / "syntax"
        syntax.mkdir(parents=True)
        pd.DataFrame({"relation": ["all", None, "det"], "acc": [30.0 + i, None, 80.0],
                      "paper_relation": ["all", "prep", "det"]}).to_csv(syntax / "table1.csv", index=False)
    monkeypatch.chdir(tmp_path)
    with pd.option_context("display.width", 300, "display.max_columns", 20):
        exec(compile(snippet, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "deberta-v3-base" in out and "det" in out and "35.0" in out  # the sixth model's 'all'
