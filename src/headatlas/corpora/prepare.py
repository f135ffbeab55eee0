"""Corpus preparation: sources -> verified files -> normalised records + stats.

Known corpora (``gum``, ``ewt``) come from pinned URLs or the mirror; any
other corpus is read from ``path:`` in the format its ``format:`` names.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from headatlas.corpora.formats import FORMATS
from headatlas.corpora.records import Sentence
from headatlas.corpora.splits import UNASSIGNED, assign_splits
from headatlas.errors import CorpusFormatError, SourceError
from headatlas.corpora.sources import Source, read_checksums

log = logging.getLogger(__name__)
CHECKSUMS = Path(__file__).parent / "checksums"

# Canonical downloads, pinned to the commits the mirror was taken from.
CATALOG = {
    "gum": {
        "base_url": "https://raw.githubusercontent.com/amir-zeldes/gum/"
                    "72ce5ac14978a324c2fd18d49484e65292cbe316",
        "mirror_dir": "gum",
        "url_paths": {"conllu/": "coref/ontogum/conllu/"},
    },
    "ewt": {
        "base_url": "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/"
                    "15d613d8447b3478787d4c278730a1e48a945efb",
        "mirror_dir": "ud-english-ewt",
        "splits": {"en_ewt-ud-dev.conllu": "dev", "en_ewt-ud-test.conllu": "test"},
    },
}


def catalog_source(name: str, mirror: Path | None, cache: Path, setting: str = "") -> Source:
    """The pinned source of a known corpus; ``setting`` describes the mirror for messages."""
    entry = CATALOG[name]
    return Source(name=name, base_url=entry["base_url"],
                  checksums=read_checksums(CHECKSUMS / f"{name}.sha256"),
                  mirror=mirror / entry["mirror_dir"] if mirror else None, cache=cache,
                  url_paths=entry.get("url_paths", {}), mirror_dir=entry["mirror_dir"],
                  mirror_setting=setting or "no mirror is set")


def prepare_gum(source: Source, strict: bool = True) -> list[Sentence]:
    from headatlas.corpora.conllu_reader import read_conllu, read_gum_splits

    doc_splits = read_gum_splits(source.fetch("splits.md"))
    sentences = []
    for relpath in sorted(p for p in source.checksums if p.endswith(".conllu")):
        doc = Path(relpath).stem
        if doc not in doc_splits:
            raise SourceError(f"GUM document {doc} is in no split of splits.md")
        sentences += read_conllu(source.fetch(relpath), split=doc_splits[doc], strict=strict)
    return sentences


def prepare_ewt(source: Source) -> list[Sentence]:
    from headatlas.corpora.conllu_reader import read_conllu

    sentences = []
    for relpath, split in CATALOG["ewt"]["splits"].items():
        sentences += read_conllu(source.fetch(relpath), split=split)
    return sentences


def read_path(fmt: str, path: str | Path, strict: bool = True) -> list[Sentence]:
    """Read a user-supplied corpus file, or every file of a folder matching the format's glob.

    ``strict=False`` lets a coreference reader exclude a document with malformed brackets from
    coreference (logged) instead of stopping.
    """
    spec = FORMATS.get(fmt)
    if spec is None or spec.reader is None:
        readable = sorted(name for name, f in FORMATS.items() if f.reader)
        raise SourceError(f"unknown corpus format {fmt!r} for a `path:`; choose one of {readable}")
    path = Path(path)
    if not path.exists():
        raise SourceError(f"corpus path {path} does not exist.\n  how to fix: set `path:` of the "
                          "corpus in the config to an existing file or folder")
    files = path_files(fmt, path)
    if not files:
        raise SourceError(f"{path}: no {' or '.join(spec.files)} files in this folder")
    reader = spec.read()
    options = {"strict": strict} if spec.coreference else {}
    return [s for f in files for s in reader(f, **options)]


def path_files(fmt: str, path: str | Path) -> list[Path]:
    """The files a ``path:`` corpus of format ``fmt`` is read from: the file, or the folder's matches."""
    path = Path(path)
    if not path.is_dir():
        return [path]
    return sorted({f for pattern in FORMATS[fmt].files for f in path.rglob(pattern)})


def source_files(name: str, spec: dict) -> list[Path]:
    """Every file preparing corpus ``name`` reads, so that editing or adding one re-prepares it.

    A pinned corpus (gum, ewt) lists its checksum file: every file read is verified against
    it, so a file cannot change without it. Documents corpora read only prepared corpora.
    """
    from headatlas.corpora.wikipedia import find_summaries

    if spec["kind"] == "segments":
        return [Path(spec["path"])] if spec.get("path") else [find_summaries()]
    if spec["kind"] != "treebank":
        return []
    fmt = spec.get("format", name)
    if spec.get("path"):
        return path_files(fmt, spec["path"]) if Path(spec["path"]).exists() else [Path(spec["path"])]
    return [CHECKSUMS / f"{fmt}.sha256"]


def prepare_treebank(name: str, spec: dict, mirror: Path | None, cache: Path,
                     mirror_setting: str = "") -> list[Sentence]:
    """All sentences of one treebank corpus, in document order, with their splits.

    Splits come from the source (GUM's ``splits.md``, EWT's file names,
    CoNLL-2012 folders) unless the corpus has a ``splits:`` rule
    (:func:`~headatlas.corpora.splits.assign_splits`; ``by: file`` globs are
    matched against paths relative to ``path:``, or to the mirror/download
    folder of a pinned corpus). ``keep_splits:`` then keeps only those splits.
    """
    fmt = spec.get("format", name)
    if spec.get("path"):
        path = Path(spec["path"])
        sentences = read_path(fmt, path, spec.get("strict_coreference", False))
        roots = [path if path.is_dir() else path.parent]
    elif fmt in CATALOG:
        source = catalog_source(fmt, mirror, cache, mirror_setting)
        sentences = prepare_gum(source, spec.get("strict_coreference", False)) if fmt == "gum" \
            else prepare_ewt(source)
        roots = [root for root in (source.mirror, source.cache / source.name) if root]
    else:
        raise SourceError(f"corpus {name!r}: format {fmt!r} needs a `path:` in the config")
    if spec.get("splits") is not None:
        if isinstance(spec["splits"], list):
            raise SourceError(f"corpus {name!r}: `splits: {spec['splits']}` is a list; `splits:` "
                              "now assigns splits.\n  how to fix: to keep only these splits write "
                              f"`keep_splits: {spec['splits']}`")
        assign_splits(sentences, spec["splits"], roots, name)
    if spec.get("keep_splits"):
        sentences = [s for s in sentences if s.split in spec["keep_splits"]]
    if not sentences:
        raise CorpusFormatError(spec.get("path", name), 0, "the corpus has no sentences",
                                "check the path, the `splits:` rule and the `keep_splits:` filter")
    return sentences


def corpus_stats(sentences: list[Sentence], assigned: bool = False) -> dict:
    """Counts for the log and the report.

    ``sentences_by_split`` names sentences without a split ``all`` when the
    corpus has no splits at all, else ``unassigned``; always ``unassigned``
    when ``assigned`` (the splits came from a ``splits:`` rule).
    """
    unsplit = not assigned and not any(s.split for s in sentences)
    by_split = Counter(s.split or ("all" if unsplit else UNASSIGNED) for s in sentences)
    excluded = sorted({s.doc for s in sentences if "coreference_excluded" in s.meta})
    return {"sentences": len(sentences), "words": sum(len(s.words) for s in sentences),
            "documents": len({s.doc for s in sentences}),
            "mentions": sum(len(s.mentions or []) for s in sentences),
            "sentences_by_split": dict(sorted(by_split.items())),
            "sentences_with_several_roots": sum(s.meta.get("roots", 1) > 1 for s in sentences),
            "documents_excluded_from_coreference": len(excluded),
            "documents_excluded_from_coreference_ids": " ".join(excluded)}
