"""The whole DAG on a tiny config: outputs, report, partial reruns, cluster profile, lint."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from headatlas.report.scorecard import ABSENT
from headatlas.store.reader import Store
from tests.conftest import ROOT
from tests.workflow.conftest import snakemake

pytestmark = pytest.mark.workflow


# Rules that never read a surface table: a change to one surface analysis must not rerun them.
INDEPENDENT_OF_SURFACE = ("prepare_", "extract", "corpus_summary", "syntax_", "coref_", "headtypes_",
                          "clustering_distances", "gradients_importance", "probe", "finetune", "ablation",
                          "norm_shares", "rollout")


def planned_jobs(result) -> dict[str, int]:
    """Rule -> count from the 'Job stats' table of a dry run."""
    table = result.stdout.split("Job stats:")[-1].split("Reasons:")[0] if "Job stats:" in result.stdout else ""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)
            if m.group(1) != "total"}


def test_every_output_is_built(tiny_workflow):
    surface = tiny_workflow / "results" / "tiny" / "wikipedia" / "surface"
    for name in ("relative_position", "special_tokens", "entropy"):
        table = pd.read_csv(surface / f"{name}.csv")
        assert len(table) == 4 and table["layer"].min() == 1  # 2 layers x 2 heads, 1-based
        assert (surface / f"{name}.svg").read_bytes().startswith(b"<?xml")
        # plots.formats [svg, pdf]: the figure as PDF, and both without the caption
        assert (surface / f"{name}.pdf").read_bytes().startswith(b"%PDF")
        assert (surface / f"{name}.nocaption.pdf").read_bytes().startswith(b"%PDF")
        assert "model tiny" in (surface / f"{name}.svg").read_text()
        assert "model tiny" not in (surface / f"{name}.nocaption.svg").read_text()
    assert len(pd.read_csv(surface / "example_heads.csv")) == 4
    assert len(pd.read_csv(surface / "paper_claims.csv")) > 5
    for corpus in ("wikipedia", "tb", "tb_docs"):
        with Store(tiny_workflow / "results" / "tiny" / corpus / "attention" / "shard-0.h5") as store:
            assert len(store) > 0 and store.attrs["corpus"] == corpus
        summary = pd.read_csv(tiny_workflow / "results" / "tiny" / corpus / "corpus_summary.csv")
        assert "extracted" in set(summary["quantity"])
    for log in ("prepare/tb.log", "extract/tiny/wikipedia/shard-0.log", "surface/tiny/wikipedia/entropy.log"):
        assert (tiny_workflow / "logs" / log).stat().st_size > 0


def test_the_second_family_runs_through(tiny_workflow):
    """RoBERTa: <s> A </s></s> B </s>, no token types; surface tables and Table 1 as for BERT."""
    results = tiny_workflow / "results" / "tiny_roberta"
    with Store(results / "wikipedia" / "attention" / "shard-0.h5") as store:
        assert (store.attrs["cls_token"], store.attrs["sep_token"]) == ("<s>", "</s>")
        example = next(iter(store))
        assert int(example.sep_mask.sum()) == 3 and not example.token_type_ids.any()
    special = pd.read_csv(results / "wikipedia" / "surface" / "special_tokens.csv")
    assert len(special) == 4 and special[["cls", "sep", "sep_from_sep"]].notna().all().all()
    table1 = pd.read_csv(results / "tb" / "syntax" / "table1.csv").set_index("relation")
    assert table1.loc["all", "n"] > 0 and table1.loc["all", "unaligned"] == 0  # every word has its pieces


def test_modernbert_runs_every_analysis(tiny_workflow):
    """ModernBERT (issue 34), the pre-LayerNorm family: every table and figure BERT gets, both
    views; its sliding-window layer stored as the model gives it (0 outside +-4 tokens); its
    tagger fine-tuned, the context mixing benchmark left out for it with the reason."""
    results = tiny_workflow / "results"
    files = {m: sorted(p.relative_to(results / m) for p in (results / m).rglob("*") if p.is_file())
             for m in ("tiny", "tiny_modernbert")}
    assert len(files["tiny"]) > 250 and files["tiny_modernbert"] == files["tiny"]
    with Store(results / "tiny_modernbert" / "wikipedia" / "attention" / "shard-0.h5", norms=True) as store:
        assert (store.attrs["cls_token"], store.attrs["sep_token"]) == ("[CLS]", "[SEP]")
        example = max(store, key=lambda e: e.n_tokens)
    n = example.n_tokens
    far = abs(np.arange(n)[:, None] - np.arange(n)) > 4
    assert n > 9 and (example.attn[1][:, far] == 0).all() and (example.attn[0][:, far] > 0).all()
    assert int(example.sep_mask.sum()) == 2 and not example.token_type_ids.any()
    relative = pd.read_csv(results / "tiny_modernbert" / "wikipedia" / "surface" / "relative_position.csv")
    assert relative.notna().all().all()
    atlas = pd.read_csv(results / "tiny_modernbert" / "heads.csv")
    assert len(atlas) == 2 * 2 * 2 and atlas["entropy"].notna().all()  # layers x heads x views
    assert (results / "finetune" / "tiny_modernbert" / "upos" / "metrics.csv").is_file()
    log = (tiny_workflow / ".snakemake" / "log")
    said = "\n".join(p.read_text() for p in log.glob("*.log"))
    assert "of tiny_modernbert's tagger: ModernBERT is a pre-LayerNorm family" in said
    card = pd.read_csv(results / "scorecard.csv", keep_default_na=False)
    assert card["tiny_modernbert: verdict"].isin(["holds", "does not hold"]).sum() > 20


def test_the_scorecard_collects_every_claims_file(tiny_workflow):
    results = tiny_workflow / "results"
    claims = sorted(results.glob("*/**/paper_claims.csv"))
    # surface, clustering, gradients, head types, Table 1 (tb), coreference (tb_docs), each map
    # analysis also under the norm weighting, Kobayashi's norms, Kovaleva's patterns, Gu's sinks,
    # massive activations and dormant heads, and the ablation, head importance and context mixing
    # benchmark of the fine-tuned task model tiny_upos (not a configured model: a column of its own)
    maps = {"surface", "clustering", "headtypes", "syntax", "coref", "sinks"}
    assert {p.parent.name for p in claims} == maps | {f"{m}-norm" for m in maps} | {
        "gradients", "norms", "ablation", "patterns", "importance", "activations", "mixing"}
    long = pd.read_csv(results / "scorecard_long.csv", keep_default_na=False)
    assert (long["ours"] != ABSENT).sum() == sum(len(pd.read_csv(p)) for p in claims)  # none lost
    card = pd.read_csv(results / "scorecard.csv", keep_default_na=False)
    assert len(card) == long["id"].nunique()
    for model in ("tiny", "tiny_roberta", "tiny_upos"):
        assert set(card[f"{model}: verdict"]) <= {"holds", "does not hold", "not applicable"}
    assert {"clark.s3.sink_token", "clark.s3.sink_token [norm weighting]", "clark.t1.tb.all",
            "guan.stability"} <= set(card["id"])
    assert (card["rule"] != "").all()  # every verdict states its rule
    assert {"sun.massive.on_sink_tokens", "clark.s3.sink_heads_quiet"} <= set(card["id"])
    assert {"mohebbi.mixing.value_zeroing_best", "ferrando.mixing.alti_beats_rollout"} <= set(card["id"])
    # the tiny treebank's UPOS column is X alone: its tagger has one tag, which blanking cannot
    # move; the benchmark says so, scores no target and judges no claim; its heads join the atlas
    assert "has one tag" in (tiny_workflow / "logs" / "mixing" / "tiny_upos.log").read_text()
    measures = pd.read_csv(results / "tiny_upos" / "mixing" / "measures.csv")
    assert (measures["targets"] == 0).all()
    assert set(long[long["where"] == "mixing"]["verdict"]) == {"not applicable"}
    assert "mixing_rho_attention" in pd.read_csv(results / "tiny_upos" / "heads.csv").columns
    for name in ("special_tokens_depth", "table1", "headtype_shares", "sinks_depth", "activations_depth",
                 "mixing"):
        assert (results / "compare" / f"{name}.svg").read_bytes().startswith(b"<?xml")
        assert len(pd.read_csv(results / "compare" / f"{name}.csv")) > 0


def test_both_weightings_and_the_norm_analyses_are_built(tiny_workflow):
    """The default weightings: every map analysis also under Kobayashi's norm weighting."""
    results = tiny_workflow / "results" / "tiny"
    with Store(results / "wikipedia" / "attention" / "shard-0.h5") as store:
        assert store.has_norms and store.attrs["model_class"] == "BertModel"
    for folder, name in (("wikipedia/surface", "entropy.csv"), ("tb/syntax", "table1.csv"),
                         ("tb_docs/coref", "accuracy.csv"), ("wikipedia/clustering", "structure.csv"),
                         ("wikipedia/headtypes", "type_shares.csv")):
        plain, weighted = (pd.read_csv(results / f"{folder}{suffix}" / name) for suffix in ("", "-norm"))
        assert plain.shape == weighted.shape, folder
    entropy = {s: pd.read_csv(results / f"wikipedia/surface{s}/entropy.csv") for s in ("", "-norm")}
    assert not entropy[""]["entropy"].equals(entropy["-norm"]["entropy"])  # a different view
    shares = pd.read_csv(results / "wikipedia" / "norms" / "shares.csv")
    assert len(shares) == 2 * 4 and set(shares["class"]) == {"cls", "sep", "punct", "other"}
    assert len(pd.read_csv(results / "wikipedia" / "norms" / "paper_claims.csv")) == 4
    rollout = pd.read_csv(results / "wikipedia" / "rollout" / "shares.csv")
    assert set(rollout["source"]) == {"attention", "norm"} and len(rollout) == 2 * 2
    for figure in ("norms/norms.svg", "rollout/rollout.svg", "surface-norm/entropy.svg"):
        assert (results / "wikipedia" / figure).read_bytes().startswith(b"<?xml")


def test_nothing_left_to_do(tiny_workflow):
    assert planned_jobs(snakemake(tiny_workflow, "-n", "--cores", "1")) == {}


def test_report_is_one_self_contained_page(tiny_workflow):
    snakemake(tiny_workflow, "--report", "results/report.html")
    html = (tiny_workflow / "results" / "report.html").read_text()
    assert "Relative position" in html and "paper_claims.csv" in html
    assert "headatlas-scorecard" in html  # the scorecard is on the landing page
    assert "Norm weighting (Kobayashi et al. 2020)" in html and "Attention rollout" in html


def test_changed_params_rerun_only_that_analysis(tiny_workflow, tmp_path):
    overlay = tmp_path / "overlay.yaml"  # --configfile extends config.yaml (--config gives strings)
    overlay.write_text(yaml.safe_dump({"surface": {"corpus": "wikipedia",
                                                   "options": {"entropy": {"max_examples": 2}}}}))
    jobs = planned_jobs(snakemake(tiny_workflow, "-n", "--cores", "1", "--configfile", str(overlay)))
    assert jobs.get("surface_table") == 3 * 2  # the entropy table of each model, under each weighting
    # Only the entropy table and what reads the surface tables; nothing upstream or beside it.
    assert not [rule for rule in jobs if rule.startswith(INDEPENDENT_OF_SURFACE)]


def test_slurm_profile_plans_the_jobs(tiny_workflow):
    result = snakemake(tiny_workflow, "-n", "--forceall", "--workflow-profile", "profiles/slurm")
    jobs = planned_jobs(result)
    # BERT and ModernBERT x 4 corpora, RoBERTa x its surface corpus and treebank / 3 models x 3
    # tables x 2 weightings
    assert jobs.get("extract") == 2 * 4 + 2 and jobs.get("surface_table") == 3 * 3 * 2


def test_lint_is_clean(tmp_path):
    from tests.workflow.isolation import snakemake_in, work_folder

    result = snakemake_in(work_folder(tmp_path), "--lint", check=False)  # never in the repository
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations" in result.stdout + result.stderr


def test_snakefmt_is_clean():
    result = subprocess.run([sys.executable, "-m", "snakefmt", "--check", "Snakefile", "workflow"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
