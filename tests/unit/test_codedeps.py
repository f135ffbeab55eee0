"""Code inputs: the library files a script runs through its imports, transitively."""

from __future__ import annotations

from pathlib import Path

from headatlas.pipeline import codedeps
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


def closure_with_cache(script: Path, src: Path, cache_file: Path) -> list[str]:
    """``code_files`` as one Snakefile parse makes it: a fresh cache read from ``cache_file``,
    saved at the end."""
    cache = codedeps.ImportCache(cache_file, src)
    codedeps.use_cache(cache)
    try:
        return code_files(script, src)
    finally:
        cache.save()
        codedeps.use_cache(None)


def library(tmp_path: Path, files: dict[str, str], script_text: str) -> tuple[Path, Path, Path]:
    """A library under ``tmp_path/src``, a script importing from it and where its cache goes."""
    src = tmp_path / "src"
    write(src, files)
    script = tmp_path / "s.py"
    script.write_text(script_text)
    return src, script, tmp_path / "imports.json"


def test_the_import_cache_gives_what_parsing_gives_and_parses_nothing_again(tmp_path, monkeypatch):
    src, script, cache_file = library(tmp_path, {
        "headatlas/__init__.py": "", "headatlas/a.py": "import headatlas.b\n",
        "headatlas/b.py": "def f():\n    import headatlas.c\n", "headatlas/c.py": ""},
        "from headatlas import a\n")
    codedeps.use_cache(None)
    parsed = code_files(script, src)
    assert closure_with_cache(script, src, cache_file) == parsed and len(parsed) == 4
    monkeypatch.setattr(codedeps, "_parse", lambda *a: (_ for _ in ()).throw(AssertionError("parsed")))
    assert closure_with_cache(script, src, cache_file) == parsed  # every file from the cache


def test_the_import_cache_reads_an_edited_file_again(tmp_path):
    src, script, cache_file = library(tmp_path, {"headatlas/__init__.py": "", "headatlas/a.py": "",
                                                 "headatlas/b.py": ""}, "import headatlas.a\n")
    assert len(closure_with_cache(script, src, cache_file)) == 2
    (src / "headatlas" / "a.py").write_text("import headatlas.b\n")  # the same size would do too
    assert any(f.endswith("b.py") for f in closure_with_cache(script, src, cache_file))


def test_a_new_module_file_empties_the_import_cache(tmp_path):
    """``from headatlas.tools import helper`` names a module only once tools/helper.py exists."""
    src, script, cache_file = library(tmp_path, {"headatlas/__init__.py": "", "headatlas/tools/__init__.py": ""},
                                      "from headatlas.tools import helper\n")
    assert not any(f.endswith("helper.py") for f in closure_with_cache(script, src, cache_file))
    write(src, {"headatlas/tools/helper.py": ""})
    assert any(f.endswith("helper.py") for f in closure_with_cache(script, src, cache_file))


def test_an_unreadable_import_cache_is_parsed_again(tmp_path):
    src, script, cache_file = library(tmp_path, {"headatlas/__init__.py": "", "headatlas/a.py": ""},
                                      "import headatlas.a\n")
    cache_file.write_text("{not json")
    assert len(closure_with_cache(script, src, cache_file)) == 2
    assert '"tree"' in cache_file.read_text()  # rewritten whole
