"""Which library files a workflow script runs: its ``headatlas`` imports, transitively.

Each rule takes these files as inputs, so editing a module reruns exactly the
rules whose scripts import it (directly or through other modules), and nothing
else. Imports are read statically with :mod:`ast` (including imports inside
functions: a conservative superset), and importing ``a.b.c`` also runs the
package files ``a/__init__.py`` and ``a/b/__init__.py``, so those count too.

Light on purpose: it runs when the Snakefile is parsed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

PACKAGE = "headatlas"


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


@lru_cache(maxsize=None)  # each file is read once per Snakefile parse, not once per rule using it
def imported_modules(path: Path, src: Path) -> frozenset[str]:
    """The ``headatlas`` modules a file imports anywhere in its body."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = (_package_of(path, src) or "").split(".")
                package = package[: len(package) - node.level + 1]
                base = ".".join(p for p in package + [base] if p)
            found.add(base)
            # ``from pkg import name``: name may be a submodule rather than an attribute.
            found.update(f"{base}.{alias.name}" for alias in node.names
                         if module_file(f"{base}.{alias.name}", src))
    return frozenset(m for m in found if m == PACKAGE or m.startswith(PACKAGE + "."))


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


@lru_cache(maxsize=None)
def _closure(path: Path, src: Path) -> frozenset[Path]:
    files: set[Path] = set()
    todo = [path]
    seen: set[Path] = set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for module in imported_modules(current, src):
            for name in _with_parents(module):
                target = module_file(name, src)
                if target is not None and target not in files:
                    files.add(target)
                    todo.append(target)
    return frozenset(files)


def code_files(script: str | Path, src: str | Path, modules: Iterable[str] = ()) -> list[str]:
    """Sorted paths of every library file ``script`` runs through its imports, and of
    ``modules`` (dotted names it imports at run time, by name) with theirs."""
    src = Path(src).resolve()
    files = set(_closure(Path(script).resolve(), src))
    for name in (n for module in modules for n in _with_parents(module)):
        target = module_file(name, src)
        if target is None:
            raise ValueError(f"{name}: no such module under {src}")
        files |= {target, *_closure(target, src)}
    return sorted(str(p) for p in files)
