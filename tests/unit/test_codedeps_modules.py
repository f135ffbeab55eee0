"""Code inputs of a script that imports modules by name at run time (workflow/scripts/analysis.py):
``code_files(script, src, modules)`` adds those modules, their packages and their imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from headatlas.pipeline.codedeps import code_files


def test_modules_run_by_name_count_with_their_packages_and_imports(tmp_path):
    src = tmp_path / "src"
    files = {
        "headatlas/__init__.py": "",
        "headatlas/base.py": "",
        "headatlas/other.py": "",
        "headatlas/analyses/__init__.py": "",
        "headatlas/analyses/toy.py": "from headatlas import base\n",
        "headatlas/plots/__init__.py": "",
        "headatlas/plots/toy.py": "",
    }
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    script = tmp_path / "analysis.py"
    script.write_text("import importlib\nfrom headatlas import other\n")

    def found(*modules):
        return {Path(p).relative_to(src.resolve()).as_posix() for p in code_files(script, src, modules)}

    assert found() == {"headatlas/__init__.py", "headatlas/other.py"}
    assert found("headatlas.analyses.toy", "headatlas.plots.toy") == {
        "headatlas/__init__.py", "headatlas/other.py", "headatlas/base.py",
        "headatlas/analyses/__init__.py", "headatlas/analyses/toy.py",
        "headatlas/plots/__init__.py", "headatlas/plots/toy.py"}
    with pytest.raises(ValueError, match="headatlas.analyses.missing"):
        found("headatlas.analyses.missing")
