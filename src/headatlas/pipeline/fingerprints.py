"""Content fingerprints of what rules read from outside the workflow: corpus sources and models.

Snakemake reruns a job when an input is newer than its outputs. A file edited and given an old
mtime (``cp -p``, ``rsync -a``, unpacking a colleague's archive) is not newer, so it would go
unseen. Each corpus and each model the workflow does not build itself therefore gets a small
*fingerprint file* under ``<data>/fingerprints/``: the sha256 of every file it is read from
(and, for a model, its package version or resolved hub commit). The file is an input of the
jobs that read the corpus or load the model, and it is rewritten, when the workflow is parsed,
only if its text changes: then it is newer than their outputs and they rerun.

Hashing is cached by each file's (size, mtime, ctime, inode): ctime changes with every write and
cannot be set back by a user, so an unchanged file is stat-ed, not read, on later parses.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path

from headatlas.io import atomic_path

CACHE_NAME = ".digests.json"


class DigestCache:
    """sha256 of files, remembered by their stat in ``<folder>/.digests.json``."""

    def __init__(self, folder: str | Path):
        self.path = Path(folder) / CACHE_NAME
        try:
            self.entries = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.entries = {}
        self.changed = False

    def digest(self, path: Path) -> str:
        st = path.stat()
        key = str(path.resolve())
        stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        entry = self.entries.get(key)
        if entry and entry[0] == stamp:
            return entry[1]
        with open(path, "rb") as handle:
            value = hashlib.file_digest(handle, "sha256").hexdigest()
        self.entries[key] = [stamp, value]
        self.changed = True
        return value

    def save(self) -> None:
        if self.changed:
            write_if_changed(self.path, json.dumps(self.entries, indent=0, sort_keys=True))
            self.changed = False


def write_if_changed(path: Path, text: str, mtime_ns: int | None = None) -> bool:
    """Write ``text`` atomically unless the file already holds it (its mtime then stays);
    ``mtime_ns`` sets the new file's mtime (default: now)."""
    path = Path(path)
    try:
        if path.read_text() == text:
            return False
    except OSError:
        pass
    with atomic_path(path) as partial:
        partial.write_text(text)
        if mtime_ns is not None:
            os.utime(partial, ns=(mtime_ns, mtime_ns))
    return True


def fingerprint_text(identity: str, files: list[Path], cache: DigestCache) -> str:
    """``identity`` and one ``sha256  path`` line per existing file (missing files are named)."""
    lines = [identity]
    for path in sorted(set(files)):
        path = Path(path)
        lines.append(f"{cache.digest(path)}  {path}" if path.is_file() else f"missing  {path}")
    return "\n".join(lines) + "\n"


def write_fingerprint(folder: str | Path, kind: str, name: str, identity: str, files: list[Path],
                      cache: DigestCache) -> str:
    """``<folder>/<kind>/<name>.txt``, rewritten only when its text changes; returns its path."""
    path = Path(folder) / kind / f"{name}.txt"
    write_if_changed(path, fingerprint_text(identity, files, cache))
    return str(path)


def folder_files(folder: Path | None) -> list[Path]:
    """Every file below a model folder (weights, config, tokenizer), hidden ones aside."""
    if folder is None or not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def model_identity(spec: dict, folder: Path | None) -> str:
    """What the model is beyond its files: its package's installed version, its hub commit."""
    if spec.get("package"):
        try:
            version = metadata.version(spec["package"].replace("_", "-"))
        except metadata.PackageNotFoundError:
            version = "not installed"
        return f"package {spec['package']}=={version}"
    if spec.get("hub"):
        commit = folder.name if folder is not None else "not in the local cache"
        return f"hub {spec['hub']} revision {spec.get('revision', 'main')} -> {commit}"
    return f"path {spec.get('path')}"
