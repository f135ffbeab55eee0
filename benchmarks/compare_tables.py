#!/usr/bin/env python
"""Check that a change leaves every table unchanged: compare the CSVs of two results folders.

Usage (from the repository root; each folder from a full run, e.g. ``make reproduce`` in two
clean clones)::

    .venv/bin/python benchmarks/compare_tables.py OLD/results NEW/results [--ignore-column NAME ...]

Every CSV under either folder is compared cell by cell as text (no float parsing: equal means
equal to the last printed digit), after each clone's own path is replaced by ``<root>`` (a
corpus summary names the file it read, inside its clone). Timings are not compared: the
columns so named, and the rows of a long ``quantity,value`` table whose first cell is so named
(default: ``train_seconds`` of the probes' runs and the fine-tuning metrics, ``seconds`` of the
fine-tuning curves). Each file is identical, equal except ignored columns, different (the first
differences are printed) or missing on one side. Exit status 1 if any differs or is missing.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

TIMING_COLUMNS = ("train_seconds", "seconds")


def read_rows(path: Path, root: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return [[cell.replace(str(root), "<root>") for cell in row] for row in csv.reader(f)]


def drop_timings(rows: list[list[str]], ignored: set[str]) -> list[list[str]]:
    """``rows`` without the columns named in ``ignored`` nor the rows whose first cell is."""
    if not rows:
        return rows
    keep = [i for i, name in enumerate(rows[0]) if name not in ignored]
    return [[row[i] for i in keep if i < len(row)] for row in rows if not (row and row[0] in ignored)]


def first_differences(old: list[list[str]], new: list[list[str]], limit: int = 3) -> list[str]:
    found = [] if len(old) == len(new) else [f"{len(old)} rows -> {len(new)} rows"]
    header = old[0] if old else []
    for line, (a, b) in enumerate(zip(old, new), start=1):
        for col, (x, y) in enumerate(zip(a, b)):
            if x != y:
                name = header[col] if col < len(header) else col
                found.append(f"line {line}, column {name}: {x} -> {y}")
        if len(a) != len(b):
            found.append(f"line {line}: {len(a)} cells -> {len(b)} cells")
        if len(found) >= limit:
            break
    return found[:limit]


def compare(old_dir: Path, new_dir: Path, ignored: set[str]) -> dict[str, list]:
    """``{"identical": [...], "equal_ignoring": [...], "different": [(name, diffs)], "missing": [...]}``."""
    result: dict[str, list] = {"identical": [], "equal_ignoring": [], "different": [], "missing": []}
    names = sorted({p.relative_to(d).as_posix() for d in (old_dir, new_dir) for p in d.rglob("*.csv")})
    old_root, new_root = old_dir.resolve().parent, new_dir.resolve().parent  # the clones
    for name in names:
        a, b = old_dir / name, new_dir / name
        if not (a.exists() and b.exists()):
            result["missing"].append(f"{name} (only in {old_dir if a.exists() else new_dir})")
            continue
        old, new = read_rows(a, old_root), read_rows(b, new_root)
        if old == new:
            result["identical"].append(name)
        elif drop_timings(old, ignored) == drop_timings(new, ignored):
            result["equal_ignoring"].append(name)
        else:
            result["different"].append((name, first_differences(old, new)))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="results folder of the reference run")
    parser.add_argument("new", type=Path, help="results folder of the run to check")
    parser.add_argument("--ignore-column", action="append", default=None, metavar="NAME",
                        help=f"a timing column or row not to compare (repeatable; default: {', '.join(TIMING_COLUMNS)})")
    args = parser.parse_args(argv)
    for folder in (args.old, args.new):
        if not folder.is_dir():
            parser.error(f"{folder} is not a folder")
    ignored = set(args.ignore_column or TIMING_COLUMNS)
    result = compare(args.old, args.new, ignored)
    for name, diffs in result["different"]:
        print(f"DIFFERENT {name}")
        for line in diffs:
            print(f"    {line}")
    for name in result["missing"]:
        print(f"MISSING {name}")
    print(f"{len(result['identical'])} identical, {len(result['equal_ignoring'])} equal except "
          f"{', '.join(sorted(ignored))}, {len(result['different'])} different, "
          f"{len(result['missing'])} missing on one side")
    return 1 if result["different"] or result["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
