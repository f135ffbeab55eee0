"""The groups make test hands to its two processes (tests/conftest.py) name files that exist."""

from __future__ import annotations

from tests.conftest import LONGEST_FIRST, ROOT, TINY_RUN, TINY_RUN_FILES, group_of

WORKFLOW = ROOT / "tests" / "workflow"


def test_every_named_file_exists():
    assert all((WORKFLOW / name).is_file() for name in TINY_RUN_FILES)
    assert all(name == TINY_RUN or (WORKFLOW / name).is_file() for name in LONGEST_FIRST)


def test_a_test_s_group_is_its_file_or_the_tiny_run():
    assert group_of("tests/workflow/test_reruns.py::test_x") == TINY_RUN
    assert group_of("tests/workflow/test_report.py::test_y[a::b]") == TINY_RUN
    assert group_of("tests/workflow/test_paper.py::test_z") == "tests/workflow/test_paper.py"
    assert group_of("tests/unit/test_halves.py::test_w") == "tests/unit/test_halves.py"


def test_files_that_run_snakemake_in_the_tiny_run_are_in_its_group():
    """A file that asks for ``tiny_workflow`` and runs Snakemake with it as the working folder
    (``snakemake(tiny_workflow, ...)``) must be in TINY_RUN, beside test_reruns' edits."""
    import re

    for path in WORKFLOW.glob("test_*.py"):
        text = path.read_text()
        if re.search(r"snakemake\(tiny_workflow\b", text):
            assert path.name in TINY_RUN_FILES, path.name
