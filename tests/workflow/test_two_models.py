"""configs/two-models.yaml (issue 19): MiniLM and MPNet-base side by side, one command away.

Dry-run as a user would from a fresh clone, in a temporary working folder (never the
repository's own data/, results/, logs/ or .snakemake/): the MPNet folder does not exist yet,
so the plan must build it (rule build_model) before any MPNet job, and every MPNet job that
loads the model must have the folder as an input. The embedded default plans no build: `make
reproduce` stays without the 400 MB download.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

pytestmark = pytest.mark.workflow
MODEL_DIR = "data/models/mpnet-base"


def portable(source: Path, target: Path) -> Path:
    """``source`` with its relative mirror made absolute (read against the repository root)."""
    config = yaml.safe_load(source.read_text())
    if isinstance(config.get("mirror"), str) and not Path(config["mirror"]).is_absolute():
        config["mirror"] = str((ROOT / config["mirror"]).resolve())
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    return target


def dry_run(workdir: Path, config: Path) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    portable(ROOT / "config.yaml", workdir / "config.yaml")  # the Snakefile's `configfile:`
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
         "--directory", str(workdir), "-n", "--cores", "1", "--configfile", str(config),
         "--replace-workflow-config"], capture_output=True, text=True, cwd=workdir)
    assert result.returncode == 0, f"dry run failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def jobs(stdout: str) -> list[dict[str, str]]:
    """Each planned job's rule and its `input:`, `output:`, `wildcards:` lines."""
    found = []
    for block in re.split(r"^rule ", stdout, flags=re.M)[1:]:
        rule = block.split(":", 1)[0]
        fields = dict(re.findall(r"^    (input|output|wildcards): (.*)$", block, re.M))
        found.append({"rule": rule, **fields})
    return found


@pytest.fixture(scope="module")
def two_models(tmp_path_factory) -> list[dict[str, str]]:
    workdir = tmp_path_factory.mktemp("two-models")
    config = portable(ROOT / "configs" / "two-models.yaml", workdir / "two-models.yaml")
    return jobs(dry_run(workdir / "work", config))


def test_the_mpnet_folder_is_built_first(two_models):
    builds = [j for j in two_models if j["rule"] == "build_model"]
    assert len(builds) == 1 and builds[0]["output"] == MODEL_DIR
    assert builds[0]["input"].endswith("headatlas/data/mpnet-base.sha256")
    loading = [j for j in two_models if j["rule"] in ("extract", "extract_temp", "prepare_segments",
                                                       "prepare_documents", "gradients_importance", "activations")
               and "model=mpnet," in j.get("wildcards", "") + ","]
    assert {j["rule"] for j in loading} >= {"extract", "prepare_segments", "gradients_importance", "activations"}
    for job in loading:
        assert MODEL_DIR in job["input"].split(", "), job


def test_the_whole_atlas_runs_for_both_models_in_both_views(two_models):
    def planned(rule, model):
        return [j for j in two_models if j["rule"] == rule and f"model={model}," in j.get("wildcards", "") + ","]

    for model in ("minilm", "mpnet"):
        for rule in ("surface_table", "syntax_table1", "coref_accuracy", "clustering_structure",
                     "headtypes_cluster", "gradients_importance", "norm_shares", "rollout", "patterns_heads",
                     "activations"):
            assert planned(rule, model), f"{rule} not planned for {model}"
        views = {j["wildcards"].split("weighting=")[1].split(",")[0]
                 for j in planned("surface_table", model) if "weighting=" in j["wildcards"]}
        assert views == {"", "-norm"}, (model, views)
    # the held-out coreference windows run for both pretrained models
    assert {"minilm", "mpnet"} <= {j["wildcards"].split("model=")[1].split(",")[0]
                                   for j in two_models if j["rule"] == "extract"
                                   and "corpus=gum_windows" in j.get("wildcards", "")}
    for rule in ("scorecard", "compare_special_tokens", "compare_table1", "compare_headtypes", "compare_sinks",
                 "compare_activations"):
        compared = [j for j in two_models if j["rule"] == rule]
        assert len(compared) == 1, rule
        if rule != "scorecard":
            assert "/mpnet/" in compared[0]["input"] and "/minilm/" in compared[0]["input"], rule
    # context mixing runs on the taggers of finetune.models: MiniLM's (MPNet is not fine-tuned here)
    assert [j["wildcards"] for j in two_models if j["rule"] == "context_mixing"] == ["task_model=minilm_upos"]


def test_the_embedded_default_builds_no_model(tmp_path):
    config = portable(ROOT / "config.yaml", tmp_path / "embedded.yaml")
    planned = jobs(dry_run(tmp_path / "work", config))
    assert planned and not [j for j in planned if j["rule"] == "build_model"]
    assert not [j for j in planned if "data/models/" in j.get("input", "")]
