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
    :func:`example_key`; :meth:`records` lists them in corpus order.

    Memory stays below twice ``limit`` records: the sample is cut back to ``limit`` whenever it
    reaches ``2 * limit`` (cutting early or late keeps the same examples)."""

    def __init__(self, limit: int | None, seed: int = 0):
        if limit is not None and int(limit) < 1:
            raise ValueError(f"a sample of examples needs limit >= 1 or None, got {limit}")
        self.limit = None if limit is None else int(limit)
        self.seed = seed
        self._records: dict[int, Any] = {}  # corpus position -> record

    def add(self, index: int, record: Any) -> None:
        index = int(index)
        if index in self._records:
            raise ValueError(f"example {index} was added twice (a corpus position is seen once)")
        self._records[index] = record
        if self.limit is not None and len(self._records) >= 2 * self.limit:
            self._cut()

    def extend(self, items: Iterable[tuple[int, Any]]) -> None:
        for index, record in items:
            self.add(index, record)

    def _cut(self) -> None:
        if self.limit is None or len(self._records) <= self.limit:
            return
        kept = sorted(self._records, key=lambda i: (example_key(self.seed, i), i))[:self.limit]
        self._records = {i: self._records[i] for i in kept}

    def items(self) -> list[tuple[int, Any]]:
        """``(corpus position, record)`` of the sampled examples, in corpus order."""
        self._cut()
        return sorted(self._records.items())

    def __len__(self) -> int:
        self._cut()
        return len(self._records)
