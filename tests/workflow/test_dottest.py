"""`.test/`: the toy configuration a user runs by hand (`snakemake --directory .test --cores 2`),
checked as the Snakemake workflow catalog's CI checks it: lint, then the run.

The run is the workflow tests' own: `tiny_config` is `.test/config.yaml` plus a second family
and a few options, on `.test`'s model and corpora (tests/workflow/conftest.py). So the toy
configuration runs when every job it plans is one the tiny run planned, ran and left nothing
to do for (test_pipeline.py); planned here from a temp copy of `.test`, in seconds.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT
from tests.workflow.conftest import SNAKEMAKE, snakemake

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def dottest(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dottest") / ".test"
    shutil.copytree(ROOT / ".test", folder, ignore=shutil.ignore_patterns(
        "results", "data", "logs", ".snakemake"))
    return folder


def catalog(folder, *args):
    return subprocess.run(SNAKEMAKE + ["--snakefile", str(ROOT / "workflow" / "Snakefile"),
                                       "--directory", str(folder), *args],
                          capture_output=True, text=True)


def planned_outputs(stdout: str) -> set[str]:
    """Every output of every job of a dry run."""
    return {path for line in re.findall(r"^    output: (.*)$", stdout, re.M) for path in line.split(", ")}


def test_the_toy_configuration_is_lint_clean(dottest):
    result = catalog(dottest, "--lint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr


def test_every_job_of_the_toy_configuration_is_one_the_tiny_run_ran(dottest, tiny_workflow):
    result = catalog(dottest, "-n", "--forceall", "--cores", "2")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    toy = planned_outputs(result.stdout)
    assert {"results/scorecard.csv", "results/tiny/wikipedia/surface/special_tokens.csv"} <= toy
    ran = planned_outputs(snakemake(tiny_workflow, "-n", "--forceall", "--cores", "2").stdout)
    assert toy <= ran, sorted(toy - ran)
