"""Split assignment from a corpus's `splits:` rule, on hand-made tiny corpora."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from headatlas.corpora.prepare import corpus_stats, prepare_treebank
from headatlas.corpora.records import Sentence
from headatlas.corpora.splits import assign_splits, proportion_splits, source_file
from headatlas.errors import HeadAtlasError
from tests.conftest import FIXTURES

PTB = {"by": "file", "train": ["*wsj_0[2-9]*", "*wsj_1[0-9]*", "*wsj_2[01]*"],
       "dev": ["*wsj_22*"], "test": ["*wsj_23*"]}
CONLLX = (FIXTURES / "formats" / "ptb_sd.conllx").read_text()  # two sentences


def ptb_folder(root: Path, files: list[str]) -> Path:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(CONLLX)
    return root


def docs(*names: str) -> list[Sentence]:
    """One sentence per name; the document is the name before any '.'."""
    return [Sentence(id=name, words=["w"], doc=name.split(".")[0], source=f"/x/{name}.conll:1")
            for name in names]


# --- by file ----------------------------------------------------------------------------

@pytest.mark.parametrize("files", [
    # one file per document, in section folders (00 is in no split)
    ["02/wsj_0201.conllx", "21/wsj_2101.conllx", "22/wsj_2201.conllx", "23/wsj_2301.conllx",
     "00/wsj_0001.conllx"],
    # one file per section
    ["wsj_02.conllx", "wsj_21.conllx", "wsj_22.conllx", "wsj_23.conllx", "wsj_00.conllx"],
], ids=["per document", "per section"])
def test_ptb_sections_by_file(tmp_path, files, caplog):
    root = ptb_folder(tmp_path / "ptb", files)
    with caplog.at_level(logging.WARNING, logger="headatlas.corpora.splits"):
        sentences = prepare_treebank("ptb", {"format": "conllx", "path": str(root), "splits": PTB},
                                     None, tmp_path)
    split = {s.doc: s.split for s in sentences}
    stems = [Path(f).stem for f in files]
    assert [split[stem] for stem in stems] == ["train", "train", "dev", "test", ""]
    # Unassigned sentences are kept, counted and logged (with their file relative to `path:`).
    assert corpus_stats(sentences, assigned=True)["sentences_by_split"] == {
        "dev": 2, "test": 2, "train": 4, "unassigned": 2}
    assert "2 sentence(s) in 1 file(s) match no split" in caplog.text and files[-1] in caplog.text
    # keep_splits is applied after the assignment.
    kept = prepare_treebank("ptb", {"format": "conllx", "path": str(root), "splits": PTB,
                                    "keep_splits": ["test"]}, None, tmp_path)
    assert [s.doc for s in kept] == [stems[3]] * 2


def test_source_file_is_relative_to_the_corpus_path(tmp_path):
    root = ptb_folder(tmp_path / "ptb", ["a/wsj_2201.conllx"])
    sentences = prepare_treebank("ptb", {"format": "conllx", "path": str(root),
                                         "splits": {"by": "file", "dev": ["a/*"]}}, None, tmp_path)
    assert source_file(sentences[0], [root]) == "a/wsj_2201.conllx"
    assert {s.split for s in sentences} == {"dev"}
    # A single file given as `path:`: its name.
    one = prepare_treebank("ptb", {"format": "conllx", "path": str(root / "a" / "wsj_2201.conllx"),
                                   "splits": {"by": "file", "test": ["wsj_2201.conllx"]}}, None, tmp_path)
    assert {s.split for s in one} == {"test"}
    # Outside every root: the path as written.
    assert source_file(Sentence("s", ["w"], source="/elsewhere/f.conll:3"), [root]) == "/elsewhere/f.conll"


def test_a_file_in_two_splits_is_an_error_naming_file_and_patterns(tmp_path):
    root = ptb_folder(tmp_path / "ptb", ["22/wsj_2201.conllx"])
    rule = {"by": "file", "dev": ["*wsj_22*"], "test": ["22/*", "*.conllx"]}
    with pytest.raises(HeadAtlasError, match=r"corpus 'ptb': file '22/wsj_2201.conllx' matches "
                                             r"several splits: dev by '\*wsj_22\*'; "
                                             r"test by '22/\*', '\*.conllx'"):
        prepare_treebank("ptb", {"format": "conllx", "path": str(root), "splits": rule}, None, tmp_path)


# --- by document ------------------------------------------------------------------------

def test_by_document_globs():
    sentences = docs("a1.1", "a1.2", "a2", "b1", "c")
    counts = assign_splits(sentences, {"by": "document", "train": ["a*"], "test": ["b?"]})
    assert [s.split for s in sentences] == ["train", "train", "train", "test", ""]
    assert counts == {"train": 3, "test": 1, "": 1}
    with pytest.raises(HeadAtlasError, match=r"document 'a2' matches several splits: "
                                             r"train by 'a\*'; dev by '\*2'"):
        assign_splits(docs("a2"), {"by": "document", "train": ["a*"], "dev": ["*2"]}, corpus="x")


# --- by proportion ----------------------------------------------------------------------

def test_by_proportion_whole_documents_seeded():
    names = [f"d{k}.{i}" for k in range(10) for i in range(3)]  # 10 documents x 3 sentences
    rule = {"by": "proportion", "train": 0.8, "dev": 0.1, "test": 0.1, "seed": 0}
    sentences = docs(*names)
    counts = assign_splits(sentences, rule)
    assert counts == {"train": 24, "dev": 3, "test": 3}  # 8 / 1 / 1 documents
    by_doc = {}
    for s in sentences:
        by_doc.setdefault(s.doc, set()).add(s.split)
    assert all(len(splits) == 1 for splits in by_doc.values())  # documents are never cut
    again = docs(*reversed(names))  # same documents in another order: same assignment
    assign_splits(again, rule)
    assert {s.id: s.split for s in again} == {s.id: s.split for s in sentences}
    assert proportion_splits(by_doc, {**rule, "seed": 1}) != proportion_splits(by_doc, rule)


def test_proportion_cuts_round_to_the_nearest_document():
    # 3 documents: train floor(3 * 0.8 + 0.5) = 2, dev up to floor(3 * 0.9 + 0.5) = 3, test none.
    split = proportion_splits(["a", "b", "c"], {"train": 0.8, "dev": 0.1, "test": 0.1})
    assert sorted(split.values()) == ["dev", "train", "train"]
    assert set(proportion_splits(["a", "b"], {"test": 1.0}).values()) == {"test"}


# --- malformed rules --------------------------------------------------------------------

@pytest.mark.parametrize("rule, problem", [
    (["test"], "must be a mapping"),
    ({"train": ["*"]}, r"by:` must be one of"),
    ({"by": "folder", "train": ["*"]}, r"by:` must be one of"),
    ({"by": "file", "train": ["*"], "seed": 0}, r"unknown key\(s\) \['seed'\]"),
    ({"by": "file", "training": ["*"]}, r"unknown key\(s\) \['training'\]"),
    ({"by": "file", "train": "*wsj*"}, "`splits: train:` must be a list of globs"),
    ({"by": "document"}, "gives no pattern for any split"),
    ({"by": "proportion", "train": 0.8, "dev": 0.1}, "summing to 1"),
    ({"by": "proportion", "train": 1.2, "dev": -0.2}, r"in \[0, 1\]"),
    ({"by": "proportion", "train": 1, "seed": "x"}, "seed:` must be an integer"),
], ids=["list", "no by", "bad by", "seed with file", "unknown split", "glob not list",
        "no patterns", "shares sum", "share range", "seed type"])
def test_malformed_rules(rule, problem):
    with pytest.raises(HeadAtlasError, match=problem):
        assign_splits(docs("a"), rule)


def test_the_old_splits_list_says_keep_splits(tmp_path):
    path = str(FIXTURES / "formats" / "gum_style.conllu")
    with pytest.raises(HeadAtlasError, match=r"keep_splits: \['test'\]"):
        prepare_treebank("mine", {"format": "conllu", "path": path, "splits": ["test"]}, None, tmp_path)


# --- counts -----------------------------------------------------------------------------

def test_corpus_stats_names_sentences_without_a_split():
    unsplit = docs("a", "b")
    assert corpus_stats(unsplit)["sentences_by_split"] == {"all": 2}  # a corpus without splits
    assert corpus_stats(unsplit, assigned=True)["sentences_by_split"] == {"unassigned": 2}
    partial = docs("a", "b")
    partial[0].split = "test"
    assert corpus_stats(partial)["sentences_by_split"] == {"test": 1, "unassigned": 1}
