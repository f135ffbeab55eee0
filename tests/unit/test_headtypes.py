"""Guan et al. distance features, head types, stability: answers worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headatlas.analyses import headtypes as ht
from headatlas.analyses.base import run_analysis
from headatlas.store.example import Example
from tests.unit.test_claims import by_id

# A 16-token input: [CLS] at 0, "," at 5, "." at 14, [SEP] at 15; positions 1-4 and 6-13
# are the 12 ordinary words. L = N = 16, so window i holds distance i + 1 exactly.
TOKENS16 = ["[CLS]", "a", "b", "c", "d", ",", "e", "f", "g", "h", "i", "j", "k", "l", ".", "[SEP]"]
NAMES = ht.feature_names()
IDX = {name: i for i, name in enumerate(NAMES)}


def specials(tokens):
    return np.stack([[t == "[CLS]" for t in tokens], [t == "[SEP]" for t in tokens],
                     [t == "," for t in tokens], [t == "." for t in tokens]])


def example(tokens, attn, index=0):
    n = len(tokens)
    return Example(index=index, id=str(index), tokens=list(tokens), input_ids=np.arange(n),
                   token_type_ids=np.zeros(n, np.int8), word_ids=np.arange(n), attn=attn)


def three_heads(n=16):
    """[1 layer, 3 heads, n, n]: previous token, all on [CLS], uniform."""
    prev = np.zeros((n, n), np.float32)
    prev[0, 0] = 1  # [CLS] has no previous token: it attends to itself
    prev[np.arange(1, n), np.arange(n - 1)] = 1
    cls = np.zeros((n, n), np.float32)
    cls[:, 0] = 1
    uniform = np.full((n, n), 1 / n, np.float32)
    return np.stack([prev, cls, uniform])[None]


def test_bins_of_a_16_token_input():
    bins = ht.key_bins(16, specials(TOKENS16))
    assert bins.shape == (16, 16)
    assert (bins[:, 0] == IDX["cls"]).all() and (bins[:, 15] == IDX["sep"]).all()
    assert (bins[:, 5] == IDX["comma"]).all() and (bins[:, 14] == IDX["period"]).all()
    assert bins[3, 3] == IDX["self"] and bins[15, 15] == IDX["sep"]  # a special key beats self
    assert bins[3, 4] == IDX["win01"] and bins[3, 2] == IDX["win01"]  # distance 1, both sides
    assert bins[1, 13] == IDX["win12"]  # distance 12 -> window 12 (width 1)


def test_a_batch_s_bins_are_each_example_s_padded():
    from headatlas.analyses.batch import MapBatch

    rng = np.random.default_rng(0)
    pool = ["w", ",", ".", "!", "x.", "a,", "[CLS]", "[SEP]", "...", ";"]
    examples = []
    for index, n in enumerate([9, 4, 9, 1, 17, 6]):
        tokens = ["[CLS]", *rng.choice(pool, max(n - 2, 0)).tolist(), "[SEP]"][:n]
        attn = np.full((1, 1, n, n), 1 / n, np.float32)
        examples.append(Example(index, f"e{index}", tokens, np.arange(n), np.zeros(n), np.arange(n), attn))
    batch = MapBatch.of(examples)
    for n_windows in (16, 3):
        bins = ht.batch_key_bins(batch, n_windows)
        assert bins.shape == (6, 17, 17) and bins.dtype == np.int16
        for b, e in enumerate(examples):
            n = e.n_tokens
            np.testing.assert_array_equal(bins[b, :n, :n], ht.key_bins(n, ht.special_masks(e), n_windows))
            assert not bins[b, n:].any() and not bins[b, :, n:].any()
    assert {0, 1, 2, 3} <= set(np.unique(bins).tolist())  # every kind of special key is among them


def test_window_width_two_when_l_is_32():
    # L = 32, N = 16: width 2, so distances 1-2 -> win01, 3-4 -> win02, 31 -> win16.
    bins = ht.key_bins(32, np.zeros((4, 32), bool))
    assert [bins[0, d] for d in (1, 2, 3, 4, 31)] == [IDX[w] for w in
                                                      ("win01", "win01", "win02", "win02", "win16")]


def test_features_of_hand_built_heads(loops):
    feats = ht.distance_features(three_heads(), ht.key_bins(16, specials(TOKENS16)), len(NAMES))[0]
    expected = np.zeros((3, len(NAMES)))
    # Previous-token head, per query s: s=0 -> [CLS] (itself), s=1 -> [CLS], s=6 -> ",",
    # s=15 -> "."; the other 12 queries (2-5, 7-14) -> a word at distance 1 = win01. Divide by 16.
    expected[0, [IDX["cls"], IDX["comma"], IDX["period"], IDX["win01"]]] = [2 / 16, 1 / 16, 1 / 16, 12 / 16]
    # All-on-[CLS] head: every token's whole row is in the [CLS] bin.
    expected[1, IDX["cls"]] = 1
    # Uniform head: each query gives 1/16 to each key, features = pair counts / 256.
    # Each special key is one key for all 16 queries: 16/256 = 1/16. Self: the 12 word queries.
    # Window d: pairs (s, t), t one of the 12 words, |s - t| = d, s anywhere in 0..15:
    #   d=1: every word has both neighbours in range -> 24; d=10: t = 1-4 (t+10) and 10-13 (t-10) -> 8;
    #   d=14: only t=1, s=15 -> 1; d=15: t would be 0 or 15, both special -> 0; d=16 impossible -> 0.
    expected[2, [IDX["cls"], IDX["sep"], IDX["comma"], IDX["period"]]] = 1 / 16
    expected[2, IDX["self"]] = 12 / 256
    expected[2, [IDX["win01"], IDX["win10"], IDX["win14"]]] = [24 / 256, 8 / 256, 1 / 256]
    checked = [IDX[c] for c in ("cls", "sep", "comma", "period", "self", "win01", "win10", "win14",
                                "win15", "win16")]
    np.testing.assert_allclose(feats[:2], expected[:2], atol=1e-6)
    np.testing.assert_allclose(feats[2, checked], expected[2, checked], atol=1e-6)
    np.testing.assert_allclose(feats.sum(axis=-1), 1, atol=1e-6)


def test_rows_are_renormalised_so_features_sum_to_one(loops):
    attn = three_heads() * np.float32(0.998)  # float16 storage leaves rows a little off 1
    feats = ht.distance_features(attn, ht.key_bins(16, specials(TOKENS16)), len(NAMES))
    np.testing.assert_allclose(feats.sum(axis=-1), 1, atol=1e-6)
    with pytest.raises(ValueError, match="sums to 0"):
        ht.distance_features(np.zeros((1, 16, 16)), ht.key_bins(16, specials(TOKENS16)))
    with pytest.raises(ValueError, match="special masks"):
        ht.key_bins(16, np.zeros((4, 15), bool))


def test_analysis_averages_inputs_with_equal_weight(loops):
    # Input 1 (16 tokens): head 3 uniform -> cls 1/16. Input 2 (32 tokens, [CLS] + 30 words +
    # [SEP]): uniform -> cls 1/32. Equal weight per input: (1/16 + 1/32) / 2 = 3/64.
    long_tokens = ["[CLS]"] + ["w"] * 30 + ["[SEP]"]
    examples = [example(TOKENS16, three_heads(16), 0), example(long_tokens, three_heads(32), 1)]
    features = run_analysis(ht.DistanceFeatures, examples, progress=False)
    assert features.features.shape == (2, 3, 21) and features.lengths.tolist() == [16, 32]
    table = features.head_table()
    assert list(table.columns) == ["layer", "head", *NAMES] and len(table) == 3
    assert table.loc[2, "cls"] == pytest.approx(3 / 64)
    assert table.loc[1, "cls"] == pytest.approx(1.0)
    np.testing.assert_allclose(table[NAMES].sum(axis=1), 1, atol=1e-6)


def test_features_stream_a_float16_store(tmp_path):
    from headatlas.store.writer import StoreWriter

    attrs = {"n_layers": 1, "n_heads": 3, "model_name": "m", "corpus": "c", "max_length": 32}
    with StoreWriter(tmp_path / "s.h5", attrs) as writer:
        for i in range(3):
            writer.add(i, str(i), TOKENS16, np.arange(16), np.zeros(16), np.arange(16), three_heads())
    fs = run_analysis(ht.DistanceFeatures, tmp_path / "s.h5", max_examples=2, progress=False)
    assert fs.features.shape == (2, 3, 21) and fs.example_index.tolist() == [0, 1]
    assert fs.provenance["model_name"] == "m" and fs.lengths.tolist() == [16, 16]
    assert fs.provenance["n_examples"] == 2
    assert fs.caption.startswith("model m (None), corpus c, N = 2 inputs")
    # Stored as float16 (1/16 is exact), renormalised rows: the hand values of the test above.
    assert fs.features[1, 0, IDX["win01"]] == pytest.approx(12 / 16)
    np.testing.assert_allclose(fs.features.sum(axis=-1), 1, atol=1e-6)


def test_input_features_round_trip(tmp_path):
    fs = run_analysis(ht.DistanceFeatures, [example(TOKENS16, three_heads())], progress=False,
                      weighting="attention")
    fs.save(tmp_path / "f.npz")
    back = ht.InputFeatures.load(tmp_path / "f.npz")
    # the caption and provenance travel with the features: a figure's footnote needs no store
    assert type(back) is ht.InputFeatures and back.features.shape == (1, 3, 21)
    assert (back.n_layers, back.n_heads, back.n_windows, back.n_inputs) == (1, 3, 16, 1)
    assert back.caption == fs.caption
    assert back.caption.startswith("model None (None), corpus None, N = 1 inputs")
    assert "1x3 = 3 heads" in back.caption
    assert back.provenance["options"] == {"n_windows": 16, "sample_examples": 2000, "seed": 0}
    pd.testing.assert_frame_equal(back.head_table(), fs.head_table())


@pytest.mark.parametrize("order", ["in corpus order", "reversed"])
def test_merging_two_halves_is_one_pass(order):
    # Input 0: the 16-token hand input; input 1: 32 tokens ([CLS] + 30 words + [SEP]). Merged in
    # either order, the inputs come back in corpus order, each with its own length, and the
    # per-head means are those of one pass: the uniform head's [CLS] share (1/16 + 1/32) / 2 = 3/64.
    long_tokens = ["[CLS]"] + ["w"] * 30 + ["[SEP]"]
    examples = [example(TOKENS16, three_heads(16), 0), example(long_tokens, three_heads(32), 1)]
    halves = []
    for part in examples:
        acc = ht.DistanceFeatures(1, 3)
        acc.add(part)
        halves.append(acc)
    into, other = halves if order == "in corpus order" else halves[::-1]
    state = other.state()
    assert state["features"].shape == (1, 3, 21) and state["example_index"].dtype == np.int64
    merged = into.merge(state).result()
    assert merged.example_index.tolist() == [0, 1] and merged.lengths.tolist() == [16, 32]
    assert merged.features[0, 1, IDX["cls"]] == 1.0
    assert merged.features[1, 2, IDX["cls"]] == pytest.approx(1 / 32)
    assert merged.head_table().loc[2, "cls"] == pytest.approx(3 / 64)
    one = run_analysis(ht.DistanceFeatures, examples, progress=False)
    np.testing.assert_array_equal(merged.features, one.features)
    pd.testing.assert_frame_equal(merged.head_table(), one.head_table())
    empty = ht.DistanceFeatures(1, 3, n_windows=4).state()
    assert empty["features"].shape == (0, 3, 9) and empty["example_index"].shape == (0,)


def test_atlas_reads_the_type_changes(tmp_path):
    changes = pd.DataFrame({"layer": [1, 1], "head": [1, 2], "before": ["dense", "vertical"],
                            "after": ["dense", "dense"], "changed": [False, True]})
    changes.to_csv(tmp_path / "changes_from_base.csv", index=False)
    read = ht.atlas_changes(tmp_path / "changes_from_base.csv")
    assert read["type_before"].tolist() == ["dense", "vertical"] and read["changed"].tolist() == [False, True]
    atlas = ht.ATLAS["changes"]
    names = [atlas.column_name(c, base="bert") for c in atlas.columns]
    assert names == ["type_in_bert", "type_changed_from_bert"]
    assert {c.source for c in atlas.columns} <= set(read.columns)
    assert [c.name for c in ht.ATLAS["features"].columns][:3] == ["type", "cluster", "guan_cls"]
    assert len(ht.ATLAS["features"].columns) == 2 + 21


PROTOTYPES = {  # planted 21-d profiles, one per type (each sums to 1)
    "diagonal": {"cls": 0.1, "self": 0.1, "win01": 0.8},
    "vertical": {"cls": 0.5, "sep": 0.4, "win01": 0.05, "win05": 0.05},
    "dense": {"cls": 0.1, **{f"win{i:02d}": 0.9 / 16 for i in range(1, 17)}},
    "dense&vertical": {"cls": 0.45, "self": 0.05, **{f"win{i:02d}": 0.5 / 15 for i in range(2, 17)}},
}


def planted(n_per_type=10, n_inputs=1, noise=0.002, seed=0):
    """[inputs, heads, 21] features of heads drawn around the prototypes, and their true types."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(list(PROTOTYPES), n_per_type)
    rng.shuffle(truth)
    base = np.array([[PROTOTYPES[t].get(n, 0.0) for n in NAMES] for t in truth])
    feats = np.clip(base + rng.normal(0, noise, (n_inputs, *base.shape)), 0, None)
    return feats / feats.sum(axis=-1, keepdims=True), truth


def head_table(feats):
    n = feats.shape[0]
    return pd.concat([pd.DataFrame({"layer": np.arange(n) // 4 + 1, "head": np.arange(n) % 4 + 1}),
                      pd.DataFrame(feats, columns=NAMES)], axis=1)


@pytest.mark.parametrize("method", ["kmeans", "gmm"])
def test_planted_clusters_get_the_paper_names(method):
    feats, truth = planted()
    types = ht.head_types(head_table(feats[0]), k=4, method=method, seed=0)
    assert (types["type"].to_numpy() == truth).all()
    shares = ht.type_shares(types)
    assert shares["heads"].tolist() == [10, 10, 10, 10]
    assert shares["paper_pct"].tolist() == [26.04, 25.56, 34.11, 13.28]


def test_naming_rule_on_centres():
    # Profiles (special, near, far): A (.2, .1, .7) dense; B (.3, .7, 0) diagonal;
    # C (.9, .1, 0) vertical; D (.5, 0, .5) dense&vertical: each the best of its row.
    centres = np.zeros((4, 21))
    centres[0, [IDX["cls"], IDX["self"], IDX["win08"]]] = [0.2, 0.1, 0.7]
    centres[1, [IDX["sep"], IDX["win01"]]] = [0.3, 0.7]
    centres[2, [IDX["cls"], IDX["win01"]]] = [0.9, 0.1]
    centres[3, [IDX["period"], IDX["win16"]]] = [0.5, 0.5]
    assert ht.name_clusters(centres) == ["dense", "diagonal", "vertical", "dense&vertical"]
    # Another k: no paper names, c1.. by increasing special mass (0.2, 0.3, 0.9).
    assert ht.name_clusters(centres[:3]) == ["c1", "c2", "c3"]


def test_hungarian_matching_of_permuted_labels():
    reference = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    perm = np.array([2, 3, 0, 1])  # cluster i of the reference is called perm[i]
    np.testing.assert_array_equal(ht.match_labels(perm[reference], reference, 4), reference)
    noisy = perm[reference].copy()
    noisy[0] = perm[3]  # one head moved: still matched by majority, that head stays off
    np.testing.assert_array_equal(ht.match_labels(noisy, reference, 4), [3, 0, 1, 1, 2, 2, 3, 3])
    with pytest.raises(ValueError, match="0..3"):
        ht.match_labels(np.array([4]), np.array([0]), 4)


@pytest.mark.parametrize("resample", ["inputs", "heads"])
def test_stability_is_one_on_separated_clusters(resample):
    feats, _ = planted(n_inputs=20, noise=0.01)
    result = ht.stability(feats, k=4, n_fits=5, fraction=0.5, seed=0, resample=resample)
    assert result.score == 1.0 and result.fits.shape == (5, 40)
    table = ht.stability_table([result], n_inputs=20)
    assert table.loc[0, "consistent_pct"] == 100.0 and table.loc[0, "paper_pct"] == 95.98


def test_stability_is_lower_on_noise():
    # 40 heads with no structure: every input's feature is a random point of the simplex,
    # so half-samples move heads between arbitrary clusters.
    rng = np.random.default_rng(1)
    noise = rng.dirichlet(np.ones(21), size=(20, 40))
    assert ht.stability(noise, k=4, n_fits=5, seed=0).score < 0.9


def test_stability_rejects_bad_arguments():
    feats, _ = planted(n_inputs=4)
    with pytest.raises(ValueError, match="resample"):
        ht.stability(feats, resample="rows")
    with pytest.raises(ValueError, match="fraction"):
        ht.stability(feats, fraction=0)
    with pytest.raises(ValueError, match="cannot form"):
        ht.fit_clusters(feats[0, :3], k=4)


def test_tsne_on_four_heads_does_not_crash():
    feats, _ = planted(n_per_type=1)
    xy = ht.tsne_embedding(feats[0], seed=0)  # default perplexity: (4 - 1) / 3 = 1
    assert xy.shape == (4, 2) and np.isfinite(xy).all()
    with pytest.raises(ValueError, match="perplexity"):
        ht.tsne_embedding(feats[0], perplexity=4)


def test_type_changes_by_layer():
    before = pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2],
                           "type": ["dense", "dense", "vertical", "diagonal"]})
    after = before.assign(type=["dense", "vertical", "vertical", "dense"])
    changes = ht.type_changes(before, after)
    assert changes["changed"].tolist() == [False, True, False, True]
    assert ht.changes_by_layer(changes)["changed"].tolist() == [1, 1]
    with pytest.raises(ValueError, match="different layers"):
        ht.type_changes(before, after.iloc[:3])


def test_figures_are_written(tmp_path):
    from headatlas.plots import headtypes as p

    feats, _ = planted(n_per_type=2)
    types = ht.head_types(head_table(feats[0]), k=4)
    p.plot_tsne(types, ht.tsne_embedding(ht.feature_matrix(types)), tmp_path / "t.svg", "caption")
    p.plot_feature_boxes(types, tmp_path / "b.svg", "caption")
    p.plot_layer_shares(types, tmp_path / "l.svg", "caption")
    p.plot_type_grid(types, tmp_path / "g.svg", "caption",
                     consistent=pd.Series([True] * 7 + [False]))
    changes = ht.type_changes(types, types.assign(type=types["type"][::-1].to_numpy()))
    p.plot_type_changes(changes, ht.changes_by_layer(changes), ("a", "b"), tmp_path / "c.svg", "cap")
    assert all((tmp_path / f"{n}.svg").read_bytes().startswith(b"<?xml") for n in "tblgc")


def test_stability_score_by_hand_and_the_papers_procedure_first():
    # 4 heads, 2 fits matched to the reference: head 2 moves in the second fit -> 3 of 4 consistent.
    result = ht.Stability(reference=np.array([0, 0, 1, 1]), fits=np.array([[0, 0, 1, 1], [0, 1, 1, 1]]),
                          resample="heads", fraction=0.5, subsample_size=2)
    assert result.consistent.tolist() == [True, False, True, True] and result.score == 0.75
    assert result.agreement.tolist() == [1.0, 0.75]
    # Identical inputs: every half of them averages to the full average, so resampling inputs
    # clusters the very same points in every fit -- stable by construction.
    feats, _ = planted(n_inputs=6, noise=0.0)
    same = np.repeat(feats[:1], 6, axis=0)
    assert ht.stability(same, k=4, n_fits=3, seed=0, resample="inputs").score == 1.0
    assert ht.RESAMPLE[0] == ht.HEADLINE == "heads"
    types = ht.head_types(head_table(feats[0]), k=4)
    features = ht.InputFeatures.from_arrays(feats, np.arange(6), np.full(6, 10), 2, 20)
    table, heads = ht.stability_tables(features, types, n_fits=3)
    assert table["resample"].tolist() == ["heads", "inputs"]
    assert table.loc[0, "reading"] == "the paper's procedure"
    assert "consistent_heads" in heads and "by construction" in table.loc[1, "note"]


def test_paper_claims_of_the_head_types():
    # 4 layers, 14 heads. dense: layers 1 1 2 4 (depth .25 .25 .5 1: 3 of 4 in the lower half);
    # diagonal: layers 1 2 3 (3 of 4 layers); dense&vertical: 2 3 3 (depth .5 .75 .75: 1 of 3 in
    # the middle third (1/3, 2/3]); vertical: 2 3 4 4 (depth .5 is not > .5: 3 of 4 in the upper half).
    layers = {"dense": [1, 1, 2, 4], "diagonal": [1, 2, 3], "dense&vertical": [2, 3, 3],
              "vertical": [2, 3, 4, 4]}
    types = pd.DataFrame([(l, t) for t, ls in layers.items() for l in ls], columns=["layer", "type"])
    types = with_features(types)  # planted prototypes: distinct types (tested below)
    # Shares: dense 4/14 = 28.6%, diagonal 21.4%, dense&vertical 21.4% (paper 34.11: 12.7 off),
    # vertical 28.6% (paper 13.28: 15.3 off).
    stability = pd.DataFrame({"resample": ["heads", "inputs"], "consistent_pct": [73.61, 95.83],
                              "per_fit": ["36 of 72 heads", "500 of 1000 inputs"]})
    c = by_id(ht.paper_claims(types, stability))
    assert c.loc["guan.types.four_types", "verdict"] == "holds"
    assert c.loc["guan.types.shares", "verdict"] == "does not hold"
    assert "dense&vertical 21.4%" in c.loc["guan.types.shares", "ours"]
    assert c.loc["guan.types.dense_first_layers", ["ours", "verdict"]].tolist() == \
        ["75% of dense heads in the lower half", "holds"]
    assert c.loc["guan.types.diagonal_all_layers", ["ours", "verdict"]].tolist() == \
        ["in 3 of 4 layers", "holds"]
    assert c.loc["guan.types.dense_vertical_middle", "verdict"] == "does not hold"
    assert c.loc["guan.types.vertical_higher_layers", ["ours", "verdict"]].tolist() == \
        ["75% of vertical heads in the upper half", "holds"]
    stable = c.loc["guan.stability"]
    assert stable["ours"] == "73.6% (36 of 72 heads per fit)" and stable["verdict"] == "does not hold"
    assert "95.8%" in stable["note"] and "by construction" in stable["note"]
    assert c.loc["guan.types.distinct", "verdict"] == "holds"
    other_k = by_id(ht.paper_claims(types.assign(type=["c1"] * 14), stability))
    assert other_k.loc["guan.types.four_types", "verdict"] == "not applicable"


def with_features(types, noise=0.002, seed=0):
    """``types`` (``layer``, ``type``) with features planted around each type's prototype."""
    feats = np.array([[PROTOTYPES[t].get(n, 0.0) for n in NAMES] for t in types["type"]])
    feats = np.clip(feats + np.random.default_rng(seed).normal(0, noise, feats.shape), 0, None)
    feats /= feats.sum(axis=1, keepdims=True)
    return pd.concat([types.reset_index(drop=True), pd.DataFrame(feats, columns=NAMES)], axis=1).assign(
        cluster=pd.factorize(types["type"])[0], head=np.arange(len(types)) + 1)


STABILITY = pd.DataFrame({"resample": ["heads"], "consistent_pct": [97.0], "per_fit": ["20 of 40 heads"]})


def test_noise_is_not_named_as_four_types():
    # Issue 23 item 2. 40 heads whose features are one profile plus Dirichlet noise: no groups.
    # K-means still cuts them into four clusters and names them; each holds >= 5% of the heads,
    # so the old rule said "four types" holds. The gap test: cutting a blob in four shrinks its
    # within sum of squares less than cutting a uniform box of the same extent (p ~ 1), and the
    # closest centres are < 1% of attention apart: "no distinct types", type claims not applicable.
    rng = np.random.default_rng(3)
    profile = np.array([PROTOTYPES["dense"].get(n, 0.0) for n in NAMES]) + 0.01
    feats = rng.dirichlet(profile / profile.sum() * 20000, size=40)
    table = head_table(feats)
    types = ht.head_types(table, k=4, seed=0)
    assert set(types["type"]) == set(ht.TYPES)  # named anyway
    shares = types["type"].value_counts(normalize=True)
    assert (shares >= 0.05).all()  # the old four_types rule would hold
    sep = ht.separation(types, n_references=50)
    assert sep.p_value > 0.5 and sep.min_centre_tv < 0.01 and not sep.distinct
    c = by_id(ht.paper_claims(types, STABILITY, n_references=50))
    assert c.loc["guan.types.distinct", "verdict"] == "does not hold"
    for key in ("four_types", "shares", "dense_first_layers", "diagonal_all_layers",
                "dense_vertical_middle", "vertical_higher_layers"):
        assert c.loc[f"guan.types.{key}", "verdict"] == "not applicable", key
        assert c.loc[f"guan.types.{key}", "note"].startswith("no distinct types (gap test")
    assert c.loc["guan.stability", "verdict"] == "not applicable"  # 97% stable noise says nothing


def test_tight_but_tiny_groups_are_not_types():
    # Four groups that the gap test finds (each a tight cloud) but whose centres differ by ~1% of
    # attention: far below a type's difference. Centres: the dense profile with 0.01 of mass moved
    # from win01 to win02..win05 in turn -> 1% apart in total variation.
    base = np.array([PROTOTYPES["dense"].get(n, 0.0) for n in NAMES])
    rng = np.random.default_rng(0)
    rows = []
    for g in range(4):
        centre = base.copy()
        centre[NAMES.index("win01")] -= 0.01
        centre[NAMES.index(f"win{g + 2:02d}")] += 0.01
        rows.append(centre + rng.normal(0, 0.0002, (10, len(NAMES))))
    types = ht.head_types(head_table(np.vstack(rows)), k=4, seed=0)
    sep = ht.separation(types, n_references=50)
    assert sep.beyond_chance and sep.min_centre_tv == pytest.approx(0.01, abs=0.002)
    assert not sep.distinct
    assert by_id(ht.paper_claims(types, STABILITY, n_references=50)).loc[
        "guan.types.four_types", "verdict"] == "not applicable"


def test_identical_heads_have_nothing_to_separate():
    feats = np.tile(np.array([PROTOTYPES["dense"].get(n, 0.0) for n in NAMES]), (8, 1))
    types = head_table(feats).assign(cluster=[0, 1, 2, 3] * 2, type=list(ht.TYPES) * 2)
    c = by_id(ht.paper_claims(types, STABILITY, n_references=10))
    assert c.loc["guan.types.distinct", "verdict"] == "does not hold"
    assert "same features" in c.loc["guan.types.distinct", "ours"]


def test_a_claim_about_where_a_type_sits_needs_two_heads_of_it():
    # Issue 23 item 7: one vertical head in layer 4 of 4 made "vertical heads are mainly in the
    # higher layers" hold (100% of one head). Now: not applicable, saying why.
    layers = {"dense": [1, 1, 2, 1], "diagonal": [1, 2, 3, 4], "dense&vertical": [2, 2, 3, 2],
              "vertical": [4]}
    types = with_features(pd.DataFrame([(l, t) for t, ls in layers.items() for l in ls],
                                       columns=["layer", "type"]))
    c = by_id(ht.paper_claims(types, STABILITY, n_references=50))
    assert c.loc["guan.types.distinct", "verdict"] == "holds"
    vertical = c.loc["guan.types.vertical_higher_layers"]
    assert vertical["verdict"] == "not applicable"
    assert vertical["ours"] == "1 vertical head (fewer than 2: no claim about where they sit)"
    assert c.loc["guan.types.dense_first_layers", "verdict"] == "holds"  # 4 heads, all in 1-2


def noise_types(seed=3, n=40):
    """``head_types`` of heads that are one profile plus Dirichlet noise (no groups), named anyway."""
    rng = np.random.default_rng(seed)
    profile = np.array([PROTOTYPES["dense"].get(n, 0.0) for n in NAMES]) + 0.01
    return ht.head_types(head_table(rng.dirichlet(profile / profile.sum() * 20000, size=n)), k=4, seed=0)


def test_clusters_that_are_not_distinct_are_not_named():
    # Issue 23 item 2 (b). The old type_shares named the noise's four clusters with shares each
    # >= 5% ("dense 25%, ..."): the shares table now has one row, "no distinct types", every head.
    types = noise_types()
    assert set(types["type"]) == set(ht.TYPES)  # k-means names them anyway
    unnamed, sep = ht.name_if_distinct(types, n_references=50)
    assert not sep.distinct and set(unnamed["type"]) == {ht.NO_TYPES} and not ht.has_types(unnamed)
    assert unnamed["cluster"].tolist() == types["cluster"].tolist()  # stability still reads them
    shares = ht.type_shares(unnamed, sep.text())
    assert shares["type"].tolist() == [ht.NO_TYPES] and shares["heads"].tolist() == [40]
    assert shares["share_pct"].tolist() == [100.0] and shares["paper_pct"].isna().all()
    assert shares["paper_layers"].tolist() == [""]
    assert shares["separation"].iloc[0].startswith("gap test k = 4 vs 1")
    assert not any(t in shares["separation"].iloc[0] for t in ht.TYPES)  # "clusters i and j", no type
    # heads 1..40, 4 per layer: layers 1..10, mean layer 5.5, depth 5.5 / 10 = 0.55
    assert shares["mean_layer"].tolist() == [5.5] and shares["mean_depth"].tolist() == [0.55]
    # The claims read the unnamed table: no distinct types, every type claim not applicable; the
    # closest centres are named by cluster number, not by a type name.
    c = by_id(ht.paper_claims(unnamed, STABILITY, n_references=50))
    assert c.loc["guan.types.distinct", "verdict"] == "does not hold"
    assert "closest centres (cluster " in c.loc["guan.types.distinct", "ours"]
    for key in ("four_types", "shares", "dense_first_layers", "vertical_higher_layers"):
        assert c.loc[f"guan.types.{key}", "verdict"] == "not applicable", key
        assert c.loc[f"guan.types.{key}", "note"].startswith("no distinct types (gap test")
        assert c.loc[f"guan.types.{key}", "ours"] == ht.NO_TYPES, key  # not "dense 0%, ..."
    assert c.loc["guan.stability", "verdict"] == "not applicable"


def test_distinct_clusters_keep_their_names():
    feats, truth = planted()
    types = ht.head_types(head_table(feats[0]), k=4, seed=0)
    named, sep = ht.name_if_distinct(types, n_references=50)
    assert sep.distinct and named["type"].tolist() == types["type"].tolist() and ht.has_types(named)
    shares = ht.type_shares(named, sep.text())
    assert shares["type"].tolist() == list(ht.TYPES) and shares["heads"].tolist() == [10, 10, 10, 10]
    assert "separation" in shares and "separation" not in ht.type_shares(named)


def test_type_changes_not_applicable_without_types():
    before = pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2],
                           "type": ["dense", "dense", "vertical", "diagonal"]})
    after = before.assign(type=ht.NO_TYPES)
    changes = ht.type_changes(before, after)
    # every head's "type" differs by name, but there is no type after: nothing changed type
    assert changes["changed"].tolist() == [False] * 4
    assert changes["note"].iloc[0].startswith("not applicable: no distinct types after")
    assert changes.attrs["not_applicable"] == changes["note"].iloc[0]
    assert ht.changes_by_layer(changes)["changed"].tolist() == [0, 0]
    assert "note" not in ht.type_changes(before, before)


def test_stability_and_figures_of_unnamed_types(tmp_path):
    from headatlas.plots import headtypes as p

    rng = np.random.default_rng(3)
    profile = np.array([PROTOTYPES["dense"].get(n, 0.0) for n in NAMES]) + 0.01
    per_input = rng.dirichlet(profile / profile.sum() * 20000, size=(3, 40))
    fs = ht.InputFeatures.from_arrays(per_input.astype(np.float32), np.arange(3), np.full(3, 20), 10, 4)
    types, _ = ht.name_if_distinct(ht.head_types(fs.head_table(), k=4, seed=0), n_references=20)
    assert not ht.has_types(types)
    table, heads = ht.stability_tables(fs, types, n_fits=2)
    assert set(heads["type"]) == {ht.NO_TYPES} and len(table) == 2
    p.plot_type_grid(types, tmp_path / "g.svg", "caption", heads["consistent_heads"])
    changes = ht.type_changes(types.assign(type="dense"), types)
    p.plot_type_changes(changes, ht.changes_by_layer(changes), ("a", "b"), tmp_path / "c.svg", "caption")
    assert (tmp_path / "g.svg").is_file() and (tmp_path / "c.svg").is_file()


def test_models_compared_when_the_first_has_no_types():
    from headatlas.report.compare import shares_by_model

    none = ht.type_shares(pd.DataFrame({"layer": [1, 2], "head": [1, 1], "type": ht.NO_TYPES}), "gap test ...")
    named = pd.DataFrame({"type": ["dense", "vertical"], "heads": [3, 1], "share_pct": [75.0, 25.0],
                          "paper_pct": [26.04, 13.28], "mean_depth": [0.3, 0.9]})
    both = shares_by_model({"random": none, "two": named})
    # the paper's rows come from the first table that has them, not from the first table
    assert both["type"].tolist() == [ht.NO_TYPES, "dense", "vertical", "dense", "vertical"]
    assert both["share_pct"].tolist() == [100.0, 75.0, 25.0, 26.04, 13.28]


def test_a_capped_sample_keeps_some_inputs_features_and_the_mean_of_all():
    """sample_examples = 2 of 5 inputs: each input's own features for the 2 of smallest key
    (the same merged from shards), the heads' table over all 5: (3 x 1/16 + 2 x 1/32) / 5 for
    the uniform head's [CLS] share (inputs 0, 2, 4 of 16 tokens, 1 and 3 of 32)."""
    from headatlas.analyses.sample import example_key

    long_tokens = ["[CLS]"] + ["w"] * 30 + ["[SEP]"]
    examples = [example(TOKENS16, three_heads(16), i) if i % 2 == 0 else example(long_tokens, three_heads(32), i)
                for i in range(5)]
    capped = run_analysis(ht.DistanceFeatures, examples, progress=False, sample_examples=2)
    chosen = sorted(sorted(range(5), key=lambda i: example_key(0, i))[:2])
    assert capped.example_index.tolist() == chosen and capped.features.shape == (2, 3, 21)
    assert (capped.n_inputs, capped.n_sampled) == (5, 2) and capped.lengths.tolist() == [16, 16, 16, 32, 32]
    assert capped.head_table().loc[2, "cls"] == pytest.approx((3 / 16 + 2 / 32) / 5)
    every = run_analysis(ht.DistanceFeatures, examples, progress=False, sample_examples=None)
    pd.testing.assert_frame_equal(capped.head_table(), every.head_table())
    np.testing.assert_array_equal(capped.features, every.features[chosen])
    assert "kept for a seeded sample of 2 inputs" in capped.caption and "seeded sample" not in every.caption
    shards = [ht.DistanceFeatures(1, 3, sample_examples=2) for _ in range(2)]
    for e in examples:
        shards[e.index % 2].add(e)
    both = shards[1].merge(shards[0].state()).result()
    np.testing.assert_array_equal(both.features, capped.features)
    pd.testing.assert_frame_equal(both.head_table(), capped.head_table())
    # the stability's input resampling draws from the sample and says so
    types = ht.head_types(capped.head_table(), k=2, seed=0)
    table, _ = ht.stability_tables(capped, types, k=2, n_fits=2)
    per_fit = table.set_index("resample")["per_fit"]
    assert per_fit["inputs"] == "1 of a seeded sample of 2 of the 5 inputs" and per_fit["heads"] == "2 of 3 heads"
