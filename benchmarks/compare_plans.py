"""Compare the dry-run plans of the shipped configurations in two clones, job by job.

    .venv/bin/python benchmarks/compare_plans.py OLD_CLONE NEW_CLONE

Each clone's own ``Snakefile`` plans each shipped configuration (``config.yaml``,
``configs/two-models.yaml``, ``configs/paper.yaml`` with the test fixtures in place of its
licensed data, ``.test/config.yaml``) from scratch in a temporary working folder, as
``tests/workflow/test_configs.py`` does. A job is its rule, wildcards, outputs, log, benchmark
and inputs; the code digests (``.snakemake/headatlas/code/*.sha256``, named after the scripts)
and the temporary folder's path are left out. Prints every job planned on one side only and
exits 1 on any difference (a refactoring must plan exactly the same work).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

FIELDS = ("input", "output", "log", "benchmark", "wildcards")
CODE_DIGEST = re.compile(r"\.snakemake/headatlas/code/\S+\.sha256")
SITE_PACKAGES = re.compile(r"\S*/site-packages/")  # the Python that ran the dry run


def configs(clone: Path, folder: Path) -> dict[str, Path]:
    """The shipped configurations of ``clone``, made portable (absolute mirror, fixture data)."""
    fixtures = clone / "tests" / "fixtures"
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, source in (("embedded", clone / "config.yaml"), ("two-models", clone / "configs" / "two-models.yaml"),
                         ("paper", clone / "configs" / "paper.yaml"), ("dottest", clone / ".test" / "config.yaml")):
        config = yaml.safe_load(source.read_text())
        mirror = config.get("mirror")
        if isinstance(mirror, str) and not Path(mirror).is_absolute():
            config["mirror"] = str((clone / mirror).resolve())
        if name == "paper":
            config["corpora"]["ptb_sd"]["path"] = str(fixtures / "formats" / "ptb_sd.conllx")
            config["corpora"]["conll2012"]["path"] = str(fixtures / "coref" / "conll")
            config["ablation"]["squad_path"] = str(fixtures / "formats" / "squad_v1.1_sample.json")
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        out[name] = path
    return out


def plan(clone: Path, config: Path, workdir: Path, directory: Path | None = None) -> set[tuple]:
    """Every job of a dry run: (rule, ((field, value), ...))."""
    workdir.mkdir(parents=True, exist_ok=True)
    where = directory or workdir
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(clone / "Snakefile"), "--directory", str(where),
         "-n", "--cores", "1", "--configfile", str(config), "--replace-workflow-config"],
        capture_output=True, text=True, cwd=where)
    if result.returncode != 0:
        raise SystemExit(f"{clone}: dry run of {config.name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    jobs = set()
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", result.stdout):
        head = re.match(r"(?:local)?rule (\w+):\n", block)
        if not head:
            continue
        fields = []
        for key in FIELDS:
            found = re.search(rf"^    {key}: (.*)$", block, re.M)
            if found:
                value = CODE_DIGEST.sub("<code>", found.group(1)).replace(str(where), "<workdir>")
                value = SITE_PACKAGES.sub("<site-packages>/", value.replace(str(clone), "<clone>"))
                fields.append((key, ", ".join(sorted(v.strip() for v in value.split(", ")))))
        jobs.add((head.group(1), tuple(fields)))
    return jobs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    different = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name in ("embedded", "two-models", "paper", "dottest"):
            plans = []
            for side, clone in (("old", args.old.resolve()), ("new", args.new.resolve())):
                config = configs(clone, tmp / side)[name]
                directory = None
                if name == "dottest":  # its committed inputs, without a run's outputs
                    directory = tmp / side / "dottest-folder"
                    shutil.copytree(clone / ".test", directory, ignore=shutil.ignore_patterns(
                        "results", "data", "logs", ".snakemake"))
                plans.append(plan(clone, config, tmp / side / name, directory))
            old, new = plans
            only_old, only_new = sorted(old - new), sorted(new - old)
            print(f"{name}: {len(old)} jobs old, {len(new)} new, {len(old & new)} identical")
            for tag, jobs in (("-", only_old), ("+", only_new)):
                for rule, fields in jobs:
                    print(f"  {tag} {rule}: {dict(fields)}")
            different += len(only_old) + len(only_new)
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
