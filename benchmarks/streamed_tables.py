#!/usr/bin/env python
"""Check that a change to the streaming analyses leaves their numbers on a real store unchanged.

Usage (from the repository root; the store from ``make reproduce``)::

    # the tables of every per-head statistic of the default config, with this code ...
    .venv/bin/python benchmarks/streamed_tables.py run results/minilm/wikipedia/attention/shard-*.h5 --out /tmp/new
    # ... and with another version's (a clone's src/ first on the path)
    PYTHONPATH=<clone>/src .venv/bin/python benchmarks/streamed_tables.py run <same stores> --out /tmp/old
    .venv/bin/python benchmarks/streamed_tables.py compare /tmp/old /tmp/new

``run`` streams the stores through each analysis of :data:`JOBS` under each weighting it takes
(``run_analysis``, as the rules do) and writes every table (CSV, full precision), array (.npy)
and claims (text). ``compare`` reports, over every file, the largest absolute and relative
difference of the numbers (relative where the old value exceeds 1e-6), and any difference in
text, NaNs, integer arrays or claims; exit status 1 if any of those differ or a file is missing.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd

# (module, analysis, options, weightings): the default config's streaming per-head statistics
JOBS = [("surface", "relative_position", {}, ("attention", "norm")),
        ("surface", "special_tokens", {}, ("attention", "norm")),
        ("surface", "entropy", {}, ("attention", "norm")),
        ("sinks", "sink_rate", {}, ("attention", "norm")),
        ("patterns", "patterns", {}, ("attention",)),
        ("headtypes", "distance_features", {"n_windows": 16}, ("attention", "norm")),
        ("norms", "norm_shares", {"pairs_per_example": 256, "seed": 0}, ("attention",)),
        ("rollout", "rollout", {"max_offset": 8, "residual": 0.5}, ("attention",))]


def run(stores: list[str], out: Path) -> None:
    from headatlas.analyses.base import run_analysis

    out.mkdir(parents=True, exist_ok=True)
    for module, name, options, weightings in JOBS:
        importlib.import_module(f"headatlas.analyses.{module}")
        for weighting in weightings:
            result = run_analysis(name, stores, progress=False, weighting=weighting, **options)
            for table, frame in result.tables.items():
                frame.to_csv(out / f"{name}-{weighting}-{table}.csv", index=False)
            for array, values in result.arrays.items():
                np.save(out / f"{name}-{weighting}-{array}.npy", values)
            (out / f"{name}-{weighting}-claims.txt").write_text(repr(result.claims))
            print(f"{name} ({weighting})", file=sys.stderr, flush=True)


def differences(old: np.ndarray, new: np.ndarray) -> tuple[float, float, bool]:
    """Largest absolute and relative difference of two float arrays, and whether NaNs differ."""
    nan_differs = bool((np.isnan(old) != np.isnan(new)).any())
    both = ~(np.isnan(old) | np.isnan(new))
    gap = np.abs(old[both] - new[both])
    big = np.abs(old[both]) > 1e-6
    rel = gap[big] / np.abs(old[both][big])
    return float(gap.max(initial=0)), float(rel.max(initial=0)), nan_differs


def compare(old: Path, new: Path) -> int:
    problems, rows = [], []
    names = sorted({p.name for p in old.iterdir()} | {p.name for p in new.iterdir()})
    for name in names:
        a, b = old / name, new / name
        if not (a.exists() and b.exists()):
            problems.append(f"{name}: missing on one side")
        elif name.endswith(".csv"):
            x, y = pd.read_csv(a), pd.read_csv(b)
            if list(x.columns) != list(y.columns) or len(x) != len(y):
                problems.append(f"{name}: other columns or rows")
                continue
            for column in x.columns:
                if pd.api.types.is_numeric_dtype(x[column]) and pd.api.types.is_numeric_dtype(y[column]):
                    gap, rel, nans = differences(x[column].to_numpy(float), y[column].to_numpy(float))
                    rows.append((gap, rel, f"{name}:{column}"))
                    if nans:
                        problems.append(f"{name}:{column}: NaNs differ")
                elif not (x[column].astype(str) == y[column].astype(str)).all():
                    problems.append(f"{name}:{column}: text differs")
        elif name.endswith(".npy"):
            x, y = np.load(a), np.load(b)
            if x.dtype.kind == "f":
                gap, rel, nans = differences(x.astype(float), y.astype(float))
                rows.append((gap, rel, name))
                if nans:
                    problems.append(f"{name}: NaNs differ")
            elif not np.array_equal(x, y):
                problems.append(f"{name}: values differ")
        elif a.read_text() != b.read_text():
            problems.append(f"{name}: claims differ")
    rows.sort(reverse=True)
    print(f"{len(names)} files; largest differences (absolute, relative):")
    for gap, rel, where in rows[:5]:
        print(f"  {gap:.2e}  {rel:.2e}  {where}")
    for problem in problems:
        print(f"DIFFERS: {problem}")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    running = sub.add_parser("run", help="write the tables of the stores")
    running.add_argument("stores", nargs="+")
    running.add_argument("--out", type=Path, required=True)
    comparing = sub.add_parser("compare", help="compare two folders written by run")
    comparing.add_argument("old", type=Path)
    comparing.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.stores, args.out)
        return 0
    return compare(args.old, args.new)


if __name__ == "__main__":
    raise SystemExit(main())
