"""Corpus sources: a canonical URL pinned to a commit, a sha256 per file, a mirror.

A file is looked up in the mirror folder first (air-gapped machines: CI, HPC
compute nodes), then downloaded from its pinned URL into the cache. Either
way its sha256 must match the pinned checksum list shipped with the workflow.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from headatlas.errors import SourceError
from headatlas.io import atomic_path

log = logging.getLogger(__name__)


def sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_checksums(path: str | Path) -> dict[str, str]:
    """Parse a ``sha256sum`` listing: ``<hex>  <relative path>`` per line."""
    sums = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            sums[name.strip().lstrip("*")] = digest
    return sums


@dataclass
class Source:
    """Where one corpus's files come from.

    ``url_paths`` rewrites a mirror-relative prefix to the path under ``base_url``
    (GUM keeps its CoNLL-U under ``coref/ontogum/conllu/`` upstream, ``conllu/`` here).
    ``mirror`` is this corpus's folder inside the mirror (``<mirror>/<mirror_dir>``);
    ``mirror_setting`` says how the mirror was configured, for error messages.
    """

    name: str
    base_url: str
    checksums: dict[str, str]
    mirror: Path | None = None
    cache: Path = Path("data/raw")
    url_paths: dict[str, str] = field(default_factory=dict)
    mirror_dir: str = ""
    mirror_setting: str = "no mirror is set"

    def url(self, relpath: str) -> str:
        for prefix, upstream in self.url_paths.items():
            if relpath.startswith(prefix):
                relpath = upstream + relpath[len(prefix):]
                break
        return self.base_url.rstrip("/") + "/" + relpath

    def fetch(self, relpath: str) -> Path:
        """Return a verified local copy of ``relpath``: mirror, cache, or download."""
        if relpath not in self.checksums:
            raise SourceError(f"{self.name}: {relpath} is not in the pinned checksum list")
        for candidate in self._local_candidates(relpath):
            if candidate.exists():
                self._verify(candidate, relpath)
                return candidate
        return self._download(relpath)

    def _local_candidates(self, relpath: str) -> list[Path]:
        found = [self.mirror / relpath] if self.mirror else []
        return found + [self.cache / self.name / relpath]

    def _verify(self, path: Path, relpath: str) -> None:
        actual = sha256(path)
        if actual != self.checksums[relpath]:
            raise SourceError(
                f"{path}: sha256 {actual} does not match the pinned {self.checksums[relpath]} "
                f"({self.name}/{relpath}).\n  how to fix: the file is corrupt or from another "
                f"version; replace it with {self.url(relpath)}")

    def _download(self, relpath: str) -> Path:
        url = self.url(relpath)
        target = self.cache / self.name / relpath
        try:
            with atomic_path(target) as tmp:
                with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as out:
                    shutil.copyfileobj(response, out)
                self._verify(tmp, relpath)
        except (urllib.error.URLError, OSError, TimeoutError) as err:
            where = f"not in the mirror ({self.mirror / relpath} is missing)" if self.mirror \
                else f"no mirror folder ({self.mirror_setting})"
            layout = f"{self.mirror_dir or self.name}/{relpath}"
            raise SourceError(
                f"{self.name}: cannot get {relpath}: {where}, and the download of {url} failed "
                f"({err}).\n  how to fix: set the config key `mirror:` (or the environment "
                f"variable HEADATLAS_MIRROR) to a folder holding {layout}, or run where {url} is "
                "reachable") from err
        log.info("downloaded %s", url)
        return target


def mirror_setting(configured: str | None, workdir: str | Path = ".") -> str:
    """How the mirror is set, in words, for messages (says so when the folder does not exist)."""
    env = os.environ.get("HEADATLAS_MIRROR")
    value, key = (env, "HEADATLAS_MIRROR") if env else (configured, "the config key `mirror:`")
    if not value:
        return "neither the config key `mirror:` nor HEADATLAS_MIRROR is set"
    path = Path(value) if Path(value).is_absolute() else Path(workdir) / value
    state = "" if path.is_dir() else ", a folder that does not exist"
    return f"{key} is {value} ({path.resolve()}{state})"


def resolve_mirror(configured: str | None, workdir: str | Path = ".") -> Path | None:
    """The mirror folder in force: $HEADATLAS_MIRROR, else the config value if it exists."""
    value = os.environ.get("HEADATLAS_MIRROR") or configured
    if not value:
        return None
    path = Path(value)
    if not path.is_absolute():
        path = Path(workdir) / path
    if os.environ.get("HEADATLAS_MIRROR") and not path.is_dir():
        raise SourceError(f"HEADATLAS_MIRROR={value}: no such folder")
    return path.resolve() if path.is_dir() else None
