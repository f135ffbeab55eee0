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


def rule_scripts(workflow: Path) -> dict[str, tuple[str, set[str]]]:
    """Rule name -> (script file, modules its code input names), read from the rules files: a
    rule's own ``script:``, or its template's (``use rule T as R with:``); the modules named by
    ``analysis_code("m")`` (the analysis and its figures), and for the atlas every module with
    per-head tables (``ATLAS``), whose entries it reads by name."""
    src = workflow / "src" / "headatlas"
    atlas = {".".join(p.relative_to(src.parent).with_suffix("").parts) for p in src.rglob("*.py")
             if re.search(r"^ATLAS\b", p.read_text(), re.M)}
    blocks = {}
    for smk in (workflow / "workflow" / "rules").glob("*.smk"):
        for head, body in re.findall(r"^((?:use )?rule \w+.*?):\n(.*?)(?=^(?:use )?rule |\Z)",
                                     smk.read_text(), re.M | re.S):
            blocks[head] = body
    scripts, templates = {}, {}
    for head, body in blocks.items():
        script = re.search(r'script:\s*\n\s*"\.\./scripts/([\w.]+)"', body)
        named = {f"headatlas.{p}.{m}" for m in re.findall(r'analysis_code\("(\w+)"\)', body)
                 for p in ("analyses", "plots") if (src / p / f"{m}.py").exists()}
        if "ATLAS.modules()" in body:
            named |= atlas
        used = re.fullmatch(r"use rule (\w+) as (\w+) with", head)
        if used:
            templates[used.group(2)] = (used.group(1), named)
        elif script:
            scripts[head.split()[1]] = (script.group(1), named)
    for name, (template, named) in templates.items():
        scripts[name] = (scripts[template][0], named)
    return scripts


NAMED = re.compile(r"(headatlas(?:\.\w+)+)(?::\w+)?")


class Finder(modulefinder.ModuleFinder):
    """modulefinder, with a package's functions left unscanned (importing a module of a package
    runs the package's top level, not its functions) and modules named in strings loaded: a
    module's strings always, a package's only when it is imported by name (as the parent of a
    module it names nothing it runs)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._package_code: dict[str, CodeType] = {}

    def scan_code(self, co, m):
        if m.__path__:  # a package: blank its nested code objects, keeping the constants' indices
            co = co.replace(co_consts=tuple(None if isinstance(c, CodeType) else c for c in co.co_consts))
            self._package_code[m.__name__] = co
            super().scan_code(co, m)
            return
        super().scan_code(co, m)
        self._load_named(co, m)

    def load_tail(self, q, tail):
        m = super().load_tail(q, tail)
        code = self._package_code.pop(m.__name__, None) if m.__path__ else None
        if code is not None:  # a package imported by name: its top level's strings count
            self._load_named(code, m)
        return m

    def _load_named(self, co, m):
        for const in co.co_consts:
            named = NAMED.fullmatch(const) if isinstance(const, str) else None
            if named:
                try:
                    self.import_hook(named.group(1), m)
                except ImportError:
                    pass


def imported_files(script: Path, src: Path, named: set[str] = frozenset()) -> set[Path]:
    """The library files ``script`` runs, and the modules ``named`` with theirs."""
    finder = Finder(path=[str(src)])
    finder.run_script(str(script))
    for module in sorted(named):
        finder.import_hook(module)
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


CODE_DIGESTS = Path(".snakemake", "headatlas", "code")


def code_inputs(workflow: Path) -> dict[str, set[Path]]:
    """Rule -> the library files its jobs' code inputs cover, from one dry run of every job: a
    code input is a digest file listing each file it covers (common.smk's ``code``); Snakemake
    reruns a job when that file's content changes."""
    out = snakemake(workflow, "-n", "--forceall", "--cores", "1").stdout
    covered: dict[str, set[Path]] = {}
    for rule, inputs in re.findall(r"^(?:local)?rule (\w+):\n    input: (.*)$", out, re.M):
        files = covered.setdefault(rule, set())
        for path in inputs.split(", "):
            if Path(path).parent == CODE_DIGESTS:
                listed = (workflow / path).read_text().splitlines()
                files |= {(workflow / "src" / line.split("  ", 1)[1]).resolve() for line in listed}
            assert not path.startswith("src/"), f"{rule} reads library code outside its digest: {path}"
    assert planned(out) <= set(covered), sorted(planned(out) - set(covered))  # every job read
    return covered


def test_each_rules_code_input_covers_exactly_what_its_script_runs(tiny_workflow):
    """For every rule with a script, the library files of its code input (what makes it rerun
    when edited) are exactly those its script and the modules it runs by name import, as
    :mod:`modulefinder` traces them: so editing a module M reruns exactly the rules whose
    scripts import M (and, through their outputs, what reads them), an analysis module never
    reruns the extraction, and nothing is left stale. Checked for every module and rule at
    once, from one dry run; the edit itself is checked for real below."""
    src = tiny_workflow / "src"
    covered = code_inputs(tiny_workflow)
    assert {"extract", "surface_table", "syntax_scores", "coref_mentions", "ablation"} <= set(covered)
    problems = []
    for rule, (script, named) in sorted(rule_scripts(tiny_workflow).items()):
        if rule not in covered:
            continue
        expected = imported_files(tiny_workflow / "workflow" / "scripts" / script, src, named)
        for what, files in (("rerun for", covered[rule] - expected),
                            ("do not rerun for", expected - covered[rule])):
            if files:
                problems.append(f"{rule} ({script}) would {what} "
                                f"{sorted(str(f.relative_to(src.resolve())) for f in files)}")
    assert not problems, "\n".join(problems)


def test_editing_a_module_reruns_exactly_its_rules(tiny_workflow):
    """A real edit (new content, so Snakemake's checksum sees it) of a module that analyses and
    figures import: the rules rerun for an updated input are importers, every importer reruns,
    anything else that reruns reads their outputs; undone, nothing is left to do."""
    src = tiny_workflow / "src"
    module = (src / "headatlas" / "analyses" / "surface.py").resolve()
    below = downstream(tiny_workflow)
    expected = {rule for rule, files in code_inputs(tiny_workflow).items() if module in files}
    assert {"surface_table", "atlas_heads"} <= expected and "extract" not in expected
    text, stat = module.read_bytes(), module.stat()
    module.write_bytes(text + b"\n# edited\n")
    try:
        out = snakemake(tiny_workflow, "-n", "--cores", "1").stdout
    finally:
        module.write_bytes(text)
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    rerun, changed = planned(out), reasons(out).get("updated input files", set())
    # A job whose other inputs are rerun too is listed under that reason instead.
    assert {"surface_table", "atlas_heads"} <= changed <= expected <= rerun
    assert rerun <= expected.union(*(below[r] for r in expected))
    assert planned(snakemake(tiny_workflow, "-n", "--cores", "1").stdout) == set()
