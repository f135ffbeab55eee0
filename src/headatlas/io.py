"""Atomic file writing: an output either exists complete or not at all."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from pathlib import Path


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
