"""Probing classifiers (Clark §5) and the edge classifier (Coenen et al.) on planted signals."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
import torch

from headatlas.analyses.base import run_analysis
from headatlas.analyses.probes import (ATLAS, PAPER_TABLE3, AttentionProbe, ProbeCache, ProbeFeatures,
                                       ProbeSentence, UniformMaps, attn_only_weights, collate,
                                       distance_features, edge_pairs, evaluate, head_weights,
                                       pair_features, right_branching, run_edge_probe, run_probe,
                                       save_probe, scored_words, table3, train_probe, uniform_maps)
from headatlas.corpora.records import Sentence, write_jsonl
from headatlas.errors import HeadAtlasError, StoreError
from headatlas.corpora.glove import GloVe
from headatlas.heads import ATTENTION_ONLY
from headatlas.store.reader import open_stores
from headatlas.store.writer import StoreWriter
from tests.unit.test_claims import by_id

LAYERS, HEADS = 2, 2
PLANTED = (0, 1)  # layer 1, head 2 (0-based here) points every word at its gold head


def random_heads(n: int, rng) -> list[int]:
    """A random tree: the root, then each word attached to the root or an earlier word."""
    root = int(rng.integers(n))
    heads = [0] * n
    for i in range(n):
        if i != root:
            heads[i] = int(rng.choice([root] + [j for j in range(i) if j != root])) + 1
    return heads


def planted_attention(heads: list[int], rng, planted: bool = True) -> np.ndarray:
    """``[L, H, n+2, n+2]`` noise rows; the planted head puts half of each word's row on its
    gold head's token (ROOT: on [SEP])."""
    n = len(heads)
    attn = rng.dirichlet(np.ones(n + 2), size=(LAYERS, HEADS, n + 2))
    if planted:
        for j, h in enumerate(heads):
            target = h if h else n + 1  # token of word h-1 is h; ROOT -> [SEP]
            attn[PLANTED][j + 1] *= 0.5
            attn[PLANTED][j + 1, target] += 0.5
    return attn


def write_corpus(folder, sentences: list[Sentence], attn_of, name="tb"):
    """A corpus JSONL and a store of one wordpiece per word with ``attn_of(sentence)``."""
    corpus, store = folder / f"{name}.jsonl", folder / f"{name}.h5"
    write_jsonl(corpus, sentences)
    attrs = {"model_name": "planted", "model_id": "planted", "corpus": name}
    with StoreWriter(store, attrs | {"n_layers": LAYERS, "n_heads": HEADS}) as writer:
        for index, s in enumerate(sentences):
            n = len(s.words)
            writer.add(index, s.id, ["[CLS]", *s.words, "[SEP]"], np.arange(n + 2), np.zeros(n + 2),
                       [-1, *range(n), -1], attn_of(s))
    return store, corpus


def build_cache(stores, corpus, path, progress=False):
    """The probes' feature cache of a store, through the analysis protocol."""
    return run_analysis(ProbeFeatures, stores, progress=progress, corpus=corpus, path=path)


def tree_sentence(i: int, heads: list[int], split: str) -> Sentence:
    n = len(heads)
    return Sentence(id=f"s{i}", words=[f"w{k % 5}" for k in range(n)], split=split, heads=heads,
                    rels=["root" if h == 0 else "dep" for h in heads], upos=["X"] * n)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """200 random trees (120 train, 40 dev, 40 test) whose head (1, 2) points at gold heads."""
    folder = tmp_path_factory.mktemp("planted")
    rng = np.random.default_rng(0)
    splits = ["train"] * 120 + ["dev"] * 40 + ["test"] * 40
    sentences = [tree_sentence(i, random_heads(int(rng.integers(3, 10)), rng), split)
                 for i, split in enumerate(splits)]
    store, corpus = write_corpus(folder, sentences, lambda s: planted_attention(s.heads, rng))
    build_cache([store], corpus, folder / "features.h5", progress=False)
    return ProbeCache(folder / "features.h5")


def test_attn_only_learns_the_planted_head(planted, tmp_path):
    # The planted head alone gets every word right (its argmax is the gold head, or [SEP]
    # for the root), so a probe that finds it scores ~100%, and that head's dep->head
    # weight must be the largest of the 2 x 4 weights.
    model, history = train_probe("attn_only", planted, planted, seed=0, epochs=2, lr=0.05,
                                 progress=False)
    correct, total = evaluate(model, planted, planted.indices("test"))
    assert correct / total > 0.95
    weights = model.weight_table(LAYERS, HEADS)
    best = weights.loc[weights["weight"].idxmax()]
    assert (best["direction"], best["layer"], best["head"]) == ("dep->head", 1, 2)
    assert list(history.columns) == ["epoch", "loss", "dev_uas", "seconds"] and len(history) == 2
    save_probe(tmp_path / "p.pt", "attn_only", model, LAYERS, HEADS)
    pd.testing.assert_frame_equal(attn_only_weights(tmp_path / "p.pt"), weights)
    save_probe(tmp_path / "rb.pt", "right_branching", None, LAYERS, HEADS)
    with pytest.raises(HeadAtlasError, match="not attn_only"):
        attn_only_weights(tmp_path / "rb.pt")


def test_attn_glove_learns_the_planted_head_too(planted):
    glove = GloVe(["w0", "w1", "w2"], np.eye(3, dtype=np.float32))  # w3, w4 are OOV
    scores, model = run_probe("attn_glove", planted, {"test": (planted, "test")}, glove,
                              seed=1, epochs=2, batch_size=4, lr=0.05, progress=False)
    assert model.weight_table(LAYERS, HEADS) is None  # per-pair weights: none per head
    assert scores.loc[0, "uas"] > 95 and scores.loc[0, "epoch"] in (1, 2)


def test_uniform_maps_by_hand(planted):
    # n = 2 words: 4 units ([CLS], [SEP], 2 words), every row 1/4 on each, in every map.
    assert uniform_maps(3, 2).shape == (3, 4, 4) and (uniform_maps(3, 2) == 0.25).all()
    control, s = UniformMaps(planted).sentence(5), planted.sentence(5)
    n = s.n_words
    assert control.maps.shape == s.maps.shape and np.allclose(control.maps, 1 / (n + 2))
    assert control.heads.tolist() == s.heads.tolist() and control.words == s.words


def test_uniform_control_cannot_see_the_planted_head(planted):
    # The planted head points at every gold head; uniform maps hide it, so the control probe
    # (the same Attn + GloVe probe, no position, words w0..w4 only) is left far below it.
    glove = GloVe(["w0", "w1", "w2", "w3", "w4"], np.eye(5, 8, dtype=np.float32))
    evals = {"test": (planted, "test")}
    fit = {"seed": 1, "epochs": 2, "batch_size": 4, "lr": 0.05, "progress": False, "attention": "planted"}
    control, _ = run_probe("uniform_attn_glove", planted, evals, glove, **fit)
    real, _ = run_probe("attn_glove", planted, evals, glove, **fit)
    assert control.loc[0, "attention"] == "uniform" and real.loc[0, "attention"] == "planted"
    assert real.loc[0, "uas"] > 95 and control.loc[0, "uas"] < 50, (real, control)


def test_distances_probe_learns_right_branching_trees(tmp_path):
    # Every word's head is the next word (the last word is the root): the +1 offset
    # indicator alone decides, so the distance + GloVe MLP reaches 100%.
    sentences = [tree_sentence(i, list(range(2, n + 1)) + [0], split)
                 for i, (n, split) in enumerate([(3 + i % 6, "train") for i in range(60)]
                                                + [(4, "dev"), (7, "test"), (9, "test")])]
    rng = np.random.default_rng(1)
    store, corpus = write_corpus(tmp_path, sentences, lambda s: planted_attention(s.heads, rng, False))
    build_cache([store], corpus, tmp_path / "f.h5", progress=False)
    features = ProbeCache(tmp_path / "f.h5")
    glove = GloVe(["w0"], np.ones((1, 2), np.float32))
    model, _ = train_probe("distances_glove", features, features, glove, seed=0, epochs=3,
                           lr=0.02, progress=False)
    # Test: 7 + 9 = 16 words, none punctuation, all scored (the roots' gold head is ROOT).
    assert evaluate(model, features, features.indices("test"), glove) == (16, 16)


def test_right_branching_on_a_hand_tree():
    # "The cat sat ." heads The->cat(2), cat->sat(3), sat->ROOT(0), .->sat(3).
    # Right-branching predicts 2, 3, 4, 0: The and cat right, sat wrong, "." not scored.
    s = Sentence(id="h", words=["The", "cat", "sat", "."], heads=[2, 3, 0, 3],
                 rels=["det", "nsubj", "root", "punct"], upos=["DET", "NOUN", "VERB", "PUNCT"])
    pred = right_branching(4)
    assert pred.tolist() == [2, 3, 4, 0]
    scored = scored_words(s)
    assert ((pred == np.array(s.heads)) & scored).sum() / scored.sum() == pytest.approx(2 / 3)
    assert right_branching(1).tolist() == [0]


def test_punctuation_is_left_out_by_relation_or_upos():
    s = Sentence(id="p", words=["Hi", ",", "you", "!"], heads=[0, 1, 1, 1],
                 rels=["root", "punct", "vocative", "discourse"],
                 upos=["INTJ", "PUNCT", "PRON", "PUNCT"])
    assert scored_words(s).tolist() == [True, False, True, False]


def test_pair_features_by_hand():
    # One map, two words; units [CLS], [SEP], w0, w1 (rows attend to columns).
    a = torch.tensor([[[[.1, .2, .3, .4],
                        [.5, .1, .2, .2],
                        [.3, .1, .2, .4],     # w0 -> CLS .3, SEP .1, w0 .2, w1 .4
                        [.2, .2, .5, .1]]]])  # w1 -> CLS .2, SEP .2, w0 .5, w1 .1
    f = pair_features(a, torch.tensor([1.0, 2.0]))
    assert f.shape == (1, 2, 2, 3)
    # dep->candidate, ROOT = 1 * a(j->CLS) + 2 * a(j->SEP): w0: .3 + .2 = .5; w1: .2 + .4 = .6
    torch.testing.assert_close(f[0, 0], torch.tensor([[.5, .2, .4], [.6, .5, .1]]))
    # candidate->dep, ROOT = 1 * a(CLS->j) + 2 * a(SEP->j): w0: .3 + .4 = .7; w1: .4 + .4 = .8
    torch.testing.assert_close(f[0, 1], torch.tensor([[.7, .2, .5], [.8, .4, .1]]))


def test_distance_features_by_hand():
    f = distance_features(torch.tensor([3]), 3)[0]  # [3 dependents, ROOT + 3 candidates, 7]
    assert f[0, 0].tolist() == [0, 0, 0, 0, 0, 0, 1]  # ROOT: only its indicator
    torch.testing.assert_close(f[0, 2], torch.tensor([1 / 3, 0, 0, 0, 1, 0, 0]))  # +1: ahead 1/3
    torch.testing.assert_close(f[2, 1], torch.tensor([0, 2 / 3, 1, 0, 0, 0, 0]))  # -2: behind 2/3


def test_batch_masks_self_and_padding():
    short = ProbeSentence(np.zeros((1, 3, 3)), np.array([0]), np.array([True]), ["a"])
    long = ProbeSentence(np.zeros((1, 4, 4)), np.array([2, 0]), np.array([True, True]), ["a", "b"])
    batch = collate([short, long])
    assert batch.heads.tolist() == [[0, -100], [2, 0]]
    # [ROOT, w0, w1] for each dependent: never itself, never a padding word.
    assert batch.candidates.tolist() == [[[True, False, False], [False, False, False]],
                                         [[True, False, True], [True, True, False]]]
    logits = AttentionProbe(1)(batch)
    assert torch.isinf(logits[0, 0, 1]) and torch.isfinite(logits[1, 0, 2])


def test_feature_cache_word_level_order(tmp_path):
    # Tokens [CLS] a ##b c [SEP]: word 0 has two pieces. Units are stored as [CLS], [SEP], w0, w1.
    s = Sentence(id="x", words=["ab", "c"], split="test", heads=[0, 1], rels=["root", "dep"])
    write_jsonl(tmp_path / "c.jsonl", [s])
    attn = np.random.default_rng(0).dirichlet(np.ones(5), size=(1, 1, 5))
    with StoreWriter(tmp_path / "s.h5", {"n_layers": 1, "n_heads": 1}) as w:
        w.add(0, "x", ["[CLS]", "a", "##b", "c", "[SEP]"], np.arange(5), np.zeros(5),
              [-1, 0, 0, 1, -1], attn)
    build_cache([tmp_path / "s.h5"], tmp_path / "c.jsonl", tmp_path / "f.h5", progress=False)
    maps = ProbeCache(tmp_path / "f.h5").sentence(0).maps[0]
    a = attn[0, 0].astype(np.float16).astype(np.float32)
    # [CLS] -> ab is the sum over its pieces; ab -> c is the mean of the pieces' rows.
    assert maps[0, 2] == pytest.approx(a[0, 1] + a[0, 2], abs=1e-3)
    assert maps[2, 3] == pytest.approx((a[1, 3] + a[2, 3]) / 2, abs=1e-3)
    assert maps[1, 1] == pytest.approx(a[4, 4], abs=1e-3)  # [SEP] -> [SEP]
    np.testing.assert_allclose(maps.sum(1), 1, atol=1e-2)


def test_the_result_names_the_cache_and_its_coverage(tmp_path):
    sentences = [tree_sentence(i, [0, 1], split) for i, split in enumerate(["train", "test"])]
    store, corpus = write_corpus(tmp_path, sentences, lambda s: np.full((LAYERS, HEADS, 4, 4), 0.25))
    result = build_cache([store], corpus, tmp_path / "f.h5")
    assert result.attrs["path"] == str(tmp_path / "f.h5") and not result.tables
    assert result.attrs["coverage"] == {"corpus": {"train": 1, "test": 1}, "cached": {"train": 1, "test": 1},
                                        "unaligned_words": 0}
    assert ProbeCache(result.attrs["path"]).coverage == result.attrs["coverage"]
    assert "N = 2 sentences" in result.caption


def cache_contents(path) -> dict:
    """Every dataset and attribute of a feature cache, as plain values."""
    with h5py.File(path, "r") as f:
        return {**{k: f[k][()] for k in f}, **{f"attr/{k}": v for k, v in f.attrs.items()}}


@pytest.mark.parametrize("order", ["in corpus order", "reversed"])
def test_merging_two_halves_is_one_pass(tmp_path, order):
    """Sentences 0 and 2 in one shard, 1 in the other; each half cached by its own instance and
    one state merged into the other: the cache holds the three in corpus order, as one pass."""
    sentences = [tree_sentence(i, heads, split) for i, (heads, split) in
                 enumerate([([2, 0], "train"), ([0, 1, 2], "dev"), ([0, 1], "test")])]
    write_jsonl(tmp_path / "tb.jsonl", sentences)
    attrs = {"model_name": "hand", "model_id": "hand", "corpus": "tb", "n_layers": 1, "n_heads": 1}
    # example i's token attention: 100 i + 10 row + column (float16 keeps these integers)
    for shard, members in (("a", [0, 2]), ("b", [1])):
        with StoreWriter(tmp_path / f"{shard}.h5", attrs) as writer:
            for i in members:
                n = len(sentences[i].words)
                attn = (100 * i + 10 * np.arange(n + 2)[:, None] + np.arange(n + 2))[None, None].astype(float)
                writer.add(i, sentences[i].id, ["[CLS]", *sentences[i].words, "[SEP]"], np.arange(n + 2),
                           np.zeros(n + 2), [-1, *range(n), -1], attn)

    def instance(shards, name):
        stores = open_stores([tmp_path / s for s in shards])
        acc = ProbeFeatures(1, 1, tmp_path / "tb.jsonl", tmp_path / name)
        acc.start(stores)
        for example in stores:
            acc.add(example)
        return acc

    one = instance(["a.h5", "b.h5"], "one.h5").result()
    a, b = instance(["a.h5"], "a-cache.h5"), instance(["b.h5"], "b-cache.h5")
    state = (b if order == "in corpus order" else a).state()
    assert state["index"].tolist() == ([1] if order == "in corpus order" else [0, 2])
    # K (n + 2)^2 values per sentence: 5^2 for sentence 1, 4^2 each for sentences 0 and 2
    assert state["maps"].dtype == np.float16 and state["maps"].size == (25 if order == "in corpus order" else 32)
    into = a if order == "in corpus order" else b
    both = into.merge(state).result()
    (b if into is a else a).close()
    assert both.attrs["coverage"] == one.attrs["coverage"] == {
        "corpus": {"train": 1, "dev": 1, "test": 1}, "cached": {"train": 1, "dev": 1, "test": 1},
        "unaligned_words": 0}
    merged, single = cache_contents(both.attrs["path"]), cache_contents(one.attrs["path"])
    assert merged.keys() == single.keys()
    for key in single:
        np.testing.assert_array_equal(merged[key], single[key], err_msg=key)
    cache = ProbeCache(both.attrs["path"])
    assert cache.split.tolist() == ["train", "dev", "test"] and cache.n_words.tolist() == [2, 3, 2]
    # Sentence 1 (three words): tokens [CLS] w0 w1 w2 [SEP] -> units [CLS], [SEP], w0, w1, w2.
    maps = cache.sentence(1).maps[0]
    assert maps[0, 0] == 100 and maps[0, 1] == 104  # [CLS] -> [CLS], [CLS] -> [SEP] (token 4)
    assert maps[2, 4] == 113 and maps[1, 2] == 141  # w0 -> w2 (tokens 1 -> 3), [SEP] -> w0
    assert cache.sentence(2).maps[0, 3, 1] == 223 and cache.tree(0).heads.tolist() == [2, 0]
    cache.close()
    assert sorted(p.name for p in tmp_path.glob("*cache.h5")) == [Path(both.attrs["path"]).name]


def test_the_atlas_reads_the_mean_weight_per_head_and_direction(tmp_path):
    weights = pd.DataFrame({"direction": ["dep->head", "head->dep"] * 4, "layer": [1] * 8,
                            "head": [1, 1, 2, 2] * 2, "weight": [1.0, -1.0, 2.0, 0.0, 3.0, -3.0, 4.0, 1.0],
                            "seed": [0] * 4 + [1] * 4})
    weights.to_csv(tmp_path / "w.csv", index=False)
    table = head_weights(tmp_path / "w.csv")
    # head 1-1: dep->head (1 + 3) / 2 = 2, head->dep (-1 - 3) / 2 = -2; head 1-2: 3 and 0.5.
    assert table[["layer", "head", "w_dep", "w_head"]].values.tolist() == [[1, 1, 2.0, -2.0], [1, 2, 3.0, 0.5]]
    columns = ATLAS["attn_only_weights"]
    assert (columns.rank, columns.weighting, columns.per_corpus) == (80, ATTENTION_ONLY, True)
    assert [columns.column_name(c, corpus="gum") for c in columns.columns] == ["probe_gum_dep", "probe_gum_head"]
    assert {c.source for c in columns.columns} <= set(table.columns)


def test_store_and_corpus_out_of_sync(tmp_path):
    s = Sentence(id="x", words=["a", "b"], heads=[0, 1], rels=["root", "dep"])
    write_jsonl(tmp_path / "c.jsonl", [Sentence(id="x", words=["a", "b", "c"], heads=[0, 1, 1],
                                                rels=["root", "dep", "dep"])])
    with StoreWriter(tmp_path / "s.h5", {"n_layers": 1, "n_heads": 1}) as w:
        w.add(0, "x", ["[CLS]", "a", "b", "[SEP]"], np.arange(4), np.zeros(4), [-1, 0, 1, -1],
              np.full((1, 1, 4, 4), 0.25))
    with pytest.raises(StoreError, match="re-extract"):
        build_cache([tmp_path / "s.h5"], tmp_path / "c.jsonl", tmp_path / "f.h5")
    assert not (tmp_path / "f.h5").exists() and s.words


def test_a_cache_that_fails_midway_leaves_no_file(tmp_path):
    # The second example has a [SEP] between its words: not a "[CLS] words [SEP]" input.
    sentences = [Sentence(id=f"x{i}", words=["a", "b"], heads=[0, 1], rels=["root", "dep"])
                 for i in range(2)]
    write_jsonl(tmp_path / "c.jsonl", sentences)
    with StoreWriter(tmp_path / "s.h5", {"n_layers": 1, "n_heads": 1}) as w:
        w.add(0, "x0", ["[CLS]", "a", "b", "[SEP]"], np.arange(4), np.zeros(4), [-1, 0, 1, -1],
              np.full((1, 1, 4, 4), 0.25))
        w.add(1, "x1", ["[CLS]", "a", "[SEP]", "b", "[SEP]"], np.arange(5), np.zeros(5),
              [-1, 0, -1, 1, -1], np.full((1, 1, 5, 5), 0.2))
    with pytest.raises(StoreError, match=r"\[CLS\] words \[SEP\]"):
        build_cache([tmp_path / "s.h5"], tmp_path / "c.jsonl", tmp_path / "f.h5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "s.h5"]  # no partial file


def test_missing_split_and_annotation_are_clear_errors(planted, tmp_path):
    with pytest.raises(HeadAtlasError, match="no 'validation' sentences"):
        planted.indices("validation")
    write_jsonl(tmp_path / "c.jsonl", [Sentence(id="x", words=["a"])])
    with StoreWriter(tmp_path / "s.h5", {"n_layers": 1, "n_heads": 1}) as w:
        w.add(0, "x", ["[CLS]", "a", "[SEP]"], np.arange(3), np.zeros(3), [-1, 0, -1],
              np.full((1, 1, 3, 3), 1 / 3))
    with pytest.raises(HeadAtlasError, match="no dependency annotation"):
        build_cache([tmp_path / "s.h5"], tmp_path / "c.jsonl", tmp_path / "f.h5")


def test_edge_classifier_separates_the_planted_signal(planted):
    # Edges have >= 0.5 attention in the planted head (dependent -> head), non-edges only
    # Dirichlet noise: a linear classifier separates them almost perfectly; test pairs
    # are balanced (half edges).
    result = run_edge_probe(planted, {"test": (planted, "test")}, seed=0)
    row = result.iloc[0]
    assert row["accuracy"] > 95 and row["pairs"] % 2 == 0 and row["train_pairs"] > 500


def test_table3_mean_and_sd_over_seeds():
    runs = pd.DataFrame({"probe": ["attn_only"] * 2 + ["right_branching"],
                         "seed": [0, 1, 0], "eval": ["gum_test"] * 3, "uas": [60.0, 62.0, 30.0],
                         "sentences": [50] * 3})
    table = table3(runs).set_index("probe")
    # attn_only: mean (60 + 62) / 2 = 61, sample sd sqrt(((60-61)^2 + (62-61)^2) / 1) = sqrt(2).
    assert table.loc["attn_only", "gum_test"] == 61.0
    assert table.loc["attn_only", "gum_test_sd"] == pytest.approx(2 ** 0.5)
    assert table.loc["right_branching", "gum_test_sd"] == 0.0
    assert table.loc["attn_only", "paper_uas"] == 61.0 and len(table) == len(PAPER_TABLE3)
    assert np.isnan(table.loc["attn_glove", "gum_test"])  # not run: no number invented
    assert table.loc["attn_only", "seeds"] == 2 and table.loc["attn_only", "gum_test_sentences"] == 50


def test_table3_attention_entropy_beside_the_rows():
    runs = pd.DataFrame({"probe": ["attn_glove", "random_attn_glove", "uniform_attn_glove", "distances_glove"],
                         "attention": ["m", "m_random", "uniform", ""], "seed": 0, "eval": "gum_test",
                         "uas": [65.0, 14.0, 13.0, 55.0], "sentences": 10})
    random = pd.DataFrame({"entropy": [4.83, 4.84], "uniform_entropy": [4.85, 4.85]})
    table = table3(runs, {"m_random": random}).set_index("probe")
    # m_random: 4.83 / 4.85 = 0.99588, 4.84 / 4.85 = 0.99794: mean 0.99691, least 0.99588.
    assert table.loc["random_attn_glove", "attention_entropy"] == pytest.approx(0.99691, abs=1e-5)
    assert table.loc["random_attn_glove", "attention_entropy_min"] == pytest.approx(0.99588, abs=1e-5)
    assert table.loc["uniform_attn_glove", "attention_entropy"] == 1.0  # uniform by construction
    assert np.isnan(table.loc["attn_glove", "attention_entropy"])  # m's table not given
    assert np.isnan(table.loc["distances_glove", "attention_entropy"])  # reads no attention
    assert table.loc["uniform_attn_glove", "gum_test"] == 13.0 and np.isnan(table.loc["uniform_attn_glove",
                                                                                      "paper_uas"])


def test_edge_pairs_by_hand(tmp_path):
    # "a b c", heads a->b, b->ROOT, c->b: edges {a,b} and {b,c}; the only non-edge is {a,c}.
    # Each sentence gives its 2 edges and min(2, 1) = 1 non-edge; then the larger class is
    # cut to the smaller: 1 edge + 1 non-edge.
    s = Sentence(id="x", words=["a", "b", "c"], split="train", heads=[2, 0, 2],
                 rels=["dep", "root", "dep"])
    write_jsonl(tmp_path / "c.jsonl", [s])
    attn = np.arange(25, dtype=float).reshape(1, 1, 5, 5)  # not rows of 1: only positions matter
    with StoreWriter(tmp_path / "s.h5", {"n_layers": 1, "n_heads": 1}) as w:
        w.add(0, "x", ["[CLS]", "a", "b", "c", "[SEP]"], np.arange(5), np.zeros(5), [-1, 0, 1, 2, -1],
              attn)
    build_cache([tmp_path / "s.h5"], tmp_path / "c.jsonl", tmp_path / "f.h5", progress=False)
    X, y = edge_pairs(ProbeCache(tmp_path / "f.h5"), "train", np.random.default_rng(0))
    assert sorted(y.tolist()) == [0, 1]
    # Non-edge {a, c}: tokens a = 1, c = 3, so [a(a->c), a(c->a)] = [attn[1, 3], attn[3, 1]] = [8, 16].
    assert X[y == 0].tolist() == [[8.0, 16.0]]
    assert X[y == 1].tolist() in ([[7.0, 11.0]], [[13.0, 17.0]])  # {a, b} or {b, c}


def test_figures_are_written(tmp_path):
    from headatlas.plots.probes import plot_probe_weights, plot_table3

    runs = pd.DataFrame({"probe": ["attn_only", "attn_only", "right_branching"], "seed": [0, 1, 0],
                         "eval": ["gum_test"] * 3, "uas": [60.0, 62.0, 30.0], "sentences": [9] * 3})
    plot_table3(table3(runs.assign(attention="m"), {"m": pd.DataFrame({"entropy": [1.0], "uniform_entropy": [2.0]})}),
                ["gum_test"], tmp_path / "t.svg", "caption")
    weights = pd.DataFrame({"direction": ["dep->head"] * 4 + ["head->dep"] * 4,
                            "layer": [1, 1, 2, 2] * 2, "head": [1, 2] * 4, "weight": np.arange(8.0)})
    plot_probe_weights(weights, tmp_path / "w.svg", "caption")
    assert all((tmp_path / f).read_bytes().startswith(b"<?xml") for f in ("t.svg", "w.svg"))


def test_paper_claims_of_table3_and_the_edge_classifier():
    from headatlas.analyses.probes import paper_claims

    # Our UAS (mean over seeds) on two test sets and a dev set (not judged).
    uas = {"right_branching": (32, 31, 40), "distances_glove": (55, 55, 40), "random_attn_glove": (14, 19, 40),
           "attn_only": (55, 54, 40), "attn_glove": (65, 58, 40)}
    table = pd.DataFrame([{"probe": p, "gum_test": a, "ewt_test": b, "gum_dev": d, "gum_test_sentences": 10,
                           "ewt_test_sentences": 10, "gum_dev_sentences": 10} for p, (a, b, d) in uas.items()])
    edges = pd.DataFrame({"attention": ["m", "m", "m_random", "m_random"],
                          "eval": ["gum_test", "ewt_test", "gum_test", "ewt_test"],
                          "accuracy": [83.9, 80.7, 59.1, 57.7]})
    c = by_id(paper_claims(table, edges))
    # attn_only - right_branching: 23 and 23 >= 5 on both test sets.
    assert c.loc["clark.t3.attn_only_beats_right_branching", "verdict"] == "holds"
    # attn_glove - distances_glove: 10 on gum, but 3 on ewt < 5: not on every test set.
    beats = c.loc["clark.t3.attn_glove_beats_distances"]
    assert beats["ours"] == "gum test: 65.0 vs 55.0; ewt test: 58.0 vs 55.0" and beats["verdict"] == "does not hold"
    # Issue 23 item 3: 65 - 14 and 58 - 19 beat the random encoder, which the old rule took for
    # "pre-training matters"; judged against Distances + GloVe as well, ewt's 58 vs 55 (3 < 5)
    # falls short: does not hold.
    pretraining = c.loc["clark.t3.attn_glove_beats_random_init"]
    assert pretraining["verdict"] == "does not hold"
    assert pretraining["ours"] == ("vs Random Init Attn + GloVe: gum test: 65.0 vs 14.0; ewt test: 58.0 vs "
                                   "19.0; vs Distances + GloVe: gum test: 65.0 vs 55.0; ewt test: 58.0 vs 55.0")
    assert "nor the uniform-maps control was given" in pretraining["note"]
    strong = table.copy()
    strong.loc[strong["probe"] == "attn_glove", ["gum_test", "ewt_test"]] = [65.0, 62.0]  # 10, 7 ahead
    assert by_id(paper_claims(strong, edges)).loc[
        "clark.t3.attn_glove_beats_random_init", "verdict"] == "holds"
    # The random encoder's maps: entropy / uniform per head. MiniLM-like, all >= 0.99: uniform,
    # the random-init comparison is not applicable; the claim is judged against Distances + GloVe
    # alone: 65 - 55 = 10 and 62 - 55 = 7 >= 5, holds.
    uniform = pd.DataFrame({"entropy": [4.83, 4.84], "uniform_entropy": [4.85, 4.85]})  # 0.996, 0.998
    row = by_id(paper_claims(strong, edges, uniform)).loc["clark.t3.attn_glove_beats_random_init"]
    assert row["verdict"] == "holds" and "indistinguishable from uniform" in row["note"]
    assert "judged against Distances + GloVe alone" in row["note"]
    assert row["ours"].startswith("vs Random Init Attn + GloVe: not applicable (gum test: 65.0 vs 14.0")
    assert "random encoder's attention entropy 0.997 of uniform (most peaked head 0.996)" in row["ours"]
    # ... and a random encoder distinguishable from uniform is judged against both.
    peaked = pd.DataFrame({"entropy": [4.365, 4.84], "uniform_entropy": [4.85, 4.85]})  # 0.90, 0.998
    row = by_id(paper_claims(strong, edges, peaked)).loc["clark.t3.attn_glove_beats_random_init"]
    assert row["verdict"] == "holds" and "not applicable" not in row["ours"]
    # The uniform-maps control: one head at 0.90 passes the entropy test, but the random row
    # gains nothing over uniform maps. sds 1.0 (random) and 0.5 (control): spread
    # 2 sqrt(1 + 0.25) = 2.24 >= 14 - 13.5 = 0.5 and 19 - 18 = 1: indistinguishable, so the
    # random-init comparison is not applicable and the claim is judged against Distances + GloVe.
    control = pd.concat([strong, pd.DataFrame([{"probe": "uniform_attn_glove", "gum_test": 13.5,
                                                "ewt_test": 18.0, "gum_dev": 40}])], ignore_index=True)
    control = control.assign(gum_test_sd=[0, 0, 1.0, 0, 0, 0.5], ewt_test_sd=[0, 0, 1.0, 0, 0, 0.5])
    row = by_id(paper_claims(control, edges, peaked)).loc["clark.t3.attn_glove_beats_random_init"]
    assert row["verdict"] == "holds" and "no better than uniform maps'" in row["note"]
    assert "uniform-maps control gum test: 14.0 vs 13.5 (spread 2.2); ewt test: 19.0 vs 18.0 (spread 2.2)" \
        in row["ours"]
    # ... while a random row 16.5 and 12 points above the control (30, 30 vs 13.5, 18) is judged.
    carrying = control.copy()
    carrying.loc[carrying["probe"] == "random_attn_glove", ["gum_test", "ewt_test"]] = [30.0, 30.0]
    row = by_id(paper_claims(carrying, edges, peaked)).loc["clark.t3.attn_glove_beats_random_init"]
    assert "not applicable" not in row["ours"] and row["verdict"] == "holds"
    # The case the old rules judged wrongly: uniform-like random maps (no better than the control)
    # that Attn + GloVe beats by 46 and 39 points (60, 58 vs 14, 19): "pre-training matters: holds"
    # for the rule comparing with the random encoder alone (and for the entropy rule, which one
    # peaked head passes, had Distances + GloVe been met). Judged against Distances + GloVe
    # (55, 55: 5 and 3 points ahead), it does not hold.
    weak = control.copy()
    weak.loc[weak["probe"] == "attn_glove", ["gum_test", "ewt_test"]] = [60.0, 58.0]
    row = by_id(paper_claims(weak, edges, peaked)).loc["clark.t3.attn_glove_beats_random_init"]
    assert row["verdict"] == "does not hold" and "no better than uniform maps'" in row["note"]
    # Without the entropy table, the table's attention_entropy columns are read.
    with_columns = control.assign(attention_entropy=0.997, attention_entropy_min=0.996)
    row = by_id(paper_claims(with_columns, edges)).loc["clark.t3.attn_glove_beats_random_init"]
    assert "every head has >= 0.99 of uniform attention's entropy" in row["note"]
    # 83.9 >= 80.8 but 80.7 < 80.8.
    edge = c.loc["coenen.edge_classifier"]
    assert edge["verdict"] == "does not hold" and "m_random 59.1 (gum test)" in edge["note"]
    assert by_id(paper_claims(table.assign(ewt_test=table["gum_test"]), edges.assign(accuracy=85.0))).loc[
        "coenen.edge_classifier", "verdict"] == "holds"


def test_saved_glove_probe_keeps_trained_weights_not_the_frozen_table(tmp_path):
    glove = np.random.default_rng(0).normal(size=(1000, 50)).astype(np.float32)
    model = AttentionProbe(LAYERS * HEADS, glove)
    save_probe(tmp_path / "g.pt", "attn_glove", model, LAYERS, HEADS)
    saved = torch.load(tmp_path / "g.pt", weights_only=True)["state"]
    assert not any(k.startswith("embed.") for k in saved)  # the 200 kB table is not written
    assert set(saved) == {k for k in model.state_dict() if not k.startswith("embed.")}
    torch.testing.assert_close(saved["pair.weight"], model.pair.weight)
    restored = AttentionProbe(LAYERS * HEADS, glove)  # the table comes from the GloVe file
    restored.load_state_dict(saved, strict=False)
    torch.testing.assert_close(restored.pair.weight, model.pair.weight)
