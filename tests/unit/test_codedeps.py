"""Code inputs: the library files a script runs through its imports, transitively."""

from __future__ import annotations

from pathlib import Path

from headatlas.pipeline.codedeps import code_files, imported_modules


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_closure_follows_imports_packages_and_relative_imports(tmp_path):
    src = tmp_path / "src"
    write(src, {
        "headatlas/__init__.py": "",
        "headatlas/a.py": "import headatlas.b\n",
        "headatlas/b.py": "import os\n",
        "headatlas/unused.py": "",
        "headatlas/pkg/__init__.py": "",
        "headatlas/pkg/c.py": "from . import d\nfrom .e import thing\n",
        "headatlas/pkg/d.py": "def f():\n    from headatlas import a  # lazy: still counted\n",
        "headatlas/pkg/e.py": "thing = 1\n",
    })
    script = tmp_path / "script.py"
    script.write_text("import numpy\nfrom headatlas.pkg import c\n")
    files = {Path(p).relative_to(src.resolve()).as_posix() for p in code_files(script, src)}
    assert files == {"headatlas/__init__.py", "headatlas/pkg/__init__.py", "headatlas/pkg/c.py",
                     "headatlas/pkg/d.py", "headatlas/pkg/e.py", "headatlas/a.py", "headatlas/b.py"}


def test_names_imported_from_a_package_are_modules_only_when_files_exist(tmp_path):
    src = tmp_path / "src"
    write(src, {"headatlas/__init__.py": "", "headatlas/tools/__init__.py": "",
                "headatlas/tools/x.py": ""})
    script = tmp_path / "s.py"
    script.write_text("from headatlas.tools import x, helper\n")
    assert imported_modules(script, src) == {"headatlas.tools", "headatlas.tools.x"}


def test_extraction_script_does_not_import_the_analyses():
    root = Path(__file__).resolve().parents[2]
    files = code_files(root / "workflow" / "scripts" / "extract.py", root / "src")
    assert any(f.endswith("headatlas/encoders/extract.py") for f in files)
    assert not [f for f in files if "/analyses/" in f or "/plots" in f]


def test_the_treebank_readers_loaded_by_name_are_code_inputs_of_prepare_treebank():
    """Issue 21, item 9: formats.py loads its readers with importlib from the module names in
    FORMATS; they still count as code the prepare_treebank rule runs (codedeps reads the names),
    so editing the CoNLL-2012 converter re-prepares that corpus."""
    from headatlas.corpora.formats import FORMATS

    root = Path(__file__).resolve().parents[2]
    files = {Path(f).relative_to(root / "src").as_posix()
             for f in code_files(root / "workflow" / "scripts" / "prepare_treebank.py", root / "src")}
    assert {"headatlas/corpora/conll2012.py", "headatlas/corpora/conllx.py",
            "headatlas/corpora/conllu_reader.py", "headatlas/corpora/formats.py"} <= files
    readers = {fmt.reader.partition(":")[0] for fmt in FORMATS.values() if fmt.reader}
    assert {m.replace(".", "/") + ".py" for m in readers} <= files


def test_a_parent_package_runs_its_top_level_only(tmp_path):
    """Importing ``headatlas.pkg.mod`` runs ``headatlas/__init__.py`` and ``pkg/__init__.py`` as
    parents: their module-level imports count, the imports inside their functions do not (a
    notebook entry point), unless the script imports the package itself by name."""
    src = tmp_path / "src"
    write(src, {
        "headatlas/__init__.py": "from headatlas import leaf\n\ndef atlas():\n    from headatlas import report\n",
        "headatlas/leaf.py": "",
        "headatlas/report.py": "",
        "headatlas/pkg/__init__.py": "",
        "headatlas/pkg/mod.py": "",
    })
    script = tmp_path / "script.py"
    script.write_text("from headatlas.pkg import mod\n")
    files = {Path(p).relative_to(src.resolve()).as_posix() for p in code_files(script, src)}
    assert files == {"headatlas/__init__.py", "headatlas/leaf.py", "headatlas/pkg/__init__.py",
                     "headatlas/pkg/mod.py"}
    notebook = tmp_path / "notebook.py"
    notebook.write_text("import headatlas\n\nheadatlas.atlas()\n")
    files = {Path(p).relative_to(src.resolve()).as_posix() for p in code_files(notebook, src)}
    assert files == {"headatlas/__init__.py", "headatlas/leaf.py", "headatlas/report.py"}


def test_modules_named_in_strings_count(tmp_path):
    """A table of ``"module:function"`` strings loaded with importlib (the corpus formats): the
    modules named count, a name that is no module of the library does not."""
    src = tmp_path / "src"
    write(src, {
        "headatlas/__init__.py": "",
        "headatlas/table.py": 'READERS = {"x": "headatlas.readers.x:read", "y": "headatlas.nowhere:f"}\n'
                              'TEXT = "see headatlas.readers.x"\n',
        "headatlas/readers/__init__.py": "",
        "headatlas/readers/x.py": "",
    })
    script = tmp_path / "script.py"
    script.write_text("from headatlas.table import READERS\n")
    files = {Path(p).relative_to(src.resolve()).as_posix() for p in code_files(script, src)}
    assert files == {"headatlas/__init__.py", "headatlas/table.py", "headatlas/readers/__init__.py",
                     "headatlas/readers/x.py"}


def test_the_notebook_entry_points_are_no_code_input_of_the_rules():
    """headatlas/__init__.py's atlas() imports the report when a notebook calls it: no rule that
    does not build the atlas depends on it."""
    root = Path(__file__).resolve().parents[2]
    files = code_files(root / "workflow" / "scripts" / "extract.py", root / "src")
    assert not [f for f in files if "/report/" in f]
