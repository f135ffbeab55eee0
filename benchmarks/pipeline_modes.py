#!/usr/bin/env python
"""Benchmark: store against fused mode as the pipeline runs them, job by job (issue 32).

Usage (from the repository root)::

    .venv/bin/python benchmarks/pipeline_modes.py [--work /tmp/pipeline_modes] [--segments 10000]

``benchmarks/fused.py`` times both paths inside one process each. Here Snakemake runs them as a
user's run does: every job a process of its own, one core, the embedded default config cut to
MiniLM and its per-head statistics on Wikipedia (the 13 jobs of ``fused.py``'s ``store_stats``
and ``fused_stats``: the surface analyses, sinks and head-type features in both views, patterns,
norm shares, rollout; clustering's distances left out). For each mode, in a folder of its own
with a copy of the workflow: the corpus is prepared first, untimed; then one ``snakemake
--cores 1`` builds those 13 jobs' outputs (store: ``extract`` and the 13 jobs reading the store;
fused: ``corpus_lengths``, ``fused_extract`` and the 13 jobs reading the states), timed as the
CPU seconds (user + system) of Snakemake and every job it ran. Printed: both totals, their
ratio, and each rule's summed wall seconds from the runs' ``logs/benchmarks/``.
"""

from __future__ import annotations

import argparse
import csv
import resource
import shutil
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the repository root: the workflow tests' helpers
    sys.path.insert(0, str(ROOT))
# the per-head statistics' jobs on Wikipedia (their first output names each job)
RULES = ("surface_table", "sink_rate", "headtypes_features", "patterns_heads", "norm_shares", "rollout")
ANALYSES = ["surface", "sinks", "headtypes", "patterns", "norms"]  # rollout runs with norms


def config(mode: str, segments: int | None = None) -> dict:
    """The embedded default, cut to MiniLM's per-head statistics, in ``mode`` (and on
    ``segments`` Wikipedia segments: the default's 1,000 when None)."""
    found = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    if segments is not None:
        found["corpora"]["wikipedia"]["n_segments"] = segments
    found["mirror"] = str((ROOT / found["mirror"]).resolve())
    found["models"] = {"minilm": {**found["models"]["minilm"], "analyses": ANALYSES}}
    found["finetune"]["models"], found["ablation"]["model"] = [], None
    found["headtypes"]["compare"], found["probes"]["model"], found["probes"]["random_model"] = [], None, None
    found["extraction"]["mode"] = mode
    return found


def folder(work: Path, mode: str, segments: int | None) -> Path:
    from tests.workflow.conftest import copy_workflow

    root = work / mode
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    copy_workflow(root)
    (root / "config.yaml").write_text(yaml.safe_dump(config(mode, segments)))
    return root


def snakemake(root: Path, *args: str) -> str:
    """Snakemake's output in ``root`` (the workflow tests' runner: it raises on failure)."""
    from tests.workflow.conftest import snakemake as run_snakemake

    out = run_snakemake(root, *args)
    return out.stdout + out.stderr


def targets(root: Path) -> list[str]:
    """The first output of every job of :data:`RULES` on Wikipedia, from a dry run."""
    plan, rule, found = snakemake(root, "-n", "--cores", "1", "--until", *RULES), None, []
    for line in plan.splitlines():
        if line.startswith("rule "):
            rule = line.split()[1].rstrip(":")
        elif line.strip().startswith("output:") and rule in RULES:
            first = line.split("output:", 1)[1].split(",")[0].strip()
            if "/wikipedia/" in first:
                found.append(first)
    return sorted(found)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def by_rule(root: Path) -> Counter:
    """Summed wall seconds per rule group, from the run's ``logs/benchmarks/`` (first folder)."""
    seconds = Counter()
    for path in (root / "logs" / "benchmarks").rglob("*.tsv"):
        with open(path) as handle:
            row = next(csv.DictReader(handle, delimiter="\t"))
        seconds[path.relative_to(root / "logs" / "benchmarks").parts[0]] += float(row["s"])
    return seconds


def run(work: Path, mode: str, segments: int | None) -> dict:
    root = folder(work, mode, segments)
    wanted = targets(root)
    if len(wanted) != 13:
        raise SystemExit(f"{mode}: expected the 13 jobs' outputs, planned {len(wanted)}: {wanted}")
    snakemake(root, "--cores", "1", "data/corpora/wikipedia/minilm.jsonl")  # untimed
    prepared = by_rule(root)
    start = children_cpu()
    snakemake(root, "--cores", "1", *wanted)
    cpu = children_cpu() - start
    rules = by_rule(root) - prepared
    print(f"{mode}: {cpu:.1f} CPU-s; wall s by rule: "
          + ", ".join(f"{k} {v:.1f}" for k, v in sorted(rules.items(), key=lambda kv: -kv[1])), flush=True)
    return {"cpu": cpu, "rules": dict(rules)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/pipeline_modes"))
    parser.add_argument("--segments", type=int, default=None,
                        help="Wikipedia segments (default: the config's 1,000; the text gives 9,388 at most)")
    args = parser.parse_args(argv)
    found = {mode: run(args.work, mode, args.segments) for mode in ("store", "fused")}
    print(f"\nfused / store, CPU of Snakemake and its jobs: {found['fused']['cpu']:.1f} / "
          f"{found['store']['cpu']:.1f} = {found['fused']['cpu'] / found['store']['cpu']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
