"""The normalised corpus record and its JSON Lines file.

Every corpus (treebank, coreference corpus, Wikipedia segments) is turned
into a list of :class:`Sentence` records, one JSON object per line. Word
indices are 0-based; ``heads`` follow CoNLL: 1-based, 0 = root.
"""

from __future__ import annotations

import json
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
            if not line.strip():
                continue
            try:
                yield Sentence.from_dict(json.loads(line))
            except (json.JSONDecodeError, TypeError) as err:
                raise CorpusFormatError(path, lineno, f"not a corpus record ({err})",
                                        "delete the file and rerun its prepare rule") from err
