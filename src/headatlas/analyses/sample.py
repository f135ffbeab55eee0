"""A bounded, mergeable sample of examples: what keeps an analysis's state a fixed size.

Two analyses keep something of every example (norm shares: sampled (α, ‖f(x)‖) pairs;
head-type features: each input's distance features), so their states grow with the corpus:
~37 KB per MiniLM segment, 37 GB for 10⁶ segments. :class:`ExampleSample` keeps those
records for at most ``limit`` examples: the ones whose seeded hash of the corpus position
is smallest (a bottom-k sample). The hash depends on the position alone, so the sample is the
same whatever order the examples arrive in and however the corpus is cut into shards: merging
two samples and keeping the ``limit`` smallest keys gives the sample of the union, exactly.
"""

from __future__ import annotations

import heapq
from typing import Any, Iterable

_MASK = (1 << 64) - 1


def example_key(seed: int, index: int) -> int:
    """A 64-bit hash of ``(seed, index)`` (splitmix64's finaliser): uniform and independent of
    the order examples are seen in."""
    z = (int(index) * 0x9E3779B97F4A7C15 + int(seed) * 0xD1B54A32D192ED03 + 0x632BE59BD9B4E019) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class ExampleSample:
    """Records of at most ``limit`` examples (every example when ``limit`` is None), chosen by
    :func:`example_key`; :meth:`items` lists them in corpus order.

    Never more than ``limit`` records are held: once the sample is full, an example is kept only
    if its key is below the largest kept one (a max-heap of the kept keys), which it then evicts.
    :meth:`admits` says beforehand whether an example would be kept, so that a caller can skip
    building the record of one that would not."""

    def __init__(self, limit: int | None, seed: int = 0):
        if limit is not None and int(limit) < 1:
            raise ValueError(f"a sample of examples needs limit >= 1 or None, got {limit}")
        self.limit = None if limit is None else int(limit)
        self.seed = seed
        self._records: dict[int, Any] = {}  # corpus position -> record
        self._largest: list[tuple[int, int]] = []  # max-heap of the kept (key, position), negated

    def _rank(self, index: int) -> tuple[int, int]:
        return example_key(self.seed, index), index  # ties (never seen in 64 bits): the position

    def admits(self, index: int) -> bool:
        """Whether :meth:`add` would keep the example at this corpus position now."""
        if self.limit is None or len(self._records) < self.limit:
            return True
        key, position = self._largest[0]
        return self._rank(int(index)) < (-key, -position)

    def add(self, index: int, record: Any) -> None:
        index = int(index)
        if index in self._records:
            raise ValueError(f"example {index} was added twice (a corpus position is seen once)")
        if not self.admits(index):
            return
        self._records[index] = record
        if self.limit is None:
            return
        key, position = self._rank(index)
        heapq.heappush(self._largest, (-key, -position))
        if len(self._records) > self.limit:
            _, evicted = heapq.heappop(self._largest)
            del self._records[-evicted]

    def extend(self, items: Iterable[tuple[int, Any]]) -> None:
        for index, record in items:
            self.add(index, record)

    def items(self) -> list[tuple[int, Any]]:
        """``(corpus position, record)`` of the sampled examples, in corpus order."""
        return sorted(self._records.items())

    def __len__(self) -> int:
        return len(self._records)
