from headatlas.corpora.documents import make_documents
from headatlas.corpora.records import Mention, Sentence


def sentence(doc, k, words, heads, mentions=()):
    return Sentence(id=f"{doc}-{k}", doc=doc, split="train", words=words, heads=heads,
                    rels=["dep"] * len(words), xpos=["NN"] * len(words),
                    mentions=[Mention(e, w) for e, w in mentions])


def count(words):  # one wordpiece per word
    return len(words)


CORPUS = [
    sentence("d1", 1, ["Kim", "sleeps"], [2, 0], [("1", [0])]),
    sentence("d1", 2, ["She", "snores", "loudly"], [2, 0, 2], [("1", [0])]),
    sentence("d1", 3, ["It", "is", "late", "now"], [3, 3, 0, 3], [("2", [0])]),
    sentence("d2", 1, ["A", "very", "long", "first", "sentence", "here", "indeed"], [5, 3, 5, 5, 0, 5, 5]),
]


def test_documents_are_cut_at_sentence_boundaries_and_reindexed():
    # budget = 8 - 2 specials = 6 words: d1 keeps sentences 1 and 2 (2 + 3 words), not 3 (+4)
    docs, stats = make_documents(CORPUS, count, max_length=8)
    assert [d.id for d in docs] == ["d1"]
    d1 = docs[0]
    assert d1.words == ["Kim", "sleeps", "She", "snores", "loudly"]
    # sentence 2's heads [2, 0, 2] shift by its offset 2 -> [4, 0, 4]; roots stay 0
    assert d1.heads == [2, 0, 4, 0, 4]
    assert [(m.entity, m.words) for m in d1.mentions] == [("1", [0]), ("1", [2])]
    assert d1.meta["sentence_starts"] == [0, 2] and d1.split == "train"
    # cut: d1 sentence 3 and d2 sentence 1 (d2 then has nothing left and is dropped)
    assert stats["sentences_cut"] == 2 and stats["dropped_first_sentence_too_long"] == 1
    assert stats["documents"] == 2 and stats["kept"] == 1


def test_everything_fits():
    docs, stats = make_documents(CORPUS, count, max_length=20)
    assert [len(d.words) for d in docs] == [9, 7] and stats["sentences_cut"] == 0
    assert docs[0].heads[5:] == [8, 8, 0, 8]
