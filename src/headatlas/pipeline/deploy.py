"""The workflow's own files, however it is deployed: a clone (a folder on disk), or a module read
from a git repository (``gitfile(...)``) or from a release on a hosting provider
(``github(...)``, ``gitlab(...)``), whose files Snakemake reads from git and caches one by one.

Only the listing of a folder needs this: Snakemake resolves every other path of the workflow
(includes, scripts, ``workflow.source_path``) from either kind of source itself.
"""

from __future__ import annotations

import os
from pathlib import Path


def is_local(folder) -> bool:
    """Whether ``folder`` (``workflow.current_basedir``) is a folder on disk."""
    return isinstance(folder, (str, os.PathLike))


def file_names(basedir, sub: str) -> list[str]:
    """The names of the files in ``sub``, a folder of ``basedir`` (``workflow.current_basedir``),
    sorted: from the disk, or from the git tree of the source's tag, branch or commit."""
    if is_local(basedir):
        return sorted(p.name for p in Path(basedir, sub).iterdir() if p.is_file())
    folder = basedir.join(sub)
    tree = _repository(folder).commit(folder.ref).tree
    if folder.path.strip("/"):
        tree = tree / folder.path.strip("/")
    return sorted(blob.name for blob in tree.blobs)


def _repository(folder):
    """The GitPython repository a git source reads: a local one (``gitfile``), or Snakemake's
    bare clone of a hosted one (``github``, ``gitlab``)."""
    if hasattr(folder, "repo_path"):
        import git

        return git.Repo(folder.repo_path)
    return folder.hosted_repo.repo
