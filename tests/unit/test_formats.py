"""Readers of the paper's formats (CoNLL-X here; CoNLL-2012 in test_conll2012.py) and the format table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from headatlas.corpora.conllx import read_conllx
from headatlas.corpora.formats import FORMATS, Format, corpus_format
from headatlas.errors import SourceError
from tests.conftest import raises_at

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"


# --- CoNLL-X ----------------------------------------------------------------------

def test_conllx_fixture():
    path = FIXTURES / "ptb_sd.conllx"
    first, second = read_conllx(path)
    assert first.id == "ptb_sd-1" and first.doc == "ptb_sd"
    assert first.words == ["Ms.", "Haag", "plays", "Elianti", "."]
    assert first.heads == [2, 3, 0, 3, 3]
    assert first.rels == ["nn", "nsubj", "root", "dobj", "punct"]
    assert first.upos == first.xpos == ["NNP", "NNP", "VBZ", "NNP", "."]
    assert first.feats == ["_"] * 5
    assert first.mentions is None
    assert second.source == f"{path}:7"
    assert second.rels[1:3] == ["poss", "possessive"] and second.heads[1:3] == [4, 2]


CONLLX = ["1 The _ DT DT _ 2 det _ _",
          "2 dog _ NN NN _ 3 nsubj _ _",
          "3 barks _ VBZ VBZ _ 0 root _ _"]


@pytest.mark.parametrize("line, row, problem", [
    (2, "2 dog _ NN NN _ 3 nsubj _", "9 tab-separated columns"),
    (2, "2 dog _ NN NN _ three nsubj _ _", "HEAD 'three' is not an integer"),
    (2, "2 dog _ NN NN _ 4 nsubj _ _", "HEAD 4 is out of range"),
    (1, "1 The _ DT DT _ 1 det _ _", "word 1 is its own head"),
    (2, "2-3 dog _ NN NN _ 3 nsubj _ _", "ID '2-3' is not a word ID"),  # no ranges in CoNLL-X
], ids=["columns", "head not integer", "head out of range", "cycle", "range id"])
def test_malformed_conllx(tmp_path, line, row, problem):
    rows = list(CONLLX)
    rows[line - 1] = row
    path = tmp_path / "bad.conllx"
    path.write_text("\n".join(r.replace(" ", "\t") for r in rows) + "\n", encoding="utf-8")
    with raises_at(path, line, problem):
        read_conllx(path)


def test_empty_conllx(tmp_path):
    path = tmp_path / "empty.conllx"
    path.write_text("", encoding="utf-8")
    with raises_at(path, 1, "the file has no sentences"):
        read_conllx(path)


# --- the format table ---------------------------------------------------------------------

def test_format_table_says_what_each_format_carries():
    assert {name for name, f in FORMATS.items() if f.labelled_trees} == {"gum", "ewt", "conllu", "conllx"}
    assert {name for name, f in FORMATS.items() if f.coreference} == {"gum", "conllu", "conll2012"}
    assert corpus_format("gum", {"kind": "treebank"}) is FORMATS["gum"]  # format defaults to the name
    assert corpus_format("ptb", {"format": "conllx"}) == Format(True, False, ("*.conll*", "*.dp"),
                                                               "headatlas.corpora.conllx:read_conllx")
    assert FORMATS["conllx"].read() is read_conllx
    with pytest.raises(SourceError, match="unknown treebank format 'mine'"):
        corpus_format("mine", {})
    with pytest.raises(SourceError, match="pinned source"):
        FORMATS["ewt"].read()


def test_format_table_imports_no_reader_and_no_torch():
    code = ("import sys; import headatlas.corpora.formats; "
            "print(sorted(m for m in ('torch', 'conllu', 'headatlas.corpora.conllu_reader') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_ptb_files_named_dp_are_read(tmp_path):
    """PTB in Stanford Dependencies often comes as one CoNLL-X file per WSJ file (wsj_0201.dp)."""
    from headatlas.corpora.prepare import path_files

    (tmp_path / "02").mkdir()
    (tmp_path / "02" / "wsj_0201.dp").write_text("1\tThe\t_\tDT\tDT\t_\t2\tdet\t_\t_\n2\tcat\t_\tNN\tNN\t_\t0\troot\t_\t_\n\n")
    (tmp_path / "wsj_2301.conllx").write_text("1\tIt\t_\tPRP\tPRP\t_\t0\troot\t_\t_\n\n")
    (tmp_path / "README.txt").write_text("not a treebank")
    assert [p.name for p in path_files("conllx", tmp_path)] == ["wsj_0201.dp", "wsj_2301.conllx"]
