"""Dry runs of the repository's own workflow in a temporary working folder (issue 24).

A test must never read or write the repository's run state (``results/``, ``data/corpora/``,
``logs/``, ``.snakemake/``): after ``make reproduce`` a dry run in the repository root plans
nothing, and a run there would mix test outputs into the user's results. The tests that plan
the shipped configurations therefore run the repository's ``Snakefile`` with ``--directory``
pointing at a temporary folder that holds only the configuration files it reads.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.conftest import ROOT
from tests.workflow.conftest import SNAKEMAKE

# The folders a run writes into (relative to the working directory).
RUN_STATE = ("results", "data/corpora", "logs", ".snakemake")


def portable_config(source: Path, target: Path) -> Path:
    """Write ``source`` to ``target`` with a relative ``mirror:`` made absolute.

    A relative mirror (``../shared/data``) is read against the working directory; resolved
    against the repository root it names the same folder the user's run reads.
    """
    config = yaml.safe_load(Path(source).read_text())
    mirror = config.get("mirror")
    if isinstance(mirror, str) and not Path(mirror).is_absolute():
        config["mirror"] = str((ROOT / mirror).resolve())
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    return target


def work_folder(folder: Path) -> Path:
    """``folder`` as a working directory for the repository's workflow: its ``config.yaml``
    (the ``configfile:`` the Snakefile reads from the working directory), nothing else."""
    folder.mkdir(parents=True, exist_ok=True)
    portable_config(ROOT / "config.yaml", folder / "config.yaml")
    return folder


def snakemake_in(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run the repository's Snakefile with ``workdir`` as the working directory."""
    result = subprocess.run(SNAKEMAKE + ["--snakefile", str(ROOT / "Snakefile"),
                                         "--directory", str(workdir), *args],
                            capture_output=True, text=True, cwd=workdir)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result
