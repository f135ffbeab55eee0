"""The SLURM profile on a real cluster: the tiny workflow, submitted through ``sbatch``.

``tests/cluster/slurm.sh up`` brings up a single-node SLURM 22.05 (Debian packages, installed
with apt-get when missing; partitions ``cpu`` and ``gpu``, no accounting). The tiny configuration
then runs with ``--workflow-profile profiles/slurm`` as shipped, plus what a cluster without
accounting and a 2-core test machine need (:data:`OVERLAY`), extraction cut into two shards.
Every job must be submitted to SLURM and seen as finished, extraction must go to the ``gpu``
partition with one GPU per job (one job per shard: the profile leaves job arrays off), every
output must be built, and every CSV table it wrote must be the one the local run (the
``tiny_workflow`` fixture, one shard) wrote. It builds :data:`TARGETS`, not the whole DAG: each SLURM
job is a whole Snakemake process (about 7 CPU-s here), and these ~20 jobs take every path the
cluster adds (sharded extraction on the ``gpu`` partition, analyses reading two shards in both
weightings, corpora made by one job and read by another, a model fine-tuned in one job and read
in the next); the whole DAG of 98 jobs cost 6 minutes of ``make test`` for nothing more.

Skipped, with the reason, where the machine cannot run SLURM (not root, no apt-get, no network to
the Debian mirror, a real SLURM configuration in /etc/slurm) or when HEADATLAS_SLURM_TEST=0.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.workflow.conftest import snakemake, tiny_config, tiny_folder

pytestmark = [pytest.mark.workflow, pytest.mark.slurm]

SCRIPT = ROOT / "tests" / "cluster" / "slurm.sh"
LOCK = Path("/tmp/headatlas-slurm.lock")  # one cluster test at a time on a machine
SHARDS = 2
CORPORA = ("wikipedia", "tb")  # the corpora TARGETS extract
# What the SLURM run builds: an analysis of segments in both weightings, Table 1 of the treebank,
# and the fine-tuned tagger's head importance (documents and windows are corpora like these to
# SLURM, and the fused run checks their sharding).
TARGETS = ("results/tiny/wikipedia/surface/entropy.csv", "results/tiny/wikipedia/surface-norm/entropy.csv",
           "results/tiny/tb/syntax/table1.csv", "results/tiny_upos/importance/heads.csv")
# On top of profiles/slurm: a cluster without accounting (no -A; sacct answers nothing, so the
# status comes from squeue), and a small machine (first status check after 2 s instead of 40;
# one thread per extraction job on 2 cores). Successful jobs' SLURM logs are kept to be checked.
OVERLAY = ["--slurm-no-account", "--slurm-status-command", "squeue",
           "--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs",
           "--set-threads", "extract=1"]
# What differs between any two runs: wall-clock seconds and the run's own folder.
VOLATILE_COLUMNS = {"finetune/tiny/upos/curve.csv": ["seconds"]}
VOLATILE_ROWS = {"finetune/tiny/upos/metrics.csv": ["base_source", "train_seconds"]}


@pytest.fixture(scope="module")
def slurm_cluster():
    """A running single-node SLURM; stops afterwards only the daemons this fixture started."""
    if os.environ.get("HEADATLAS_SLURM_TEST") == "0":
        pytest.skip("HEADATLAS_SLURM_TEST=0")
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        up = subprocess.run(["bash", str(SCRIPT), "up"], capture_output=True, text=True, timeout=900)
        if up.returncode == 3:
            pytest.skip(f"no SLURM cluster here: {up.stdout.strip().removeprefix('cannot: ')}")
        if up.returncode != 0:
            pytest.fail(f"{SCRIPT} up failed ({up.returncode}):\n{up.stdout}\n{up.stderr}")
        started = re.search(r"^started: ?(.*)$", up.stdout, re.M).group(1).split()
        try:
            yield started
        finally:
            if started:
                subprocess.run(["bash", str(SCRIPT), "down", *started], timeout=300)


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster, tmp_path_factory):
    """The tiny workflow through sbatch, extraction in two shards: (folder, result, seconds)."""
    root = tmp_path_factory.mktemp("slurm")
    config = tiny_config(root)
    del config["models"]["tiny_roberta"]
    config["extraction"]["shards"] = SHARDS
    tiny_folder(root, config)
    start = time.monotonic()
    # the targets first: --set-threads (in OVERLAY) takes every word after it
    result = snakemake(root, *TARGETS, "--workflow-profile", "profiles/slurm", *OVERLAY, check=False)
    seconds = time.monotonic() - start
    print(f"\nSLURM run of the tiny workflow: {seconds:.0f} s")
    assert result.returncode == 0, f"the SLURM run failed:\n{result.stdout[-5000:]}\n{result.stderr[-5000:]}"
    return root, result, seconds


def log_text(result) -> str:
    return result.stdout + result.stderr


def planned_jobs(folder: Path) -> dict[str, int]:
    from tests.workflow.test_pipeline import planned_jobs as parse

    return parse(snakemake(folder, "-n", "--forceall", "--workflow-profile", "profiles/slurm", *TARGETS))


def slurm_jobs(text: str) -> list[dict]:
    """The run's jobs as SLURM sees them (MinJobAge keeps finished ones): id, partition, ..."""
    run_id = re.search(r"SLURM run ID: (\S+)", text).group(1)
    out = subprocess.run(["squeue", "--states=all", "--noheader", "--name", run_id,
                          "--format=%i|%P|%b|%C|%m|%l|%T|%k"], capture_output=True, text=True, check=True)
    keys = ["id", "partition", "gres", "cpus", "mem", "limit", "state", "comment"]
    return [dict(zip(keys, line.split("|"))) for line in out.stdout.splitlines() if line.strip()]


def test_every_job_went_through_sbatch(slurm_run):
    root, result, _ = slurm_run
    text = log_text(result)
    submitted = re.findall(r"Job \d+ has been submitted with SLURM jobid (\d+)", text)
    expected = planned_jobs(root)
    assert len(submitted) == sum(expected.values()), (len(submitted), expected)
    assert expected["extract"] == len(CORPORA) * SHARDS
    assert {"finetune_upos", "importance", "surface_table", "syntax_table1"} <= set(expected)
    assert "Error in rule" not in text and "SLURM-job" not in text  # no failed job, no retry
    jobs = slurm_jobs(text)
    assert jobs and all(job["state"] == "COMPLETED" for job in jobs), jobs


def test_extraction_ran_as_one_gpu_job_per_shard(slurm_run):
    root, result, _ = slurm_run
    text = log_text(result)
    # Arrays are off in the profile (plugin issues #447 and #473, see profiles/slurm/config.yaml).
    assert "Submitted array job" not in text
    n_extract = planned_jobs(root)["extract"]  # every (model, corpus, shard)
    logs = sorted((root / ".snakemake" / "slurm_logs" / "rule_extract").rglob("*.log"))
    assert len(logs) == n_extract, [p.relative_to(root).as_posix() for p in logs]
    extract = [job for job in slurm_jobs(text) if job["comment"].startswith("rule_extract_")]
    assert len(extract) == n_extract, extract
    assert {(j["partition"], j["gres"]) for j in extract} == {("gpu", "gres:gpu:1")}, extract
    others = [job for job in slurm_jobs(text) if not job["comment"].startswith("rule_extract_")]
    assert {j["partition"] for j in others} == {"cpu"}


def test_every_output_is_built(slurm_run, tiny_workflow):
    root, _, _ = slurm_run
    assert planned_jobs_without_force(root) == {}

    def outputs(folder: Path) -> set[str]:
        return {p.relative_to(folder).as_posix() for p in (folder / "results").rglob("*")
                if p.is_file() and "attention" not in p.parts
                and not p.name.endswith("report.html")}  # made by --report (tests of the local run), not a rule

    assert all((root / target).stat().st_size for target in TARGETS)
    assert outputs(root) <= outputs(tiny_workflow)
    for corpus in CORPORA:
        stores = sorted((root / "results" / "tiny" / corpus / "attention").glob("shard-*.h5"))
        assert [s.name for s in stores] == [f"shard-{i}.h5" for i in range(SHARDS)]
    assert (root / "results" / "finetune" / "tiny" / "upos" / "model" / "config.json").exists()


def planned_jobs_without_force(folder: Path) -> dict[str, int]:
    from tests.workflow.test_pipeline import planned_jobs as parse

    return parse(snakemake(folder, "-n", "--workflow-profile", "profiles/slurm", *TARGETS))


def comparable(path: Path, name: str):
    """The table without what differs between any two runs (times, the run's folder)."""
    import pandas as pd

    table = pd.read_csv(path, keep_default_na=False)
    table = table.drop(columns=VOLATILE_COLUMNS.get(name, []))
    if name in VOLATILE_ROWS:
        table = table[~table[table.columns[0]].isin(VOLATILE_ROWS[name])]
    return table.reset_index(drop=True)


def test_tables_are_the_local_runs(slurm_run, tiny_workflow):
    import pandas as pd

    root, _, _ = slurm_run
    tables = sorted(p.relative_to(root / "results").as_posix() for p in (root / "results").rglob("*.csv"))
    assert len(tables) > 8
    identical, compared = [], []
    for name in tables:
        local, cluster = tiny_workflow / "results" / name, root / "results" / name
        if local.read_bytes() == cluster.read_bytes():
            identical.append(name)
            continue
        # Sharding is exact (stores stream in corpus order): only times and paths may differ.
        assert name in VOLATILE_COLUMNS or name in VOLATILE_ROWS, \
            f"{name}: the SLURM run (2 shards) wrote another table than the local run (1 shard)"
        pd.testing.assert_frame_equal(comparable(local, name), comparable(cluster, name),
                                      obj=f"{name} (without times and paths)")
        compared.append(name)
    print(f"\n{len(identical)} tables byte-identical; equal as data: {compared}")
