import json
import random

import pytest

from headatlas.corpora import wikipedia as W


def ones(words):
    """One wordpiece per word."""
    return [1] * len(words)


def test_sentence_splitting():
    text = 'He came in 1990. "Why?" she asked. It ended (mostly). Done'
    assert W.split_sentences(text) == ["He came in 1990.", '"Why?" she asked.', "It ended (mostly).", "Done"]


class Draws(random.Random):
    """A generator whose draws are given: randint returns the next of ``ints``, random the next of ``floats``."""

    def __init__(self, ints=(), floats=()):
        super().__init__(0)
        self.ints, self.floats = list(ints), list(floats)

    def randint(self, a, b):
        value = self.ints.pop(0)
        assert a <= value <= b
        return value

    def random(self):
        return self.floats.pop(0)


def test_sentences_fill_the_budget_then_the_pair_is_cut_to_it():
    # max_length 11 -> budget 8 wordpieces. Sentences of 3, 3 and 4 pieces: the first two make 6 < 8,
    # the third reaches 10 >= 8, so the chunk is all three. Split point 2 (drawn): A = s1 s2 (6),
    # B = s3 (4): 10 > 8. A is longer: 0.3 < 0.5 cuts A's first word ("A"); 9 > 8: A (5) is longer
    # again: 0.7 cuts A's last word ("f."); 8 fits. The fourth sentence is never looked at.
    text = "A b c. D e f. G h i j. K l."
    pair = W.make_pair(text, ones, max_length=11, rng=Draws([2], [0.3, 0.7]))
    assert pair == (["b", "c.", "D", "e"], ["G", "h", "i", "j."], {"pieces": 8, "cut": 2, "sentences": 3})


def test_cutting_counts_wordpieces_and_takes_b_on_a_tie():
    # Words of 2 pieces: budget 5. A = "x y" (4 pieces), B = "z w" (4): 8 > 5, a tie -> B is cut
    # (its last word at 0.9): 6 > 5; A (4) is longer than B (2): A's first word goes (0.1): 4 <= 5.
    a, b = ["x", "y"], ["z", "w"]
    cost_a, cost_b = [2, 2], [2, 2]
    assert W.truncate_pair(a, b, cost_a, cost_b, 5, Draws(floats=[0.9, 0.1])) == 2
    assert (a, b) == (["y"], ["z"])


def test_short_leads_and_drop_reasons():
    rng = random.Random(0)
    assert W.make_pair("Only one sentence here.", ones, 20, rng) == "too_short"
    assert W.make_pair("A b c. D e.", ones, 20, rng) == "under_budget"  # 5 words < 17
    # Without fill, a short lead gives its whole text (split between the two sentences).
    assert W.make_pair("A b c. D e.", ones, 20, rng, fill=False) == \
        (["A", "b", "c."], ["D", "e."], {"pieces": 5, "cut": 0, "sentences": 2})
    # The first sentence alone fills the budget of 7: no B (Clark's code drops it too).
    assert W.make_pair("A b c d e f g. H i j k.", ones, 10, rng) == "too_long"


def test_segments_fill_the_budget_first_and_are_seeded(tmp_path):
    long_text = "One two three. Four five six. Seven eight nine. Ten eleven twelve."  # 12 words
    articles = [(f"L{i}", long_text) for i in range(3)] + [("S", "Short one. Two.")] + [("X", "Alone.")]
    path = tmp_path / "wiki.json"
    path.write_text(json.dumps({t: {"title": t, "extract": x} for t, x in articles}))
    loaded = W.load_articles(path)
    # max_length 11: budget 8; every long lead fills it and is cut to 8 words (11 wordpieces).
    first, stats = W.make_segments(loaded, ones, n=3, max_length=11, seed=1)
    again, _ = W.make_segments(loaded, ones, n=3, max_length=11, seed=1)
    assert [(s.doc, s.words, s.words_b) for s in first] == [(s.doc, s.words, s.words_b) for s in again]
    assert {s.doc for s in first} == {"L0", "L1", "L2"}
    assert all(len(s.words) + len(s.words_b) == 8 for s in first)
    assert stats["full_segments"] == 3 and stats["short_segments"] == 0 and stats["truncated"] == 3
    assert stats["lengths"] == {"median": 11.0, "p05": 11.0, "p95": 11.0, "min": 11, "max": 11,
                                "share_full": 1.0}
    # Asking for more: the short lead comes in a second pass, the one-sentence article is dropped.
    every, stats = W.make_segments(loaded, ones, n=100, max_length=11, seed=1)
    assert len(every) == 4 and every[-1].doc == "S" and every[-1].words_b == ["Two."]
    assert stats["short_segments"] == 1 and stats["dropped_too_short"] == 1 and stats["articles_read"] == 5
    assert stats["lengths"]["min"] == 6  # "Short one. Two." = 3 words + 3 specials


@pytest.mark.parametrize("text, problem", [
    (json.dumps({"Cat": {"title": "Cat", "text": "Cats purr. They sleep."}}),
     r"the entry of article 'Cat' has no string \"extract\" \(its keys: 'title', 'text'\)"),
    (json.dumps({"Cat": {}}), r"the entry of article 'Cat' has no string \"extract\" \(its keys: none\)"),
    (json.dumps({"Cat": {"extract": ["Cats purr."]}}), r"the \"extract\" of article 'Cat' is a list"),
    (json.dumps({"Cat": {"extract": "Cats purr.", "title": 3}}), r"the \"title\" of article 'Cat' is a number"),
    (json.dumps({}), "the JSON object holds no article"),
    (json.dumps([{"title": "Cat", "extract": "Cats purr."}]), "the JSON is a list, not an object of articles"),
    (json.dumps({"Cat": "Cats purr. They sleep."}), "the entry of article 'Cat' is a string, not an object"),
    (json.dumps({"Cat": {"extract": "Cats purr. They sleep."}})[:-8], r"not valid JSON \(.*\); a truncated"),
])
def test_a_json_of_the_wrong_shape_names_the_file_and_what_was_expected(tmp_path, text, problem):
    """Issue 21, item 3: no quiet 0 segments, no bare AttributeError / JSONDecodeError."""
    from headatlas.errors import CorpusFormatError

    path = tmp_path / "wiki.json"
    path.write_text(text)
    with pytest.raises(CorpusFormatError, match=rf"^{path}(:1)?: {problem}(.|\n)*how to fix: .*a JSON object "
                                                r"\{title: \{\"title\": str, \"extract\": str"):
        W.load_articles(path)


def test_the_packaged_json_has_the_expected_shape():
    articles = W.load_articles(W.find_summaries())
    assert len(articles) > 10_000 - 100 and all(isinstance(t, str) and isinstance(x, str) for t, x in articles)


def test_no_segment_at_all_is_an_error_naming_why(tmp_path):
    from headatlas.errors import CorpusFormatError

    path = tmp_path / "wiki.json"
    path.write_text(json.dumps({t: {"extract": x} for t, x in [("A", "Alone."), ("B", "")]}))
    segments, stats = W.make_segments(W.load_articles(path), ones, n=5, max_length=11, seed=0)
    with pytest.raises(CorpusFormatError, match=rf"^{path}: no segment could be made from its 2 articles "
                                                r"\(2 too short; max_length 11 wordpieces\)"):
        W.require_segments(segments, stats, path, 11)
