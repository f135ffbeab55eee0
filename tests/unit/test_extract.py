from collections import Counter

import numpy as np
import pytest
import torch

from headatlas.encoders import extract as ex
from headatlas.encoders import inputs as inp
from headatlas.corpora.records import Sentence
from headatlas.errors import ModelError
from headatlas.store.reader import Store

PAIR = Sentence(id="p", words=["The", "cat", "sat", "."], words_b=["It", "was", "happy", "."])
SENTENCES = [
    Sentence(id="s0", words=["the", "dog", "walked"]),
    PAIR,
    Sentence(id="s2", words=["she", "saw", "a", "birdie", "on", "the", "red", "house", "."]),
    Sentence(id="s3", words=["runs"]),
]


def test_pair_has_segment_ids_and_global_word_ids(tiny_model):
    enc = inp.encode(tiny_model.tokenizer, PAIR, 0)
    tokens = tiny_model.tokenizer.convert_ids_to_tokens(enc.input_ids)
    assert tokens == ["[CLS]", "the", "cat", "sat", ".", "[SEP]", "it", "was", "happy", ".", "[SEP]"]
    assert enc.token_type_ids == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]  # B [SEP] is segment 1
    assert enc.word_ids == [-1, 0, 1, 2, 3, -1, 4, 5, 6, 7, -1]
    assert enc.n_words == 8


def test_wordpieces_share_their_word(tiny_model):
    enc = inp.encode(tiny_model.tokenizer, Sentence(id="x", words=["walked", "running"]), 0)
    assert tiny_model.tokenizer.convert_ids_to_tokens(enc.input_ids) == [
        "[CLS]", "walk", "##ed", "run", "##ning", "[SEP]"]
    assert enc.word_ids == [-1, 0, 0, 1, 1, -1]


def test_length_batches_sort_and_cap():
    encs = [inp.Encoded(i, str(i), [0] * n, [0] * n, [0] * n, n) for i, n in enumerate([5, 2, 9, 3, 7])]
    batches = list(inp.length_batches(encs, batch_size=2))
    assert [[len(e) for e in b] for b in batches] == [[2, 3], [5, 7], [9]]
    capped = list(inp.length_batches(encs, batch_size=10, max_tokens=15))
    assert all(len(b) * max(len(e) for e in b) <= 15 for b in capped)
    assert sorted(e.index for b in capped for e in b) == [0, 1, 2, 3, 4]


def test_batches_are_planned_from_lengths_alone_by_hand():
    # sorted 2(1) 3(3) 5(0) 5(4) 9(2), ties in corpus order; batches of 2
    assert [b.tolist() for b in inp.plan_batches([5, 2, 9, 3, 5], batch_size=2)] == [[1, 3], [0, 4], [2]]
    # a budget of 9 tokens: [2, 3] pads to 6; adding 5 would pad to 15; 5 + 5 would pad to 10
    assert [b.tolist() for b in inp.plan_batches([5, 2, 9, 3, 5], batch_size=4, max_tokens=9)] == [
        [1, 3], [0], [4], [2]]
    assert inp.plan_batches([], batch_size=2) == []


def test_corpus_lengths_are_the_encoded_lengths_in_chunks(tiny_model):
    records = [*SENTENCES, Sentence(id="empty", words=[]), *SENTENCES]
    found = inp.corpus_lengths(tiny_model.tokenizer, records, chunk=2)
    kept, _ = inp.encode_corpus(tiny_model.tokenizer, enumerate(records), 512, Counter())
    expected = [0] * len(records)
    for e in kept:
        expected[e.index] = len(e)
    assert found.dtype == np.int32 and found.tolist() == expected and found[4] == 0
    assert inp.corpus_lengths(tiny_model.tokenizer, []).tolist() == []


def test_collate_pads_by_hand():
    a = inp.Encoded(0, "a", [2, 9, 3], [0, 0, 1], [-1, 0, -1], 1)
    b = inp.Encoded(1, "b", [2, 3], [0, 0], [-1, -1], 0)
    inputs = inp.collate([a, b], pad_id=7, device="cpu")
    assert list(inputs) == ["input_ids", "token_type_ids", "attention_mask"]
    assert inputs["input_ids"].tolist() == [[2, 9, 3], [2, 3, 7]]
    assert inputs["token_type_ids"].tolist() == [[0, 0, 1], [0, 0, 0]]
    assert inputs["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert inputs["input_ids"].dtype == torch.long


def test_pad_batch_checks_its_input():
    from types import SimpleNamespace

    from headatlas.encoders.batching import pad_batch

    out = pad_batch([SimpleNamespace(ids=[1], tags=[5]), SimpleNamespace(ids=[1, 2], tags=[5, 6])],
                    {"ids": 0, "tags": -100}, mask=None)
    assert list(out) == ["ids", "tags"] and out["tags"].tolist() == [[5, -100], [5, 6]]
    with pytest.raises(ValueError, match="example 0: tags has 2 values, expected 1"):
        pad_batch([SimpleNamespace(ids=[1], tags=[5, 6])], {"ids": 0, "tags": 0})
    with pytest.raises(ValueError, match="at least one"):
        pad_batch([], {"ids": 0})


def test_shard_ranges_cover_everything_once():
    parts = [list(ex.shard_range(10, s, 3)) for s in range(3)]
    assert sum(parts, []) == list(range(10))
    with pytest.raises(ValueError):
        ex.shard_range(10, 3, 3)


def single_forward(loaded, sentence):
    enc = inp.encode(loaded.tokenizer, sentence, 0)
    inputs = inp.collate([enc], 0, loaded.model.device)
    with torch.no_grad():
        out = loaded.model(**inputs, output_attentions=True)
    return torch.stack(out.attentions, 1)[0].cpu().numpy()


def test_batched_store_equals_one_at_a_time(tiny_model, tmp_path):
    stats = ex.extract(tiny_model, SENTENCES, tmp_path / "s.h5", max_length=64, batch_size=2,
                       progress=False)
    assert stats["kept"] == 4
    with Store(tmp_path / "s.h5") as store:
        assert store.attrs["model_name"] == "tiny" and store.attrs["cls_token"] == "[CLS]"
        examples = {e.id: e for e in store}
    for sentence in SENTENCES:  # padding in a batch must not change any map
        stored = examples[sentence.id]
        np.testing.assert_allclose(stored.attn, single_forward(tiny_model, sentence), atol=2e-3)
        np.testing.assert_allclose(stored.attn.sum(-1), 1.0, atol=5e-3)
    assert examples["p"].token_type_ids.tolist() == [0] * 6 + [1] * 5


def test_too_long_and_empty_are_counted_and_listed(tiny_model, tmp_path):
    corpus = SENTENCES + [Sentence(id="empty", words=[])]
    stats = ex.extract(tiny_model, corpus, tmp_path / "s.h5", max_length=8, progress=False)
    assert stats["too_long"] == 2 and stats["empty"] == 1 and stats["kept"] == 2  # p: 11, s2: 11 tokens
    with Store(tmp_path / "s.h5") as store:
        assert sorted(store.skipped_ids) == ["empty", "p", "s2"]
        assert store.attrs["n_too_long"] == 2


def test_an_extraction_that_keeps_nothing_stops_naming_the_corpus(tiny_model, tmp_path):
    """Issue 21, item 4: every record over max_length (or empty) is an error, not an empty store."""
    from headatlas.errors import EmptyStoreError

    corpus = SENTENCES + [Sentence(id="empty", words=[])]
    with pytest.raises(EmptyStoreError, match=r"s\.h5 not written: no example of corpus 'wiki' for model "
                                              r".*: 5 records were left out, 4 of them longer than "
                                              r"max_length 3 wordpieces and 1 empty"):
        ex.extract(tiny_model, corpus, tmp_path / "s.h5", max_length=3, progress=False,
                   store_attrs={"corpus": "wiki"})
    with pytest.raises(EmptyStoreError, match=r"\(shard 1 of 9\): no example of corpus 'wiki'.*the corpus "
                                              r"\(or this shard of it\) has no records"):
        ex.extract(tiny_model, SENTENCES, tmp_path / "s.h5", max_length=64, progress=False, shard=1,
                   n_shards=9, store_attrs={"corpus": "wiki"})
    assert list(tmp_path.iterdir()) == []


def test_shards_split_the_corpus(tiny_model, tmp_path):
    for shard in range(2):
        ex.extract(tiny_model, SENTENCES, tmp_path / f"{shard}.h5", max_length=64, shard=shard, n_shards=2,
                   progress=False)
    ids = [Store(tmp_path / f"{s}.h5").example_ids for s in range(2)]
    assert sorted(ids[0]) == ["p", "s0"] and sorted(ids[1]) == ["s2", "s3"]


def test_interrupted_extraction_leaves_no_store(tiny_model, tmp_path, monkeypatch):
    real, calls = ex.capture_batch, []

    def dies_on_second_batch(model, inputs, lengths):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(model, inputs, lengths)

    monkeypatch.setattr(ex, "capture_batch", dies_on_second_batch)
    with pytest.raises(KeyboardInterrupt):
        ex.extract(tiny_model, SENTENCES, tmp_path / "s.h5", max_length=64, batch_size=1, progress=False)
    assert not (tmp_path / "s.h5").exists()
    assert list(tmp_path.iterdir()) == []  # no partial file either


def test_sdpa_model_without_attentions_fails_clearly(tiny_model_dir):
    from transformers import BertModel

    model = BertModel.from_pretrained(tiny_model_dir, attn_implementation="sdpa").eval()
    enc = inp.encode(__import__("transformers").AutoTokenizer.from_pretrained(tiny_model_dir),
                    SENTENCES[0], 0)
    try:
        ex.batch_attentions(model, inp.collate([enc], 0, "cpu"))
    except ModelError as err:
        assert "eager" in str(err)
    # Some transformers versions fall back to eager and do return attentions: then they must be real.
    else:
        attn = ex.batch_attentions(model, inp.collate([enc], 0, "cpu"))
        assert attn.shape[1] == 2
