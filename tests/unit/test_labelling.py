"""The labelling tool: sample maps from a store, freeze the labelled maps, read them back."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headatlas.errors import HeadAtlasError
from headatlas.analyses.labels import load_maps, map_segments, packaged_labels, packaged_maps, read_labels
from headatlas.report.labelling import freeze_maps, sample_maps
from headatlas.store.reader import Store
from headatlas.store.writer import StoreWriter

ATTRS = {"n_layers": 2, "n_heads": 3, "model_name": "m", "model_id": "m-src", "corpus": "c"}


def attn(n, seed):
    a = np.random.default_rng(seed).random((2, 3, n, n)).astype(np.float32)
    return a / a.sum(-1, keepdims=True)


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "s.h5"
    with StoreWriter(path, ATTRS) as writer:
        for k, n in enumerate([5, 6, 7, 8, 9, 10]):
            tokens = ["[CLS]"] + [f"w{i}" for i in range(n - 2)] + ["[SEP]"]
            tokens[2] = "."  # a sentence ends within segment A (word 1 is ".")
            types = np.array([0] * (n // 2) + [1] * (n - n // 2))
            writer.add(k, f"ex{k}", tokens, np.arange(n), types, [-1] + list(range(n - 2)) + [-1],
                       attn(n, k))
    return path


def test_sample_is_balanced_over_layers_and_halves(store):
    table = sample_maps(store, n=4, seed=1)
    assert list(table["layer"].value_counts().sort_index()) == [2, 2]  # 4 maps over 2 layers
    for _, part in table.groupby("layer"):  # each layer: one map per half
        assert sorted(part["half"]) == ["test", "tune"]
    assert table["example_index"].is_unique
    assert table["head"].between(1, 3).all()
    with pytest.raises(HeadAtlasError, match="cannot sample 7"):
        sample_maps(store, n=7)


def test_frozen_maps_are_the_store_maps(store, tmp_path):
    table = sample_maps(store, n=4, seed=0).assign(pattern="vertical")
    out = freeze_maps(store, table, tmp_path / "maps.npz")
    maps, units, meta = load_maps(out, table)
    assert meta["model_name"] == "m" and meta["corpus"] == "c" and meta["maps"] == 4
    with Store(store) as s:
        for m, u, (_, row) in zip(maps, units, table.iterrows()):
            example = s.example(int(row["example_index"]))
            np.testing.assert_array_equal(m, example.attn[row["layer"] - 1, row["head"] - 1])
            # the sentences, found in the kept tokens: one starts after "." (token 3) and one
            # where segment B does (half); where the two meet, one start
            half = example.n_tokens // 2
            assert u.tolist() == [len({3, half} & set(range(1, k + 1))) for k in range(example.n_tokens)]
    # A map the file lacks, or a length the labels disagree with, is an error.
    other = table.copy()
    other.loc[0, "map"] = "m999"
    with pytest.raises(HeadAtlasError, match="1 labelled map"):
        load_maps(out, other)
    other = table.copy()
    other.loc[0, "n_tokens"] += 1
    with pytest.raises(HeadAtlasError, match="the labels say"):
        load_maps(out, other)
    with pytest.raises(HeadAtlasError, match="patterns.labels.maps"):
        load_maps(tmp_path / "absent.npz", table)


def test_frozen_maps_can_be_appended(store, tmp_path):
    table = sample_maps(store, n=6, seed=0).assign(pattern="vertical")
    first, second = table.iloc[:4].reset_index(drop=True), table.iloc[4:].reset_index(drop=True)
    out = freeze_maps(store, first, tmp_path / "maps.npz")
    second = second.assign(map=["n000", "n001"])
    freeze_maps(store, second, out, append=True)
    maps, _, meta = load_maps(out, pd.concat([first, second], ignore_index=True))
    assert len(maps) == 6 and meta["maps"] == 4 and meta["appended"][0]["maps"] == 2
    with pytest.raises(HeadAtlasError, match="new ids"):  # the same ids again
        freeze_maps(store, second, out, append=True)


def test_packaged_labels_and_maps_agree():
    labels = read_labels(packaged_labels())
    assert len(labels) >= 300 and (labels["pattern"] != "").all()
    assert set(labels["half"]) == {"tune", "test"}
    maps, types, meta = load_maps(packaged_maps(), labels)
    assert len(maps) == len(labels) and meta["model_name"] == "minilm"
    for m in maps[:20]:
        np.testing.assert_allclose(m.sum(-1), 1, atol=2e-2)  # query rows of a softmax, float16


def test_labels_are_checked(tmp_path):
    path = tmp_path / "l.csv"
    path.write_text("map,example_index,example_id,n_tokens,layer,head,half,pattern,note\n"
                    "m0,0,ex0,5,1,1,tune,stripes,\n")
    with pytest.raises(HeadAtlasError, match="unknown pattern"):
        read_labels(path)


def test_packaged_extension_says_where_each_map_came_from():
    # Issue 23: 190 maps chosen where the first classifier was weakest, of MiniLM and MPNet-base,
    # labelled from pictures; MPNet takes no token types, so the file keeps their segments.
    labels = read_labels(packaged_labels())
    added = labels[labels["map"].str.startswith("x")]
    assert len(added) >= 150
    assert set(added["model"]) == {"minilm", "mpnet"}
    assert {"multi-stripe", "faint-column diagonal", "in-segment mass", "random"} == set(added["selection"])
    assert added["source"].str.contains("pictures").all() and labels["source"].str.contains("pictures").all()
    assert (added["pattern"] == "block").sum() >= 20
    for model, part in added.groupby("model"):  # both halves hold every model
        assert set(part["half"]) == {"tune", "test"}
    mpnet = added[added["model"] == "mpnet"].head(3).reset_index(drop=True)
    maps, segments, _ = load_maps(packaged_maps(), mpnet)
    for m, s, kept in zip(maps, segments, map_segments(packaged_maps(), mpnet)):
        assert set(s.tolist()) == {0, 1} and s[0] == 0 and s[-1] == 1 and len(s) == len(m)
        np.testing.assert_array_equal(kept, s)  # no tokens: their segments are their sentences


def test_labels_without_provenance_columns_still_read(tmp_path):
    path = tmp_path / "l.csv"
    path.write_text("map,example_index,example_id,n_tokens,layer,head,half,pattern,note\n"
                    "m0,0,ex0,5,1,1,tune,block,\n")
    table = read_labels(path)
    assert table.loc[0, "model"] == "" and table.loc[0, "selection"] == ""


def test_packaged_maps_of_the_default_segments_carry_their_sentences():
    # Issue 37: 220 MiniLM maps of the default run's 128-wordpiece segments (f*: 120 random, b*: 100
    # block-enriched), labelled by three labellers from sheets with sentence ticks (the majority).
    from headatlas.analyses.patterns import sentence_labelled

    labels = read_labels(packaged_labels())
    fresh = labels[labels["map"].str.match(r"[fb]\d")].reset_index(drop=True)
    assert len(fresh) == 220 and set(fresh["model"]) == {"minilm"}
    assert sentence_labelled(fresh).all() and not sentence_labelled(labels[labels["map"].str.match("[mx]")]).any()
    assert fresh["note"].str.match(r"votes \S+ \S+ \S+").all()  # every vote kept
    for half in ("tune", "test"):
        assert ((fresh["half"] == half) & (fresh["pattern"] == "block")).sum() >= 20
    maps, units, _ = load_maps(packaged_maps(), fresh.head(5))
    assert all(len(set(u.tolist())) > 2 and len(u) == len(m) for m, u in zip(maps, units))  # sentences
    assert all(set(s.tolist()) == {0, 1} for s in map_segments(packaged_maps(), fresh.head(5)))  # pairs
    with np.load(packaged_maps()) as archive:  # MiniLM's older maps have their tokens back too
        assert "tokens/m000" in archive.files and "tokens/x000" in archive.files
