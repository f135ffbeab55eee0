import json

from headatlas.corpora import wikipedia as W


def words(text: str) -> int:
    return len(text.split())


def test_sentence_splitting():
    text = 'He came in 1990. "Why?" she asked. It ended (mostly). Done'
    assert W.split_sentences(text) == ["He came in 1990.", '"Why?" she asked.', "It ended (mostly).", "Done"]


def test_paragraph_pair_preferred_when_it_fits():
    assert W.make_pair("a b c.\nd e.", words, max_length=10) == ("a b c.", "d e.", "paragraphs")


def test_sentence_runs_fill_half_then_the_rest():
    text = "One two. Three four. Five six. Seven eight. Nine ten."
    # budget = 11 - 3 = 8 words: A takes sentences up to 4 words, B up to the remaining 4
    assert W.make_pair(text, words, max_length=11) == ("One two. Three four.", "Five six. Seven eight.",
                                                       "sentences")


def test_a_long_first_sentence_still_pairs_with_the_next():
    text = "A b c d e f. G h. I j."
    # budget 9: A = first sentence (6 > 4.5 but A needs one), B = 'g h.' (8), 'i j.' would make 10
    assert W.make_pair(text, words, max_length=12) == ("A b c d e f.", "G h.", "sentences")


def test_drop_reasons():
    assert W.make_pair("Only one sentence here.", words, 20) == "too_short"
    assert W.make_pair("A b c d e f g. H i j k.", words, 10) == "too_long"


def test_segments_are_seeded_and_counted(tmp_path):
    articles = [(f"T{i}", "First sentence here. Second one too.") for i in range(5)] + [("S", "Alone.")]
    path = tmp_path / "wiki.json"
    path.write_text(json.dumps({t: {"title": t, "extract": x} for t, x in articles}))
    loaded = W.load_articles(path)
    first, stats = W.make_segments(loaded, words, n=3, max_length=20, seed=1)
    again, _ = W.make_segments(loaded, words, n=3, max_length=20, seed=1)
    assert [s.doc for s in first] == [s.doc for s in again] and len(first) == 3
    assert first[0].words == ["First", "sentence", "here."] and first[0].words_b == ["Second", "one", "too."]
    assert stats["segments"] == 3 and stats["truncated"] == 0
    every, stats = W.make_segments(loaded, words, n=100, max_length=20, seed=1)
    assert len(every) == 5 and stats["dropped_too_short"] == 1 and stats["articles_read"] == 6
