"""The workflow imported as a Snakemake module by a wrapper workflow (issue: standard workflow).

The wrapper lives in a temp folder that holds no copy of the workflow: it names the repository's
``workflow/Snakefile`` and passes its own config (the tiny configuration). Every file of its whole
plan (a dry run of ``all``: outputs, logs, benchmarks) lies where its config says; a real run of
:data:`TARGETS` (every kind of corpus, both model families, both weightings) writes there, and its
tables are the direct run's (``tiny_workflow``). Only these targets run: a module's rules are the
workflow's own, and the direct run builds them all (the whole DAG twice cost ~4 min of CI).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.workflow.conftest import snakemake, tiny_config
from tests.workflow.test_pipeline import planned_jobs
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


# Treebank, documents and segments prepared; both families extracted; syntax, coreference and
# the surface analyses in both weightings.
TARGETS = ["out/tiny/tb/syntax/table1.csv", "out/tiny/tb_docs/coref/accuracy.csv",
           "out/tiny_roberta/wikipedia/surface/entropy.csv", "out/tiny_roberta/wikipedia/surface-norm/entropy.csv"]
FOLDERS = ("prepared/", "run-logs/", "out/")


@pytest.fixture(scope="module")
def module_run(tiny_workflow, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The wrapper folder after a real run of TARGETS, and the dry run of its whole plan."""
    root = tmp_path_factory.mktemp("wrapper")
    config = tiny_config(tiny_workflow)  # the direct run's models and treebank, by absolute path
    config.update({"data": "prepared", "logs": "run-logs", "results": "out"})
    (root / "my-config.yaml").write_text(yaml.safe_dump(config))
    (root / "Snakefile").write_text(WRAPPER.format(snakefile=ROOT / "workflow" / "Snakefile"))
    plan = snakemake(root, "--cores", "2", "-n", "all")
    snakemake(root, "--cores", "2", *TARGETS)
    return root, plan


def planned_files(plan: str) -> list[str]:
    """Every output, log and benchmark file a dry run lists."""
    lines = re.findall(r"^\s+(?:output|log|benchmark): (.+)$", plan, re.M)
    return [name.strip() for line in lines for name in line.split(",")]


def test_the_whole_plan_follows_the_config(module_run):
    _, plan = module_run
    rules = set(planned_jobs(plan))
    assert {"extract", "surface_table", "syntax_scores", "coref_mentions", "scorecard", "atlas_page"} <= rules
    files = planned_files(plan.stdout)
    assert len(files) > 500
    assert [name for name in files if not name.startswith(FOLDERS)] == []


def test_pathvars_relocate_a_module_as_the_catalog_does(tiny_workflow, tmp_path):
    """Snakemake 9's pathvars (`module ...: pathvars: {results, logs, resources}`) decide where
    every file of the plan lands when the config leaves `results`, `logs`, `data` at their
    defaults; a config key given explicitly wins over its pathvar."""
    (tmp_path / "my-config.yaml").write_text(yaml.safe_dump(tiny_config(tiny_workflow)))
    pathvars = '    pathvars:\n        results="pv-out",\n        logs="pv-logs",\n        resources="pv-data",\n'
    wrapper = WRAPPER.format(snakefile=ROOT / "workflow" / "Snakefile").replace("\n\n\nuse rule", "\n" + pathvars + "\n\nuse rule")
    (tmp_path / "Snakefile").write_text(wrapper)
    files = planned_files(snakemake(tmp_path, "--cores", "1", "-n", "all").stdout)
    assert len(files) > 500 and [f for f in files if not f.startswith(("pv-out/", "pv-logs/", "pv-data/"))] == []
    assert any(f.startswith("pv-data/corpora/") for f in files)
    config = {**tiny_config(tiny_workflow), "results": "mine"}
    (tmp_path / "my-config.yaml").write_text(yaml.safe_dump(config))
    files = planned_files(snakemake(tmp_path, "--cores", "1", "-n", "all").stdout)
    assert {f.split("/")[0] for f in files} == {"mine", "pv-logs", "pv-data"}


def test_paths_follow_the_config(module_run):
    root, _ = module_run
    assert (root / "prepared" / "corpora" / "tb.jsonl").exists()
    assert list((root / "run-logs" / "benchmarks").rglob("*.tsv"))
    assert all((root / target).exists() for target in TARGETS)
    assert not any((root / name).exists() for name in ("data", "logs", "results"))


def test_tables_are_the_direct_runs(module_run, tiny_workflow):
    root, _ = module_run
    direct = tiny_workflow / "results"
    tables = sorted(p.relative_to(root / "out").as_posix() for p in (root / "out").rglob("*.csv"))
    assert len(tables) >= 10
    for name in tables:
        ours, theirs = root / "out" / name, direct / name
        if ours.read_bytes() == theirs.read_bytes():
            continue
        # Only times and the run's folder may differ (the same exemptions as the SLURM run).
        assert name in VOLATILE_COLUMNS or name in VOLATILE_ROWS, f"{name} differs"
        import pandas as pd

        pd.testing.assert_frame_equal(comparable(theirs, name), comparable(ours, name), obj=name)


# The workflow from a release, as the catalog deploys it: ``github("<owner>/headatlas",
# path="workflow/Snakefile", tag=...)``. Offline, the same kind of source: a git repository with a
# tag (``gitfile``), whose files Snakemake reads from git, not from a folder (issue 38: the
# workflow stopped at its first line, Path(<a git source>)). The library is the installed package.
RELEASED = """\
from snakemake.sourcecache import LocalGitFile

# Snakemake 9's gitfile() joins a script's path given as a str only (github() takes either)
_join = LocalGitFile.join
LocalGitFile.join = lambda self, path: _join(self, str(path))


configfile: "my-config.yaml"


module headatlas:
    snakefile:
        gitfile("{repo}", path="workflow/Snakefile", tag="v0.0.0-test")
    config:
        config


use rule * from headatlas
"""


def test_the_workflow_runs_as_a_module_from_a_tagged_git_source(tiny_workflow, tmp_path):
    from tests.workflow.conftest import copy_workflow

    repo = tmp_path / "repo"
    repo.mkdir()
    copy_workflow(repo)  # the working tree's workflow, committed and tagged
    shutil.rmtree(repo / "src")  # a release's user has the package installed, not its source
    git = ["git", "-C", str(repo), "-c", "user.name=test", "-c", "user.email=test@example.org"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "release"], ["tag", "v0.0.0-test"]):
        subprocess.run(git + args, check=True, capture_output=True)
    root = tmp_path / "wrapper"
    root.mkdir()
    config = tiny_config(tiny_workflow)
    (root / "my-config.yaml").write_text(yaml.safe_dump(config))
    (root / "Snakefile").write_text(RELEASED.format(repo=repo))
    plan = snakemake(root, "--cores", "1", "-n", "all")
    assert {"extract", "syntax_scores", "scorecard", "atlas_page"} <= set(planned_jobs(plan))
    target = "results/tiny/tb/syntax/table1.csv"
    snakemake(root, "--cores", "2", target)
    assert (root / target).read_bytes() == (tiny_workflow / target).read_bytes()
