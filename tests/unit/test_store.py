import h5py
import numpy as np
import pytest

from headatlas.errors import StoreError
from headatlas.store.schema import SCHEMA_VERSION
from headatlas.store.reader import Store, open_stores
from headatlas.store.writer import StoreWriter

ATTRS = {"n_layers": 1, "n_heads": 2, "model_name": "m", "corpus": "c"}


def random_attn(n, seed=0):
    a = np.random.default_rng(seed).random((1, 2, n, n)).astype(np.float32)
    return a / a.sum(-1, keepdims=True)


def write(path, lengths, start=0, indices=None):
    """A store of examples of these lengths, with corpus indices ``indices`` (default from ``start`` on)."""
    indices = range(start, start + len(lengths)) if indices is None else indices
    with StoreWriter(path, ATTRS) as writer:
        for index, n in zip(indices, lengths):
            tokens = ["[CLS]"] + [f"w{i}" for i in range(n - 2)] + ["[SEP]"]
            writer.add(index, f"ex{index}", tokens, np.arange(n), np.zeros(n),
                       [-1] + list(range(n - 2)) + [-1], random_attn(n, index))
        writer.skipped_ids = ["too-long-1"]


def test_roundtrip_keeps_every_field(tmp_path):
    path = tmp_path / "s.h5"
    write(path, [4, 6])
    with Store(path) as store:
        assert len(store) == 2 and store.attrs["schema_version"] == SCHEMA_VERSION
        examples = list(store)
        assert store.skipped_ids == ["too-long-1"]
        assert list(store.n_words) == [2, 4]
    assert [e.id for e in examples] == ["ex0", "ex1"]
    second = examples[1]
    assert second.tokens[0] == "[CLS]" and second.attn.shape == (1, 2, 6, 6)
    np.testing.assert_allclose(second.attn, random_attn(6, 1), atol=1e-3)  # float16 storage
    np.testing.assert_array_equal(second.word_ids, [-1, 0, 1, 2, 3, -1])
    np.testing.assert_array_equal(second.sep_mask, [0, 0, 0, 0, 0, 1])


def test_failed_write_leaves_nothing(tmp_path):
    path = tmp_path / "s.h5"
    with pytest.raises(RuntimeError):
        with StoreWriter(path, ATTRS) as writer:
            writer.add(0, "a", ["[CLS]", "[SEP]"], [0, 1], [0, 0], [-1, -1], random_attn(2))
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_incomplete_store_is_refused(tmp_path):
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:  # what a killed writer renamed by hand would look like
        f.attrs.update({**ATTRS, "schema_version": SCHEMA_VERSION, "complete": False})
    with pytest.raises(StoreError, match="incomplete"):
        Store(path)


def test_a_store_without_checksums_is_refused_unless_asked_for(tmp_path, monkeypatch):
    """A version-2 store (older code: no checksums) is not read silently."""
    from headatlas.store import schema

    path = tmp_path / "old.h5"
    monkeypatch.setattr(schema, "CHECKSUMS", False)  # what older code wrote
    write(path, [4, 6])
    monkeypatch.setattr(schema, "CHECKSUMS", True)
    with pytest.raises(StoreError, match=r"schema version 2, written by older code without checksums"
                                         r".*snakemake --cores all --force .*HEADATLAS_READ_UNCHECKED=1"):
        Store(path)
    monkeypatch.setattr(schema, "READ_UNCHECKED", True)
    with pytest.warns(UserWarning, match="read as it is"):
        with Store(path) as store:
            assert len(store) == 2 and not store.checksums


def test_missing_and_wrong_shape(tmp_path):
    with pytest.raises(StoreError, match="no such attention store"):
        Store(tmp_path / "nope.h5")
    with StoreWriter(tmp_path / "x.h5", ATTRS) as writer:
        with pytest.raises(StoreError, match="does not match"):
            writer.add(0, "a", ["[CLS]", "[SEP]"], [0, 1], [0, 0], [-1, -1], random_attn(3))


def test_shards_stream_in_order(tmp_path):
    write(tmp_path / "a.h5", [3, 4], start=0)
    write(tmp_path / "b.h5", [5], start=2)
    stores = open_stores([tmp_path / "a.h5", tmp_path / "b.h5"])
    assert len(stores) == 3
    assert [e.index for e in stores] == [0, 1, 2]


def test_shards_stored_by_length_stream_in_corpus_order(tmp_path):
    # Extraction stores each shard sorted by length; the stream is in corpus order regardless.
    write(tmp_path / "a.h5", [3, 5, 7], indices=[4, 0, 2])
    write(tmp_path / "b.h5", [4, 6], indices=[3, 1])
    with Store(tmp_path / "a.h5") as one:
        assert [e.index for e in one] == [0, 2, 4]
    stores = open_stores([tmp_path / "a.h5", tmp_path / "b.h5"])
    examples = list(stores)
    assert [e.index for e in examples] == [0, 1, 2, 3, 4]
    assert [e.n_tokens for e in examples] == [5, 6, 7, 4, 3]
    np.testing.assert_allclose(examples[1].attn, random_attn(6, 1), atol=1e-3)


def test_shards_holding_the_same_record_are_refused(tmp_path):
    write(tmp_path / "a.h5", [3, 4], indices=[0, 1])
    write(tmp_path / "b.h5", [5], indices=[1])
    with pytest.raises(StoreError, match="corpus record 1 is stored twice"):
        list(open_stores([tmp_path / "a.h5", tmp_path / "b.h5"]))


def test_pick_example_by_index_or_shortest_readable(tmp_path):
    from headatlas.store.maps import pick_example

    write(tmp_path / "a.h5", [30, 5], start=0)
    write(tmp_path / "b.h5", [26, 40], start=2)
    paths = [tmp_path / "a.h5", tmp_path / "b.h5"]
    assert pick_example(paths, index=3).id == "ex3"
    assert pick_example(paths, min_tokens=24).id == "ex2"  # 26 tokens: shortest of those >= 24
    assert pick_example(paths, min_tokens=100).id == "ex1"  # none long enough: the shortest
    with pytest.raises(StoreError, match="corpus index 9"):
        pick_example(paths, index=9)


def test_docs_store_md_is_generated_from_the_schema():
    from pathlib import Path

    from headatlas.store.schema import markdown

    docs = Path(__file__).resolve().parents[2] / "docs" / "store.md"
    assert docs.read_text() == markdown(), \
        "docs/store.md is out of date: python -m headatlas.store --markdown > docs/store.md"


def test_an_extracted_store_has_exactly_the_documented_schema(tiny_model, tmp_path):
    from headatlas.corpora.records import Sentence
    from headatlas.encoders.extract import extract
    from headatlas.store.schema import ATTRIBUTES, DATASETS, dataset_dtype

    sentences = [Sentence(id="a", words=["the", "cat", "sat"], words_b=["it", "ran"]),
                 Sentence(id="b", words=["the", "dog"] * 40)]  # too long: skipped
    extract(tiny_model, sentences, tmp_path / "s.h5", max_length=32, progress=False,
            store_attrs={"corpus": "c", "corpus_sha256": "0" * 64})
    with h5py.File(tmp_path / "s.h5", "r") as f:
        assert sorted(f) == sorted(d.name for d in DATASETS)
        for name in f:
            assert f[name].dtype == dataset_dtype(name), name
        assert sorted(f.attrs) == sorted(a.name for a in ATTRIBUTES)
        # the size extraction predicts (to check the free space first) is its maps and norms
        maps = sum(f[name].nbytes for name in ("attn", "value_norms", "norm_map") if name in f)
        lengths = np.diff(f["tok_offsets"][:])
        from headatlas.store.schema import store_bytes

        assert store_bytes(lengths, 2, 2, norms="norm_map" in f) == maps


def test_a_batch_write_equals_writing_each_example(tmp_path):
    rng = np.random.default_rng(0)
    lengths, layers, heads = [2, 3, 3], 2, 2
    maps = [rng.random((layers, heads, n, n)).astype(np.float16) for n in lengths]
    value_norms = [rng.random((layers, heads, n)).astype(np.float16) for n in lengths]
    norm_maps = [rng.random((layers, n, n)).astype(np.float16) for n in lengths]
    rows = [(i, f"ex{i}", [f"t{k}" for k in range(n)], list(range(n)), [0] * n, [-1] + list(range(n - 1)))
            for i, n in enumerate(lengths)]
    attrs = {"norms": "recorded", "n_layers": layers, "n_heads": heads}
    with StoreWriter(tmp_path / "each.h5", attrs) as writer:
        for (index, ex_id, tokens, ids, types, words), attn, vn, nm in zip(rows, maps, value_norms, norm_maps):
            writer.add(index, ex_id, tokens, ids, types, words, attn, n_words=len(tokens) - 1,
                       value_norms=vn, norm_map=nm)
    with StoreWriter(tmp_path / "batch.h5", attrs) as writer:
        columns = list(zip(*rows))
        writer.add_batch(*columns, np.concatenate([m.ravel() for m in maps]), layers=layers, heads=heads,
                         n_words=[n - 1 for n in lengths],
                         value_norms=np.concatenate([v.ravel() for v in value_norms]),
                         norm_map=np.concatenate([m.ravel() for m in norm_maps]))
    with h5py.File(tmp_path / "each.h5", "r") as a, h5py.File(tmp_path / "batch.h5", "r") as b:
        assert set(a) == set(b)
        for name in a:
            np.testing.assert_array_equal(a[name][()], b[name][()], err_msg=name)
    with Store(tmp_path / "batch.h5", norms=True) as store:
        np.testing.assert_array_equal(store.example(1).attn, maps[1])
        np.testing.assert_array_equal(store.example(2).norm_map, norm_maps[2])


def test_a_batch_write_checks_its_sizes(tmp_path):
    with pytest.raises(StoreError, match=r"attn of examples a..b: expected 32 values"):
        with StoreWriter(tmp_path / "s.h5", {}) as writer:  # 2 tokens + 2 tokens, 2 x 2 maps: 2 * 16
            writer.add_batch([0, 1], ["a", "b"], [["x", "y"]] * 2, [[1, 2]] * 2, [[0, 0]] * 2,
                             [[0, 1]] * 2, np.zeros(31, np.float16), layers=2, heads=2, n_words=[2, 2])
    with pytest.raises(StoreError, match="norm_map"):
        with StoreWriter(tmp_path / "s.h5", {"norms": "recorded"}) as writer:
            writer.add_batch([0], ["a"], [["x"]], [[1]], [[0]], [[0]], np.zeros(4, np.float16), layers=2,
                             heads=2, n_words=[1], value_norms=np.zeros(4, np.float16),
                             norm_map=np.zeros(3, np.float16))
    assert list(tmp_path.iterdir()) == []


def test_one_example_is_read_by_position_or_id_over_shards_and_given_to_bertviz(tmp_path):
    """headatlas.example: the i-th in corpus order (shards merged) or by record id; bertviz: one
    [1, heads, n, n] tensor per layer and the tokens, as bertviz's head_view takes them."""
    import headatlas

    write(tmp_path / "shard-1.h5", [5, 3], indices=[1, 3])
    write(tmp_path / "shard-0.h5", [4, 6], indices=[0, 2])
    shards = [tmp_path / "shard-0.h5", tmp_path / "shard-1.h5"]
    streamed = list(open_stores(shards))
    for i, ex in enumerate(streamed):
        found = headatlas.example(shards, i)
        assert found.id == ex.id == f"ex{i}" and np.array_equal(found.attn, ex.attn)
    assert headatlas.example(shards, "ex3").index == 3 and headatlas.example(shards, -1).id == "ex3"
    with pytest.raises(KeyError, match="no example 'nope'"):
        headatlas.example(shards, "nope")
    with pytest.raises(IndexError, match="the stores hold 4"):
        headatlas.example(shards, 4)
    attention, tokens = headatlas.bertviz(headatlas.example(shards, 2))
    assert len(attention) == streamed[2].attn.shape[0] and tokens == streamed[2].tokens
    assert tuple(attention[0].shape) == (1, streamed[2].attn.shape[1], 6, 6)
    assert np.array_equal(attention[0][0].numpy(), streamed[2].attn[0])
