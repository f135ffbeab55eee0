"""Issue 18 item 8: a new analysis is three files (library module, plot module, rules file).

In a temporary copy of the workflow a toy analysis is added by writing only
``src/headatlas/analyses/toy.py``, ``src/headatlas/plots/toy.py`` and ``workflow/rules/toy.smk``
(its rule runs the generic ``workflow/scripts/analysis.py`` and brings no caption of its own). It
must be planned, built, asked for by ``rule all``, in the report, and rerun when its library
module is edited.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.workflow.conftest import snakemake, tiny_folder

pytestmark = pytest.mark.workflow

LIBRARY = '''"""A toy analysis: each head's mean attention to the first token."""

import numpy as np

from headatlas.analyses.base import Analysis, register
from headatlas.heads import head_table


@register
class FirstToken(Analysis):
    name = "first_token"

    def __init__(self, n_layers, n_heads, **params):
        super().__init__(n_layers, n_heads, **params)
        self._sum, self._rows = np.zeros((n_layers, n_heads)), 0

    def update(self, example):
        self._sum += example.attn[:, :, :, 0].sum(axis=-1, dtype=np.float64)
        self._rows += example.n_tokens

    def result(self):
        return head_table(self.n_layers, self.n_heads, first=self._sum / self._rows)
'''

PLOT = '''"""The toy analysis's figure."""

from headatlas.plots.base import atomic_savefig, captioned_figure, draw_head_heatmap, head_grid


def plot_first_token(table, path, caption):
    fig = captioned_figure(4, 3, caption)
    draw_head_heatmap(fig.subplots(), head_grid(table, "first"))
    atomic_savefig(fig, path)
'''

RULES = '''# A toy analysis (tests/workflow/test_declarations.py): attention to the first token.
TOY_DIR = f"{RESULTS}/{{model}}/{{corpus}}/toy{{weighting}}"
targets("toy", category="Toy analysis", corpus=[PLAN.surface_corpus])


rule toy:
    input:
        stores=stores,
        code=code("analysis.py", "headatlas.analyses.toy", "headatlas.plots.toy"),
    output:
        table=result("toy", f"{TOY_DIR}/first_token.csv"),
        figure=result("toy", f"{TOY_DIR}/first_token.svg"),
    log:
        f"{LOGS}/toy{{weighting}}/{{model}}/{{corpus}}.log",
    params:
        module="toy",
        analysis="first_token",
        options={},
        weighting=weighting,
    script:
        "../scripts/analysis.py"
'''


def toy_config(root: Path) -> dict:
    """One tiny model, one segments corpus, and none of the per-model analyses asked for: the
    run is the toy analysis and what the shared outputs read."""
    return {
        "mirror": None,
        "models": {"tiny": {"path": str(root / "tiny-bert"), "analyses": []}},
        "corpora": {"wikipedia": {"kind": "segments", "n_segments": 4, "seed": 0,
                                  "path": str(Path(__file__).parents[1] / "fixtures" / "tiny" / "wiki.json")}},
        "extraction": {"max_length": 48, "batch_size": 4, "threads": 1},
        "surface": {"corpus": "wikipedia"},
    }


def test_an_analysis_is_three_files(tmp_path):
    root = tiny_folder(tmp_path)
    (root / "config.yaml").write_text(yaml.safe_dump(toy_config(root)))
    before = {p.relative_to(root) for p in root.rglob("*") if p.is_file()}
    (root / "src" / "headatlas" / "analyses" / "toy.py").write_text(LIBRARY)
    (root / "src" / "headatlas" / "plots" / "toy.py").write_text(PLOT)
    (root / "workflow" / "rules" / "toy.smk").write_text(RULES)
    added = {p.relative_to(root) for p in root.rglob("*") if p.is_file()} - before
    assert {p for p in added if "__pycache__" not in p.parts} == {
        Path("src/headatlas/analyses/toy.py"), Path("src/headatlas/plots/toy.py"),
        Path("workflow/rules/toy.smk")}

    tables = [f"results/tiny/wikipedia/toy{suffix}/first_token.csv" for suffix in ("", "-norm")]
    plan = snakemake(root, "-n", "--cores", "1").stdout
    assert "rule toy:" in plan
    asked = plan.split("rule all:")[1].split("\n")[1]
    for table in tables:
        assert table in asked and table.replace(".csv", ".svg") in asked

    snakemake(root, "--cores", "2")
    for table in tables:
        result = pd.read_csv(root / table)
        assert len(result) == 4 and result["first"].between(0, 1).all()  # 2 layers x 2 heads
        assert (root / table.replace(".csv", ".svg")).read_bytes().startswith(b"<?xml")

    snakemake(root, "--report", "report.html")
    report = (root / "report.html").read_text()
    assert "Toy analysis" in report and "first_token.csv" in report
    assert "Written by rule" in report  # the generic caption: the toy brings none

    # Editing the library module reruns the toy rule (its code input), and only it.
    module = root / "src" / "headatlas" / "analyses" / "toy.py"
    module.write_text(LIBRARY + "\n# edited\n")
    os.utime(module)
    plan = snakemake(root, "-n", "--cores", "1").stdout
    assert "rule toy:" in plan
    rules = {line.split()[1].rstrip(":") for line in plan.splitlines() if line.startswith("rule ")}
    assert rules == {"toy", "all"}
