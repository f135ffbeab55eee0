"""docs/configuration.md "Compare your models": its configuration and command dry-run as written
(in a temporary working folder, never the repository's own run state); its snippet runs."""

from __future__ import annotations

import re
import shlex

import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT
from tests.workflow.isolation import portable_config, snakemake_in, work_folder
from tests.workflow.test_pipeline import planned_jobs

pytestmark = pytest.mark.workflow
DOC = ROOT / "docs" / "configuration.md"


def recipe() -> tuple[dict, list[str], str]:
    """The section's YAML configuration, its snakemake command's arguments and its Python snippet."""
    text = DOC.read_text()
    section = text.split("## Compare your models\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    blocks = dict(re.findall(r"```(\w+)\n(.*?)```", section, re.S))
    command = shlex.split(blocks["bash"].strip())
    assert command[0] == ".venv/bin/snakemake"
    return yaml.safe_load(blocks["yaml"]), command[1:], blocks["python"]


def test_the_recipe_plans_surface_and_table1_for_every_model(tmp_path):
    config, args, _ = recipe()
    assert len(config["models"]) >= 6
    (tmp_path / "as_written.yaml").write_text(yaml.safe_dump(config))
    path = portable_config(tmp_path / "as_written.yaml", tmp_path / "compare.yaml")
    args = [str(path) if a == "compare.yaml" else a for a in args]
    args = [a for a in args if not a.startswith("--cores")] + ["--cores", "1"]
    jobs = planned_jobs(snakemake_in(work_folder(tmp_path / "work"), "-n", *[a for a in args if a != "all"]))
    n_models = len(config["models"])
    # every model under its weightings (default: attention and norm; attention only where set)
    views = sum(len(spec.get("weightings", ["attention", "norm"])) for spec in config["models"].values())
    assert views == 2 * n_models  # every family of the recipe has a norm layout
    assert jobs["extract"] == n_models * 2  # wikipedia, ewt
    assert jobs["surface_table"] == views * 3  # relative position, special tokens, entropy
    assert jobs["syntax_table1"] == views
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
        exec(compile(snippet, str(DOC), "exec"), {})
    out = capsys.readouterr().out
    assert "deberta-v3-base" in out and "det" in out and "35.0" in out  # the sixth model's 'all'
