"""The normalised corpus record and its JSON Lines file.

Every corpus (treebank, coreference corpus, Wikipedia segments) is turned
into a list of :class:`Sentence` records, one JSON object per line. Word
indices are 0-based; ``heads`` follow CoNLL: 1-based, 0 = root.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Sequence as SequenceABC
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from headatlas.errors import CorpusFormatError
from headatlas.io import atomic_open


@dataclass
class Mention:
    """A coreference mention: its entity and its (sentence-local) word indices.

    ``words`` is sorted; a discontinuous mention simply has gaps.
    """

    entity: str
    words: list[int]


@dataclass
class Sentence:
    """One example: a sentence (treebank) or a segment pair (Wikipedia).

    Annotation fields are ``None`` when the corpus has no such layer.
    ``words_b`` is set for two-segment inputs ``[CLS] A [SEP] B [SEP]``.
    ``source`` is ``file:line`` of the example's first line, for error messages.
    """

    id: str
    words: list[str]
    doc: str = ""
    split: str = ""
    heads: list[int] | None = None
    rels: list[str] | None = None
    upos: list[str] | None = None
    xpos: list[str] | None = None
    feats: list[str] | None = None
    mentions: list[Mention] | None = None
    words_b: list[str] | None = None
    source: str = ""
    meta: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict) -> "Sentence":
        data = dict(data)
        if data.get("mentions") is not None:
            data["mentions"] = [Mention(**m) for m in data["mentions"]]
        return cls(**data)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def write_jsonl(path: str | Path, sentences: Iterable[Sentence]) -> int:
    """Write records atomically; return how many were written."""
    n = 0
    with atomic_open(path, "w", encoding="utf-8") as handle:
        for sentence in sentences:
            handle.write(json.dumps(sentence.to_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> Iterator[Sentence]:
    """Stream records from a normalised corpus file."""
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if line.strip():
                yield _record(line, path, lineno)


def _record(line: str | bytes, path: str | Path, lineno: int) -> Sentence:
    try:
        return Sentence.from_dict(json.loads(line))
    except (json.JSONDecodeError, TypeError, UnicodeDecodeError) as err:
        raise CorpusFormatError(path, lineno, f"not a corpus record ({err})",
                                "delete the file and rerun its prepare rule") from err


class JsonlRecords(SequenceABC):
    """A corpus file's records as a sequence read on demand: memory holds each record's line
    offset (16 bytes a record), not the records, so a job over a shard of a corpus of millions
    reads the records it uses. Iteration streams the file as :func:`read_jsonl` does."""

    def __init__(self, path: str | Path):
        self.path = path
        self._offsets, self._lines = array("q"), array("q")
        offset = 0
        with open(path, "rb") as handle:
            for lineno, line in enumerate(handle, 1):
                if line.strip():
                    self._offsets.append(offset)
                    self._lines.append(lineno)
                offset += len(line)
        self._handle = None

    def __len__(self) -> int:
        return len(self._offsets)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = range(len(self))[index]  # negative indices; IndexError past the end
        if self._handle is None:
            self._handle = open(self.path, "rb")
        self._handle.seek(self._offsets[index])
        return _record(self._handle.readline(), self.path, self._lines[index])

    def __iter__(self) -> Iterator[Sentence]:
        return read_jsonl(self.path)

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self._handle.close()
