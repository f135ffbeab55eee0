"""CoNLL-2012 ``*_gold_conll``: the reader, parse bits -> dependency heads, splits from folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from headatlas.corpora.conll2012 import (constituency_heads, parse_tree, read_conll2012,
                                         split_from_folders)
from headatlas.corpora.records import Mention
from tests.conftest import raises_at

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"


# --- CoNLL-2012 -------------------------------------------------------------------------

def test_conll2012_fixture():
    path = FIXTURES / "sample.v4_gold_conll"
    first, second = read_conll2012(path)
    doc = "bc/test/00/test_0001/000"
    assert (first.doc, first.id, second.id) == (doc, f"{doc}-1", f"{doc}-2")
    assert first.words == ["John", "met", "his", "sister", "in", "Paris", "."]
    assert first.xpos == ["NNP", "VBD", "PRP$", "NN", "IN", "NNP", "."]
    # (TOP (S (NP John) (VP met (NP his sister) (PP in (NP Paris))) .)): met heads S; "his"
    # attaches to the rightmost noun "sister"; the PP is headed by its NP "Paris".
    assert first.heads == [2, 0, 4, 2, 6, 2, 2] and first.rels is None
    assert first.split == second.split == ""  # no train/development/test folder in the path
    assert first.meta["parse"] == ["(TOP(S(NP*)", "(VP*", "(NP*", "*)", "(PP*", "(NP*)))", "*))"]
    assert (first.meta["speaker"], second.meta["speaker"]) == ("speaker1", "speaker2")
    assert (first.source, second.source) == (f"{path}:2", f"{path}:10")
    # "(1|(0)" on his: [his sister] of 1 and [his] of 0 nested inside it
    assert first.mentions == [Mention("0", [0]), Mention("1", [2, 3]), Mention("0", [2]),
                              Mention("2", [5])]
    assert second.mentions == [Mention("1", [0]), Mention("2", [2, 3])]


GOLD_CONLL = ["#begin document (d); part 000",
              "d 0 0 Dogs NNS (TOP(S(NP*) - - - - * (ARG0*) (1",
              "d 0 1 bark VBP (VP*))) - - - - * (V*) 1)",
              "",
              "#end document"]


def gold(line: int, row: str) -> list[str]:
    rows = list(GOLD_CONLL)
    rows[line - 1] = row
    return rows


BAD_GOLD_CONLL = {
    "columns": (gold(2, "d 0 0 Dogs NNS (TOP(S(NP*) - - - - (1"), 2,
                "11 columns, expected at least 12"),
    "word number": (gold(3, "d 0 2 bark VBP (VP*))) - - - - * (V*) 1)"), 3,
                    "word number '2' where 1 was expected"),
    "unopened mention": (gold(2, "d 0 0 Dogs NNS (TOP(S(NP*) - - - - * (ARG0*) -"), 3,
                         "closes a mention of entity 1 that is not open"),
    "unclosed mention": (gold(3, "d 0 1 bark VBP (VP*))) - - - - * (V*) -"), 2,
                         "mention of entity 1 opens here and is never closed"),
    "nested unclosed": (gold(2, "d 0 0 Dogs NNS (TOP(S(NP*) - - - - * (ARG0*) (1|(2"), 2,
                        "mention of entity 2 opens here and is never closed"),
    "header": (gold(1, "#begin document d"), 1, "malformed '#begin document' line"),
    "no end": (GOLD_CONLL[:4], 1, "document d/000 has no '#end document' line"),
    "outside document": (GOLD_CONLL[1:], 1, "token line outside a document"),
    "empty": ([], 1, "the file has no sentences"),
}


@pytest.mark.parametrize("rows, line, problem", BAD_GOLD_CONLL.values(),
                         ids=BAD_GOLD_CONLL.keys())
def test_malformed_conll2012(tmp_path, rows, line, problem):
    path = tmp_path / "bad_gold_conll"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with raises_at(path, line, problem):
        read_conll2012(path)


# --- parse bits -> dependency heads -----------------------------------------------------

def test_constituency_heads_small_trees_and_bad_bits(tmp_path):
    assert constituency_heads(["(TOP(NP*", "*))"], ["DT", "NN"]) == [2, 0]
    # (NP the city council): the rightmost noun heads a compound.
    assert constituency_heads(["(TOP(NP*", "*", "*))"], ["DT", "NN", "NN"]) == [3, 3, 0]
    with pytest.raises(ValueError, match="open"):
        parse_tree(["(TOP(NP*", "*)"])
    with pytest.raises(ValueError, match="malformed"):
        parse_tree(["(NP*)*"])
    # The reader reports a bad tree at the sentence's first line.
    broken = tmp_path / "x.v4_gold_conll"
    broken.write_text("#begin document (d); part 000\n"
                      "d 0 0 Dogs NNS (TOP(S(NP*) - - - - * (ARG0*) -\n"
                      "d 0 1 bark VBP (VP*) - - - - * (V*) -\n\n#end document\n")
    with raises_at(broken, 2, "sentence d/000-1: parse bits leave 2 phrase(s) open"):
        read_conll2012(broken)


def test_split_from_the_innermost_split_folder(tmp_path):
    assert split_from_folders("/home/test/conll-2012/v4/data/train/data/english/x.v4_gold_conll") == "train"
    assert split_from_folders("/data/development/a.v4_gold_conll") == "dev"
    assert split_from_folders("a.v4_gold_conll") == ""
    folder = tmp_path / "test" / "v4" / "development" / "bc"
    folder.mkdir(parents=True)
    (folder / "s.v4_gold_conll").write_text((FIXTURES / "sample.v4_gold_conll").read_text())
    assert {s.split for s in read_conll2012(folder / "s.v4_gold_conll")} == {"dev"}
