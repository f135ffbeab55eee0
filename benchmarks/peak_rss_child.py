"""Child process of benchmarks/run.py: run one analysis over one store, report peak RSS.

Usage: python benchmarks/peak_rss_child.py ANALYSIS STORE   (or ``--imports-only``)

Prints one JSON line: {"analysis", "store", "n_examples", "seconds", "vm_hwm_kb"}.
``vm_hwm_kb`` is VmHWM from /proc/self/status: the high-water mark of *this*
process image's resident set. It is read here rather than taken from
wait4()/getrusage(RUSAGE_CHILDREN) in the parent because Linux folds the
pre-exec image (with vfork: the parent's whole resident set, here torch and two
models) into the child's ru_maxrss, which would swamp the measurement.
"""

from __future__ import annotations

import json
import sys
import time


def vm_hwm_kb() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status (not Linux?)")


def main(argv: list[str]) -> int:
    # The import floor is part of the real cost; importing surface registers its analyses.
    from headatlas.analyses import surface  # noqa: F401
    from headatlas.analyses.base import run_analysis

    if argv[:1] == ["--imports-only"]:
        print(json.dumps({"analysis": None, "store": None, "n_examples": 0, "seconds": 0.0,
                          "vm_hwm_kb": vm_hwm_kb()}))
        return 0
    name, store = argv
    start = time.perf_counter()
    table = run_analysis(name, store, progress=False)
    seconds = time.perf_counter() - start
    print(json.dumps({"analysis": name, "store": store, "n_examples": int(table.attrs["provenance"]["n_examples"]),
                      "seconds": seconds, "vm_hwm_kb": vm_hwm_kb()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
