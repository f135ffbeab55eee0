"""CoNLL-U reader: fields, coreference brackets, validation errors, real corpora."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from headatlas.corpora.conllu_reader import read_conllu, read_gum_splits
from headatlas.corpora.records import Mention
from headatlas.errors import CorpusFormatError
from tests.conftest import raises_at

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
REPO_ROOT = Path(__file__).resolve().parents[2]
MIRROR = Path(os.environ.get("HEADATLAS_MIRROR", REPO_ROOT.parent / "shared" / "data"))


def write_conll(path: Path, rows: list[str]) -> Path:
    """Write rows whose columns are separated by single spaces as a tab-separated file."""
    lines = [row if row.startswith("#") else "\t".join(row.split(" ")) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- the GUM-style fixture ------------------------------------------------------

@pytest.fixture(scope="module")
def gum():
    splits = read_gum_splits(FIXTURES / "gum_splits.md")
    return read_conllu(FIXTURES / "gum_style.conllu", split="other", doc_splits=splits)


def test_ids_docs_splits_and_sources(gum):
    assert [s.id for s in gum] == ["a-1", "doc_a-2", "b1", "doc_b-2"]
    assert [s.doc for s in gum] == ["doc_a", "doc_a", "doc_b", "doc_b"]
    assert [s.split for s in gum] == ["dev", "dev", "test", "test"]
    path = FIXTURES / "gum_style.conllu"
    assert [s.source for s in gum] == [f"{path}:1", f"{path}:14", f"{path}:26", f"{path}:38"]


def test_multiword_token_is_skipped_and_fields_kept(gum):
    first = gum[0]
    assert first.words == ["The", "big", "cat", "'s", "owner", "slept", "."]
    assert first.heads == [3, 3, 5, 3, 6, 0, 6]
    assert first.rels[2] == "nmod:poss"
    assert first.upos[3] == "PART" and first.xpos[3] == "POS"
    assert first.feats[:2] == ["Definite=Def|PronType=Art", "Degree=Pos"]
    assert first.feats[3] == "_"


def test_empty_node_is_skipped(gum):
    assert gum[1].words == ["His", "dog", "saw", "him", ",", "and", "he", "did", "."]
    assert len(gum[1].heads) == 9


def test_nested_and_multi_word_mentions(gum):
    # "(1(2" on The, "2)" on cat, "1)" on owner: [The big cat 's owner], [The big cat]
    assert gum[0].mentions == [Mention("1", [0, 1, 2, 3, 4]), Mention("2", [0, 1, 2])]
    # "(3(1)" on His: a two-word mention of 3 and a one-word mention of 1 inside it
    assert gum[1].mentions == [Mention("3", [0, 1]), Mention("1", [0]), Mention("1", [3]),
                               Mention("1", [6])]
    # "6)5)" on house closes both [the house] and [the owner of the house]
    assert gum[2].mentions == [Mention("4", [0]), Mention("5", [2, 3, 4, 5, 6]),
                               Mention("6", [5, 6])]
    assert all(s.meta["cross_sentence_mentions"] == 0 for s in gum)


def test_corefud_discontinuous_mention_is_joined():
    sentences = read_conllu(FIXTURES / "corefud_style.conllu")
    # [A man] ... [who was tall]: parts [1/2] and [2/2] of e1; (e2-place-1-) on Paris
    assert sentences[0].mentions == [Mention("e1", [0, 1, 5, 6, 7]), Mention("e2", [4])]
    assert sentences[1].mentions == [Mention("e1", [0])]


def test_without_newdoc_or_coreference(tmp_path):
    path = write_conll(tmp_path / "plain.conllu", [
        "1 Dogs dog NOUN NNS _ 2 nsubj _ _",
        "2 bark bark VERB VBP _ 0 root _ _",
        "",
        "1 Yes yes INTJ UH _ 0 root _ _",
    ])
    sentences = read_conllu(path, split="dev", doc_splits={"other": "test"})
    assert [s.id for s in sentences] == ["plain-1", "plain-2"]
    assert {s.doc for s in sentences} == {"plain"}
    assert {s.split for s in sentences} == {"dev"}  # doc missing from doc_splits
    assert all(s.mentions is None and s.meta == {} for s in sentences)


def test_cross_sentence_mention_is_truncated_and_counted(tmp_path):
    path = write_conll(tmp_path / "cross.conllu", [
        "1 Dogs dog NOUN NNS _ 2 nsubj _ Entity=(1)",
        "2 say say VERB VBP _ 0 root _ Entity=(2",
        "",
        "1 hi hi INTJ UH _ 0 root _ Entity=2)",
    ])
    first, second = read_conllu(path)
    assert first.mentions == [Mention("1", [0]), Mention("2", [1])]
    assert first.meta["cross_sentence_mentions"] == 1
    assert second.mentions == [] and second.meta["cross_sentence_mentions"] == 0


def test_mention_on_empty_node_only_is_counted(tmp_path):
    path = write_conll(tmp_path / "zero.conllu", [
        "1 Dogs dog NOUN NNS _ 2 nsubj _ _",
        "1.1 they they PRON PRP _ _ _ 2:nsubj Entity=(3)",
        "2 bark bark VERB VBP _ 0 root _ _",
    ])
    (sentence,) = read_conllu(path)
    assert sentence.mentions == [] and sentence.meta["empty_node_mentions"] == 1


def test_read_gum_splits():
    splits = read_gum_splits(FIXTURES / "gum_splits.md")
    assert splits == {"doc_a": "dev", "doc_b": "test", "doc_c": "train", "doc_d": "train"}


def test_read_gum_splits_rejects_a_document_in_two_splits(tmp_path):
    path = tmp_path / "splits.md"
    path.write_text("## dev\n\n  * x\n\n## test\n\n  * x\n", encoding="utf-8")
    with raises_at(path, 7, "document x is in both dev and test"):
        read_gum_splits(path)


# --- malformed input: the message starts with file:line ---------------------------

GOOD = ["# sent_id = s1",
        "1 Dogs dog NOUN NNS _ 2 nsubj _ _",
        "2 bark bark VERB VBP _ 0 root _ _",
        "",
        "# sent_id = s2",                       # line 5
        "1 Cats cat NOUN NNS _ 2 nsubj _ _",     # line 6
        "2 purr purr VERB VBP _ 0 root _ _",     # line 7
        "3 . . PUNCT . _ 2 punct _ _"]           # line 8


def replace(line: int, row: str) -> list[str]:
    rows = list(GOOD)
    rows[line - 1] = row
    return rows


BAD_CONLLU = {
    "columns": (replace(7, "2 purr purr VERB VBP _ 0 root _"), 7, "9 tab-separated columns"),
    "empty column": (replace(7, "2 purr  VERB VBP _ 0 root _ _"), 7, "column 3 is empty"),
    "head not integer": (replace(7, "2 purr purr VERB VBP _ root root _ _"), 7, "not an integer"),
    "head out of range": (replace(8, "3 . . PUNCT . _ 4 punct _ _"), 8, "out of range"),
    "negative head": (replace(8, "3 . . PUNCT . _ -1 punct _ _"), 8, "out of range"),
    # 1 -> 3 -> 1 never reaches the root (word 2); word 1 is the first one reported
    "cycle": (replace(6, "1 Cats cat NOUN NNS _ 3 nsubj _ _")[:7] + ["3 . . PUNCT . _ 1 punct _ _"],
              6, "cycle 1 -> 3 -> 1"),
    "self loop": (replace(8, "3 . . PUNCT . _ 3 punct _ _"), 8, "word 3 is its own head"),
    # word 1 hangs from the self-looping word 3: the error points at word 3's line, not word 1's
    "self loop behind a dependent": (replace(6, "1 Cats cat NOUN NNS _ 3 nsubj _ _")[:7]
                                     + ["3 . . PUNCT . _ 3 punct _ _"], 8, "word 3 is its own head"),
    # 2 -> 3 -> 2; word 1 (reported first in order) only hangs from the cycle: point at word 2
    "cycle behind a dependent": (GOOD[:5] + ["1 Cats cat NOUN NNS _ 2 nsubj _ _",
                                             "2 purr purr VERB VBP _ 3 root _ _",
                                             "3 . . PUNCT . _ 2 punct _ _"], 7, "cycle 2 -> 3 -> 2"),
    "word id gap": (replace(8, "4 . . PUNCT . _ 2 punct _ _"), 8, "word ID 4 where 3"),
    "bad id": (replace(8, "x . . PUNCT . _ 2 punct _ _"), 8, "ID 'x'"),
    "comments only": (GOOD[:4] + ["# sent_id = s2"], 5, "without any word line"),
    "unopened mention": (replace(7, "2 purr purr VERB VBP _ 0 root _ Entity=4)"), 7,
                         "entity 4 that is not open"),
    "unclosed mention": (replace(2, "1 Dogs dog NOUN NNS _ 2 nsubj _ Entity=(4"), 2,
                         "never closed"),
    "malformed entity": (replace(2, "1 Dogs dog NOUN NNS _ 2 nsubj _ Entity=4"), 2,
                         "malformed coreference value"),
}


@pytest.mark.parametrize("rows, line, problem", BAD_CONLLU.values(), ids=BAD_CONLLU.keys())
def test_malformed_conllu(tmp_path, rows, line, problem):
    path = write_conll(tmp_path / "bad.conllu", rows)
    with pytest.raises(CorpusFormatError) as err:
        read_conllu(path)
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert problem in str(err.value)
    assert "how to fix:" in str(err.value)


def test_spaces_instead_of_tabs(tmp_path):
    path = write_conll(tmp_path / "spaces.conllu", GOOD[:6])
    with path.open("a", encoding="utf-8") as handle:
        handle.write("2  purr  purr  VERB  VBP  _  0  root  _  _\n")  # conllu would accept this
    with raises_at(path, 7, "1 tab-separated columns"):
        read_conllu(path)


def test_mention_open_at_next_document_is_an_error(tmp_path):
    path = write_conll(tmp_path / "docs.conllu", [
        "# newdoc id = d1",
        "1 Dogs dog NOUN NNS _ 0 root _ Entity=(1",
        "",
        "# newdoc id = d2",
        "1 Cats cat NOUN NNS _ 0 root _ Entity=1)",
    ])
    with raises_at(path, 2, "mention of entity 1 opens here and is never closed"):
        read_conllu(path)


@pytest.mark.parametrize("text", ["", "\n\n  \n"], ids=["empty", "blank lines"])
def test_file_without_sentences(tmp_path, text):
    path = tmp_path / "empty.conllu"
    path.write_text(text, encoding="utf-8")
    with raises_at(path, 1, "the file has no sentences"):
        read_conllu(path)


# --- the real corpora -----------------------------------------------------------------

@pytest.mark.embedded
@pytest.mark.skipif(not (MIRROR / "gum" / "conllu").is_dir(),
                    reason=f"corpus mirror not found at {MIRROR} (set HEADATLAS_MIRROR)")
def test_real_gum_and_ewt_counts():
    splits = read_gum_splits(MIRROR / "gum" / "splits.md")
    gum = [s for path in sorted((MIRROR / "gum" / "conllu").glob("*.conllu"))
           for s in read_conllu(path, doc_splits=splits)]
    # README: 237 documents, 13,263 sentences, 233,926 tokens. "Tokens" are the
    # integer-ID words: multiword ranges (4,075 lines) and empty nodes (119) excluded.
    assert len({s.doc for s in gum}) == 237
    assert len(gum) == 13_263
    assert sum(len(s.words) for s in gum) == 233_926
    assert all(s.split in {"train", "dev", "test"} for s in gum)
    # Measured with an independent bracket count: 30,719 mentions, none crossing a sentence.
    assert sum(len(s.mentions) for s in gum) == 30_719
    assert sum(s.meta["cross_sentence_mentions"] for s in gum) == 0

    ewt = [s for name in ("dev", "test")
           for s in read_conllu(MIRROR / "ud-english-ewt" / f"en_ewt-ud-{name}.conllu", name)]
    assert len(ewt) == 4_078
    assert sum(len(s.words) for s in ewt) == 50_241
    assert all(s.mentions is None for s in ewt)


# --- corpora as users have them -------------------------------------------------------

TWO_DOCS = ["# newdoc id = d1", "# sent_id = a1",
            "1 Dogs dog NOUN NNS _ 2 nsubj _ Entity=(4",   # line 3: opens, never closed
            "2 bark bark VERB VBP _ 0 root _ _", "",
            "# newdoc id = d2", "# sent_id = b1",
            "1 Cats cat NOUN NNS _ 2 nsubj _ Entity=(7)",
            "2 purr purr VERB VBP _ 0 root _ _", "",
            "# sent_id = b2",
            "1 They they PRON PRP _ 2 nsubj _ Entity=(7)",
            "2 purr purr VERB VBP _ 0 root _ _"]


def test_a_coreference_problem_leaves_out_only_that_documents_coreference(tmp_path, caplog):
    path = write_conll(tmp_path / "two.conllu", TWO_DOCS)
    with pytest.raises(CorpusFormatError, match="never closed"):
        read_conllu(path)  # strict: the reader's default, and `strict_coreference: true`
    with caplog.at_level("WARNING"):
        a1, b1, b2 = read_conllu(path, strict=False)
    assert a1.heads == [2, 0] and a1.mentions == []  # the tree stays for Table 1
    assert a1.meta["coreference_excluded"].startswith(f"{path}:3: mention of entity 4")
    assert [m.entity for m in b1.mentions + b2.mentions] == ["7", "7"]
    assert "coreference_excluded" not in b1.meta
    assert f"{path}:3" in caplog.text


def test_a_sentence_with_two_roots_is_reported(tmp_path, caplog):
    path = write_conll(tmp_path / "roots.conllu", GOOD[:5] + ["1 Cats cat NOUN NNS _ 0 root _ _",
                                                              "2 purr purr VERB VBP _ 0 root _ _"])
    with caplog.at_level("WARNING"):
        first, second = read_conllu(path)
    assert "roots" not in first.meta and second.meta["roots"] == 2
    assert f"{path}:7: sentence s2 has 2 roots" in caplog.text


def test_prepared_corpus_counts_excluded_documents_and_several_roots(tmp_path):
    from headatlas.corpora.prepare import corpus_stats, prepare_treebank

    (tmp_path / "tb").mkdir()
    write_conll(tmp_path / "tb" / "two.conllu", TWO_DOCS)
    sentences = prepare_treebank("mine", {"kind": "treebank", "format": "conllu",
                                          "path": str(tmp_path / "tb")}, None, tmp_path)
    stats = corpus_stats(sentences)
    assert stats["documents_excluded_from_coreference"] == 1
    assert stats["documents_excluded_from_coreference_ids"] == "d1"
    assert stats["mentions"] == 2 and stats["sentences_with_several_roots"] == 0
    with pytest.raises(CorpusFormatError, match="never closed"):
        prepare_treebank("mine", {"kind": "treebank", "format": "conllu", "path": str(tmp_path / "tb"),
                                  "strict_coreference": True}, None, tmp_path)
