"""Reruns follow the code: editing a library module plans exactly the rules whose scripts import it.

The expected rules come from :mod:`modulefinder` (the standard library's own import tracer), not
from :mod:`headatlas.codedeps` which the workflow uses, so the two are checked against each other.
"""

from __future__ import annotations

import modulefinder
import os
import re
from pathlib import Path

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


def imported_files(script: Path, src: Path) -> set[Path]:
    finder = modulefinder.ModuleFinder(path=[str(src)])
    finder.run_script(str(script))
    return {Path(m.__file__).resolve() for name, m in finder.modules.items()
            if name.split(".")[0] == "headatlas" and m.__file__}


def planned_rules(workflow: Path) -> set[str]:
    stats = snakemake(workflow, "-n", "--forceall", "--cores", "1").stdout
    table = stats.split("Job stats:")[-1].split("Reasons:")[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+$", table, re.M)} - {"total", "all"}


def test_editing_each_module_reruns_exactly_its_rules(tiny_workflow):
    src = tiny_workflow / "src"
    scripts = rule_scripts(tiny_workflow)
    in_dag = planned_rules(tiny_workflow)
    assert {"extract", "surface_table", "syntax_scores", "coref_mentions", "ablation"} <= in_dag
    imports = {rule: imported_files(tiny_workflow / "workflow" / "scripts" / script, src)
               for rule, script in scripts.items() if rule in in_dag}
    modules = sorted(p.resolve() for p in (src / "headatlas").rglob("*.py"))
    mismatches = []
    for module in modules:
        expected = {rule for rule, files in imports.items() if module in files}
        # A real edit: Snakemake ignores a newer mtime when the content's checksum is unchanged.
        text, stat = module.read_bytes(), module.stat()
        module.write_bytes(text + b"\n# edited\n")
        try:
            result = snakemake(tiny_workflow, "-n", "--cores", "1")
        finally:
            module.write_bytes(text)
            os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        rerun = reasons(result.stdout).get("updated input files", set())
        if rerun != expected:
            mismatches.append(f"{module.relative_to(src)}: planned {sorted(rerun)}, imported by "
                              f"{sorted(expected)}")
    assert not mismatches, "\n".join(mismatches)
    assert snakemake(tiny_workflow, "-n", "--cores", "1").stdout.count("Job stats:") == 0
