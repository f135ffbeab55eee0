"""Atomic file writing: an output either exists complete or not at all (tables too)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from headatlas.errors import HeadAtlasError

if TYPE_CHECKING:  # pandas is not imported here: the Snakefile imports this module when parsed
    import pandas as pd


class DiskFullError(HeadAtlasError):
    """A file could not be written for want of space: which, how much it needed, how much was free."""


def is_disk_full(err: BaseException) -> bool:
    """Whether an error is a full disk (h5py reports it in its message, without an errno)."""
    return (isinstance(err, OSError) and err.errno == errno.ENOSPC) or \
        "No space left on device" in str(err) or "errno = 28" in str(err)


def free_bytes(path: str | os.PathLike) -> int:
    """Bytes free to this user on the file system that holds ``path`` (or its nearest parent)."""
    path = Path(path).resolve()
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def disk_full(path: str | os.PathLike, needed: float | None = None) -> DiskFullError:
    """The error for ``path`` not written for want of space, with the numbers."""
    need = f"; it needs about {gb(needed)}" if needed else ""
    return DiskFullError(f"{path}: not written, the disk is full ({gb(free_bytes(path))} free on its "
                         f"file system{need}); free space, or point `results` / `data` elsewhere, "
                         "and run again (nothing half-written was kept)")


def check_free_space(path: str | os.PathLike, needed: float, margin: float = 1.1) -> None:
    """Refuse, before any work, to write ``needed`` bytes to ``path`` when the disk has less
    (times ``margin``) free."""
    free = free_bytes(path)
    if needed * margin > free:
        raise DiskFullError(f"{path}: needs about {gb(needed)} (predicted from the examples' lengths) "
                            f"and the disk has {gb(free)} free; free space, point `results` "
                            "elsewhere, or use `extraction.mode: fused` (no map stored)")


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
    except OSError as err:
        if is_disk_full(err):
            tmp.unlink(missing_ok=True)
            raise disk_full(path) from None
        raise
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
