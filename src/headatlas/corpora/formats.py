"""The treebank formats a corpus can have, and what each one carries.

One declarative table, :data:`FORMATS`, read by the corpus preparation
(which reader, which files below a ``path:``) and by the workflow (which
corpora feed Table 1, which carry coreference). It imports nothing heavy
(no reader, no torch), so the Snakefile can import it at parse time::

    from headatlas.corpora.formats import corpus_format
    corpus_format("ptb_sd", {"kind": "treebank", "format": "conllx"}).labelled_trees  # True

The readers themselves: :mod:`headatlas.corpora.conllu_reader` (CoNLL-U,
GUM, EWT), :mod:`headatlas.corpora.conllx` (CoNLL-X, e.g. PTB in Stanford
Dependencies), :mod:`headatlas.corpora.conll2012` (OntoNotes ``*_gold_conll``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Mapping

from headatlas.errors import SourceError


@dataclass(frozen=True)
class Format:
    """What a treebank format carries and how its files are read.

    Attributes
    ----------
    labelled_trees : bool
        Records have dependency ``heads`` *and* relation labels (``rels``):
        the corpus feeds the dependency analyses (Table 1) and the probes.
    coreference : bool
        The reader reads coreference mentions (a file may still have none):
        the corpus can feed a ``kind: documents`` corpus (Table 2).
    files : tuple of str
        Globs of the files read below a ``path:`` folder; empty when the
        format is read only from its pinned source (``gum``, ``ewt``).
    reader : str or None
        ``"module:function"`` reading one such file into ``Sentence`` records.
    """

    labelled_trees: bool
    coreference: bool
    files: tuple[str, ...] = ()
    reader: str | None = None

    def read(self) -> Callable:
        """The reader function (imported only now)."""
        if self.reader is None:
            raise SourceError("this format is read from its pinned source, not from a `path:`")
        # The rules' code inputs (headatlas.pipeline.codedeps) count the modules named in
        # FORMATS' reader strings, so editing a reader re-prepares the corpora it reads.
        module, _, function = self.reader.partition(":")
        return getattr(importlib.import_module(module), function)


FORMATS: dict[str, Format] = {
    "gum": Format(labelled_trees=True, coreference=True),
    "ewt": Format(labelled_trees=True, coreference=False),
    "conllu": Format(labelled_trees=True, coreference=True, files=("*.conllu",),
                     reader="headatlas.corpora.conllu_reader:read_conllu"),
    # PTB converted to Stanford Dependencies is often one file per WSJ file: wsj_0201.dp
    "conllx": Format(labelled_trees=True, coreference=False, files=("*.conll*", "*.dp"),
                     reader="headatlas.corpora.conllx:read_conllx"),
    # Constituency parses: heads come from head rules, there are no dependency labels.
    "conll2012": Format(labelled_trees=False, coreference=True, files=("*gold_conll",),
                        reader="headatlas.corpora.conll2012:read_conll2012"),
}


def corpus_format(name: str, spec: Mapping) -> Format:
    """The :class:`Format` of a treebank corpus (``format:``, defaulting to the corpus name)."""
    fmt = spec.get("format", name)
    if fmt not in FORMATS:
        raise SourceError(f"corpus {name!r}: unknown treebank format {fmt!r}; choose one of "
                          f"{sorted(FORMATS)}.\n  how to fix: set `format:` of the corpus")
    return FORMATS[fmt]
