"""Claims as data: records, verdicts, and their CSV layout."""

import importlib
import inspect

import pytest

from headatlas.claims import (COLUMNS, Claim, against, beats, beats_paired, claims_table, depth_layers, depth_text,
                              difference_text, holds_if, pct, read_claims, verdict)

# Every module that judges paper claims; each exposes one ``paper_claims(...) -> list[Claim]``.
CLAIM_MODULES = ("headatlas.analyses.clustering", "headatlas.analyses.coref", "headatlas.analyses.gradients",
                 "headatlas.analyses.headtypes", "headatlas.analyses.norms", "headatlas.analyses.patterns",
                 "headatlas.analyses.probes", "headatlas.analyses.surface", "headatlas.analyses.syntax",
                 "headatlas.interventions.ablation", "headatlas.interventions.importance")


def by_id(claims):
    """What a ``paper_claims`` returned, checked to be a list of :class:`Claim`, as its claims
    table (:func:`claims_table`, the ``paper_claims.csv`` layout) indexed by ``id``."""
    assert isinstance(claims, list) and all(isinstance(c, Claim) for c in claims), type(claims)
    return claims_table(claims).set_index("id")


@pytest.mark.parametrize("name", CLAIM_MODULES)
def test_every_claims_module_has_one_paper_claims_returning_claims(name):
    module = importlib.import_module(name)
    assert inspect.signature(module.paper_claims).return_annotation in ("list[Claim]", list[Claim])
    for old in ("claims", "norm_claims"):  # the names used before issue 31
        assert not inspect.isfunction(getattr(module, old, None)), f"{name}.{old}"


def test_verdicts_and_round_trip(tmp_path):
    assert [verdict(True), verdict(False), verdict(None)] == ["holds", "does not hold", "not applicable"]
    claims = [Claim("a.b", "Clark et al. 2019 §3", "heads attend to [SEP]", ">50%", "62%", verdict(True),
                    "mean share > 50%", "6 layers"),
              Claim("a.c", "Clark et al. 2019 §3", "x, y", "1", "", verdict(None), "no data")]
    table = claims_table(claims)
    assert list(table.columns) == list(COLUMNS)
    path = tmp_path / "paper_claims.csv"
    table.to_csv(path, index=False)
    assert read_claims(path) == claims


def test_a_verdict_must_be_one_of_three():
    with pytest.raises(ValueError, match="verdict"):
        Claim("a", "s", "c", "p", "o", "maybe", "r")


def test_depth_layers_map_the_papers_ranges_by_relative_depth():
    assert depth_layers(6, 10, 12) == (6, 10)
    assert depth_layers(6, 10, 6) == (3, 5)  # 3.0, 5.0
    assert depth_layers(1, 4, 6) == (1, 2)  # 0.5 -> 1, 2.0
    assert depth_layers(9, 12, 6) == (5, 6)  # 4.5 -> 5, 6.0
    assert depth_layers(6, 10, 24) == (12, 20)
    assert depth_layers(1, 1, 2) == (1, 1)  # 0.17 -> 0, kept at layer 1
    assert depth_text(6, 10) == "depth 0.50-0.83 (layers 6-10 of 12)"
    assert depth_text(5, 5) == "depth 0.42 (layer 5 of 12)"


def test_beats_needs_the_margin_and_apart_intervals():
    assert beats(60.0, (55.0, 65.0), 50.0, (45.0, 54.0)) is True
    assert beats(60.0, (55.0, 65.0), 50.0, (45.0, 56.0)) is False  # intervals overlap
    assert beats(54.0, None, 50.0, None) is False  # 4 points < 5
    assert beats(55.0, None, 50.0, None) is True
    assert beats(float("nan"), None, 50.0, None) is None
    assert [holds_if(True), holds_if(None), holds_if(float("nan"))] == ["holds", "not applicable",
                                                                        "not applicable"]
    assert (pct(0.423), pct(0.4235, 1), pct(float("nan"))) == ("42%", "42.4%", "n/a")


def test_beats_paired_judges_the_difference_on_the_same_units():
    # Issue 23 item 5, GUM coreference: head vs nearest mention +13.3 [1.1, 25.2] paired. The two
    # accuracies' own intervals overlapped, so beats() said no; the paired interval is above 0.
    assert beats_paired(13.3, (1.1, 25.2)) is True
    assert beats_paired(13.3, (-0.4, 25.2)) is False  # the difference's interval reaches below 0
    assert beats_paired(4.9, (1.0, 9.0)) is False  # above 0 but under the 5-point margin
    assert beats_paired(6.0, None) is None and beats_paired(float("nan"), (1.0, 2.0)) is None
    assert beats_paired(6.0, (float("nan"), 9.0)) is None
    assert difference_text(6.7, 2.1, 11.2) == "+6.7 [2.1, 11.2]"
    assert difference_text(float("nan"), float("nan"), 1.0) == "n/a (no paired interval)"


# --- an undefined number is "not applicable", never "does not hold" ------------------------------

def test_holds_if_is_not_applicable_when_a_number_it_compares_is_undefined():
    import numpy as np

    nan = float("nan")
    assert holds_if(nan < 0.5, nan) == "not applicable"  # the comparison alone says False
    assert holds_if(np.float64(0.2) < 0.5, np.float64(0.2)) == "holds"
    assert holds_if(np.nan > 1, 2.0, np.float64("nan")) == "not applicable"
    assert holds_if(False, 1.0) == "does not hold" and holds_if(None) == "not applicable"


def test_a_claim_showing_nan_is_not_applicable_with_the_reason(tmp_path):
    claim = Claim("x", "s", "c", "p", "within 0.3 vs between nan (ratio nan)", "does not hold", "r", "n")
    assert claim.verdict == "not applicable" and claim.note.startswith("n; not applicable: a number")
    assert Claim("y", "s", "c", "p", "financial banana 42%", "does not hold", "r").verdict == "does not hold"
    assert Claim("z", "s", "c", "p", "nan%", "holds", "r").verdict == "not applicable"
    path = tmp_path / "old.csv"  # a claims file written before the rule is judged again on reading
    claims_table([Claim("w", "s", "c", "p", "ok", "holds", "r")]).assign(ours="nan nats",
                                                                         verdict="does not hold").to_csv(path, index=False)
    assert read_claims(path)[0].verdict == "not applicable"


def test_clustering_s6_behaviour_with_one_group_is_not_applicable():
    # What MPNet-base gave: every labelled head of one behaviour, so no between-group pairs.
    import pandas as pd

    from headatlas.analyses.clustering import paper_claims

    nan = float("nan")
    rows = [("js", "layer", "all", 9, 0.2, 0.4, 0.5, 0.001), ("js", "layer", "1", 4, 0.2, 0.4, 0.5, 0.01),
            ("js", "layer", "2", 5, 0.2, 0.4, 0.5, 0.01),
            ("mds", "layer", "all", 9, 0.2, 0.4, 0.5, 0.001), ("mds", "layer", "1", 4, 0.2, 0.4, 0.5, 0.01),
            ("mds", "layer", "2", 5, 0.2, 0.4, 0.5, 0.01),
            ("js", "behaviour", "all", 9, 0.1, nan, nan, 1.0), ("js", "behaviour", "broad", 9, 0.1, nan, nan, 1.0)]
    structure = pd.DataFrame([{"space": s, "grouping": g, "group": group, "n_heads": n, "within": w,
                               "between": b, "ratio": r, "p_value": p, "n_permutations": 999}
                              for s, g, group, n, w, b, r, p in rows])
    claims = by_id(paper_claims(structure, 0.1, True))
    assert claims.at["clark.s6.behaviour", "verdict"] == "not applicable"
    # One group: not testable, and the claim says why (issue 23 item 7), before any NaN is printed.
    assert claims.at["clark.s6.behaviour", "ours"].startswith("not testable: 1 behaviour group(s)")
    assert claims.at["clark.s6.same_layer", "verdict"] == "holds"
    # A group table that prints a NaN still ends "not applicable" through the safety net.
    structure.loc[structure["grouping"] == "behaviour", "group"] = ["all", "broad"]
    extra = structure[structure["grouping"] == "behaviour"].assign(group="narrow", n_heads=2)
    claims = by_id(paper_claims(pd.concat([structure, extra.iloc[[1]]]), 0.1, True))
    assert claims.at["clark.s6.behaviour", "verdict"] == "not applicable"
    assert "undefined" in claims.at["clark.s6.behaviour", "note"]


def test_surface_claims_with_undefined_shares_are_not_applicable():
    import numpy as np
    import pandas as pd

    from headatlas.analyses.surface import paper_claims

    heads = [(layer, head) for layer in range(1, 7) for head in (1, 2)]
    rel = pd.DataFrame([{"layer": l, "head": h, "prev": 0.1, "self": np.nan, "next": 0.1} for l, h in heads])
    special = pd.DataFrame([{"layer": l, "head": h, "cls": np.nan, "sep": np.nan, "punct": np.nan,
                             "sep_from_sep": np.nan, "sep_from_other": np.nan} for l, h in heads])
    entropy = pd.DataFrame([{"layer": l, "head": h, "entropy": 2.0, "uniform_entropy": np.nan,
                             "cls_entropy": np.nan, "max_weight": 0.2} for l, h in heads])
    claims = {c.id: c.verdict for c in paper_claims(rel, special, entropy)}
    for key in ("self_little", "sep_middle", "cls_early", "punct_deep", "cls_entropy_last", "sink_token"):
        assert claims[f"clark.s3.{key}"] == "not applicable", key
    assert claims["clark.s3.prev_heads"] == "does not hold"  # defined: no head above 50%


def test_gradient_and_norm_claims_with_undefined_ratios_are_not_applicable():
    import numpy as np
    import pandas as pd

    from headatlas.analyses.gradients import paper_claims as gradient_claims
    from headatlas.analyses.norms import _collapse_claim

    layers = pd.DataFrame({"layer": range(1, 7), "sep": 0.0, "other": 0.0, "sep_vs_other": np.nan,
                           "attention_to_sep": 0.5})
    verdicts = {c.id: c.verdict for c in gradient_claims(layers, "mlm")}
    assert verdicts["clark.s3_2.sep_gradient_small"] == "not applicable"
    rows = pd.DataFrame({"layer": [3], "attention": [0.6], "norm": [np.nan], "class": ["sep"]})
    assert _collapse_claim("k", "sep", rows, "norm", "c", "p", "n").verdict == "not applicable"


def test_a_number_beside_its_threshold_is_printed_so_it_cannot_contradict_it():
    """MPNet's layer 4 printed "-0.30" beside "<= -0.3" while its rho, -0.2996, fails the rule."""
    assert against(-0.2996, -0.3) == "-0.2996"  # above the threshold: "-0.30" would read as meeting it
    assert against(-0.3004, -0.3) == "-0.3004"  # below it: "-0.30" would read as equal
    assert against(-0.3, -0.3) == "-0.30" and against(-0.41, -0.3) == "-0.41" and against(0.5, -0.3) == "0.50"
    assert against(float("nan"), -0.3) == "n/a"
    assert against(0.0514, 0.05, 3, significant=True) == "0.0514" and against(0.5, 0.05, 3, significant=True) == "0.5"
    assert against(0.050004, 0.05, 3, significant=True) == "0.050004"
