"""Issue 24: the tests neither depend on nor touch the repository's own run state.

A user runs ``make reproduce`` and then ``make test`` in the same clone. The guard below builds
that situation in a temporary copy of the working tree: a finished run of the embedded
configuration (every output a placeholder, marked up to date by ``snakemake --touch``, so that a
dry run there plans nothing, with ``logs/`` and ``.snakemake/`` as a run leaves them). It then
runs the tests that plan the shipped configurations inside that copy and checks that they pass
and that ``results/``, ``data/corpora/``, ``logs/`` and ``.snakemake/`` are unchanged, byte for
byte: the same ``git status --porcelain --ignored`` and the same files, sizes, times and contents.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.workflow.conftest import SNAKEMAKE
from tests.workflow.isolation import RUN_STATE

pytestmark = pytest.mark.workflow

# The test files that plan the workflow's shipped configurations (test_configs and test_compare
# once did so in the repository root).
GUARDED = ("tests/workflow/test_configs.py", "tests/workflow/test_compare.py", "tests/workflow/test_two_models.py",
           "tests/workflow/test_pipeline.py::test_lint_is_clean")


def copy_working_tree(target: Path) -> Path:
    """The repository's tracked and untracked-but-not-ignored files (as they are on disk, edits
    included), copied into ``target``, which becomes a git repository of its own."""
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, listing.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is skipped
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    return target


def in_root(root: Path, *args: str) -> subprocess.CompletedProcess:
    """Snakemake in the copy's root, as ``make reproduce`` runs it in a clone."""
    result = subprocess.run(SNAKEMAKE + ["--snakefile", str(root / "Snakefile"), "--directory", str(root),
                                         "--cores", "1", *args],
                            capture_output=True, text=True, cwd=root)
    assert result.returncode == 0, f"snakemake {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


def finish_a_run(root: Path) -> None:
    """Leave ``root`` as a finished embedded run leaves it, without running a job: every output
    the dry run lists as missing is written as a placeholder, then ``--touch`` marks them up to
    date in the DAG's order (writing ``logs/`` and ``.snakemake/``). Temporary outputs (helper
    stores, probe caches) stay absent, as after a real run."""
    summary = in_root(root, "--summary").stdout
    for line in summary.splitlines():
        fields = line.split("\t")
        if len(fields) >= 5 and fields[4] == "missing":
            path = root / fields[0]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("placeholder of a finished run\n")
    in_root(root, "--touch")


def run_state(root: Path) -> tuple[str, list[tuple]]:
    """``git status --porcelain --ignored`` of the run-state folders, and every entry below them
    with its size, modification time and (for files) the sha256 of its content."""
    status = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all", "--",
                             *RUN_STATE], cwd=root, capture_output=True, check=True).stdout
    entries = []
    for folder in RUN_STATE:
        for path in sorted((root / folder).rglob("*")):
            stat = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
            entries.append((str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns, digest))
    return status.decode(), entries


def test_tests_pass_after_a_finished_run_and_leave_it_untouched(tmp_path):
    root = copy_working_tree(tmp_path / "clone")
    finish_a_run(root)
    # The state issue 24 found: in the root, a dry run has nothing left to plan.
    assert "Nothing to be done" in in_root(root, "-n").stdout
    before = run_state(root)
    assert before[0].count("!! results/") > 100 and "!! .snakemake/" in before[0]
    assert all((root / folder).is_dir() for folder in RUN_STATE)

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *GUARDED],
                            cwd=root, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]

    after = run_state(root)
    assert after[0] == before[0], "git status --porcelain --ignored of the run state changed"
    changed = sorted(set(before[1]) ^ set(after[1]))
    assert not changed, f"the tests touched the run state: {changed[:10]}"
