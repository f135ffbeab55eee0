"""Atomic file writing: an output either exists complete or not at all (tables too)."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is not imported here: the Snakefile imports this module when parsed
    import pandas as pd


def partial_path(path: str | os.PathLike) -> Path:
    """The temporary name an output is written under until complete: hidden, and unique to this
    process (host, pid, random), so two runs writing one output never write one file."""
    path = Path(path)
    return path.with_name(f".{path.name}.{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}.partial")


def remove_stale_partials(path: Path) -> None:
    """Delete partial files of ``path`` left by killed processes of this host (their pid is gone)."""
    host, prefix = socket.gethostname(), f".{path.name}."
    for stale in path.parent.glob(f".{path.name}.*.partial"):
        owner = stale.name[len(prefix):-len(".partial")].rsplit("-", 2)
        if len(owner) != 3 or owner[0] != host or not owner[1].isdigit():
            continue
        try:
            os.kill(int(owner[1]), 0)
        except ProcessLookupError:
            stale.unlink(missing_ok=True)
        except OSError:  # alive, another user's: leave it
            pass


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path; rename it onto ``path`` only if the block succeeds.

    A crash or exception leaves no file at ``path``, so a half-written output can
    never be taken as complete (by us or by Snakemake).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(path)
    tmp = partial_path(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs):
    """``open`` for writing, with the atomic rename of :func:`atomic_path`."""
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as handle:
        yield handle


def write_table(table: "pd.DataFrame", path: str | Path, float_format: str | None = None,
                index: bool = False) -> None:
    """Write a table as CSV atomically: the file appears complete or not at all.

    ``float_format`` (e.g. ``"%.6g"``) fixes how floats are printed; ``index``
    writes the row labels too (for tables whose index is a column, e.g. counts
    by quantity).
    """
    with atomic_open(path) as handle:
        table.to_csv(handle, index=index, float_format=float_format)
