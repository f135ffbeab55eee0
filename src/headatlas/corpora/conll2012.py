"""CoNLL-2012 / OntoNotes ``*_gold_conll`` files -> normalised records with dependency heads.

The format has constituency parse bits, not dependencies. The reader turns
them into dependency heads (:func:`constituency_heads`, simplified Collins
1999 head rules) and takes the split from the innermost ``train``,
``development``/``dev`` or ``test`` folder of the file's path, so a prepared
CoNLL-2012 corpus is read downstream like any other: words, XPOS, heads,
mentions, document, split. It has no dependency *labels* (``rels`` is None),
so it feeds coreference, not Table 1 (see :data:`headatlas.corpora.formats.FORMATS`).

Malformed input raises :class:`CorpusFormatError` starting with ``file:line``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from headatlas.corpora.conllu_reader import MentionTracker, read_lines
from headatlas.corpora.records import Sentence
from headatlas.errors import CorpusFormatError

log = logging.getLogger(__name__)

_BEGIN = re.compile(r"#begin document \(?(?P<name>.+?)\)?; part (?P<part>\d+)\s*")
# document id, part, word number, word, POS, parse bit, lemma, frameset, sense,
# speaker, named entities, [predicate arguments...], coreference
_MIN_COLUMNS = 12
_WORD, _POS, _PARSE, _SPEAKER = 3, 4, 5, 9
_SPLIT_DIRS = {"train": "train", "development": "dev", "dev": "dev", "test": "test"}


def read_conll2012(path: str | Path, strict: bool = True) -> list[Sentence]:
    """Read a CoNLL-2012 ``*_gold_conll`` file (OntoNotes coreference).

    Each ``#begin document (name); part NNN`` ... ``#end document`` block is a
    document ``doc = "name/NNN"``; sentences are separated by blank lines and
    their ids are ``<doc>-<k>``. ``xpos`` is the POS column; ``heads`` come
    from the parse bits (:func:`constituency_heads`), ``rels`` is None;
    ``split`` is :func:`split_from_folders` of the file's path.
    ``meta["parse"]`` holds the parse bits, ``meta["speaker"]`` the speaker
    (per sentence in OntoNotes; taken from the first word). Mentions come
    from the last column (``(12``, ``12)``, ``(12)``, joined by ``|``, ``-``
    for none), matched as in :class:`MentionTracker`, including
    ``meta["cross_sentence_mentions"]``. With ``strict=False`` a document with
    malformed brackets keeps its trees and loses its mentions (marked
    ``meta["coreference_excluded"]``, logged), as in :class:`MentionTracker`.
    """
    reader = _Conll2012Reader(Path(path), strict)
    sentences = reader.read()
    for problem in reader.tracker.problems:
        log.warning("coreference left out for one document: %s", problem)
    return sentences


def split_from_folders(path: str | Path) -> str:
    """Split from a file's folders (CoNLL-2012 ``.../data/test/...``), else ``""``.

    The innermost folder named train, development/dev or test wins, so a
    parent folder that happens to be called ``test`` does not.
    """
    folders = [part for part in Path(path).parts[:-1] if part in _SPLIT_DIRS]
    return _SPLIT_DIRS[folders[-1]] if folders else ""


@dataclass
class _Conll2012Reader:
    """Line-by-line state of :func:`read_conll2012`."""

    path: Path
    strict: bool = True
    sentences: list[Sentence] = field(default_factory=list)
    doc: str | None = None
    begin_line: int = 0
    n_in_doc: int = 0
    rows: list[tuple[int, list[str]]] = field(default_factory=list)  # (line, columns)

    def __post_init__(self):
        self.tracker = MentionTracker(self.path, strict=self.strict)
        self.doc_start = 0  # index of the current document's first sentence
        self.split = split_from_folders(self.path)

    def read(self) -> list[Sentence]:
        lines = read_lines(self.path)
        for lineno, line in enumerate(lines, 1):
            if line.startswith("#begin document"):
                self._begin(lineno, line)
            elif line.startswith("#end document"):
                self._end(lineno)
            elif not line.strip():
                self._flush()
            elif not line.startswith("#"):
                self._row(lineno, line)
        if self.doc is not None:
            raise CorpusFormatError(self.path, self.begin_line,
                                    f"document {self.doc} has no '#end document' line",
                                    "the file may be truncated; download it again")
        if not self.sentences:
            raise CorpusFormatError(self.path, 1, "the file has no sentences",
                                    "check that this is a *_gold_conll file")
        return self.sentences

    def _begin(self, lineno: int, line: str) -> None:
        match = _BEGIN.fullmatch(line)
        if not match:
            raise CorpusFormatError(self.path, lineno, "malformed '#begin document' line",
                                    "expected '#begin document (NAME); part NNN'")
        if self.doc is not None:
            raise CorpusFormatError(self.path, lineno,
                                    f"document starts inside document {self.doc}",
                                    "add '#end document' before it")
        self.doc, self.begin_line, self.n_in_doc = f"{match['name']}/{match['part']}", lineno, 0
        self.doc_start = len(self.sentences)

    def _end(self, lineno: int) -> None:
        if self.doc is None:
            raise CorpusFormatError(self.path, lineno, "'#end document' without a document",
                                    "remove it or add the matching '#begin document' line")
        self._flush()
        self.tracker.end_document(self.sentences[self.doc_start:])
        self.doc = None

    def _row(self, lineno: int, line: str) -> None:
        if self.doc is None:
            raise CorpusFormatError(self.path, lineno, "token line outside a document",
                                    "put it between '#begin document' and '#end document'")
        cols = line.split()
        if len(cols) < _MIN_COLUMNS:
            raise CorpusFormatError(self.path, lineno,
                                    f"{len(cols)} columns, expected at least {_MIN_COLUMNS}",
                                    "a *_gold_conll line has 11 fixed columns, one per "
                                    "predicate, and the coreference column last")
        if cols[2] != str(len(self.rows)):
            raise CorpusFormatError(self.path, lineno,
                                    f"word number {cols[2]!r} where {len(self.rows)} was expected",
                                    "number the words of each sentence 0, 1, 2, ...; separate "
                                    "sentences by a blank line")
        self.rows.append((lineno, cols))

    def _flush(self) -> None:
        if not self.rows:
            return
        self.n_in_doc += 1
        first_line, first = self.rows[0]
        sentence_id = f"{self.doc}-{self.n_in_doc}"
        parse = [cols[_PARSE] for _, cols in self.rows]
        xpos = [cols[_POS] for _, cols in self.rows]
        try:
            heads = constituency_heads(parse, xpos)
        except ValueError as err:
            raise CorpusFormatError(self.path, first_line, f"sentence {sentence_id}: {err}",
                                    "check the parse-bit column (6th) of this sentence") from err
        sentence = Sentence(
            id=sentence_id,
            words=[cols[_WORD] for _, cols in self.rows],
            doc=self.doc,
            split=self.split,
            heads=heads,
            xpos=xpos,
            mentions=[],
            source=f"{self.path}:{first_line}",
            meta={"parse": parse, "speaker": first[_SPEAKER], "cross_sentence_mentions": 0},
        )
        for index, (lineno, cols) in enumerate(self.rows):
            coref = "" if cols[-1] == "-" else cols[-1].replace("|", "")
            self.tracker.token(coref, lineno, sentence, index)
        self.sentences.append(sentence)
        self.rows = []


# ----------------------------------------------------------------------------
# Constituency parse bits -> dependency heads
# ----------------------------------------------------------------------------

@dataclass
class _Node:
    label: str
    children: list["_Node | int"]  # phrases, or word indices (preterminals)


_BIT = re.compile(r"(?P<opens>(?:\([^()*\s]+)*)\*(?P<closes>\)*)")
_OPEN_LABEL = re.compile(r"\(([^()*\s]+)")
NP_LABELS = frozenset({"NP", "NML", "NX", "WHNP", "NAC"})
NOMINAL = frozenset({"NN", "NNS", "NNP", "NNPS", "PRP", "WP", "NML", "NX"})
VERBAL = frozenset({"VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "MD", "VP"})
PUNCT_TAGS = frozenset({",", ".", ":", "``", "''", "-LRB-", "-RRB-", "HYPH", "NFP"})


def parse_tree(bits: Sequence[str]) -> _Node:
    """The constituency tree of one sentence from its CoNLL-2012 parse bits.

    A bit is ``(LABEL(LABEL*))``: phrases opened before the word, the word
    (``*``), the number of phrases closed after it.
    """
    root = _Node("", [])
    stack = [root]
    for word, bit in enumerate(bits):
        match = _BIT.fullmatch(bit)
        if not match:
            raise ValueError(f"word {word}: malformed parse bit {bit!r}")
        for label in _OPEN_LABEL.findall(match["opens"]):
            node = _Node(label, [])
            stack[-1].children.append(node)
            stack.append(node)
        stack[-1].children.append(word)
        for _ in match["closes"]:
            if len(stack) == 1:
                raise ValueError(f"word {word}: parse bit {bit!r} closes a phrase never opened")
            stack.pop()
    if len(stack) != 1:
        raise ValueError(f"parse bits leave {len(stack) - 1} phrase(s) open")
    only = root.children[0] if len(root.children) == 1 else None
    return only if isinstance(only, _Node) else root


def _category(child: "_Node | int", xpos: Sequence[str]) -> str:
    """A word's POS tag, or a phrase label without function tags (NP-SBJ -> NP)."""
    if isinstance(child, int):
        return xpos[child]
    match = re.match(r"[A-Z$]+", child.label)
    return match.group(0) if match else child.label


def head_child(node: _Node, xpos: Sequence[str]) -> int:
    """Index of the head child of a phrase (simplified Collins 1999 head rules).

    Noun phrases: the rightmost noun or pronoun word (or NML/NX) among the
    direct children -- post-modifiers (PP, SBAR, appositives) sit in a
    nested NP, so this is the last noun before any post-modifier and the
    possessive ``'s`` is never the head; else the leftmost NP child
    (``(NP (NP the city) (PP of Paris))``, coordination); other phrases: the
    leftmost verb or VP child. Failing those, the rightmost child that is
    not punctuation (PP -> its NP, SBAR -> its S, ADJP -> its adjective).
    """
    cats = [_category(child, xpos) for child in node.children]
    if _category(node, xpos) in NP_LABELS:
        order = [(k, NOMINAL) for k in reversed(range(len(cats)))] + [(k, {"NP"}) for k in range(len(cats))]
    else:
        order = [(k, VERBAL) for k in range(len(cats))]
    order += [(k, None) for k in reversed(range(len(cats)))]
    return next((k for k, wanted in order
                 if (cats[k] in wanted if wanted is not None else cats[k] not in PUNCT_TAGS)),
                len(cats) - 1)


def constituency_heads(bits: Sequence[str], xpos: Sequence[str]) -> list[int]:
    """Dependency heads (1-based, 0 = root) from parse bits, by :func:`head_child` percolation.

    Each phrase's non-head children attach to its head child's head word, so
    the head word of a constituent mention is exactly its lexical head, and
    the coreference span head (the word headed outside the span) is the same
    rule for every corpus.
    """
    heads = [0] * len(bits)
    _attach(parse_tree(bits), heads, xpos)
    return heads


def _attach(node: _Node, heads: list[int], xpos: Sequence[str]) -> int:
    """Attach the head words of ``node``'s non-head children to its head word; return that word."""
    words = [child if isinstance(child, int) else _attach(child, heads, xpos)
             for child in node.children]
    head = words[head_child(node, xpos)]
    for word in words:
        if word != head:
            heads[word] = head + 1
    return head
