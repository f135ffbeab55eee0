"""The workflow imported as a Snakemake module by a wrapper workflow (issue: standard workflow).

The wrapper lives in a temp folder that holds no copy of the workflow: it names the repository's
``workflow/Snakefile``, passes its own config, and runs the tiny configuration. Its tables must
be the direct run's (``tiny_workflow``); its data, logs and results land where its config says.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.workflow.conftest import SNAKEMAKE, tiny_config
from tests.workflow.test_slurm import VOLATILE_COLUMNS, VOLATILE_ROWS, comparable

pytestmark = pytest.mark.workflow

WRAPPER = """\
configfile: "my-config.yaml"


module headatlas:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from headatlas
"""


@pytest.fixture(scope="module")
def module_run(tiny_workflow, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wrapper")
    config = tiny_config(tiny_workflow)  # the direct run's models and treebank, by absolute path
    config.update({"data": "prepared", "logs": "run-logs", "results": "out"})
    (root / "my-config.yaml").write_text(yaml.safe_dump(config))
    (root / "Snakefile").write_text(WRAPPER.format(snakefile=ROOT / "workflow" / "Snakefile"))
    result = subprocess.run(SNAKEMAKE + ["--cores", "2", "all"], cwd=root, capture_output=True,
                            text=True)
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return root


def test_paths_follow_the_config(module_run):
    assert (module_run / "prepared" / "corpora" / "tb.jsonl").exists()
    assert list((module_run / "run-logs" / "benchmarks").rglob("*.tsv"))
    assert (module_run / "out" / "scorecard.csv").exists()
    assert not any((module_run / name).exists() for name in ("data", "logs", "results"))


def test_tables_are_the_direct_runs(module_run, tiny_workflow):
    direct = tiny_workflow / "results"
    tables = sorted(p.relative_to(direct).as_posix() for p in direct.rglob("*.csv"))
    assert len(tables) > 30
    for name in tables:
        ours, theirs = module_run / "out" / name, direct / name
        assert ours.exists(), f"the module run did not write {name}"
        if ours.read_bytes() == theirs.read_bytes():
            continue
        # Only times and the run's folder may differ (the same exemptions as the SLURM run).
        assert name in VOLATILE_COLUMNS or name in VOLATILE_ROWS, f"{name} differs"
        import pandas as pd

        pd.testing.assert_frame_equal(comparable(theirs, name), comparable(ours, name), obj=name)
