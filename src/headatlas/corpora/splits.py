"""Split assignment from a corpus's ``splits:`` rule (for corpora whose source has none).

The corpus config key ``splits:`` takes exactly one of three shapes::

    splits: {by: file, train: [globs], dev: [globs], test: [globs]}
    splits: {by: document, train: [globs], dev: [globs], test: [globs]}
    splits: {by: proportion, train: 0.8, dev: 0.1, test: 0.1, seed: 0}

``by: file`` matches :func:`fnmatch.fnmatchcase` globs against the path of
each record's source file relative to the corpus ``path:`` (``/``-separated;
``*`` also matches ``/``), e.g. the paper's PTB WSJ sections::

    splits: {by: file, train: ["*wsj_0[2-9]*", "*wsj_1[0-9]*", "*wsj_2[01]*"],
             dev: ["*wsj_22*"], test: ["*wsj_23*"]}

which works whether the files are per section or per document.
``by: document`` matches the globs against the record's ``doc`` id.
``by: proportion`` shuffles the (sorted) document ids with ``seed`` and cuts
them by these shares of documents: train ``[0, round(n*train))``, dev up to
``round(n*(train+dev))``, test the rest; the shares must sum to 1.

A split left out has no patterns (share 0). A record matching patterns of
two or more splits is an error naming the file (or document) and the
patterns. Records matching none get split ``""``: they are counted and
logged, never dropped (``corpus_stats`` reports them as ``unassigned``).
Without the key a corpus keeps the splits its source gives.
"""

from __future__ import annotations

import logging
import math
import random
from collections import Counter
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from headatlas.corpora.records import Sentence
from headatlas.errors import HeadAtlasError

log = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")
MODES = ("file", "document", "proportion")
UNASSIGNED = "unassigned"  # how corpus_stats names records without a split


def source_file(sentence: Sentence, roots: Iterable[str | Path] = ()) -> str:
    """The file part of ``sentence.source`` (``file:line``), relative to the first root it lies in.

    ``/``-separated; the path as written when it lies in none of ``roots``.
    """
    path = Path(sentence.source.rpartition(":")[0] or sentence.source)
    for root in roots:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def assign_splits(sentences: Sequence[Sentence], rule: Mapping, roots: Iterable[str | Path] = (),
                  corpus: str = "") -> Counter:
    """Set ``split`` of every sentence from a ``splits:`` rule (in place).

    Parameters
    ----------
    sentences : sequence of Sentence
        One corpus, as read.
    rule : mapping
        The ``splits:`` value (module docstring).
    roots : paths
        Folders that ``by: file`` paths are taken relative to (the corpus ``path:``).
    corpus : str
        The corpus name, for messages.

    Returns
    -------
    Counter
        Sentences per split, ``""`` for unassigned ones.

    Raises
    ------
    HeadAtlasError
        For a malformed rule, or a file/document matching several splits.
    """
    where = f"corpus {corpus!r}: " if corpus else ""
    mode = check_rule(rule, where)
    roots = [Path(root) for root in roots]
    if mode == "proportion":
        by_doc = proportion_splits([s.doc for s in sentences], rule)
        key: Callable[[Sentence], str] = lambda s: s.doc
        split_of = by_doc.__getitem__
    else:
        key = (lambda s: source_file(s, roots)) if mode == "file" else (lambda s: s.doc)
        patterns = {split: list(rule.get(split) or []) for split in SPLITS}
        cache: dict[str, str] = {}

        def split_of(name: str) -> str:
            if name not in cache:
                cache[name] = match_split(name, patterns, f"{where}{mode} {name!r}")
            return cache[name]

    counts: Counter = Counter()
    unmatched: dict[str, int] = {}
    for sentence in sentences:
        name = key(sentence)
        sentence.split = split_of(name)
        counts[sentence.split] += 1
        if not sentence.split:
            unmatched[name] = unmatched.get(name, 0) + 1
    if unmatched:
        names = list(unmatched)
        log.warning("%s%d sentence(s) in %d %s(s) match no split and stay unassigned (split ''): %s",
                    where, sum(unmatched.values()), len(names), mode,
                    ", ".join(names[:10]) + (" ..." if len(names) > 10 else ""))
    log.info("%ssplits by %s: %s", where, mode,
             {split or UNASSIGNED: n for split, n in sorted(counts.items())})
    return counts


def check_rule(rule: Mapping, where: str = "") -> str:
    """Validate a ``splits:`` rule; return its mode (``file``, ``document``, ``proportion``)."""
    hint = ("\n  how to fix: give `splits:` as {by: file|document, train: [globs], dev: [globs], "
            "test: [globs]} or {by: proportion, train: 0.8, dev: 0.1, test: 0.1, seed: 0}; "
            "to keep only some splits use `keep_splits: [...]`")
    if not isinstance(rule, Mapping):
        raise HeadAtlasError(f"{where}`splits:` must be a mapping, got {rule!r}{hint}")
    mode = rule.get("by")
    if mode not in MODES:
        raise HeadAtlasError(f"{where}`splits: by:` must be one of {MODES}, got {mode!r}{hint}")
    allowed = {"by", *SPLITS} | ({"seed"} if mode == "proportion" else set())
    unknown = sorted(set(rule) - allowed)
    if unknown:
        raise HeadAtlasError(f"{where}`splits:` by {mode} has unknown key(s) {unknown}; "
                             f"allowed: {sorted(allowed)}{hint}")
    if mode == "proportion":
        shares = [rule.get(split, 0) for split in SPLITS]
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1
                   for x in shares) or not math.isclose(sum(shares), 1.0, abs_tol=1e-6):
            raise HeadAtlasError(f"{where}`splits:` shares {dict(zip(SPLITS, shares))} must be "
                                 f"numbers in [0, 1] summing to 1{hint}")
        if not isinstance(rule.get("seed", 0), int) or isinstance(rule.get("seed", 0), bool):
            raise HeadAtlasError(f"{where}`splits: seed:` must be an integer, got "
                                 f"{rule['seed']!r}{hint}")
    else:
        for split in SPLITS:
            globs = rule.get(split, [])
            if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
                raise HeadAtlasError(f"{where}`splits: {split}:` must be a list of globs, got "
                                     f"{globs!r}{hint}")
        if not any(rule.get(split) for split in SPLITS):
            raise HeadAtlasError(f"{where}`splits:` by {mode} gives no pattern for any split{hint}")
    return mode


def match_split(name: str, patterns: Mapping[str, Sequence[str]], what: str = "") -> str:
    """The split whose globs match ``name``; ``""`` if none; an error if several do."""
    hits = {split: [g for g in globs if fnmatchcase(name, g)] for split, globs in patterns.items()}
    hits = {split: globs for split, globs in hits.items() if globs}
    if len(hits) > 1:
        listed = "; ".join(f"{split} by {', '.join(map(repr, globs))}" for split, globs in hits.items())
        raise HeadAtlasError(f"{what or repr(name)} matches several splits: {listed}.\n"
                             "  how to fix: make the `splits:` patterns of different splits "
                             "disjoint")
    return next(iter(hits), "")


def proportion_splits(docs: Iterable[str], rule: Mapping) -> dict[str, str]:
    """Document -> split: sorted documents shuffled with ``seed``, cut by the shares.

    With ``n`` documents, train takes the first ``floor(n*train + 0.5)``, dev
    those up to ``floor(n*(train + dev) + 0.5)``, test the rest.
    """
    order = sorted(set(docs))
    random.Random(rule.get("seed", 0)).shuffle(order)
    n = len(order)
    train = rule.get("train", 0)
    cuts = [math.floor(n * share + 0.5) for share in (train, train + rule.get("dev", 0))]
    split = {}
    for position, doc in enumerate(order):
        split[doc] = "train" if position < cuts[0] else "dev" if position < cuts[1] else "test"
    return split
