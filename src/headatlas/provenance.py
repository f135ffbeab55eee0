"""Which code wrote a result: the package version and, from a git clone, the commit.

A store records :func:`code_version` (``package_version``, ``code_commit``,
``code_dirty``), so a table can be traced to the code that computed it. The
version comes from git tags at install time (setuptools-scm: ``v0.3.0`` ->
``0.3.0``); the commit is read when the code runs, since an editable install's
version is frozen at install time while the clone moves on.
"""

from __future__ import annotations

import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

UNKNOWN = "unknown"


def package_version() -> str:
    """The installed distribution's version; ``unknown`` when run from a clone not installed."""
    try:
        return metadata.version("headatlas")
    except metadata.PackageNotFoundError:
        return UNKNOWN


def _git(root: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                                timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


@lru_cache(maxsize=None)
def code_version(package_dir: str | None = None) -> dict[str, str | bool]:
    """``package_version``, ``code_commit`` (``unknown`` outside a clone of this repository) and
    ``code_dirty`` (tracked files differ from that commit; untracked files such as a user's own
    config do not count)."""
    package = Path(package_dir or Path(__file__).resolve().parent)
    top = _git(package, "rev-parse", "--show-toplevel")
    # Only this project's own clone counts: an install inside some other repository does not.
    mine = top is not None and (Path(top) / "src" / "headatlas").resolve() == package.resolve()
    commit = _git(package, "rev-parse", "HEAD") if mine else None
    status = _git(package, "status", "--porcelain", "--untracked-files=no") if mine else None
    return {"package_version": package_version(), "code_commit": commit or UNKNOWN,
            "code_dirty": bool(status)}
