"""Packaging: the conda env, the generated configuration reference, the wheel and its command."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from headatlas.pipeline import configdocs
from headatlas.cli import COMMANDS
from tests.conftest import ROOT

def requirement_pins(name: str = "requirements.txt") -> list[str]:
    lines = (re.sub(r"\s*#.*", "", l).strip() for l in (ROOT / name).read_text().splitlines())
    return [l for l in lines if l]


def test_every_requirement_is_pinned():
    assert all("==" in pin for pin in requirement_pins()), requirement_pins()


def test_the_test_pins_add_to_the_runtime_pins_only_what_tests_and_lint_need():
    dev = requirement_pins("requirements-dev.txt")
    assert dev[0] == "-r requirements.txt" and all("==" in pin for pin in dev[1:])
    assert {pin.split("==")[0] for pin in dev[1:]} == {"pytest", "pytest-xdist", "filelock", "snakefmt",
                                                       "websocket-client"}
    assert not {pin.split("==")[0] for pin in dev[1:]} & {pin.split("==")[0] for pin in requirement_pins()}


def test_conda_env_is_self_contained_and_matches_requirements():
    env = yaml.safe_load((ROOT / "envs" / "headatlas.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    # Snakemake builds the env from a copy under .snakemake/conda/: no paths, no -r / -e.
    assert not [p for p in pip if p.startswith("-") or "/" in p or p.startswith(".")], pip
    assert pip == requirement_pins()


def test_the_container_recipe_is_built_from_the_pin_list():
    """envs/Dockerfile is the generator's output (regenerate it when requirements.txt changes) and
    installs every runtime pin exactly once: torch from PyTorch's CPU index, the rest from PyPI."""
    from headatlas.pipeline.container import dockerfile, pins

    recipe = (ROOT / "envs" / "Dockerfile").read_text()
    assert recipe == dockerfile(), \
        "envs/Dockerfile is out of date: python -m headatlas.pipeline.container > envs/Dockerfile"
    assert pins() == requirement_pins()
    words = re.findall(r"\S+==\S+", recipe)
    assert sorted(words) == sorted(requirement_pins())
    assert "RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in recipe
    instructions = {"FROM", "ENV", "RUN", "ARG", "COPY", "WORKDIR"}
    continued = False
    for line in recipe.splitlines():  # every line an instruction, a comment or a continuation
        assert continued or not line or line.startswith("#") or line.split()[0] in instructions, line
        continued = line.endswith("\\")


def test_config_reference_is_current():
    committed = (ROOT / "config" / "README.md").read_text()
    assert committed == configdocs.markdown(), \
        "config/README.md is out of date: headatlas config-docs > config/README.md"


def test_config_reference_names_every_key():
    text = configdocs.markdown()
    for key in ("`results`", "`data`", "`logs`", "`models.<name>.path`", "`extraction.threads`",
                "`patterns.thresholds.block`"):
        assert key in text


def test_the_packaged_schema_is_the_workflows():
    from headatlas.pipeline.config import schema_path

    assert schema_path().read_text() == (ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text()


def test_cli_lists_its_commands(capsys):
    from headatlas.cli import main

    main([])
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
    with pytest.raises(SystemExit, match="unknown command 'labels'"):
        main(["labels"])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the sources (nothing is written into the repository)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"),
                             str(source)], capture_output=True, text=True)
    if result.returncode != 0 and "setuptools" in result.stderr and "No matching distribution" in result.stderr:
        pytest.skip(f"the build backend could not be installed (no package index): {result.stderr[-300:]}")
    assert result.returncode == 0, result.stderr
    (path,) = (tmp / "dist").glob("headatlas-*.whl")
    return path


def test_wheel_carries_every_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    package = ROOT / "src" / "headatlas"
    data = [p for p in package.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")
            and "__pycache__" not in p.parts]
    assert data, "no data files found"
    missing = [str(p.relative_to(ROOT / "src")) for p in data
               if str(p.relative_to(ROOT / "src")).replace(os.sep, "/") not in names]
    assert not missing, f"left out of the wheel: {missing}"
    assert any(n.endswith("entry_points.txt") for n in names)


def test_the_installed_command_evaluates_the_patterns(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
                    str(wheel)], check=True)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import headatlas; print(headatlas.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert where.stdout.strip().startswith(str(site)), where.stdout  # the wheel's copy, not src/
    result = subprocess.run([str(site / "bin" / "headatlas"), "patterns-eval", "--out", str(tmp_path / "eval")],
                            env=env, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "held-out (test)" in result.stdout and "random forest" in result.stdout  # the default classifier
    table = (tmp_path / "eval" / "evaluation.csv").read_text()
    assert "vertical" in table and "accuracy" in table


def test_the_readme_is_for_users():
    """At most 250 lines, and no lab notebook: no commit hashes, no dated run logs."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert not re.findall(r"\b[0-9a-f]{7,40}\b(?<![0-9]{7})", text.replace("sha256", "")), \
        "a commit hash in README.md: measured runs belong in docs/"
    assert not re.findall(r"\b20\d\d-\d\d-\d\d\b", text), "a dated run in README.md: it belongs in docs/"


def test_the_atlas_command_prints_a_table_and_a_head(tmp_path, capsys):
    import pandas as pd

    from headatlas.cli import main

    rows = [{"weighting": w, "layer": l, "head": h, "sep": 0.1 * l + 0.01 * h}
            for w in ("attention", "norm") for l in (1, 2) for h in (1, 2)]
    (tmp_path / "m").mkdir()
    pd.DataFrame(rows).to_csv(tmp_path / "m" / "heads.csv", index=False)
    main(["atlas", "m", "--results", str(tmp_path), "--sort", "sep", "--top", "1"])
    out = capsys.readouterr().out
    assert "0.22" in out and "0.11" not in out  # head 2-2 has the most [SEP]
    main(["atlas", "m", "2-1", "--results", str(tmp_path)])
    assert "0.21" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["atlas", "m", "two-one", "--results", str(tmp_path)])


def test_citation_file_names_every_paper_the_readme_cites():
    """README's BibTeX and CITATION.cff cite the same papers; each entry has one author field."""
    import re

    import yaml

    root = Path(__file__).resolve().parents[2]
    bibtex = root.joinpath("README.md").read_text().split("```bibtex", 1)[1].split("```", 1)[0]
    entries = re.split(r"\n(?=@)", bibtex.strip())
    assert len(entries) == 6
    for entry in entries:
        assert len(re.findall(r"^\s*author\s*=|,\s*author\s*=", entry, re.M)) == 1, entry
    titles = {re.sub(r"[{}]", "", re.search(r"title\s*=\s*\{(.*)\},", e).group(1)).lower()
              for e in entries[1:]}
    cited = {r["title"].lower() for r in yaml.safe_load(root.joinpath("CITATION.cff").read_text())["references"]}
    assert titles == cited


def test_the_embedded_configuration_is_one_file_where_the_catalog_looks():
    """config/config.yaml (snakedeploy's and the catalog's place) is the embedded default; the
    top-level config.yaml the README's commands read is a link to it, not a copy kept by hand."""
    root = Path(__file__).resolve().parents[2]
    assert (root / "config" / "config.yaml").is_file() and not (root / "config" / "config.yaml").is_symlink()
    assert (root / "config.yaml").resolve() == (root / "config" / "config.yaml").resolve()
