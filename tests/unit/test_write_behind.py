"""The background store writer: extraction's HDF5 write of batch k overlaps the forward of k+1."""

import threading
import time

import h5py
import numpy as np
import pytest

from headatlas.encoders import extract as ex
from headatlas.corpora.records import Sentence
from headatlas.store.writer import StoreWriter

WORDS = "the dog saw a cat on the red house and it ran away quickly".split()
# 23 examples of varied length: batches of 2 give 12 batches, many more than the queue holds.
CORPUS = [Sentence(id=f"s{i}", words=WORDS[: 1 + i % len(WORDS)],
                   words_b=WORDS[: 1 + i % 3] if i % 4 == 0 else None) for i in range(23)]


def h5_contents(path) -> dict:
    with h5py.File(path, "r") as f:
        data = {name: f[name][:] for name in f}
        attrs = {k: v for k, v in f.attrs.items()}
    return data, attrs


@pytest.mark.parametrize("norms", [True, False])
def test_overlapped_store_equals_sequential(tiny_model, tmp_path, norms):
    for name, ahead in (("seq.h5", 0), ("ovl.h5", 2)):
        ex.extract(tiny_model, CORPUS, tmp_path / name, max_length=64, batch_size=2, progress=False,
                   norms=norms, write_ahead=ahead)
    (seq, seq_attrs), (ovl, ovl_attrs) = h5_contents(tmp_path / "seq.h5"), h5_contents(tmp_path / "ovl.h5")
    assert seq.keys() == ovl.keys() and ("norm_map" in seq) == norms
    for name in seq:  # bit-identical: same forward passes, same order of writes
        np.testing.assert_array_equal(seq[name], ovl[name], err_msg=name)
    assert seq_attrs == ovl_attrs
    ids = [i.decode() for i in ovl["example_ids"]]
    assert sorted(ids) == sorted(s.id for s in CORPUS) and len(set(ids)) == len(CORPUS)


def test_queue_is_bounded_with_a_slow_writer():
    pending, peak, written, lock = [0], [0], [], threading.Lock()

    def slow_write(item):
        time.sleep(0.01)
        with lock:
            pending[0] -= 1
        written.append(item)

    with ex.WriteBehind(slow_write, max_pending=3) as writer:
        for i in range(40):
            with lock:  # counted before put: a put that would exceed the bound waits here
                pending[0] += 1
            writer.put(i)
            with lock:
                peak[0] = max(peak[0], pending[0])
    assert written == list(range(40))  # nothing lost, duplicated or reordered
    # queued (3) + being written (1) + the one the producer holds before put returns
    assert peak[0] <= 3 + 1 + 1
    assert peak[0] >= 3  # the producer did run ahead of the slow writer


def test_queue_blocks_the_producer_when_full():
    release, started = threading.Event(), threading.Event()

    def blocked_write(item):
        started.set()
        release.wait()

    accepted = []
    with ex.WriteBehind(blocked_write, max_pending=2) as writer:
        def produce():
            for i in range(10):
                writer.put(i)
                accepted.append(i)

        producer = threading.Thread(target=produce)
        producer.start()
        started.wait()
        producer.join(timeout=0.5)
        assert producer.is_alive() and len(accepted) == 3  # 1 being written + 2 queued
        release.set()
        producer.join()
    assert accepted == list(range(10))


def test_writer_exception_reaches_the_caller():
    def failing(item):
        if item == 3:
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        with ex.WriteBehind(failing, max_pending=2) as writer:
            for i in range(100):
                writer.put(i)
    assert not any(t.name == "store-writer" for t in threading.enumerate())


def test_writer_exception_in_extraction_leaves_no_store(tiny_model, tmp_path, monkeypatch):
    real, calls = StoreWriter.add_batch, []

    def fails_on_fifth(self, *args, **kwargs):  # the fifth batch
        calls.append(1)
        if len(calls) == 5:
            raise OSError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(StoreWriter, "add_batch", fails_on_fifth)
    with pytest.raises(OSError, match="disk full"):
        ex.extract(tiny_model, CORPUS, tmp_path / "s.h5", max_length=64, batch_size=2, progress=False)
    assert list(tmp_path.iterdir()) == []  # neither the store nor its partial file
    assert not any(t.name == "store-writer" for t in threading.enumerate())


def test_forward_error_stops_the_writer_and_leaves_no_store(tiny_model, tmp_path, monkeypatch):
    real, calls, writes = ex.capture_batch, [], []
    real_add = StoreWriter.add_batch

    def dies_on_fourth_batch(model, inputs, lengths):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(model, inputs, lengths)

    def counted_add(self, *args, **kwargs):
        writes.append(1)
        return real_add(self, *args, **kwargs)

    monkeypatch.setattr(ex, "capture_batch", dies_on_fourth_batch)
    monkeypatch.setattr(StoreWriter, "add_batch", counted_add)
    with pytest.raises(KeyboardInterrupt):
        ex.extract(tiny_model, CORPUS, tmp_path / "s.h5", max_length=64, batch_size=2, progress=False)
    assert list(tmp_path.iterdir()) == []
    assert not any(t.name == "store-writer" for t in threading.enumerate())
    assert len(writes) <= 3  # no write after the failure: at most the 3 batches before it


def test_negative_write_ahead_is_refused():
    with pytest.raises(ValueError):
        ex.WriteBehind(print, max_pending=-1)
