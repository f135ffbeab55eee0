"""Per-batch buffers from the heap (headatlas.encoders.allocator), and the size extraction asks for."""

from __future__ import annotations

import subprocess
import sys

import pytest

from headatlas.encoders import allocator
from headatlas.encoders.extract import largest_buffer

# A batch as extraction makes it: per-layer float32 tensors above glibc's largest automatic mmap
# threshold (32 MiB), their float16 pack, all freed; the page faults of 10 batches after 2.
BATCHES = """
import resource, sys, torch
from headatlas.encoders.allocator import keep_buffers_in_heap
size = 40 << 20
if sys.argv[1] == "heap":
    keep_buffers_in_heap(3 * size)
def batch():
    layers = [torch.ones(size // 4) for _ in range(3)]
    return torch.cat([layer.half() for layer in layers])
batch(); batch()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    batch()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def batch_faults(mode: str) -> int:
    """Page faults of 10 batches in a fresh interpreter (the heap's state is then the same each run)."""
    done = subprocess.run([sys.executable, "-c", BATCHES, mode], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(allocator._glibc() is None, reason="the thresholds are glibc's (mallopt); "
                    "other C libraries are left as they are")
def test_batches_reuse_the_heap_instead_of_faulting_in_fresh_pages():
    fresh = batch_faults("default")
    assert fresh > 10 * 40 * 256  # by default, at least a 40 MB layer of each batch faults in anew
    assert batch_faults("heap") < fresh / 4  # measured: ~1/11


def test_thresholds_only_rise(monkeypatch):
    calls = []

    class FakeLibc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1

    monkeypatch.setattr(allocator, "_raised_to", 0)
    monkeypatch.setattr(allocator, "_glibc", lambda: FakeLibc())
    assert allocator.keep_buffers_in_heap(100)
    assert calls == [(allocator.M_MMAP_THRESHOLD, 200), (allocator.M_TRIM_THRESHOLD, 400)]
    assert allocator.keep_buffers_in_heap(50) and len(calls) == 2  # lower: nothing set
    assert allocator.keep_buffers_in_heap(10 << 30)  # capped: mallopt takes a C int
    assert calls[-2:] == [(allocator.M_MMAP_THRESHOLD, 1 << 30), (allocator.M_TRIM_THRESHOLD, 2 << 30)]


def test_without_glibc_nothing_is_set(monkeypatch):
    monkeypatch.setattr(allocator, "_raised_to", 0)
    monkeypatch.setattr(allocator, "_glibc", lambda: None)
    assert not allocator.keep_buffers_in_heap(100)


def test_largest_buffer_by_hand():
    examples = (5, 10, 7)  # wordpieces
    # widest T = 10; 6 layers: packed float16 maps 2 * 6 bytes per cell beat a float32 layer (4)
    assert largest_buffer(examples, batch_size=32, n_layers=6, n_heads=12) == 32 * 12 * 100 * 12
    # one layer: its float32 attention (4 bytes per cell) is larger than the float16 pack (2)
    assert largest_buffer(examples, batch_size=2, n_layers=1, n_heads=3) == 2 * 3 * 100 * 4


# A fragmented heap as a long extraction leaves it: buffers of 40-68 MB freed between small
# blocks that live on, each a little larger than the hole before it (so it lands above), and
# the free part stays resident; RSS in MB before and after release_free_heap.
FRAGMENTED = """
import sys, numpy as np
from headatlas.encoders.allocator import keep_buffers_in_heap, release_free_heap
def rss():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS")).split()[1]) // 1024
keep_buffers_in_heap(100 << 20)
kept = []
for i in range(8):
    big = np.ones((40 + 4 * i) << 18, np.float32)  # touched
    kept.append(np.ones(1000))  # lives on, above it in the heap
    del big
before = rss()
print(before, rss() if release_free_heap() else before)
"""


@pytest.mark.skipif(allocator._glibc() is None, reason="malloc_trim is glibc's")
def test_the_free_part_of_a_fragmented_heap_goes_back_to_the_system():
    done = subprocess.run([sys.executable, "-c", FRAGMENTED], capture_output=True, text=True, check=True)
    before, after = map(int, done.stdout.split())
    # measured: 141 -> 29 MB (part of each hole serves the small blocks after it)
    assert before - after > 50 and after < before / 2


def test_without_glibc_nothing_is_released(monkeypatch):
    monkeypatch.setattr(allocator, "_glibc", lambda: None)
    assert not allocator.release_free_heap()
