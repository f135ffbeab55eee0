"""Reruns follow the code: editing a library module plans exactly the rules whose scripts import it.

The expected rules come from :mod:`modulefinder` (the standard library's own import tracer, on
bytecode), not from :mod:`headatlas.pipeline.codedeps` which the workflow uses (on the syntax
tree), so the two are checked against each other. Both follow what Python runs: a package imported
as the parent of a module runs its top level only, and a module named in a string
(``"headatlas.corpora.conllx:read_conllx"``, loaded with importlib) runs when the code runs.
"""

from __future__ import annotations

import modulefinder
import os
import re
from pathlib import Path
from types import CodeType

import pytest

from tests.workflow.conftest import snakemake

pytestmark = pytest.mark.workflow


def reasons(stdout: str) -> dict[str, set[str]]:
    """The 'Reasons:' summary of a dry run: reason -> rules."""
    found: dict[str, set[str]] = {}
    if "Reasons:" not in stdout:
        return found
    lines = stdout.split("Reasons:")[-1].splitlines()
    for label, rules in zip(lines, lines[1:]):
        if label.startswith("    ") and label.strip().endswith(":") and rules.startswith("        "):
            found[label.strip()[:-1]] = {r.strip() for r in rules.split(",")}
    return found


def rule_scripts(workflow: Path) -> dict[str, str]:
    """Rule name -> script file, read from the rules files."""
    scripts = {}
    for smk in (workflow / "workflow" / "rules").glob("*.smk"):
        for name, body in re.findall(r"^rule (\w+):\n(.*?)(?=^rule |\Z)", smk.read_text(), re.M | re.S):
            script = re.search(r'script:\s*\n\s*"\.\./scripts/([\w.]+)"', body)
            if script:
                scripts[name] = script.group(1)
    return scripts


NAMED = re.compile(r"(headatlas(?:\.\w+)+)(?::\w+)?")


class Finder(modulefinder.ModuleFinder):
    """modulefinder, with a package's functions left unscanned (importing a module of a package
    runs the package's top level, not its functions) and modules named in strings loaded."""

    def scan_code(self, co, m):
        if m.__path__:  # a package: blank its nested code objects, keeping the constants' indices
            co = co.replace(co_consts=tuple(None if isinstance(c, CodeType) else c for c in co.co_consts))
        super().scan_code(co, m)
        for const in co.co_consts:
            named = NAMED.fullmatch(const) if isinstance(const, str) else None
            if named:
                try:
                    self.import_hook(named.group(1), m)
                except ImportError:
                    pass


def imported_files(script: Path, src: Path) -> set[Path]:
    finder = Finder(path=[str(src)])
    finder.run_script(str(script))
    return {Path(m.__file__).resolve() for name, m in finder.modules.items()
            if name.split(".")[0] == "headatlas" and m.__file__}


def planned(stdout: str) -> set[str]:
    """Rules with jobs in a dry run's 'Job stats' table."""
    if "Job stats:" not in stdout:
        return set()
    table = stdout.split("Job stats:")[-1].split("Reasons:")[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+$", table, re.M)} - {"total", "all"}


def downstream(workflow: Path) -> dict[str, set[str]]:
    """Rule -> every rule that (transitively) reads its outputs, from ``--rulegraph``."""
    dot = snakemake(workflow, "--rulegraph", "--forceall").stdout
    names = dict(re.findall(r'^\s*(\d+)\[label = "(\w+)"', dot, re.M))
    children: dict[str, set[str]] = {name: set() for name in names.values()}
    for a, b in re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M):
        children[names[a]].add(names[b])
    def below(rule: str) -> set[str]:
        out, todo = set(), [rule]
        while todo:
            for child in children[todo.pop()] - out:
                out.add(child)
                todo.append(child)
        return out
    return {rule: below(rule) - {"all"} for rule in children}


def test_editing_each_module_reruns_exactly_its_rules(tiny_workflow):
    """For every library module M, with E = the rules whose scripts import M:
    the rules rerun for an updated input file are in E; every rule in E reruns; anything else
    that reruns reads (transitively) the outputs of a rule in E. So an analysis module never
    reruns the extraction, and nothing is left stale."""
    src = tiny_workflow / "src"
    scripts = rule_scripts(tiny_workflow)
    below = downstream(tiny_workflow)
    in_dag = set(below) - {"all"}
    assert {"extract", "surface_table", "syntax_scores", "coref_mentions", "ablation"} <= in_dag
    imports = {rule: imported_files(tiny_workflow / "workflow" / "scripts" / script, src)
               for rule, script in scripts.items() if rule in in_dag}
    modules = sorted(p.resolve() for p in (src / "headatlas").rglob("*.py"))
    problems = []
    for module in modules:
        expected = {rule for rule, files in imports.items() if module in files}
        # A real edit: Snakemake ignores a newer mtime when the content's checksum is unchanged.
        text, stat = module.read_bytes(), module.stat()
        module.write_bytes(text + b"\n# edited\n")
        try:
            out = snakemake(tiny_workflow, "-n", "--cores", "1").stdout
        finally:
            module.write_bytes(text)
            os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        name = module.relative_to(src)
        changed, rerun = reasons(out).get("updated input files", set()), planned(out)
        reached = expected.union(*(below[r] for r in expected))
        if not changed <= expected:
            problems.append(f"{name}: {sorted(changed - expected)} rerun but do not import it")
        if not expected <= rerun:
            problems.append(f"{name}: {sorted(expected - rerun)} import it but do not rerun")
        if not rerun <= reached:
            problems.append(f"{name}: {sorted(rerun - reached)} rerun but neither import it nor "
                            "read what a rule importing it writes")
    assert not problems, "\n".join(problems)
    assert planned(snakemake(tiny_workflow, "-n", "--cores", "1").stdout) == set()
