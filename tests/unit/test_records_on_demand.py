"""A corpus read on demand: extraction jobs hold line offsets, not a corpus of millions.

``JsonlRecords`` is the corpus file as a sequence (the extract and fused_extract rules read
their corpus through it); a fused shard plans its batches from every record's length in one
pass and then reads only the records of its own batches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import h5py
import pytest

from headatlas.analyses.fused import Run, fused_extract, result_from_states
from headatlas.corpora.records import JsonlRecords, Sentence, read_jsonl, write_jsonl
from headatlas.encoders.inputs import encode_corpus
from headatlas.errors import CorpusFormatError
from tests.unit.test_contract import RECORDS, assert_same_result

ATTRS = {"corpus": "contract", "corpus_sha256": "0" * 64}


def test_records_on_demand_are_the_file_s_records(tmp_path):
    path = tmp_path / "corpus.jsonl"
    write_jsonl(path, RECORDS)
    path.write_text(path.read_text() + "\n\n")  # blank lines are no records, as read_jsonl reads them
    records = JsonlRecords(path)
    assert len(records) == len(RECORDS)
    assert records[1] == RECORDS[1] and records[-1] == RECORDS[-1]
    assert records[0:2] == RECORDS[0:2] and list(records) == list(read_jsonl(path)) == RECORDS
    with pytest.raises(IndexError):
        records[len(RECORDS)]


def test_a_damaged_record_is_named_by_its_line(tmp_path):
    path = tmp_path / "corpus.jsonl"
    write_jsonl(path, RECORDS)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "", '{"id": "x", "words": ["cut'] + lines[1:]) + "\n")
    records = JsonlRecords(path)
    assert records[0] == RECORDS[0] and records[2] == RECORDS[1]
    with pytest.raises(CorpusFormatError, match=r"corpus\.jsonl:3"):
        records[1]


class Reads(Sequence):
    """A corpus that counts which records are read, and how many whole passes are made."""

    def __init__(self, records):
        self.records, self.read, self.passes = records, Counter(), 0

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        self.read[int(index)] += 1
        return self.records[index]

    def __iter__(self):
        self.passes += 1
        return iter(self.records)


def test_a_fused_shard_reads_the_records_of_its_own_batches_only(tiny_model, tmp_path):
    records = RECORDS * 4  # 12 records; batches of 2 in length order, dealt to 3 shards
    kept, _ = encode_corpus(tiny_model.tokenizer, enumerate(records), 32, Counter())
    by_length = [e.index for e in sorted(kept, key=len)]  # stable: ties in corpus order
    batches = [by_length[k:k + 2] for k in range(0, len(by_length), 2)]
    results = []
    for shard in range(3):
        corpus = Reads(records)
        states = tmp_path / f"states-{shard}.h5"
        fused_extract(tiny_model, corpus, states, [Run("entropy", "entropy")], max_length=32,
                      batch_size=2, shard=shard, n_shards=3, progress=False, store_attrs=ATTRS)
        own = {i for batch in batches[shard::3] for i in batch}
        assert corpus.passes == 1 and set(corpus.read) == own  # one pass for the lengths
        results.append(states)
    whole = tmp_path / "whole.h5"
    fused_extract(tiny_model, records, whole, [Run("entropy", "entropy")], max_length=32, batch_size=2,
                  progress=False, store_attrs=ATTRS)
    one, three = (result_from_states(p, "entropy", "entropy") for p in ([whole], results))
    assert one.provenance["n_examples"] == three.provenance["n_examples"] == len(kept)
    assert_same_result(one, three, rtol=1e-6)  # up to the order the shards' sums are added in


def test_a_store_shard_reads_its_own_range_only_and_stores_what_it_did(tiny_model, tmp_path):
    from headatlas.encoders.extract import extract, shard_range
    from headatlas.store.reader import open_stores

    records = [*RECORDS, Sentence(id="empty", words=[]), *RECORDS, *RECORDS]
    corpus = Reads(records)
    stats = extract(tiny_model, corpus, tmp_path / "store.h5", max_length=32, batch_size=2, shard=1,
                    n_shards=2, progress=False, store_attrs=ATTRS)
    part = shard_range(len(records), 1, 2)  # records 5..9: the empty one is not in it
    assert corpus.passes == 0 and set(corpus.read) == set(part)
    kept, skipped = encode_corpus(tiny_model.tokenizer, ((i, records[i]) for i in part), 32, Counter())
    assert stats["kept"] == len(kept) and stats["too_long"] == len(skipped)
    stored = list(open_stores(tmp_path / "store.h5"))
    assert sorted(e.index for e in stored) == [e.index for e in kept]
    by_index = {e.index: e for e in kept}
    for example in stored:  # each example's inputs, as the whole shard's encoding gives them
        assert example.input_ids.tolist() == by_index[example.index].input_ids


# --- every record's length counted once (the corpus_lengths rule) -------------------------------

def _lengths_file(tiny_model, records, path, **attrs):
    from headatlas.encoders.inputs import corpus_lengths
    from headatlas.store.lengths import write_lengths

    write_lengths(path, corpus_lengths(tiny_model.tokenizer, records),
                  {**ATTRS, "model_name": tiny_model.info["model_name"], **attrs})
    return path


def test_shards_given_the_counted_lengths_read_no_record_outside_their_batches(tiny_model, tmp_path):
    from headatlas.encoders.extract import shard_range

    records = [*RECORDS, Sentence(id="empty", words=[]), *RECORDS * 3]  # an empty record counts 0
    lengths = _lengths_file(tiny_model, records, tmp_path / "lengths.h5")
    kept, _ = encode_corpus(tiny_model.tokenizer, enumerate(records), 32, Counter())
    by_length = [e.index for e in sorted(kept, key=len)]
    batches = [by_length[k:k + 2] for k in range(0, len(by_length), 2)]
    counted, results = [], []
    for shard in range(3):
        corpus, states = Reads(records), tmp_path / f"states-{shard}.h5"
        counted.append(fused_extract(tiny_model, corpus, states, [Run("entropy", "entropy")], max_length=32,
                                     batch_size=2, shard=shard, n_shards=3, progress=False,
                                     store_attrs=ATTRS, lengths=lengths))
        assert corpus.passes == 0  # no pass over the corpus: its lengths are read
        own = {i for batch in batches[shard::3] for i in batch}
        named = {3} if 3 in shard_range(len(records), shard, 3) else set()  # its skipped record's id
        assert set(corpus.read) == own | named
        results.append(states)
    whole = tmp_path / "whole.h5"  # one job counting the lengths itself
    alone = fused_extract(tiny_model, records, whole, [Run("entropy", "entropy")], max_length=32, batch_size=2,
                          progress=False, store_attrs=ATTRS)
    assert sum(c["kept"] for c in counted) == alone["kept"] == len(kept) == 12
    assert sum(c["empty"] for c in counted) == alone["empty"] == 1
    one, three = (result_from_states(p, "entropy", "entropy") for p in ([whole], results))
    assert_same_result(one, three, rtol=1e-6)


def test_lengths_of_another_corpus_model_or_tokenizer_are_refused_naming_the_file(tiny_model, tmp_path):
    from headatlas.errors import StoreError
    from headatlas.store.lengths import read_lengths

    def run(path, records=RECORDS):
        fused_extract(tiny_model, records, tmp_path / "states.h5", [Run("entropy", "entropy")], max_length=32,
                      batch_size=2, progress=False, store_attrs=ATTRS, lengths=path)

    with pytest.raises(StoreError, match=r"missing\.h5: no such lengths file.*snakemake"):
        run(tmp_path / "missing.h5")
    other = _lengths_file(tiny_model, RECORDS, tmp_path / "other.h5", corpus_sha256="1" * 64)
    with pytest.raises(StoreError, match=r"other\.h5: counted for corpus_sha256 '1111.*rebuild it"):
        run(other)
    model = _lengths_file(tiny_model, RECORDS, tmp_path / "model.h5", model_name="bert")
    with pytest.raises(StoreError, match=r"model\.h5: counted for model_name 'bert'"):
        run(model)
    fewer = _lengths_file(tiny_model, RECORDS[:2], tmp_path / "fewer.h5")
    with pytest.raises(StoreError, match=r"fewer\.h5: 2 records' lengths for a corpus of 3"):
        run(fewer)
    shifted = _lengths_file(tiny_model, RECORDS[1:] + RECORDS[:1], tmp_path / "shifted.h5")  # another tokenisation
    with pytest.raises(StoreError, match=r"shifted\.h5: record \d \(.*\) has \d+ wordpieces and its plan \d+"):
        run(shifted)
    assert not (tmp_path / "states.h5").exists()  # nothing that looks complete
    damaged = tmp_path / "damaged.h5"
    damaged.write_bytes(other.read_bytes()[:1000])
    with pytest.raises(StoreError, match=r"damaged\.h5: not a readable lengths file"):
        read_lengths(damaged, 3)
    old = _lengths_file(tiny_model, RECORDS, tmp_path / "old.h5")
    with h5py.File(old, "a") as f:  # another version's, or one whose writer was killed
        f.attrs["format"] = "headatlas-lengths-0"
    with pytest.raises(StoreError, match=r"old\.h5: not a complete lengths file of this version"):
        read_lengths(old, 3)
    good = _lengths_file(tiny_model, RECORDS, tmp_path / "good.h5")
    assert read_lengths(good, 3, corpus_sha256=None).tolist() == [
        len(e) for e in encode_corpus(tiny_model.tokenizer, enumerate(RECORDS), 512, Counter())[0]]
