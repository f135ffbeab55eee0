"""Per-batch buffers from the heap rather than from fresh memory mappings (glibc only).

glibc serves each allocation above its mmap threshold (128 KiB at start, raised as big
blocks are freed, to 32 MiB at most) with a mapping of its own and unmaps it at ``free``; its
heap gives memory back to the system once more than the trim threshold is free at its top.
Extraction allocates buffers of tens of megabytes per batch and layer (``[32, 12, 128, 128]``
float32 attention is 25 MB; a batch's packed float16 maps, 75 MB for MiniLM), so each batch's
tensors arrived as fresh zero pages: a page fault per 4 KiB, paid in system time. Measured on
300 Wikipedia segments with MiniLM at one thread (``benchmarks/README.md``): 991k page faults
and 3.5 s of system time beside ~9.8 s of user time by default; 19k and 0.25 s with both
thresholds above the batch's buffers. The user time, and every number computed, is the same.

Elsewhere (musl, macOS, Windows) nothing is changed: those allocators behave differently.
"""

from __future__ import annotations

import ctypes
import functools
import logging

log = logging.getLogger(__name__)

# mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

_raised_to = 0  # the threshold set so far in this process (only ever raised)
MAX_THRESHOLD = 1 << 30  # mallopt takes a C int; above 1 GiB a mapping per buffer costs little beside its use


@functools.cache  # loaded once: release_free_heap runs every few hundred examples
def _glibc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 (raises AttributeError outside glibc)
    except (OSError, AttributeError):
        return None
    return libc


def keep_buffers_in_heap(largest_buffer: int) -> bool:
    """Serve allocations up to twice ``largest_buffer`` bytes (at most 1 GiB) from the heap, and
    keep twice that free in it, so a batch reuses the pages the one before it freed.

    Only raises the thresholds (several extractions in one process keep the largest). Returns
    whether glibc took the setting; False elsewhere, changing nothing.
    """
    global _raised_to
    threshold = min(2 * int(largest_buffer), MAX_THRESHOLD)
    if threshold <= _raised_to:
        return True
    libc = _glibc()
    if libc is None:
        return False
    if libc.mallopt(M_MMAP_THRESHOLD, threshold) != 1 or libc.mallopt(M_TRIM_THRESHOLD, 2 * threshold) != 1:
        log.debug("mallopt refused an mmap threshold of %d bytes", threshold)
        return False
    _raised_to = threshold
    return True


def release_free_heap() -> bool:
    """Give the heap's free pages back to the system (``malloc_trim``); whether any were (False
    outside glibc).

    A long extraction's heap fragments: each batch's large buffers are freed between
    allocations that live on (the analyses' states), so the next batch's land higher and the
    heap's free part grows with the shard (benchmarks/fused_rss.py: 0.75 -> 1.56 GB free over
    3,000 MiniLM segments, 0.3-0.4 GB in use). Called every few hundred examples, it costs
    the page faults of refilling the freed pages once per call, not once per batch."""
    libc = _glibc()
    return bool(libc is not None and libc.malloc_trim(0))
