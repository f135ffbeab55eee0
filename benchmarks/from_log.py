#!/usr/bin/env python
"""Tabulate a benchmarks/run.py run from its log (stderr), when the run died before its table.

Usage::

    .venv/bin/python benchmarks/from_log.py LOG --date "2026-11-24 11:30" --commit 4fe858e \\
        --load-before 17.3 --out benchmarks/out/results.json

Every timing run.py logs (each round's wall and CPU seconds, the store sizes, the memory
children's peak RSS) is read back and the rows are computed with run.py's own formulas
(:func:`run.median_ratio`, the bracketing of the naive loop, the same targets). What the log
does not hold (the import-only memory floor) is left out of the notes. The result is written in
run.py's results.json layout, with ``machine.source`` naming the log.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402

STEP = re.compile(r"\[\s*[\d.]+s load\s+([\d.]+)\] (.*?): ([\d.]+)s wall, ([\d.]+)s cpu")
ANALYSES = re.compile(r"\[\s*[\d.]+s load\s+([\d.]+)\] round \d+: analyses ([\d.]+)s wall, ([\d.]+)s cpu")
SIZES = re.compile(r"store sizes: ([\d.]+) MB with norms, ([\d.]+) MB attention only")
MEMORY = re.compile(r"memory: (\w+) on (\S+): peak RSS (\d+) MB, ([\d.]+)s, (\d+) examples")
TOTAL = re.compile(r"\[\s*([\d.]+)s load\s+([\d.]+)\]")
KEYS = (("bare sdpa forward", "bare_forward"), ("extract wiki without norms", "extract_wiki_plain"),
        ("extract wiki", "extract_wiki"), ("extract EWT dev", "extract_ewt"), ("naive loop", "naive_ewt"))


def parse(text: str) -> dict:
    wall = {key: [] for _, key in KEYS} | {"analyses": []}
    cpu = {key: [] for key in wall}
    loads, memory, sizes, last = [], [], None, (0.0, 0.0)
    for line in text.splitlines():
        if m := TOTAL.match(line):
            last = (float(m.group(1)), float(m.group(2)))
        if m := ANALYSES.match(line):
            wall["analyses"].append(float(m.group(2)))
            cpu["analyses"].append(float(m.group(3)))
        elif m := STEP.match(line):
            label = m.group(2)
            for prefix, key in KEYS:
                if re.sub(r"^round \d+: ", "", label).startswith(prefix):
                    wall[key].append(float(m.group(3)))
                    cpu[key].append(float(m.group(4)))
                    if key in ("bare_forward", "extract_wiki", "extract_wiki_plain", "naive_ewt"):
                        loads.append(float(m.group(1)))
                    break
        elif m := SIZES.search(line):
            sizes = {"with_norms": float(m.group(1)) * 1e6, "attention_only": float(m.group(2)) * 1e6}
        elif m := MEMORY.search(line):
            memory.append({"analysis": m.group(1), "store": m.group(2), "vm_hwm_kb": int(m.group(3)) * 1024,
                           "seconds": float(m.group(4)), "n_examples": int(m.group(5))})
    return {"wall": wall, "cpu": cpu, "loads": loads, "memory": memory, "sizes": sizes, "last": last}


def rows_of(parsed: dict) -> list:
    wall, cpu = parsed["wall"], parsed["cpu"]
    med = {k: statistics.median(v) for k, v in wall.items() if v}

    def ratio_row(metric, cand, base, op, target, note, on_cpu=False):
        return R.Row(metric, med[cand], med[base], R.median_ratio(wall[cand], wall[base]), "cand/base",
                     op, target, "s", R.median_ratio(cpu[cand], cpu[base]), note, False, on_cpu)

    cand_wall = statistics.mean(wall["extract_ewt"][:2])
    naive = (cand_wall, wall["naive_ewt"][0] / cand_wall,
             cpu["naive_ewt"][0] / statistics.mean(cpu["extract_ewt"][:2]))
    rows = [
        ratio_row("1 extract() vs bare sdpa forward (wiki)", "extract_wiki", "bare_forward", "<=", 1.25,
                  "1000 segments, batch 32, value norms + write; judged on CPU time", on_cpu=True),
        ratio_row("1b extract() without norms vs bare sdpa forward", "extract_wiki_plain", "bare_forward",
                  "<=", 1.15, "same batches; eager attention with its maps is the floor; judged on CPU time",
                  on_cpu=True),
        R.Row("2 extract() speed-up, naive loop 1 threads", naive[0], wall["naive_ewt"][0], naive[1],
              "base/cand", ">=", 3.0, "s", naive[2],
              "EWT dev, 2001 sentences; candidate = mean of the extractions around it"),
        ratio_row("3 surface analyses vs extraction (wiki store)", "analyses", "extract_wiki", "<=", 0.5,
                  " + ".join(R.SURFACE)),
        ratio_row("5 extract() with value norms vs without (wiki)", "extract_wiki", "extract_wiki_plain",
                  "<=", 1.15, "same batches; judged on CPU time (cpu ratio column)", on_cpu=True),
        R.size_row({k: int(v) for k, v in parsed["sizes"].items()}),
    ]
    by = {(r["analysis"], r["store"]): r for r in parsed["memory"]}
    for name in R.SURFACE:
        one, four = by[(name, "wiki_1x.h5")], by[(name, f"wiki_{R.MEMORY_SCALE}x.h5")]
        rows.append(R.Row(f"4 peak RSS {R.MEMORY_SCALE}x vs 1x: {name}", four["vm_hwm_kb"] / 1024,
                          one["vm_hwm_kb"] / 1024, four["vm_hwm_kb"] / one["vm_hwm_kb"], "cand/base", "<=", 1.2,
                          "MB", None, f"time {four['seconds'] / one['seconds']:.2f}x (peak RSS logged in whole MB)"))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--date", required=True, help="UTC start of the run, YYYY-MM-DD HH:MM")
    parser.add_argument("--commit", required=True)
    parser.add_argument("--load-before", type=float, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    parsed = parse(args.log.read_text())
    rows = rows_of(parsed)
    R.print_table(rows)
    machine = {"date_utc": args.date, "command": "python benchmarks/run.py", "threads": args.threads,
               "git_commit": args.commit, "git_modified_files": [], "cpu_count": 2, "cpus_usable": 2,
               "cpu_model": "", "loadavg_before": [args.load_before], "loadavg_after": [parsed["last"][1]],
               "loadavg_per_round": parsed["loads"], "total_seconds": parsed["last"][0],
               "source": f"tabulated from the log {args.log.name} by benchmarks/from_log.py (the run died "
                         "at its table)"}
    args.out.write_text(json.dumps({"machine": machine, "rows": [r.as_dict() for r in rows],
                                    "raw_wall_seconds": parsed["wall"], "raw_cpu_seconds": parsed["cpu"],
                                    "memory": {"runs": parsed["memory"]}, "store_bytes": parsed["sizes"]},
                                   indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
