"""A new analysis is three files (library module, plot module, rules file): issue 18 item 8, and
issue 31's checklist (docs/development.md "Add an analysis").

In a temporary copy of the workflow a toy analysis is added by writing only
``src/headatlas/analyses/toy.py`` (the analysis: explicit options, a state that merges, a
``Result`` with its per-head table and a claim, and its atlas columns beside the code),
``src/headatlas/plots/toy.py`` and ``workflow/rules/toy.smk`` (``use rule store_analysis``,
the generic script, no caption of its own). It must be planned, built, asked for by ``rule
all``, in the report, its columns in the model's ``heads.csv`` and on the atlas page, its claim
in the scorecard, and rerun when its library module is edited.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.workflow.conftest import snakemake, tiny_folder

pytestmark = pytest.mark.workflow

LIBRARY = '''"""A toy analysis: each head's mean attention to the first token."""

import numpy as np

from headatlas.analyses.base import Analysis, register
from headatlas.analyses.result import Result
from headatlas.claims import Claim, verdict
from headatlas.heads import Column, HeadColumns, head_table


@register
class FirstToken(Analysis):
    name = "first_token"

    def __init__(self, n_layers, n_heads, threshold=0.5):
        super().__init__(n_layers, n_heads)
        self.threshold = threshold
        self._sum, self._rows = np.zeros((n_layers, n_heads)), 0

    def update(self, example):
        self._sum += example.attn[:, :, :, 0].sum(axis=-1, dtype=np.float64)
        self._rows += example.n_tokens

    def _state(self):
        return {"sum": self._sum, "rows": np.asarray(self._rows)}

    def _merge(self, state):
        self._sum = self._sum + state["sum"]
        self._rows += int(state["rows"])

    def result(self):
        first = self._sum / self._rows
        claim = Claim("toy.first_token", "a toy paper", "some head attends mostly to the first token",
                      f"> {self.threshold}", f"{first.max():.2f}", verdict(first.max() > self.threshold),
                      f"largest mean attention to the first token > {self.threshold}")
        return Result({"heads": head_table(self.n_layers, self.n_heads, first=first)}, claims=[claim])


ATLAS = {"first_token": HeadColumns("first token", "a toy paper", rank=99, columns=(
    Column("toy_first", "first", "share", "mean attention to the first token"),))}
'''

PLOT = '''"""The toy analysis's figure."""

from headatlas.plots.base import atomic_savefig, captioned_figure, draw_head_heatmap, head_grid


def plot_first_token(table, path, caption):
    fig = captioned_figure(4, 3, caption)
    draw_head_heatmap(fig.subplots(), head_grid(table, "first"))
    atomic_savefig(fig, path)
'''

RULES = '''# A toy analysis (tests/workflow/test_declarations.py): attention to the first token.
TOY = Results(
    "toy",
    f"{RESULTS}/{{model}}/{{corpus}}/toy{{weighting}}",
    category="Toy analysis",
    corpus=[PLAN.surface_corpus],
)


use rule store_analysis as toy with:
    input:
        stores=stores,
        code=analysis_code("toy"),
    output:
        heads=TOY.heads("first_token.csv"),
        claims=TOY.claims("paper_claims.csv"),
        figure=TOY.figure("first_token.svg"),
    log:
        logs("toy{weighting}/{model}/{corpus}"),
    benchmark:
        benchmarks("toy{weighting}/{model}/{corpus}")
    params:
        module="toy",
        analysis="first_token",
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
    # its per-head table joins the head atlas under both weightings, its columns described
    heads = pd.read_csv(root / "results" / "tiny" / "heads.csv")
    assert "toy_first" in heads.columns and set(heads["weighting"]) == {"attention", "norm"}
    first = pd.read_csv(root / tables[0])
    joined = heads[heads["weighting"] == "attention"].set_index(["layer", "head"])["toy_first"]
    assert joined.to_numpy() == pytest.approx(first.set_index(["layer", "head"])["first"].to_numpy(), rel=1e-5)
    columns = pd.read_csv(root / "results" / "tiny" / "heads_columns.csv").set_index("column")
    assert columns.loc["toy_first", "paper"] == "a toy paper"
    assert "toy_first" in (root / "results" / "atlas.html").read_text()
    # its claim joins the scorecard
    scorecard = pd.read_csv(root / "results" / "scorecard.csv")
    assert "toy.first_token" in set(scorecard["id"])

    snakemake(root, "--report", "report.html")
    report = (root / "report.html").read_text()
    assert "Toy analysis" in report and "first_token.csv" in report
    assert "Written by rule" in report  # the generic caption: the toy brings none

    # Editing the library module reruns the toy rule (its code input) and what reads its
    # results (the atlas, the scorecard), and nothing else.
    module = root / "src" / "headatlas" / "analyses" / "toy.py"
    module.write_text(LIBRARY + "\n# edited\n")
    os.utime(module)
    plan = snakemake(root, "-n", "--cores", "1").stdout
    assert "rule toy:" in plan
    rules = {line.split()[1].rstrip(":") for line in plan.splitlines() if line.startswith("rule ")}
    # (table_page: the atlas's table pages, heads.csv.html and heads_columns.csv.html, and only those)
    assert rules <= {"toy", "all", "atlas_heads", "atlas_page", "scorecard", "table_page"}
    pages = re.findall(r"^\s+output: (\S+\.csv\.html)", plan, re.M)
    atlas_pages = ("heads.csv.html", "heads_columns.csv.html")
    assert ("table_page" in rules) == bool(pages) and all(p.endswith(atlas_pages) for p in pages), pages


def test_a_caption_reading_a_wildcard_its_output_lacks_is_refused(tmp_path):
    """The report prints an undefined wildcard as nothing ('the tagger fine-tuned from .'): the
    parse refuses such a caption, naming it and the output."""
    root = tiny_folder(tmp_path)
    (root / "config.yaml").write_text(yaml.safe_dump(toy_config(root)))
    caption = root / "workflow" / "report" / "mixing_heads.rst"
    caption.write_text(caption.read_text() + "On {{ snakemake.wildcards.corpus }}.\n")
    failed = snakemake(root, "-n", "--cores", "1", check=False)
    assert failed.returncode != 0
    assert ("mixing_heads.rst reads snakemake.wildcards.corpus, which the output "
            "results/{task_model}/mixing/heads.csv does not have") in failed.stdout + failed.stderr
