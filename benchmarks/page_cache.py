#!/usr/bin/env python
"""What writing a store-sized file into the page cache costs in system CPU, with the guest's free
memory warm (pages just freed by the file before) and cold (after an idle pause in which a VM's
balloon driver may hand free pages back to the host, which must fault them in again).

Usage (from the repository root)::

    .venv/bin/python benchmarks/page_cache.py [--mb 1200] [--pause 20] [--dir /tmp]

Prints one line per write: MB, wall seconds, system and user CPU seconds. No headatlas code runs:
this is the floor under the write in benchmark 1, and why its system time varies between runs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from run import Clock  # this folder is on sys.path when the script runs


def write(path: Path, block: np.ndarray, blocks: int, label: str) -> None:
    with Clock() as clock, open(path, "wb") as handle:
        for _ in range(blocks):
            handle.write(block.data)
    print(f"{label:<34} {blocks * block.nbytes / 1e6:6.0f} MB  wall {clock.wall:5.2f} s  "
          f"system {clock.system:5.2f} s  user {clock.user:5.2f} s", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=1200, help="size of each write (a 1,000-segment store: ~1,200)")
    parser.add_argument("--pause", type=int, default=20, help="idle seconds before the cold write")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args(argv)
    block = np.random.default_rng(0).integers(0, 255, 75_000_000, dtype=np.uint8)  # one batch's maps
    blocks = max(1, round(args.mb * 1e6 / block.nbytes))
    path = args.dir / f"page-cache-probe-{os.getpid()}"
    try:
        write(path, block, blocks, "first write")
        path.unlink()
        write(path, block, blocks, "again, pages just freed (warm)")
        path.unlink()
        time.sleep(args.pause)
        write(path, block, blocks, f"after {args.pause} s idle (cold)")
    finally:
        path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
