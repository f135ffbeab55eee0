"""`.test/`: the toy configuration a user runs by hand (`snakemake --directory .test --cores 2`),
run here as the Snakemake workflow catalog's CI runs it: lint, then the run, in a temp copy."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import ROOT
from tests.workflow.conftest import SNAKEMAKE

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


def test_the_toy_configuration_is_lint_clean(dottest):
    result = catalog(dottest, "--lint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr


def test_the_toy_configuration_runs(dottest):
    result = catalog(dottest, "--cores", "2")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert (dottest / "results" / "scorecard.csv").exists()
    assert (dottest / "results" / "tiny" / "wikipedia" / "surface" / "special_tokens.csv").exists()
    assert "Nothing to be done" in catalog(dottest, "-n", "--cores", "1").stdout
