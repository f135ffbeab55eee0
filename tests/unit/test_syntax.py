"""Heads as dependency parsers (Clark §4.2) on hand-built sentences with hand-computed answers."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from headatlas.analyses.base import REGISTRY, run_analysis
from headatlas.analyses.result import Result
from headatlas.analyses.syntax import (ATLAS, DIRECTIONS, NO_UD_TWIN, OFFSETS, DependencyHeads,
                                       DependencyScores, atlas_heads, best_heads, best_offsets, caption,
                                       dependencies, example_sentences,
                                       honest_table, line_panel, offset_correct, paper_claims, table1,
                                       table1_relations)
from headatlas.corpora.records import Sentence, write_jsonl
from headatlas.errors import StoreError
from headatlas.plots.syntax import plot_dependency_lines, plot_regimes, plot_relation_heatmap
from headatlas.store.example import Example
from tests.unit.test_claims import by_id

# "the dog chased a cat": the -> dog (det), dog -> chased (nsubj), chased = root,
# a -> cat (det), cat -> chased (obj). Heads 1-based as in CoNLL, 0 = root.
WORDS = ["the", "dog", "chased", "a", "cat"]
HEADS = [2, 3, 0, 5, 3]
RELS = ["det", "nsubj", "root", "det", "obj"]
TOKENS = ["[CLS]", *WORDS, "[SEP]"]  # one piece per word: word k is token k + 1
WORD_IDS = [-1, 0, 1, 2, 3, 4, -1]

# Head A, token level (rows attend to columns; order CLS the dog chased a cat SEP).
HEAD_A = np.array([
    [.40, .10, .10, .10, .10, .10, .10],  # [CLS]: never scored
    [.05, .40, .30, .10, .05, .05, .05],  # the: self .40 ignored -> dog .30         (det, right)
    [.05, .10, .20, .50, .05, .05, .05],  # dog: chased .50                         (nsubj, right)
    [.05, .05, .40, .10, .05, .30, .05],  # chased: root, not scored
    [.05, .05, .05, .50, .10, .20, .05],  # a: chased .50, gold cat                  (det, wrong)
    [.05, .05, .05, .25, .15, .05, .40],  # cat: [SEP] .40 ignored -> chased .25     (obj, right)
    [.10, .10, .10, .10, .10, .10, .40],  # [SEP]
])
# Head A, head->dep (each dependent's column, word rows other than itself):
#   the:  dog .10 chased .05 a .05 cat .05 -> dog     (right)
#   dog:  the .30 chased .40 a .05 cat .05 -> chased  (right)
#   a:    the .05 dog .05 chased .05 cat .15 -> cat   (right)
#   cat:  the .05 dog .05 chased .30 a .20 -> chased  (right)
# Head B: every token puts .3 on itself and .7 on the next token; [SEP] all on itself.
HEAD_B = 0.3 * np.eye(7) + 0.7 * np.eye(7, k=1)
HEAD_B[6, 6] = 1.0
# Head B, dep->head: the -> dog (right), dog -> chased (right), a -> cat (right); cat's only
#   weight outside itself is on [SEP], so all words tie at 0 -> leftmost, "the" (obj, wrong).
# Head B, head->dep: the's column is 0 for every other word -> leftmost other word, dog
#   (right); dog's column: the .7 (wrong); a's: chased .7 (wrong); cat's: a .7 (wrong).
ACCURACY = {  # (direction, head) -> relation -> accuracy, from the comments above
    ("dep->head", 1): {"det": 1 / 2, "nsubj": 1, "obj": 1, "all": 3 / 4},
    ("head->dep", 1): {"det": 1, "nsubj": 1, "obj": 1, "all": 1},
    ("dep->head", 2): {"det": 1, "nsubj": 1, "obj": 0, "all": 3 / 4},
    ("head->dep", 2): {"det": 1 / 2, "nsubj": 0, "obj": 0, "all": 1 / 4},
}


def example(index, heads, tokens=TOKENS, word_ids=WORD_IDS, id_=None):
    """An Example of 1 layer x len(heads) heads."""
    n = len(tokens)
    return Example(index=index, id=id_ or f"s{index}", tokens=list(tokens),
                   input_ids=np.zeros(n, np.int32), token_type_ids=np.zeros(n, np.int8),
                   word_ids=np.asarray(word_ids), attn=np.asarray([heads], np.float32))


def sentence(index, split="train", words=WORDS, heads=HEADS, rels=RELS):
    return Sentence(id=f"s{index}", words=list(words), heads=list(heads), rels=list(rels),
                    split=split)


@pytest.fixture
def corpus(tmp_path):
    """Two copies of the sentence: s0 (train), s1 (test)."""
    path = tmp_path / "corpus.jsonl"
    write_jsonl(path, [sentence(0, "train"), sentence(1, "test")])
    return path


def scores_of(examples, corpus, how="mean"):
    return run_analysis(DependencyHeads, examples, progress=False, corpus=corpus, how=how)


def test_registered():
    assert "dependency_heads" in REGISTRY


def test_accuracy_per_relation_both_directions(corpus):
    table = run_analysis("dependency_heads", [example(0, [HEAD_A, HEAD_B])], progress=False,
                         corpus=corpus).head_table()
    got = {(d, h): dict(zip(g["relation"], g["accuracy"]))
           for (d, h), g in table.groupby(["direction", "head"])}
    assert got.keys() == ACCURACY.keys()
    for key, expected in ACCURACY.items():
        assert got[key] == pytest.approx(expected), key
    # n: det 2, nsubj 1, obj 1, all 4 (the root word is not scored)
    assert dict(zip(table["relation"], table["n"])) == {"all": 4, "det": 2, "nsubj": 1, "obj": 1}


def test_offset_baselines(corpus):
    # words 0..4 = the dog chased a cat; gold heads the->1, dog->2, a->4, cat->2.
    # -3: none right; -2: cat -> 2 (obj); -1: none; +1: the -> 1, dog -> 2, a -> 4 (cat -> 5 is
    # outside the sentence: wrong); +2: none.
    table = scores_of([example(0, [HEAD_A])], corpus).offset_table()
    acc = table.pivot(index="relation", columns="offset", values="accuracy")
    assert acc.loc["det"].tolist() == [0, 0, 0, 1, 0]
    assert acc.loc["obj"].tolist() == [0, 1, 0, 0, 0]
    assert acc.loc["all"].tolist() == [0, 1 / 4, 0, 3 / 4, 0]
    best = best_offsets(table).set_index("relation")["offset"]
    assert best.to_dict() == {"all": 1, "det": 1, "nsubj": 1, "obj": -2}


def test_offsets_at_sentence_edges_are_wrong_not_errors():
    # scorer 0 with offsets -3..-1 and scorer 4 with +1, +2 fall outside a 5-word sentence.
    right = offset_correct(np.array([0, 4]), np.array([1, 3]), n_words=5)
    assert right.shape == (len(OFFSETS), 2)
    # only 0 + 1 = 1 (first word) and 4 - 1 = 3 (second word) are right
    assert right.tolist() == [[False, False], [False, False], [False, True], [True, False],
                              [False, False]]
    # a head index equal to a clipped guess must not count: -1 is never a word
    assert not offset_correct(np.array([0]), np.array([-1]), 5).any()


POSS_WORDS = ["John", "'s", "dog", "barked"]
POSS_HEADS = [3, 1, 4, 0]  # John -> dog (nmod:poss), 's -> John (case), dog -> barked (nsubj)
POSS_RELS = ["nmod:poss", "case", "nsubj", "root"]


def test_possessive_scored_by_the_clitic():
    deps = dependencies(sentence(0, words=POSS_WORDS, heads=POSS_HEADS, rels=POSS_RELS))
    assert deps.relation == ["nmod:poss", "case", "nsubj"]
    assert deps.scorer.tolist() == [1, 1, 2]  # John is scored by 's, the others by themselves
    assert deps.head.tolist() == [2, 0, 3]
    # a possessive pronoun has no clitic: scored by itself
    his = dependencies(sentence(0, words=["his", "cat", "slept"], heads=[2, 3, 0],
                                rels=["nmod:poss", "nsubj", "root"]))
    assert his.scorer.tolist() == [0, 1]
    # the next word is 's but not the possessor's case child (e.g. "Mary 's" attached elsewhere)
    other = dependencies(sentence(0, words=POSS_WORDS, heads=[3, 3, 4, 0], rels=POSS_RELS))
    assert other.scorer.tolist()[0] == 0


def test_possessive_accuracy_and_baseline(tmp_path):
    path = tmp_path / "poss.jsonl"
    write_jsonl(path, [sentence(0, words=POSS_WORDS, heads=POSS_HEADS, rels=POSS_RELS)])
    tokens = ["[CLS]", *POSS_WORDS, "[SEP]"]
    # Head 1: John -> 's, 's -> dog, dog -> barked, barked -> dog.
    # Head 2: John -> dog, 's -> John, dog -> barked, barked -> dog.
    h1, h2 = np.zeros((6, 6)), np.zeros((6, 6))
    for head, pairs in ((h1, [(1, 2), (2, 3), (3, 4), (4, 3)]), (h2, [(1, 3), (2, 1), (3, 4), (4, 3)])):
        head[0, 0] = head[5, 5] = 1
        for i, j in pairs:
            head[i, j] = 1
    ex = example(0, [h1, h2], tokens=tokens, word_ids=[-1, 0, 1, 2, 3, -1])
    scores = scores_of([ex], path)
    acc = scores.head_table().query("direction == 'dep->head'").pivot(
        index="relation", columns="head", values="accuracy")
    # nmod:poss is judged by 's: head 1 ('s -> dog) right, head 2 ('s -> John) wrong, although
    # head 2's John -> dog is the gold arc. case ('s -> John) is the other way round.
    assert acc.loc["nmod:poss"].tolist() == [1, 0]
    assert acc.loc["case"].tolist() == [0, 1]
    # offset +1 from the scoring word 's (1) is dog (2): right
    off = scores.offset_table().set_index(["relation", "offset"])["accuracy"]
    assert off[("nmod:poss", 1)] == 1 and off[("nmod:poss", -1)] == 0


def test_split_word_attention_is_summed(tmp_path):
    # "a bb c": bb is two pieces. Row of "a": .3 + .3 on bb's pieces, .4 on c. Word level
    # (to = sum) gives bb .6 > c .4, so a -> bb; token level would have said c.
    path = tmp_path / "split.jsonl"
    write_jsonl(path, [sentence(0, words=["a", "bb", "c"], heads=[2, 0, 2],
                                rels=["det", "root", "obj"])])
    attn = np.full((6, 6), 1 / 6)
    attn[1] = [0, 0, .3, .3, .4, 0]
    ex = example(0, [attn], tokens=["[CLS]", "a", "b", "##b", "c", "[SEP]"],
                 word_ids=[-1, 0, 1, 1, 2, -1])
    table = scores_of([ex], path).head_table().set_index(["relation", "direction"])
    assert table.loc[("det", "dep->head"), "accuracy"] == 1


def test_unaligned_words_are_counted_not_scored(tmp_path):
    # "chased" has no wordpiece: dog -> chased (nsubj) and cat -> chased (obj) cannot be scored.
    path = tmp_path / "unaligned.jsonl"
    write_jsonl(path, [sentence(0)])
    keep = [0, 1, 2, 4, 5, 6]  # drop the token of "chased"
    ex = example(0, [HEAD_A[np.ix_(keep, keep)]], tokens=[TOKENS[i] for i in keep],
                 word_ids=[WORD_IDS[i] for i in keep])
    scores = scores_of([ex], path)
    counts = scores.counts().set_index("relation")
    assert counts.loc["all", ["n", "unaligned"]].tolist() == [2, 2]
    assert counts.loc["nsubj", ["n", "unaligned"]].tolist() == [0, 1]
    total = scores.coverage_table().set_index("split").loc["total"]
    assert total["unaligned_words"] == 1 and total["unaligned_dependencies"] == 2
    assert total["dependencies"] == 4


def test_skipped_and_stale_sentences(corpus):
    acc = DependencyHeads(1, 1, corpus=corpus)
    acc.start(SimpleNamespace(skipped_ids=["s1"], attrs={}))  # s1 was too long for extraction
    acc.add(example(0, [HEAD_A]))
    scores = acc.result()
    assert scores.unscored[["id", "reason"]].values.tolist() == [["s1", "skipped_by_extraction"]]
    cov = scores.tables["coverage"].set_index("split")
    assert cov.loc["total", ["sentences", "scored", "skipped_by_extraction"]].tolist() == [2, 1, 1]
    with pytest.raises(StoreError, match="another version of the corpus"):
        acc.add(example(1, [HEAD_A], id_="not-s1"))
    with pytest.raises(ValueError, match="word-level mode 'avg'"):
        DependencyHeads(1, 1, corpus=corpus, how="avg")


def test_honest_regime_refuses_a_selection_without_those_splits(corpus, tmp_path):
    from headatlas.analyses.syntax import labelled_scores

    path = tmp_path / "scores.npz"
    scores_of([example(0, [HEAD_A, HEAD_B]), example(1, [HEAD_B, HEAD_A])], corpus).save(path)
    label, scores = labelled_scores({"corpus": "tb", "splits": ["test"]}, path)
    assert label == "tb test" and len(scores.sentences) == 1
    with pytest.raises(ValueError, match=r"`syntax.selection`: tb has no scored sentence in the "
                                         r"split\(s\) dev \(its splits: test, train\)"):
        labelled_scores({"corpus": "tb", "splits": ["dev"]}, path, "syntax.selection")


def test_save_load_subset(corpus, tmp_path):
    scores = scores_of([example(0, [HEAD_A, HEAD_B]), example(1, [HEAD_B, HEAD_A])], corpus)
    assert isinstance(scores, Result) and list(scores.tables) == ["heads", "offsets", "coverage",
                                                                   "relations", "sentences", "unscored"]
    pd.testing.assert_frame_equal(scores.table, scores.head_table())
    pd.testing.assert_frame_equal(scores.tables["relations"], scores.counts())
    path = tmp_path / "scores.npz"
    scores.save(path)
    loaded = DependencyScores.load(path)
    assert type(loaded) is DependencyScores and loaded.relations == ["all", "det", "nsubj", "obj"]
    pd.testing.assert_frame_equal(loaded.head_table(), scores.head_table())
    for name, table in scores.tables.items():
        pd.testing.assert_frame_equal(loaded.tables[name], table, check_dtype=False)
    # The caption travels with the scores: a later rule captions its figure without the store.
    assert loaded.caption == scores.caption == caption(loaded)
    assert scores.caption.startswith("model ? (), corpus ?, N = 2 sentences, 8 dependencies")
    test = loaded.subset(["test"])
    assert test.sentences["id"].tolist() == ["s1"] and "N = 1 sentences" in test.caption
    # on s1 head 1 is HEAD_B: dep->head all = 3/4
    row = test.head_table().query("relation == 'all' and direction == 'dep->head' and head == 1")
    assert row["accuracy"].item() == 3 / 4


def streamed(corpus, examples):
    """A DependencyHeads instance that has seen ``examples`` (in that order)."""
    acc = DependencyHeads(1, 2, corpus=corpus)
    for ex in examples:
        acc.add(ex)
    return acc


# "cat chased the dog": cat -> chased (nsubj), chased = root, the -> dog (det), dog -> chased (obj).
# Its first relation is nsubj, where "the dog chased a cat" has det.
CAT_WORDS, CAT_HEADS, CAT_RELS = ["cat", "chased", "the", "dog"], [2, 0, 4, 2], ["nsubj", "root", "det", "obj"]


@pytest.mark.parametrize("order", ["in corpus order", "reversed"])
def test_merging_two_halves_is_one_pass(tmp_path, order):
    # s0 "the dog chased a cat" (train), s1 "cat chased the dog" (test). One pass numbers the
    # relations by first appearance: all, det (s0 word 0), nsubj (s0 word 1), obj (s0 word 4).
    # The half holding s1 alone sees nsubj, det, obj; merged in either order the relations, the
    # sentences and the rows are put back in corpus order: every table equals one pass's.
    path = tmp_path / "corpus.jsonl"
    write_jsonl(path, [sentence(0, "train"),
                       sentence(1, "test", words=CAT_WORDS, heads=CAT_HEADS, rels=CAT_RELS)])
    cat = np.full((2, 6, 6), 1 / 6)  # 2 heads, uniform: argmax ties go to the leftmost word
    examples = [example(0, [HEAD_A, HEAD_B]),
                example(1, cat, tokens=["[CLS]", *CAT_WORDS, "[SEP]"], word_ids=[-1, 0, 1, 2, 3, -1])]
    one = streamed(path, examples).result()
    halves = [streamed(path, [ex]) for ex in examples]
    assert halves[1].result().relations == ["all", "nsubj", "det", "obj"]
    into, other = halves if order == "in corpus order" else halves[::-1]
    merged = into.merge(other.state())
    assert merged.n_examples == 2 and sorted(merged.lengths) == [6, 7]
    two = merged.result()
    assert one.relations == two.relations == ["all", "det", "nsubj", "obj"]
    assert two.sentences["index"].tolist() == [0, 1]
    # Rows: s0's all, det, nsubj, obj, then s1's all, det, nsubj, obj (sentence, then relation).
    assert two.row_sentence.tolist() == [0] * 4 + [1] * 4 and two.row_relation.tolist() == [0, 1, 2, 3] * 2
    for name in one.arrays:
        np.testing.assert_array_equal(two.arrays[name], one.arrays[name])
    for name in one.tables:
        pd.testing.assert_frame_equal(two.tables[name], one.tables[name])
    # s1 by hand: words cat chased the dog, uniform rows -> each word's argmax is the leftmost
    # other word: cat -> chased (nsubj right), the -> cat (det wrong), dog -> cat (obj wrong);
    # columns likewise: head->dep also gives the leftmost other word. Both heads 1/3 on s1;
    # det over both sentences, head 1 dep->head: 1/2 (s0) + 0/1 = 1/3.
    det = two.head_table().query("relation == 'det' and direction == 'dep->head'")
    assert det["n"].tolist() == [3, 3] and det["correct"].tolist() == [1, 2]


def test_state_is_plain_arrays(corpus):
    state = streamed(corpus, [example(0, [HEAD_A, HEAD_B])]).state()
    assert all(isinstance(v, np.ndarray) for v in state.values())
    assert state["relations"].tolist() == ["all", "det", "nsubj", "obj"]
    assert state["relation_first"].tolist() == [[-1, -1], [0, 0], [0, 1], [0, 4]]
    assert state["sentences"].tolist() == [[0, 0, 1]]  # s0: no unaligned word, one root
    assert state["row_index"].tolist() == [0] * 4 and state["row_correct"].shape == (4, 2, 1, 2)


def test_best_heads_ties_and_order():
    table = pd.DataFrame({
        "relation": ["det"] * 3 + ["obj"] * 2,
        "direction": ["head->dep", "dep->head", "dep->head", "head->dep", "dep->head"],
        "layer": [1, 1, 2, 1, 1], "head": [1, 2, 1, 1, 1], "n": 10,
        "accuracy": [.9, .9, .5, .2, .1],
    })
    expected = [("det", "dep->head", 1, 2), ("obj", "head->dep", 1, 1)]
    for shuffled in (table, table.sample(frac=1, random_state=0)):
        best = best_heads(shuffled).sort_values("relation")
        assert list(best[["relation", "direction", "layer", "head"]].itertuples(index=False,
                                                                                 name=None)) == expected
    offsets = pd.DataFrame({"relation": "det", "offset": [2, 1, -3], "n": 4,
                            "accuracy": [.5, .5, .25]})
    assert best_offsets(offsets)["offset"].item() == 1  # tie .5: +1 comes before +2 in OFFSETS


def test_table1_relations():
    counts = pd.DataFrame({"relation": ["all", "punct", "root", "det", "case", "mark", "obj", "cc"],
                           "n": [900, 500, 300, 200, 200, 150, 120, 99]})
    # root/punct out, case/det tie at 200 (by name), cc is under 100; obj and mark are paper
    # twins, added after the top 2 in the paper's order (dobj before mark)
    assert table1_relations(counts, top=2) == ["all", "case", "det", "obj", "mark"]


def test_regimes(corpus):
    # s0 (train): head 1 = HEAD_A, head 2 = HEAD_B; s1 (test): swapped.
    scores = scores_of([example(0, [HEAD_A, HEAD_B]), example(1, [HEAD_B, HEAD_A])], corpus)
    # Paper's regime over both sentences: det is .75 for every head and direction
    # (1/2 + 2/2 or 2/2 + 1/2 of 4), so the tie rule picks dep->head 1-1.
    t1 = table1(scores, min_count=1).set_index("paper_relation")
    assert t1.loc["det", ["relation", "head", "direction", "acc"]].tolist() == \
        ["det", "1-1", "dep->head", 75.0]
    assert t1.loc["dobj", "note"] == "paper's SD dobj = UD obj"
    assert t1.loc["pobj", "note"] == NO_UD_TWIN and t1.loc["pobj", "relation"] == ""
    assert pd.isna(t1.loc["pobj", "acc"]) and t1.loc["pobj", "paper_acc"] == 76.3
    assert "fewer than 1" in t1.loc["amod", "note"]  # twin absent from this corpus
    # Honest: for "all (non-root)", head->dep 1-1 is perfect on train (HEAD_A) but is HEAD_B on
    # test: 1/4. On test itself the best is head->dep 1-2 (HEAD_A), 100%: the paper's regime flatters.
    honest = honest_table(("train", scores.subset(["train"])), [("test", scores.subset(["test"]))],
                          min_count=1, n_boot=200).set_index("relation")
    row = honest.loc["all (non-root)"]
    assert (row["head"], row["direction"], row["select_acc"]) == ("1-1", "head->dep", 100.0)
    assert (row["acc"], row["same_data_head"], row["same_data_acc"]) == (25.0, "1-2", 100.0)
    assert row["acc_low"] == row["acc_high"] == 25.0  # one test sentence
    assert row["baseline_offset"] == 1 and row["baseline_acc"] == 75.0
    # "all" (the paper's definition) also scores the root word "chased", always wrong: 5 words.
    row = honest.loc["all"]
    assert (row["select_acc"], row["acc"], row["same_data_acc"], row["baseline_acc"]) == (80.0, 20.0, 80.0, 60.0)
    assert (row["n"], row["select_n"], row["paper_acc"]) == (5, 5, 34.5)


def test_table1_all_counts_root_words_as_wrong(corpus):
    # Over both sentences, "all" (4 non-root dependencies each): dep->head 1-1 gets 3 + 3 of 8
    # (HEAD_A, then HEAD_B), as does 1-2; head->dep gets 4 + 1. Tie -> dep->head 1-1, 75%.
    # With the two root words counted wrong: 6 / 10 = 60%; offset +1: 3 + 3 of 8, 6 / 10 = 60%.
    # Each sentence alone gives 3/5 for both, so every bootstrap resample gives 60%.
    scores = scores_of([example(0, [HEAD_A, HEAD_B]), example(1, [HEAD_B, HEAD_A])], corpus)
    assert scores.sentences["roots"].tolist() == [1, 1] and scores.n_roots() == 2
    t1 = table1(scores, min_count=1, n_boot=100).set_index("relation")
    assert t1.loc["all", ["n", "head", "direction", "acc", "acc_low", "acc_high", "baseline_offset",
                          "baseline_acc", "paper_acc"]].tolist() == \
        [10, "1-1", "dep->head", 60.0, 60.0, 60.0, 1, 60.0, 34.5]
    assert t1.loc["all (non-root)", ["n", "acc", "baseline_acc"]].tolist() == [8, 75.0, 75.0]
    # Head minus offset per sentence is 0 in both sentences: the paired difference is 0 [0, 0].
    assert t1.loc["all", ["diff", "diff_low", "diff_high"]].tolist() == [0.0, 0.0, 0.0]
    assert pd.isna(t1.loc["all (non-root)", "paper_acc"])
    assert "root words counted as wrong" in t1.loc["all", "note"]
    # Root words cannot be counted in a single relation.
    with pytest.raises(ValueError, match="only counted"):
        scores.per_sentence("det", "dep->head", 1, 1, with_root=True)


def test_table1_claims_follow_the_papers_finding():
    # Two rows by hand: det, where the paper's head beats its baseline (94.3 vs 51.7), and nn
    # (UD compound), where it does not (70.4 vs 70.2); pobj has no UD twin.
    table = pd.DataFrame([
        {"relation": "det", "n": 100, "head": "2-1", "direction": "dep->head", "acc": 80.0,
         "acc_low": 75.0, "acc_high": 85.0, "baseline_offset": 1, "baseline_acc": 60.0,
         "baseline_acc_low": 55.0, "baseline_acc_high": 65.0, "diff": 20.0, "diff_low": 14.0,
         "diff_high": 26.0, "paper_relation": "det",
         "paper_head": "8-11", "paper_acc": 94.3, "paper_baseline_offset": 1,
         "paper_baseline_acc": 51.7, "note": ""},
        {"relation": "compound", "n": 100, "head": "1-1", "direction": "dep->head", "acc": 72.0,
         "acc_low": 65.0, "acc_high": 79.0, "baseline_offset": 1, "baseline_acc": 70.0,
         "baseline_acc_low": 63.0, "baseline_acc_high": 77.0, "diff": 2.0, "diff_low": -1.0,
         "diff_high": 5.0, "paper_relation": "nn",
         "paper_head": "4-10", "paper_acc": 70.4, "paper_baseline_offset": 1,
         "paper_baseline_acc": 70.2, "note": "paper's SD nn = UD compound"},
        {"relation": "", "paper_relation": "pobj", "paper_head": "9-6", "paper_acc": 76.3,
         "paper_baseline_offset": -2, "paper_baseline_acc": 34.6, "note": NO_UD_TWIN},
    ])
    claims = by_id(paper_claims(table, "ewt"))
    det = claims.loc["clark.t1.ewt.det"]
    # 80 - 60 = 20 >= 5 and the paired interval [14, 26] is above 0: ahead, as the paper found.
    assert det["verdict"] == "holds" and det["claim"] == "det: a head beats the offset baseline (ewt)"
    assert det["ours"] == ("2-1 dep->head 80.0 [75.0-85.0] vs 60.0 [55.0-65.0] (offset +1); "
                           "difference +20.0 [14.0, 26.0] (paired), n = 100")
    assert "paired bootstrap 95% interval of the difference above 0" in det["rule"]
    assert det["paper"] == "8-11 94.3 vs 51.7 (offset +1)" and "+42.6" in det["rule"]
    nn = claims.loc["clark.t1.ewt.nn"]
    # 72 vs 70: not ahead, and the paper's head was not either (+0.2): the finding holds.
    assert nn["verdict"] == "holds" and nn["claim"].startswith("nn: no head clearly beats")
    assert claims.loc["clark.t1.ewt.pobj", "verdict"] == "not applicable"
    assert "clark.t1.ewt.overall" not in claims.index  # no 'all' row given
    table.loc[0, ["diff_low"]] = -0.5  # the paired interval reaches 0: not clearly ahead
    assert by_id(paper_claims(table, "ewt")).loc["clark.t1.ewt.det", "verdict"] == "does not hold"
    # Without the paired columns (a table from before issue 23) nothing can be judged.
    old = by_id(paper_claims(table.drop(columns=["diff", "diff_low", "diff_high"]), "ewt"))
    assert old.loc["clark.t1.ewt.det", "verdict"] == "not applicable"


def test_table1_claim_is_judged_on_the_paired_difference_not_on_overlap():
    # Issue 23 item 5, EWT aux:pass: head 70.0 [64.0-76.0] vs offset 63.3 [57.0-69.0]. The two
    # unpaired intervals overlap (64.0 <= 69.0), so the old rule said "not clearly ahead" and the
    # paper's finding (82.5 vs 40.5: a head beats the offset) "does not hold". The head wins on
    # the same sentences: paired difference +6.7 [2.1, 11.2], >= 5 points and above 0: holds.
    table = pd.DataFrame([
        {"relation": "aux:pass", "n": 150, "head": "3-4", "direction": "dep->head", "acc": 70.0,
         "acc_low": 64.0, "acc_high": 76.0, "baseline_offset": 1, "baseline_acc": 63.3,
         "baseline_acc_low": 57.0, "baseline_acc_high": 69.0, "diff": 6.7, "diff_low": 2.1,
         "diff_high": 11.2, "paper_relation": "auxpass", "paper_head": "4-10", "paper_acc": 82.5,
         "paper_baseline_offset": 1, "paper_baseline_acc": 40.5, "note": ""}])
    from headatlas.claims import beats

    assert beats(70.0, (64.0, 76.0), 63.3, (57.0, 69.0)) is False  # the old rule's answer
    row = by_id(paper_claims(table, "ewt")).loc["clark.t1.ewt.auxpass"]
    assert row["verdict"] == "holds" and "+6.7 [2.1, 11.2] (paired)" in row["ours"]
    # 4.9 points ahead with the interval above 0: below the margin, not clearly ahead.
    table.loc[0, "diff"] = 4.9
    assert by_id(paper_claims(table, "ewt")).loc["clark.t1.ewt.auxpass", "verdict"] == \
        "does not hold"


def test_table1_paired_interval_by_hand(corpus):
    from headatlas.stats import bootstrap_ratio

    # The diff columns are bootstrap_ratio of the per-sentence (head - offset) hits over the
    # sentences' sizes, on the same resamples as the two accuracies.
    scores = scores_of([example(0, [HEAD_A, HEAD_B]), example(1, [HEAD_B, HEAD_A])], corpus)
    t1 = table1(scores, min_count=1, n_boot=200, seed=3).set_index("relation")
    row = t1.loc["det"]
    layer, h = (int(x) for x in row["head"].split("-"))
    c, n = scores.per_sentence("det", row["direction"], layer, h)
    bc, _ = scores.per_sentence_offset("det", int(row["baseline_offset"]))
    low, high = bootstrap_ratio(c - bc, n, 200, 3)
    assert (row["diff_low"], row["diff_high"]) == (round(100 * low, 1), round(100 * high, 1))
    assert row["diff"] == round(100 * (c.sum() - bc.sum()) / n.sum(), 1)


def test_table1_claims_on_real_scores(corpus):
    scores = scores_of([example(0, [HEAD_A, HEAD_B]), example(1, [HEAD_B, HEAD_A])], corpus)
    claims = by_id(paper_claims(table1(scores, min_count=1, n_boot=100), "tiny"))
    # all: 60 vs 60 is not ahead, the paper's 34.5 vs 26.3 was: does not hold; 60% is not < 50%.
    assert claims.loc["clark.t1.tiny.all", "verdict"] == "does not hold"
    assert claims.loc["clark.t1.tiny.overall", ["ours", "verdict"]].tolist() == \
        ["best head 60.0% (1-1)", "does not hold"]
    assert claims.loc["clark.t1.tiny.prep", "verdict"] == "not applicable"


def test_example_sentences_and_figures(corpus, tmp_path):
    examples = [example(0, [HEAD_A, HEAD_B]), example(1, [HEAD_B, HEAD_A])]
    scores = scores_of(examples, corpus)
    # head 1-1 dep->head gets det 1/2 on s0 and 2/2 on s1: s1 first (5 words: outside 8-16 in both)
    assert example_sentences(scores, "det", "dep->head", 1, 1, n=2) == [1, 0]
    panel = line_panel(examples[1], sentence(1), "det", "dep->head", 1, 1)
    assert panel.labels == TOKENS
    assert panel.highlight.tolist() == [False, True, True, False, True, True, False]
    plot_dependency_lines([[panel, panel], [panel]], tmp_path / "lines.svg", "caption")
    plot_relation_heatmap(scores.head_table(), "det", (1, 1.0), tmp_path / "heat.svg", "caption")
    honest = honest_table(("train", scores.subset(["train"])), [("test", scores.subset(["test"]))],
                          min_count=1, n_boot=50)
    plot_regimes(honest, tmp_path / "regimes.svg", "caption")
    for name in ("lines", "heat", "regimes"):
        assert (tmp_path / f"{name}.svg").read_bytes().startswith(b"<?xml")
    assert DIRECTIONS == ("dep->head", "head->dep")


def test_a_stanford_dependencies_treebank_is_matched_by_the_papers_own_labels():
    """PTB-SD (the paper's treebank) has dobj, pobj, prep: Table 1's paper rows are found by those
    labels, not by UD twins it does not have (obj, case)."""
    from headatlas.analyses.syntax import paper_table1, table1_relations

    sd = pd.DataFrame({"relation": ["all", "det", "dobj", "pobj", "prep", "nsubj", "punct"],
                       "n": [900, 150, 120, 110, 130, 140, 200]})
    rows = table1_relations(sd, top=2, min_count=100)
    assert {"dobj", "pobj", "prep"} <= set(rows) and "obj" not in rows
    keyed = paper_table1(sd["relation"]).set_index("relation")
    assert keyed.loc["dobj", "paper_acc"] == 86.8 and keyed.loc["pobj", "paper_direction"] == "head->dep"
    ud = paper_table1(["all", "det", "obj", "case"]).set_index("relation", drop=False)
    assert "obj" in ud.index and "dobj" not in ud.index  # a UD treebank keeps the twins


def test_atlas_columns_and_their_reader(corpus, tmp_path):
    scores = scores_of([example(0, [HEAD_A, HEAD_B]), example(1, [HEAD_B, HEAD_A])], corpus)
    for name in ("heads", "offsets"):
        scores.tables[name].to_csv(tmp_path / f"{name}.csv", index=False)
    table1(scores, min_count=1, n_boot=10).to_csv(tmp_path / "table1.csv", index=False)
    spec = ATLAS["heads"]
    assert (spec.title, spec.paper, spec.rank, spec.per_corpus) == \
        ("dependency heads", "Clark et al. 2019 §4.2, Table 1", 50, True)
    assert spec.reader == "headatlas.analyses.syntax:atlas_heads"
    assert spec.column_name(spec.columns[0], corpus="gum") == "syntax_gum_all"
    per_head = atlas_heads(tmp_path / "heads.csv")
    assert {c.source for c in spec.columns} <= set(per_head.columns)
    # all, dep->head: 3/4 of s0 and 3/4 of s1 for both heads (A then B, B then A).
    # Over both sentences each head gets nsubj dep->head 2/2, as does its best offset (+1): the
    # largest margin (0; det 3/4 and obj 1/2 are below their offsets' 4/4 and 2/2).
    assert per_head[["layer", "head"]].values.tolist() == [[1, 1], [1, 2]]
    assert per_head["all"].tolist() == [0.75, 0.75]
    assert per_head[["relation", "direction", "accuracy", "baseline", "baseline_offset", "margin", "n"]
                    ].values.tolist() == [["nsubj", "dep->head", 1.0, 1.0, 1, 0.0, 2]] * 2
    assert per_head["paper"].iloc[0] == "nsubj: head 8-2 58.5% vs baseline 45.5% (+1) (BERT-base, PTB/SD)"
