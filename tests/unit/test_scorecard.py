"""The scorecard: claims files of several models collected into one table, and the cross-model tables."""

import pandas as pd
import pytest

from headatlas.claims import Claim, claims_table, verdict
from headatlas.report.compare import (activations_by_depth, shares_by_model, sinks_by_depth, special_by_depth,
                                      table1_by_model)
from headatlas.report.scorecard import (ABSENT, by_weighting, caption, collect, model_of, models_of, on_noise, own_columns,
                                 own_tally, scorecard, source_key, tally, to_html)

MODELS = ["big", "small"]


def write(path, claims):
    path.parent.mkdir(parents=True, exist_ok=True)
    claims_table(claims).to_csv(path, index=False)
    return path


def c(id_, source, holds, ours="x", rule="r", note=""):
    return Claim(id_, source, f"claim {id_}", "paper value", ours, verdict(holds), rule, note)


@pytest.fixture
def files(tmp_path):
    # big: two analyses; small: only the surface one (e.g. no probes run for it).
    results = tmp_path / "results"
    return results, [
        write(results / "big" / "wiki" / "surface" / "paper_claims.csv",
              [c("s.b", "Clark et al. 2019 §3.2", True, "62%"), c("s.a", "Clark et al. 2019 §3.1", False)]),
        write(results / "big" / "gum" / "probes" / "paper_claims.csv",
              [c("p.a", "Clark et al. 2019 §5, Table 3", True, rule="ahead by 5")]),
        write(results / "small" / "wiki" / "surface" / "paper_claims.csv",
              [c("s.b", "Clark et al. 2019 §3.2", False, "2%", note="3 layers"),
               c("s.a", "Clark et al. 2019 §3.1", None, rule="other rule")]),
    ]


def test_model_and_folder_from_the_path(files):
    results, paths = files
    assert model_of(paths[1], results) == ("big", "gum/probes")
    with pytest.raises(ValueError, match="not a claims file of a model"):
        model_of(results / "paper_claims.csv", results)
    # A model that is not configured (e.g. a fine-tuned task model) comes after the configured ones.
    long = collect(paths, results, ["small"])
    assert models_of(long, ["small"]) == ["small", "big"] and set(long["model"]) == {"small", "big"}


def test_collect_orders_by_source_and_fills_what_a_model_lacks(files):
    results, paths = files
    long = collect(paths, results, MODELS)
    # 3 claims x 2 models; sources in order §3.1, §3.2, §5; models in config order.
    assert long[["id", "model"]].values.tolist() == [
        ["s.a", "big"], ["s.a", "small"], ["s.b", "big"], ["s.b", "small"], ["p.a", "big"], ["p.a", "small"]]
    absent = long[(long["id"] == "p.a") & (long["model"] == "small")].iloc[0]
    assert (absent["ours"], absent["verdict"]) == (ABSENT, "not applicable")
    counts = tally(long, MODELS).set_index("model")
    assert counts.loc["big"].tolist() == [2, 1, 0] and counts.loc["small"].tolist() == [0, 1, 2]
    assert source_key("Clark et al. 2019 §3.10") > source_key("Clark et al. 2019 §3.2")


def test_the_wide_scorecard(files):
    results, paths = files
    wide = scorecard(collect(paths, results, MODELS), MODELS).set_index("id")
    assert list(wide.columns) == ["source", "claim", "paper", "rule", "big: ours", "big: verdict",
                                  "small: ours", "small: verdict", "holds on a control", "note"]
    assert wide.loc["s.b", ["big: ours", "big: verdict", "small: ours", "small: verdict"]].tolist() == \
        ["62%", "holds", "2%", "does not hold"]
    assert wide.loc["s.b", "rule"] == "r"  # the same for both models: said once
    assert wide.loc["s.a", "rule"] == "big: r | small: other rule"  # differs: said per model
    assert wide.loc["s.b", "note"] == "3 layers"  # only one model has a note
    assert wide.loc["p.a", "rule"] == "ahead by 5"  # the absent model states no rule


def test_the_same_claim_in_two_folders_is_kept_twice(tmp_path):
    results = tmp_path / "results"
    paths = [write(results / "big" / "a" / "surface" / "paper_claims.csv", [c("s.a", "S §1", True)]),
             write(results / "big" / "b" / "surface" / "paper_claims.csv", [c("s.a", "S §1", False)])]
    long = collect(paths, results, ["big"])
    assert long["id"].tolist() == ["s.a [a/surface]", "s.a [b/surface]"]


def test_a_norm_weighted_claim_is_its_own_row_beside_its_twin(tmp_path):
    results = tmp_path / "results"
    paths = [write(results / "big" / "a" / "surface" / "paper_claims.csv", [c("s.a", "S §1", True)]),
             write(results / "big" / "a" / "surface-norm" / "paper_claims.csv", [c("s.a", "S §1", False)]),
             write(results / "big" / "b" / "surface" / "paper_claims.csv", [c("s.a", "S §1", True)]),
             write(results / "big" / "a" / "syntax-norm" / "paper_claims.csv", [c("t.a", "S §2", False)]),
             write(results / "small" / "a" / "surface" / "paper_claims.csv", [c("s.a", "S §1", False)])]
    long = collect(paths, results, ["big", "small"])
    assert long[["id", "model", "verdict"]].values.tolist() == [
        ["s.a [a/surface]", "big", "holds"], ["s.a [a/surface]", "small", "does not hold"],
        ["s.a [norm weighting]", "big", "does not hold"],
        ["s.a [norm weighting]", "small", "not applicable"],
        ["s.a [b/surface]", "big", "holds"], ["s.a [b/surface]", "small", "not applicable"],
        ["t.a [norm weighting]", "big", "does not hold"], ["t.a [norm weighting]", "small", "not applicable"]]
    assert long["where"].tolist()[2] == "a/surface-norm"


def test_cross_model_tables():
    special = pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2], "cls": [0.2, 0.4, 0.0, 0.0],
                            "sep": [0.0, 0.2, 0.6, 0.8], "punct": [0.1, 0.1, 0.0, 0.2]})
    deep = pd.DataFrame({"layer": [1, 2, 3, 4], "head": 1, "cls": 0.0, "sep": 0.5, "punct": 0.0})
    table = special_by_depth({"two": special, "four": deep})
    two = table[table["model"] == "two"]
    assert two["depth"].tolist() == [0.5, 1.0] and two["cls"].tolist() == pytest.approx([0.3, 0.0])
    assert two["sep"].tolist() == pytest.approx([0.1, 0.7])
    assert table[table["model"] == "four"]["depth"].tolist() == [0.25, 0.5, 0.75, 1.0]
    t1 = pd.DataFrame({"relation": ["all", "det", ""], "paper_relation": ["all", "det", "pobj"],
                       "head": ["1-1", "2-1", None], "acc": [40.0, 80.0, None], "baseline_offset": [1, 1, None],
                       "baseline_acc": [30.0, 60.0, None], "paper_acc": [34.5, 94.3, 76.3]})
    stacked = table1_by_model({("two", "gum"): t1, ("four", "gum"): t1})
    assert stacked["relation"].tolist() == ["all", "det", "all", "det"]  # the unmatched paper row left out
    assert stacked["acc_low"].isna().all()  # a table without intervals
    shares = pd.DataFrame({"type": ["dense", "vertical"], "heads": [3, 1], "share_pct": [75.0, 25.0],
                           "paper_pct": [26.04, 13.28], "mean_depth": [0.3, 0.9]})
    both = shares_by_model({"two": shares})
    assert both["model"].tolist() == ["two", "two", "paper (BERT-large)", "paper (BERT-large)"]
    assert both["share_pct"].tolist() == [75.0, 25.0, 26.04, 13.28]


def sink_layers(rates):
    """A sinks ``layers`` table: ``rates[layer]`` = the sink rate of (any, cls, sep) in that layer."""
    return pd.DataFrame([{"layer": layer + 1, "role": role, "sink_rate": rate}
                         for layer, row in enumerate(rates) for role, rate in zip(("any", "cls", "sep"), row)])


def test_sinks_by_depth_keeps_each_weighting_and_role_at_its_relative_depth():
    table = sinks_by_depth({("two", "attention"): sink_layers([(0.5, 0.5, 0.0), (0.75, 0.25, 0.5)]),
                            ("two", "norm"): sink_layers([(0.0, 0.0, 0.0), (0.25, 0.0, 0.25)]),
                            ("four", "attention"): sink_layers([(0.0, 0.0, 0.0)] * 4)})
    assert list(table.columns) == ["model", "weighting", "layer", "n_layers", "depth", "role", "sink_rate"]
    two = table[(table["model"] == "two") & (table["role"] == "any")]
    assert two["weighting"].tolist() == ["attention", "attention", "norm", "norm"]
    assert two["depth"].tolist() == [0.5, 1.0, 0.5, 1.0] and two["sink_rate"].tolist() == [0.5, 0.75, 0.0, 0.25]
    sep = table[(table["model"] == "two") & (table["role"] == "sep") & (table["weighting"] == "attention")]
    assert sep["sink_rate"].tolist() == [0.0, 0.5]
    four = table[table["model"] == "four"]
    assert set(four["n_layers"]) == {4} and sorted(set(four["depth"])) == [0.25, 0.5, 0.75, 1.0]
    assert len(sinks_by_depth({})) == 0


def activation_layers(ratios, carriers):
    """An activations ``layers`` table: per hidden state (0 = embeddings) its ratio and the role
    that carries the top entry in every segment."""
    roles = ("cls", "sep", "punct", "first", "other")
    return pd.DataFrame([{"layer": layer, "top_ratio": ratio, **{f"on_{r}": float(r == carrier) for r in roles}}
                         for layer, (ratio, carrier) in enumerate(zip(ratios, carriers))])


def test_activations_by_depth_puts_the_embeddings_at_0_and_names_the_carrier():
    table = activations_by_depth({"two": activation_layers([20.0, 50.0, 40.0], ["cls", "cls", "sep"]),
                                  "four": activation_layers([10.0] * 5, ["punct"] * 5)})
    assert list(table.columns) == ["model", "layer", "n_layers", "depth", "top_ratio", "carrier", "carrier_share"]
    two = table[table["model"] == "two"]
    assert two["depth"].tolist() == [0.0, 0.5, 1.0] and two["carrier"].tolist() == ["cls", "cls", "sep"]
    assert set(table[table["model"] == "four"]["n_layers"]) == {4} and (table["carrier_share"] == 1).all()
    assert len(activations_by_depth({})) == 0


def test_cross_model_figures(tmp_path):
    from headatlas.plots.compare import (plot_activations_by_depth, plot_shares_by_model, plot_sinks_by_depth,
                                         plot_special_by_depth, plot_table1_by_model)

    special = pd.DataFrame({"layer": [1, 2], "head": 1, "cls": 0.1, "sep": 0.5, "punct": 0.1})
    plot_special_by_depth(special_by_depth({"a": special, "b": special}), tmp_path / "s.svg", "caption")
    t1 = pd.DataFrame({"relation": ["all", "det"], "paper_relation": ["all", "det"], "head": ["1-1", "2-1"],
                       "acc": [40.0, 80.0], "acc_low": [35.0, 75.0], "acc_high": [45.0, 85.0],
                       "baseline_offset": [1, 1], "baseline_acc": [30.0, 60.0], "paper_acc": [34.5, 94.3]})
    plot_table1_by_model(table1_by_model({("a", "gum"): t1, ("b", "gum"): t1, ("a", "ewt"): t1}),
                         tmp_path / "t.svg", "caption")
    shares = pd.DataFrame({"type": ["dense", "vertical"], "heads": [3, 1], "share_pct": [75.0, 25.0],
                           "paper_pct": [26.04, 13.28], "mean_depth": [0.3, 0.9]})
    plot_shares_by_model(shares_by_model({"a": shares}), tmp_path / "h.svg", "caption")
    sinks = sinks_by_depth({("a", "attention"): sink_layers([(0.5, 0.5, 0.0)] * 2),
                            ("a", "norm"): sink_layers([(0.0, 0.0, 0.0)] * 2)})
    plot_sinks_by_depth(sinks, tmp_path / "k.svg", "caption")
    activations = activations_by_depth({"a": activation_layers([20.0, 50.0, 40.0], ["cls", "cls", "sep"])})
    plot_activations_by_depth(activations, tmp_path / "m.svg", "caption")
    assert all((tmp_path / f"{n}.svg").read_bytes().startswith(b"<?xml") for n in "sthkm")
    assert "top on [SEP]" in (tmp_path / "m.svg").read_text()
    assert "sink on [SEP]" in (tmp_path / "k.svg").read_text() and "a, norm (2 layers)" in (tmp_path / "k.svg").read_text()


@pytest.fixture
def weighted(tmp_path):
    """big: s.a under both weightings (holds, then not), p.a under attention only; helper: one claim
    under attention only; idle: a model with no claim of its own (every row absent); unjudged: one
    claim, not applicable."""
    results = tmp_path / "results"
    paths = [write(results / "big" / "w" / "surface" / "paper_claims.csv", [c("s.a", "S §1", True, "62%")]),
             write(results / "big" / "w" / "surface-norm" / "paper_claims.csv", [c("s.a", "S §1", False, "8%")]),
             write(results / "big" / "w" / "probes" / "paper_claims.csv", [c("p.a", "S §5", None)]),
             write(results / "helper" / "w" / "surface" / "paper_claims.csv", [c("s.a", "S §1", False, "1%")]),
             write(results / "unjudged" / "w" / "surface" / "paper_claims.csv", [c("s.a", "S §1", None)])]
    return collect(paths, results, ["big", "helper", "idle", "unjudged"])


def test_the_report_scorecard_has_the_weightings_as_columns_and_no_idle_model(weighted):
    models = models_of(weighted, ["big", "helper", "idle", "unjudged"])
    # idle states nothing, helper nothing under the norm weighting, unjudged judges nothing: none is
    # a column of "n/a".
    assert own_columns(weighted, models) == [("big", "attention"), ("big", "norm"), ("helper", "attention")]
    view = by_weighting(weighted, models).set_index("id")
    assert list(view.index) == ["s.a", "p.a"]  # the norm twin folded into its claim's row
    assert view.loc["s.a", ["big attention: verdict", "big norm: verdict", "helper attention: verdict"]].tolist() \
        == ["holds", "does not hold", "does not hold"]
    assert view.loc["s.a", "big norm: ours"] == "8%"
    assert view.loc["p.a", "big norm: ours"] == ABSENT  # big's probes: attention only
    assert view.loc["s.a", "rule"] == "r"
    page = to_html(view.reset_index(), own_columns(weighted, models), "cap")
    assert page.startswith("<!DOCTYPE html>") and page.count("<tr>") == 2 + 2  # two header rows, two claims
    assert '<th colspan="2">big</th><th colspan="1">helper</th>' in page
    assert "idle" not in page and "unjudged" not in page
    assert "<th>attention</th><th>norm</th><th>attention</th>" in page
    assert "#d9f2d9" in page and "not run" in page


def test_own_tally_counts_each_views_own_claims(weighted):
    counts = own_tally(weighted, ["big", "helper", "idle", "unjudged"]).set_index(["model", "weighting"])
    assert counts.loc[("big", "attention")].tolist() == [1, 0, 1]  # s.a holds, p.a not applicable
    assert counts.loc[("big", "norm")].tolist() == [0, 1, 0]
    assert counts.loc[("helper", "attention")].tolist() == [0, 1, 0]  # absent claims are not counted
    assert ("idle", "attention") not in counts.index
    assert counts.loc[("unjudged", "attention")].tolist() == [0, 0, 1]  # counted, though not a column


@pytest.fixture
def controlled(tmp_path):
    """big (trained) and noise (a random encoder, the control): s.a holds on both, s.b only on big,
    s.c on neither; noise's norm view does not exist."""
    results = tmp_path / "results"
    paths = [write(results / "noise" / "w" / "surface" / "paper_claims.csv",
                   [c("s.a", "S §1", True, "9%"), c("s.b", "S §1", False), c("s.c", "S §1", None)]),
             write(results / "big" / "w" / "surface" / "paper_claims.csv",
                   [c("s.a", "S §1", True), c("s.b", "S §1", True), c("s.c", "S §1", False)]),
             write(results / "big" / "w" / "surface-norm" / "paper_claims.csv", [c("s.b", "S §1", True)])]
    return collect(paths, results, ["noise", "big"])


def test_a_control_comes_last_and_flags_the_claims_it_holds(controlled):
    models = models_of(controlled, ["noise", "big"], ["noise"])
    assert models == ["big", "noise"]  # configured first, but a control goes last
    assert on_noise(controlled, ["noise"]).to_dict() == {"s.a": "noise attention", "s.b": "", "s.c": "",
                                                         "s.b [norm weighting]": ""}
    assert (on_noise(controlled, []) == "").all()  # no control, no flag
    wide = scorecard(controlled, models, ["noise"]).set_index("id")
    assert wide["holds on a control"].tolist() == ["noise attention", "", "", ""]
    assert list(wide.columns[-2:]) == ["holds on a control", "note"]
    view = by_weighting(controlled, models, ["noise"])
    assert view.set_index("id")["holds on a control"].to_dict() == {"s.a": "noise attention", "s.b": "",
                                                                     "s.c": ""}
    views = own_columns(controlled, models)
    assert views[-1] == ("noise", "attention")
    page = to_html(view, views, "cap", ["noise"])
    assert '<th colspan="1" class="control">noise<br><span class="dim">control: random encoder</span>' in page
    assert page.count('class="noise"') == 1 and "cannot tell a trained model from noise (noise attention)" in page
    assert 'class="control"' not in to_html(view, views, "cap")  # columns unmarked: no control named
    assert "1 claims hold on it too" in caption(controlled, models, 3, ["noise"])


def test_the_summary_marks_the_control_and_lists_what_it_holds(controlled):
    from headatlas.report.findings import furthest, summary_html

    models = models_of(controlled, ["noise", "big"], ["noise"])
    # Without the control, s.c fails on big alone; the control's failures are no finding.
    assert furthest(controlled, 5, ["noise"])["claim_id"].tolist() == ["s.c"]
    assert furthest(controlled, 5)["claim_id"].tolist() == ["s.c", "s.b"]
    page = summary_html(controlled, models, "results", controls=["noise"])
    assert "<td>noise (control: random encoder)</td>" in page
    assert "1 claims hold on the random control (noise) too" in page and "<code>s.a</code>" in page
    assert "On noise" not in summary_html(controlled, models, "results")
