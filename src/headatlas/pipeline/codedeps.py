"""Which library files a workflow script runs: its ``headatlas`` imports, transitively.

Each rule takes these files as inputs, so editing a module reruns exactly the rules whose
scripts run it (directly or through other modules), and nothing else. Imports are read
statically with :mod:`ast`, following what Python executes:

* a module the code imports **by name** (``import headatlas.a.b``, ``from headatlas.a import
  b``, ``from headatlas.a import f``) runs whole when its functions are called, so every import
  in it counts: at module level, inside functions (a conservative superset), and the modules it
  names in strings as ``"headatlas.a.b"`` or ``"headatlas.a.b:function"`` (tables that load a
  function by name, e.g. the corpus formats' readers);
* a package that is only the **parent** of such a module (``a/__init__.py`` and
  ``a/b/__init__.py`` when ``a.b.c`` is imported) runs its top level alone: only the imports
  at its module level count, not those inside its functions (``headatlas.atlas()``, a notebook
  entry point, imports the report only when a notebook calls it).

Light on purpose: it runs when the Snakefile is parsed, and every job of a cluster run parses it
again; :class:`ImportCache` keeps each file's imports between parses (by the file's content).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

PACKAGE = "headatlas"
# A module named in a string: "headatlas.a.b" or "headatlas.a.b:function".
NAMED = re.compile(rf"({PACKAGE}(?:\.\w+)+)(?::\w+)?")
FULL, TOP = "full", "top"  # how much of a file runs: all of it, or its module level only


@lru_cache(maxsize=None)  # asked ~10,000 times per parse, of ~200 modules
def module_file(module: str, src: Path) -> Path | None:
    """``headatlas.a.b`` -> ``src/headatlas/a/b.py`` or ``.../a/b/__init__.py``; None if neither."""
    base = src.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _package_of(path: Path, src: Path) -> str | None:
    """The dotted package a library file belongs to (for relative imports), None outside ``src``."""
    try:
        parts = path.resolve().relative_to(src.resolve()).with_suffix("").parts
    except ValueError:
        return None
    return ".".join(parts[:-1])  # a/b/c.py -> a.b; a/b/__init__.py -> a.b


class _Imports(ast.NodeVisitor):
    """The modules a file imports, each with whether it is imported at module level."""

    def __init__(self, path: Path, src: Path):
        self.path, self.src = path, src
        self.top: set[str] = set()
        self.anywhere: set[str] = set()
        self._depth = 0  # inside how many function bodies

    def _add(self, module: str) -> None:
        (self.top if self._depth == 0 else self.anywhere).add(module)

    def _function(self, node) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = (_package_of(self.path, self.src) or "").split(".")
            package = package[: len(package) - node.level + 1]
            base = ".".join(p for p in package + [base] if p)
        for alias in node.names:
            # ``from pkg import name``: name is a submodule (pkg only its parent) or pkg's own.
            sub = f"{base}.{alias.name}"
            self._add(sub if module_file(sub, self.src) else base)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            named = NAMED.fullmatch(node.value)
            if named and module_file(named.group(1), self.src):
                self.anywhere.add(named.group(1))  # loaded by name when the code runs


def _ours(modules: Iterable[str]) -> frozenset[str]:
    return frozenset(m for m in modules if m == PACKAGE or m.startswith(PACKAGE + "."))


def _parse(path: Path, src: Path, text: str) -> tuple[frozenset[str], frozenset[str]]:
    visitor = _Imports(path, src)
    visitor.visit(ast.parse(text, filename=str(path)))
    return _ours(visitor.top), _ours(visitor.top | visitor.anywhere)


class ImportCache:
    """Each library file's imports, as :func:`_parse` found them, kept in a JSON file between
    Snakefile parses: an entry holds while the file's sha256 is the same and the library has the
    same module files (whether ``from a import b`` names a module depends on which exist).
    Parsing every file costs about a second, on each of the hundreds of job steps of a cluster
    run; reading them back costs milliseconds."""

    def __init__(self, path: str | Path, src: str | Path):
        self.path, self.src = Path(path), Path(src).resolve()
        modules = sorted(str(p.relative_to(self.src)) for p in self.src.rglob("*.py"))
        self.tree = hashlib.sha256("\n".join(modules).encode()).hexdigest()
        self.entries: dict[str, list] = {}
        self.changed = False
        try:
            saved = json.loads(self.path.read_text())
            if saved.get("tree") == self.tree:
                self.entries = saved["files"]
        except (OSError, ValueError, KeyError, AttributeError):
            pass  # none yet, or unreadable: parse again

    def read(self, path: Path) -> tuple[frozenset[str], frozenset[str]]:
        digest = file_sha256(path)  # the code inputs' digests hash the same bytes: read once
        key = str(path.resolve())
        entry = self.entries.get(key)
        if entry and entry[0] == digest:
            return frozenset(entry[1]), frozenset(entry[2])
        top, everything = _parse(path, self.src, path.read_text(encoding="utf-8"))
        self.entries[key] = [digest, sorted(top), sorted(everything)]
        self.changed = True
        return top, everything

    def save(self) -> None:
        """Write the entries if any changed (atomically: parallel parses may write it too)."""
        if not self.changed:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"tree": self.tree, "files": self.entries}))
        os.replace(temporary, self.path)
        self.changed = False


@lru_cache(maxsize=None)  # once per parse: the import cache and every code input ask for it
def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, hex."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


_cache: ImportCache | None = None


def use_cache(cache: ImportCache | None) -> None:
    """Read files through ``cache`` from now on (None: parse every file)."""
    global _cache
    _cache = cache
    for cached in (_read, _script_closure, module_file, file_sha256):
        cached.cache_clear()


@lru_cache(maxsize=None)  # each file is read once per Snakefile parse, not once per rule using it
def _read(path: Path, src: Path) -> tuple[frozenset[str], frozenset[str]]:
    """(modules imported at module level, every module imported or named) of one file."""
    if _cache is not None and _cache.src == src:
        return _cache.read(path)
    return _parse(path, src, path.read_text(encoding="utf-8"))


def imported_modules(path: Path, src: Path, top_only: bool = False) -> frozenset[str]:
    """The ``headatlas`` modules a file imports by name: anywhere in its body and in strings, or
    (``top_only``) at its module level alone."""
    top, everything = _read(path, src)
    return top if top_only else everything


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts) - 1)]


def _closure(start: Iterable[str], src: Path, files: dict[Path, str] | None = None) -> dict[Path, str]:
    """Every library file run, with how much of it runs (:data:`FULL` or :data:`TOP`), from the
    modules ``start`` imported by name."""
    files = {} if files is None else files
    todo = [(module, FULL) for module in start]
    while todo:
        module, mode = todo.pop()
        todo += [(parent, TOP) for parent in _parents(module)]
        target = module_file(module, src)
        if target is None or files.get(target) == FULL or files.get(target) == mode:
            continue
        files[target] = mode
        todo += [(m, FULL) for m in imported_modules(target, src, top_only=mode == TOP)]
    return files


@lru_cache(maxsize=None)
def _script_closure(script: Path, src: Path) -> tuple[Path, ...]:
    return tuple(sorted(_closure(imported_modules(script, src), src)))


def code_files(script: str | Path, src: str | Path, modules: Iterable[str] = ()) -> list[str]:
    """Sorted paths of every library file ``script`` runs through its imports, and of
    ``modules`` (dotted names it imports at run time, by name) with theirs."""
    src = Path(src).resolve()
    files = set(_script_closure(Path(script).resolve(), src))
    for name in modules:
        if module_file(name, src) is None:
            raise ValueError(f"{name}: no such module under {src}")
        files |= set(_closure([name], src))
    return sorted(str(p) for p in files)
