"""The package reads as the data flow, and no import runs back up it (issue 31).

``src/headatlas`` holds packages by stage and a few shared leaves. A module may import the
leaves, its own package and the stages before its own, never a later stage; a leaf imports
only leaves. Imports are read as :mod:`headatlas.pipeline.codedeps` reads them (function bodies
and modules named in strings included), so a lazy import counts too.
"""

from __future__ import annotations

from pathlib import Path

from headatlas.pipeline.codedeps import imported_modules

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "headatlas"
# The data flow, in order: corpora -> store -> encoders (which write the store) -> analyses ->
# plots -> tasks -> interventions -> report -> the workflow's glue.
STAGES = ("corpora", "store", "encoders", "analyses", "plots", "tasks", "interventions", "report",
          "pipeline")
LEAVES = ("errors", "io", "heads", "stats", "provenance", "claims", "weightings")
ENTRY_POINTS = ("__init__", "cli")  # the notebook functions and the console script: import anything


def stage_of(module: str) -> int:
    """-1 for a leaf, the stage's position for a module of a stage package, len(STAGES) for an
    entry point."""
    parts = module.split(".")
    name = parts[1] if len(parts) > 1 else "__init__"
    if name in LEAVES:
        return -1
    if name in STAGES:
        return STAGES.index(name)
    assert name in ENTRY_POINTS, f"{module}: neither a stage, a leaf nor an entry point"
    return len(STAGES)


def modules() -> list[str]:
    return sorted(".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
                  for p in PACKAGE.rglob("*.py"))


def test_the_top_level_is_packages_by_stage_and_a_few_leaves():
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert top == sorted(LEAVES + ENTRY_POINTS)
    assert len(top) - 1 <= 8  # at most 8 modules beside __init__.py
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert packages == sorted(STAGES)


def test_no_import_runs_back_up_the_data_flow():
    problems = []
    for module in modules():
        path = PACKAGE.joinpath(*module.split(".")[1:])
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        for imported in imported_modules(path, SRC):
            if imported == "headatlas":
                continue
            if stage_of(imported) > max(stage_of(module), -1) or \
                    (stage_of(module) == -1 and stage_of(imported) != -1):
                problems.append(f"{module} imports {imported}")
    assert not problems, "\n".join(problems)


def test_no_import_cycles_between_modules():
    graph = {}
    for module in modules():
        path = PACKAGE.joinpath(*module.split(".")[1:])
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        graph[module] = {m for m in imported_modules(path, SRC, top_only=True) if m in modules()}
    state: dict[str, int] = {}
    cycles = []

    def visit(node, trail):
        state[node] = 1
        for child in graph.get(node, ()):
            if state.get(child) == 1:
                cycles.append(" -> ".join(trail[trail.index(child):] + [child]))
            elif child not in state:
                visit(child, trail + [child])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(cycles)


# Every job is a fresh interpreter, so what a script imports at module level is paid by each of
# its jobs (hundreds per run, each a whole Snakemake process on a cluster). A job that draws or
# reads tables runs no model and widens no float16 map: no torch (~1.5 s), no numba (~0.25 s,
# imported by the first map read), no scipy.optimize (~0.4 s).
LIGHT_SCRIPTS = ("clustering_mds", "clustering_structure", "headtypes_figure", "headtypes_claims",
                 "syntax_lines", "coref_accuracy", "compare_table1", "table_page", "scorecard")
HEAVY = ("torch", "numba", "scipy.optimize")


def test_drawing_and_table_jobs_import_no_model_code():
    import ast
    import subprocess
    import sys

    scripts = Path(__file__).resolve().parents[2] / "workflow" / "scripts"
    code = []
    for name in LIGHT_SCRIPTS:
        tree = ast.parse((scripts / f"{name}.py").read_text())
        code += [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    # one interpreter for all: what none of them imports, the union does not either
    check = "\n".join(code + ["import sys", f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"])
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
