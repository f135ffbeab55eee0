"""Read CoNLL-U treebanks (UD English-EWT, GUM/OntoGUM) into :class:`Sentence` records.

Parsing goes through the ``conllu`` package. Because that package reports no
line numbers and accepts some malformed input (two spaces as a column
separator, short lines), a light line-level pre-scan first checks the token
lines and the trees and raises :class:`CorpusFormatError` at ``file:line``.
The pre-scan and the coreference bracket tracker are shared with the CoNLL-X
and CoNLL-2012 readers (:mod:`headatlas.corpora.conllx`, :mod:`headatlas.corpora.conll2012`).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import conllu
from conllu.exceptions import ParseException

from headatlas.corpora.records import Mention, Sentence
from headatlas.errors import CorpusFormatError

log = logging.getLogger(__name__)
CONLLU_FIELDS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
N_COLUMNS = 10

_WORD_ID = re.compile(r"[1-9]\d*")
_SUBTOKEN_ID = re.compile(r"[1-9]\d*-[1-9]\d*|\d+\.[1-9]\d*")  # multiword range, empty node
_INTEGER = re.compile(r"0|-?[1-9]\d*")  # what conllu accepts as an integer
_HAS_ENTITY = re.compile(r"^# global\.Entity|[\t|]Entity=", re.MULTILINE)
# One bracket item of an Entity value: "(12)", "(12" or "12)"; items are concatenated.
_ENTITY_ITEM = re.compile(r"\((?P<single>[^()]+)\)|\((?P<open>[^()]+)|(?P<close>[^()]+)\)")
_ENTITY_KEY = re.compile(r"(?P<eid>[^\[\]]+)(?:\[(?P<part>\d+)/(?P<of>\d+)\])?")
# Columns conllu keeps as written: FEATS raw ("_" if none), XPOS "_" rather than None,
# DEPS unused (its regex parsing costs a quarter of the reading time).
_RAW_COLUMNS = {name: (lambda cols, i: cols[i]) for name in ("feats", "xpos", "deps")}


# ----------------------------------------------------------------------------
# Line-level pre-scan (shared with conllx.py)
# ----------------------------------------------------------------------------

@dataclass
class TokenBlock:
    """One sentence as it stands in the file: its text and where its lines are.

    ``token_lines`` holds the file line of every token line in order (words,
    multiword ranges, empty nodes); ``word_lines`` and ``heads`` only those of
    the integer-ID words.
    """

    start: int
    lines: list[str] = field(default_factory=list)
    token_lines: list[int] = field(default_factory=list)
    word_lines: list[int] = field(default_factory=list)
    heads: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def read_lines(path: Path) -> list[str]:
    """The file's lines (UTF-8, optional BOM), split on ``\\n`` only.

    ``str.splitlines`` would also split on U+2028 and friends, which may occur
    inside a word and would shift every line number after it.
    """
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise CorpusFormatError(path, line, f"not valid UTF-8 ({err.reason})",
                                "re-save the file as UTF-8") from err
    return [line.rstrip("\r") for line in text.split("\n")]


def read_token_blocks(path: Path, subtokens: bool) -> list[TokenBlock]:
    """Split a 10-column file into sentences and validate every token line and tree.

    Parameters
    ----------
    path : Path
        A CoNLL-U (``subtokens=True``: multiword ranges and empty nodes
        allowed) or CoNLL-X file (``subtokens=False``).

    Raises
    ------
    CorpusFormatError
        At the offending line: wrong column count, empty column, bad ID,
        non-integer or out-of-range HEAD, a cycle, or a file without sentences.
    """
    blocks: list[TokenBlock] = []
    block = None
    for lineno, line in enumerate(read_lines(path), 1):
        if not line.strip():
            if block:
                blocks.append(_finish_block(path, block))
            block = None
            continue
        block = block or TokenBlock(lineno)
        block.lines.append(line)
        if not line.startswith("#"):
            _scan_token_line(path, block, lineno, line, subtokens)
    if block:
        blocks.append(_finish_block(path, block))
    if not blocks:
        raise CorpusFormatError(path, 1, "the file has no sentences (it is empty)",
                                "check that the right file was given and that it was "
                                "downloaded completely")
    return blocks


def _scan_token_line(path: Path, block: TokenBlock, lineno: int, line: str,
                     subtokens: bool) -> None:
    cols = line.split("\t")
    if len(cols) != N_COLUMNS:
        raise CorpusFormatError(path, lineno,
                                f"{len(cols)} tab-separated columns, expected {N_COLUMNS}",
                                "separate the 10 columns with single tabs (not spaces) and "
                                "write _ for an empty field")
    if "" in cols:
        raise CorpusFormatError(path, lineno, f"column {cols.index('') + 1} is empty",
                                "write _ for an empty field")
    if any("  " in col for col in cols):
        # conllu also splits columns at two spaces, which would shift the columns.
        raise CorpusFormatError(path, lineno, "two consecutive spaces inside a column",
                                "replace them with a single space")
    token_id, head = cols[0], cols[6]
    if _WORD_ID.fullmatch(token_id):
        _scan_word(path, block, lineno, int(token_id), head)
    elif not (subtokens and _SUBTOKEN_ID.fullmatch(token_id)):
        allowed = "a word ID, a range like 1-2 or an empty node like 8.1" if subtokens \
            else "a word ID (1, 2, 3, ...)"
        raise CorpusFormatError(path, lineno, f"ID {token_id!r} is not {allowed}",
                                "fix the first column")
    block.token_lines.append(lineno)


def _scan_word(path: Path, block: TokenBlock, lineno: int, word_id: int, head: str) -> None:
    expected = len(block.heads) + 1
    if word_id != expected:
        raise CorpusFormatError(path, lineno, f"word ID {word_id} where {expected} was expected",
                                "number the words of each sentence 1, 2, 3, ... without gaps; "
                                "separate sentences by a blank line")
    if not _INTEGER.fullmatch(head):
        raise CorpusFormatError(path, lineno, f"HEAD {head!r} is not an integer",
                                "column 7 must be the ID of the word's head, or 0 for the root")
    block.heads.append(int(head))
    block.word_lines.append(lineno)


def _finish_block(path: Path, block: TokenBlock) -> TokenBlock:
    if not block.heads:
        raise CorpusFormatError(path, block.start, "a sentence block without any word line",
                                "remove the stray lines, or join them to the next sentence "
                                "(no blank line between comments and words)")
    n = len(block.heads)
    for head, lineno in zip(block.heads, block.word_lines):
        if not 0 <= head <= n:
            raise CorpusFormatError(path, lineno,
                                    f"HEAD {head} is out of range: the sentence has {n} words",
                                    f"HEAD must be 0 (root) or a word ID 1..{n}")
    check_tree(path, block.heads, block.word_lines)
    return block


def check_tree(path: Path, heads: list[int], word_lines: list[int]) -> None:
    """Raise at the first word (in order) whose chain of heads never reaches 0.

    ``heads`` are 1-based with 0 = root and already range-checked.
    """
    for word, (head, line) in enumerate(zip(heads, word_lines), 1):
        if head == word:
            raise CorpusFormatError(path, line, f"word {word} is its own head (HEAD {head})",
                                    "set HEAD to the ID of another word, or 0 for the root")
    reaches_root = [True] + [False] * len(heads)  # index 0 is the root
    for start in range(1, len(heads) + 1):
        chain: dict[int, None] = {}  # ordered set of the words walked so far
        node = start
        while not reaches_root[node]:
            if node in chain:
                cycle = list(chain)[list(chain).index(node):] + [node]
                raise CorpusFormatError(  # at the line of the cycle's first word
                    path, word_lines[min(cycle) - 1],
                    f"word {start} does not reach the root: its heads form the cycle "
                    + " -> ".join(map(str, cycle)),
                    "fix the HEAD column so that every word leads up to the word with HEAD 0")
            chain[node] = None
            node = heads[node - 1]
        for word in chain:
            reaches_root[word] = True


def parse_block(path: Path, block: TokenBlock, fields: tuple[str, ...]) -> conllu.TokenList:
    """Parse one pre-scanned sentence with ``conllu`` (FEATS, XPOS, DEPS kept raw)."""
    try:
        return conllu.parse_token_and_metadata(block.text, fields=fields,
                                               field_parsers=dict(_RAW_COLUMNS))
    except ParseException as err:
        raise CorpusFormatError(path, block.start, f"conllu cannot parse this sentence: {err}",
                                "fix the sentence starting here") from err


# ----------------------------------------------------------------------------
# Coreference brackets (shared with conll2012.py)
# ----------------------------------------------------------------------------

@dataclass
class _Span:
    """A mention under construction; the parts of a discontinuous mention share one."""

    mention: Mention
    sentence: Sentence
    line: int
    crossed: bool = False

    def add(self, sentence: Sentence, index: int) -> None:
        if sentence is self.sentence:
            self.mention.words.append(index)
        else:
            self.crossed = True  # truncated: only words of the opening sentence are kept


class MentionTracker:
    """Turn bracketed coreference annotation into :class:`Mention` records.

    Items per token, concatenated: ``(E`` opens a mention of entity ``E``,
    ``E)`` closes the most recent open mention with the same key, ``(E)`` is
    a one-word mention. ``E`` may be CorefUD style ``e12-person-1-...``:
    the entity is the part before the first ``-``, and ``e12[1/2]`` marks
    part 1 of 2 of a discontinuous mention; its parts are joined into one
    mention with gaps.

    A mention that continues past its sentence is truncated to the words of
    the sentence where it opens, and counted in that sentence's
    ``meta["cross_sentence_mentions"]`` (which the reader initialises to 0).
    A mention lying on empty nodes only has no word; it is left out and
    counted in ``meta["empty_node_mentions"]``.

    Malformed brackets (a mention never closed, a closing without an
    opening, a malformed value) raise in ``strict`` mode. Otherwise the
    problem is kept in :attr:`problems` and its document is excluded from
    coreference only: :meth:`end_document` removes the document's mentions
    and marks its sentences with ``meta["coreference_excluded"]`` (the
    ``file:line`` and what is wrong), so the trees still serve every other
    analysis.
    """

    def __init__(self, path: Path, strict: bool = True):
        self.path, self.strict = path, strict
        self.stack: list[tuple[str, _Span, int]] = []  # (key, span, line opened)
        self.parts: dict[tuple[str, int], _Span] = {}  # (entity, total parts) -> span
        self.problems: list[CorpusFormatError] = []
        self._broken: CorpusFormatError | None = None  # this document's first problem

    def token(self, value: str, line: int, sentence: Sentence, index: int | None) -> None:
        """Apply one token's bracket items (``""`` if none; call for every word).

        ``index`` is the word's sentence index, None for an empty node.

        Opening items are applied before the word is added and closing items
        after, because every item on a token refers to a mention containing it.
        """
        if self._broken:
            return  # the document is already excluded from coreference
        try:
            items = self._items(value, line)
            for opens, _, text in items:
                if opens:
                    self._open(text, line, sentence)
            if index is not None:
                for _, span, _ in self.stack:
                    span.add(sentence, index)
            for _, closes, text in items:
                if closes:
                    self._close(text, line)
        except CorpusFormatError as err:
            self._fail(err)

    def end_document(self, sentences: list[Sentence] | None = None) -> None:
        """Check that every mention of the finished document was closed.

        ``sentences`` are the document's sentences: in lenient mode a document
        with a problem loses its mentions and is marked (see the class).
        """
        try:
            if not self._broken:
                self._check_closed()
        except CorpusFormatError as err:
            self._fail(err)
        if self._broken and sentences:
            for sentence in sentences:
                sentence.mentions = []
                sentence.meta["coreference_excluded"] = str(self._broken).split("\n")[0]
        self.stack, self.parts, self._broken = [], {}, None

    def _check_closed(self) -> None:
        if self.stack:
            key, _, line = self.stack[0]
            raise CorpusFormatError(self.path, line,
                                    f"mention of entity {key} opens here and is never closed",
                                    f"add '{key})' on the mention's last word, in the same "
                                    "document")
        if self.parts:
            (entity, total), span = next(iter(self.parts.items()))
            raise CorpusFormatError(self.path, span.line,
                                    f"discontinuous mention of entity {entity} lacks some of "
                                    f"its {total} parts",
                                    "annotate every part [k/n] of the mention")

    def _fail(self, err: CorpusFormatError) -> None:
        if self.strict:
            raise err
        self.problems.append(err)
        self._broken = err

    def _items(self, value: str, line: int) -> list[tuple[bool, bool, str]]:
        """Split a value into (opens, closes, text) items; ``(E)`` both opens and closes."""
        items, pos = [], 0
        while pos < len(value):
            match = _ENTITY_ITEM.match(value, pos)
            if not match:
                raise CorpusFormatError(self.path, line, f"malformed coreference value {value!r}",
                                        "write (E to open, E) to close and (E) for a one-word "
                                        "mention of entity E")
            single, opened, closed = match.group("single", "open", "close")
            items.append((closed is None, opened is None, single or opened or closed))
            pos = match.end()
        return items

    def _key(self, text: str, line: int) -> tuple[str, str, tuple[int, int] | None]:
        key = text.split("-", 1)[0]
        match = _ENTITY_KEY.fullmatch(key)
        if not match:
            raise CorpusFormatError(self.path, line, f"malformed entity id {key!r}",
                                    "an entity id is a name such as 12 or e12, optionally "
                                    "followed by a part marker such as [1/2]")
        part = (int(match["part"]), int(match["of"])) if match["part"] else None
        return key, match["eid"], part

    def _open(self, text: str, line: int, sentence: Sentence) -> None:
        key, entity, part = self._key(text, line)
        if part is None or part[0] == 1:
            span = _Span(Mention(entity, []), sentence, line)
            sentence.mentions.append(span.mention)
            if part:
                self.parts[(entity, part[1])] = span
        else:
            span = self.parts.get((entity, part[1]))
            if span is None:
                raise CorpusFormatError(self.path, line,
                                        f"part {part[0]}/{part[1]} of a mention of entity "
                                        f"{entity} without an open part 1",
                                        "annotate the discontinuous mention's parts in order")
        self.stack.append((key, span, line))

    def _close(self, text: str, line: int) -> None:
        key, entity, part = self._key(text, line)
        for pos in range(len(self.stack) - 1, -1, -1):
            if self.stack[pos][0] == key:
                break
        else:
            raise CorpusFormatError(self.path, line,
                                    f"closes a mention of entity {key} that is not open",
                                    f"add '({key}' on the mention's first word or remove "
                                    f"'{key})'")
        span = self.stack.pop(pos)[1]
        if part is None:
            _finish_span(span)
        elif part[0] == part[1]:  # the last part completes a discontinuous mention
            self.parts.pop((entity, part[1]), None)
            _finish_span(span)


def _finish_span(span: _Span) -> None:
    mention, meta = span.mention, span.sentence.meta
    mention.words = sorted(set(mention.words))
    if span.crossed:
        meta["cross_sentence_mentions"] += 1
    if not mention.words:
        # by identity: an equal Mention (same entity, no words yet) may still be open
        span.sentence.mentions[:] = [m for m in span.sentence.mentions if m is not mention]
        meta["empty_node_mentions"] = meta.get("empty_node_mentions", 0) + 1


# ----------------------------------------------------------------------------
# CoNLL-U
# ----------------------------------------------------------------------------

def read_conllu(path: str | Path, split: str = "",
                doc_splits: dict[str, str] | None = None, strict: bool = True) -> list[Sentence]:
    """Read a CoNLL-U file into sentences with trees and, if annotated, coreference.

    Parameters
    ----------
    path : str or Path
        The CoNLL-U file.
    split : str
        Split name for every sentence, or for documents missing from
        ``doc_splits``.
    doc_splits : dict, optional
        Document name -> split (see :func:`read_gum_splits`).
    strict : bool
        Raise on malformed coreference brackets (default). When False, a
        document with such a problem keeps its trees, loses its mentions and
        is marked ``meta["coreference_excluded"]`` (``file:line``: what is
        wrong), and the problem is logged.

    Returns
    -------
    list of Sentence
        Words are the integer-ID tokens (multiword ranges and empty nodes are
        skipped). ``doc`` comes from ``# newdoc id`` and carries over to the
        following sentences (the file stem before the first one); ``id`` from
        ``# sent_id``, else ``<doc>-<k>``. If the file has coreference
        (``Entity=`` in MISC, CorefUD/GUM style), ``mentions`` is a list
        and ``meta["cross_sentence_mentions"]`` counts mentions running past
        their sentence, which are truncated to the sentence where they open
        (see :class:`MentionTracker`); otherwise ``mentions`` is None.
        The real GUM (OntoGUM) files have no cross-sentence mention.

    Raises
    ------
    CorpusFormatError
        At ``file:line`` for malformed token lines and trees; in strict mode
        also for malformed brackets and a mention left open at the end of its
        document.
    """
    path = Path(path)
    blocks = read_token_blocks(path, subtokens=True)
    has_coref = any(_HAS_ENTITY.search(block.text) for block in blocks)
    tracker = MentionTracker(path, strict=strict)
    sentences: list[Sentence] = []
    doc, n_docs, k, doc_start = path.stem, 0, 0, 0
    for block in blocks:
        tokens = parse_block(path, block, CONLLU_FIELDS)
        meta = tokens.metadata
        if "newdoc id" in meta or "newdoc" in meta:
            tracker.end_document(sentences[doc_start:])
            n_docs += 1
            doc, k, doc_start = meta.get("newdoc id") or f"{path.stem}-{n_docs}", 0, len(sentences)
        k += 1
        sentence = Sentence(id=meta.get("sent_id") or f"{doc}-{k}", words=[], doc=doc,
                            split=(doc_splits or {}).get(doc, split),
                            source=f"{path}:{block.start}")
        _fill_words(sentence, tokens, block, tracker if has_coref else None)
        _note_roots(path, sentence, block)
        sentences.append(sentence)
    tracker.end_document(sentences[doc_start:])
    for problem in tracker.problems:
        log.warning("coreference left out for one document: %s", problem)
    return sentences


def _note_roots(path: Path, sentence: Sentence, block: TokenBlock) -> None:
    """Report a sentence with several roots (UD allows one): kept, logged, marked in ``meta``."""
    roots = [line for head, line in zip(block.heads, block.word_lines) if head == 0]
    if len(roots) > 1:
        sentence.meta["roots"] = len(roots)
        log.warning("%s:%d: sentence %s has %d roots (words with HEAD 0, on lines %s); UD allows "
                    "one. Kept as it is: each root is left unscored, like any root", path,
                    roots[1], sentence.id, len(roots), ", ".join(map(str, roots)))


def _fill_words(sentence: Sentence, tokens: conllu.TokenList, block: TokenBlock,
                tracker: MentionTracker | None) -> None:
    words = [token for token in tokens if isinstance(token["id"], int)]
    sentence.words = [token["form"] for token in words]
    sentence.heads = [token["head"] for token in words]
    sentence.rels = [token["deprel"] for token in words]
    sentence.upos = [token["upos"] for token in words]
    sentence.xpos = [token["xpos"] for token in words]
    sentence.feats = [token["feats"] for token in words]
    if tracker is None:
        return
    sentence.mentions, sentence.meta["cross_sentence_mentions"] = [], 0
    index = 0
    for token, line in zip(tokens, block.token_lines):
        is_word = isinstance(token["id"], int)
        if is_word or token["id"][1] == ".":  # empty nodes may carry brackets too
            entity = (token["misc"] or {}).get("Entity") or ""
            tracker.token(entity, line, sentence, index if is_word else None)
        index += is_word


# ----------------------------------------------------------------------------
# GUM splits
# ----------------------------------------------------------------------------

_SECTION = re.compile(r"##\s+(?P<name>\S+)\s*")
_BULLET = re.compile(r"\s*[*-]\s+(?P<doc>\S+)\s*")


def read_gum_splits(splits_md_path: str | Path) -> dict[str, str]:
    """Document name -> split from GUM's ``splits.md``.

    The file has sections ``## dev``, ``## test``, ``## test2``, ``## train``,
    each listing documents as ``  * GUM_genre_name`` bullets; other lines are
    prose and ignored.
    """
    path = Path(splits_md_path)
    splits: dict[str, str] = {}
    section = None
    for lineno, line in enumerate(read_lines(path), 1):
        if heading := _SECTION.fullmatch(line):
            section = heading["name"]
        elif bullet := _BULLET.fullmatch(line):
            doc = bullet["doc"]
            if section is None:
                raise CorpusFormatError(path, lineno, f"document {doc} listed before any split",
                                        "put it under a '## dev/test/train' heading")
            if splits.get(doc, section) != section:
                raise CorpusFormatError(path, lineno,
                                        f"document {doc} is in both {splits[doc]} and {section}",
                                        "list every document in one split only")
            splits[doc] = section
    if not splits:
        raise CorpusFormatError(path, 1, "no '  * DOCUMENT' entries under '## split' headings",
                                "check that this is GUM's splits.md")
    return splits
