"""Corpus preparation: sources -> verified files -> normalised records + stats.

Known corpora (``gum``, ``ewt``) come from pinned URLs or the mirror; any
other corpus is read from ``path:`` in the format its ``format:`` names.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from headatlas.corpora.records import Sentence
from headatlas.errors import CorpusFormatError, SourceError
from headatlas.sources import Source, read_checksums

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


def catalog_source(name: str, mirror: Path | None, cache: Path) -> Source:
    entry = CATALOG[name]
    return Source(name=name, base_url=entry["base_url"],
                  checksums=read_checksums(CHECKSUMS / f"{name}.sha256"),
                  mirror=mirror / entry["mirror_dir"] if mirror else None, cache=cache,
                  url_paths=entry.get("url_paths", {}))


def prepare_gum(source: Source) -> list[Sentence]:
    from headatlas.corpora.conllu_reader import read_conllu, read_gum_splits

    doc_splits = read_gum_splits(source.fetch("splits.md"))
    sentences = []
    for relpath in sorted(p for p in source.checksums if p.endswith(".conllu")):
        doc = Path(relpath).stem
        if doc not in doc_splits:
            raise SourceError(f"GUM document {doc} is in no split of splits.md")
        sentences += read_conllu(source.fetch(relpath), split=doc_splits[doc])
    return sentences


def prepare_ewt(source: Source) -> list[Sentence]:
    from headatlas.corpora.conllu_reader import read_conllu

    sentences = []
    for relpath, split in CATALOG["ewt"]["splits"].items():
        sentences += read_conllu(source.fetch(relpath), split=split)
    return sentences


def read_path(fmt: str, path: str | Path) -> list[Sentence]:
    """Read a user-supplied corpus file, or every matching file of a folder."""
    from headatlas.corpora import conllu_reader, formats

    readers = {"conllu": (conllu_reader.read_conllu, "*.conllu"),
               "conllx": (formats.read_conllx, "*.conll*"),
               "conll2012": (formats.read_conll2012, "*gold_conll")}
    if fmt not in readers:
        raise SourceError(f"unknown corpus format {fmt!r}; choose one of {sorted(readers)}")
    reader, pattern = readers[fmt]
    path = Path(path)
    if not path.exists():
        raise SourceError(f"corpus path {path} does not exist.\n  how to fix: set `path:` of the "
                          "corpus in the config to an existing file or folder")
    files = sorted(path.rglob(pattern)) if path.is_dir() else [path]
    if not files:
        raise SourceError(f"{path}: no {pattern} files in this folder")
    return [s for f in files for s in reader(f)]


def prepare_treebank(name: str, spec: dict, mirror: Path | None, cache: Path) -> list[Sentence]:
    """All sentences of one treebank corpus, in document order."""
    fmt = spec.get("format", name)
    if spec.get("path"):
        sentences = read_path(fmt, spec["path"])
    elif fmt in ("gum", "ewt"):
        source = catalog_source(fmt, mirror, cache)
        sentences = prepare_gum(source) if fmt == "gum" else prepare_ewt(source)
    else:
        raise SourceError(f"corpus {name!r}: format {fmt!r} needs a `path:` in the config")
    if spec.get("splits"):
        sentences = [s for s in sentences if s.split in spec["splits"]]
    if not sentences:
        raise CorpusFormatError(spec.get("path", name), 0, "the corpus has no sentences",
                                "check the path and the `splits:` filter")
    return sentences


def corpus_stats(sentences: list[Sentence]) -> dict:
    """Counts for the log and the report."""
    by_split = Counter(s.split or "all" for s in sentences)
    return {"sentences": len(sentences), "words": sum(len(s.words) for s in sentences),
            "documents": len({s.doc for s in sentences}),
            "mentions": sum(len(s.mentions or []) for s in sentences),
            "sentences_by_split": dict(sorted(by_split.items()))}
