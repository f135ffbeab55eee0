"""Any encoder: BERT (cased, uncased), RoBERTa, DistilBERT, ELECTRA, ALBERT, DeBERTa-v2/v3, ModernBERT.

Each family runs as a tiny random model whose tokenizer is built in
``tests/conftest.py`` (no network): its encoding, the word alignment, the
extraction (batched with padding vs one forward per example), the surface
analyses and Table 1; and the length limit of its position table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from headatlas.analyses.base import run_analysis
from headatlas.analyses.surface import Entropy, RelativePosition, SpecialTokens
from headatlas.analyses.syntax import DependencyHeads, table1
from headatlas.corpora.records import Sentence, write_jsonl
from headatlas.errors import ModelError
from headatlas.encoders.inputs import collate, encode, encode_many
from headatlas.encoders.extract import extract
from headatlas.encoders.models import (check_max_length, load_model, load_tokenizer, max_input_length,
                              takes_token_types)
from headatlas.store.example import Example, token_masks
from headatlas.store.reader import Store
from tests.conftest import FAMILIES, make_tiny_encoder

PAIR = Sentence(id="p", words=["The", "cat", "sat", "."], words_b=["He", "saw", "a", "birdie", ","])
WORDPIECE_UNCASED = ["[CLS]", "the", "cat", "sat", ".", "[SEP]", "he", "saw", "a", "bird", "##ie", ",",
                     "[SEP]"]
SENTENCEPIECE = ["[CLS]", "▁the", "▁cat", "▁sat", "▁.", "[SEP]", "▁he", "▁saw", "▁a", "▁bird", "ie",
                 "▁,", "[SEP]"]
WORD_IDS = [-1, 0, 1, 2, 3, -1, 4, 5, 6, 7, 7, 8, -1]
# Worked out from each tokenizer's vocabulary (tests/conftest.py): byte-level BPE marks every
# word with Ġ (add_prefix_space), RoBERTa joins the pair with </s></s>, SentencePiece marks with ▁.
EXPECTED = {
    "bert-uncased": (WORDPIECE_UNCASED, WORD_IDS),
    "bert-cased": (["[CLS]", "The", "cat", "sat", ".", "[SEP]", "He", "saw", "a", "bird", "##ie", ",",
                    "[SEP]"], WORD_IDS),
    "roberta": (["<s>", "Ġ", "T", "he", "Ġcat", "Ġsat", "Ġ.", "</s>", "</s>", "Ġ", "H", "e", "Ġsaw", "Ġa",
                 "Ġbirdie", "Ġ,", "</s>"],
                [-1, 0, 0, 0, 1, 2, 3, -1, -1, 4, 4, 4, 5, 6, 7, 8, -1]),
    "distilbert": (WORDPIECE_UNCASED, WORD_IDS),
    "electra": (WORDPIECE_UNCASED, WORD_IDS),
    "albert": (SENTENCEPIECE, WORD_IDS),
    "deberta-v2": (SENTENCEPIECE, WORD_IDS),
    # ModernBERT: byte-level BPE given its prefix space by load_tokenizer, BERT's specials
    "modernbert": (["[CLS]", "Ġ", "T", "he", "Ġcat", "Ġsat", "Ġ.", "[SEP]", "Ġ", "H", "e", "Ġsaw", "Ġa",
                    "Ġbirdie", "Ġ,", "[SEP]"], [-1, 0, 0, 0, 1, 2, 3, -1, 4, 4, 4, 5, 6, 7, 8, -1]),
}
# Segment ids are fed (and stored) only where the model has a token-type table of >= 2 rows.
TOKEN_TYPES = {"bert-uncased": True, "bert-cased": True, "roberta": False, "distilbert": False,
               "electra": True, "albert": True, "deberta-v2": False, "modernbert": False}
SEPARATORS = {"roberta": 3}  # </s> after A, </s> before B, </s> at the end; 2 elsewhere
CORPUS = [
    PAIR,
    Sentence(id="s1", words=["the", "dog", "walked"]),
    Sentence(id="s2", words=["she", "saw", "the", "big", "red", "house", "and", "the", "running", "cat", "."]),
]
# A tiny treebank for Table 1: heads are 1-based, 0 = root.
TREEBANK = [
    Sentence(id="t0", words=["the", "cat", "sat", "on", "the", "mat", "."], heads=[2, 3, 0, 6, 6, 3, 3],
             rels=["det", "nsubj", "root", "case", "det", "obl", "punct"]),
    Sentence(id="t1", words=["she", "saw", "the", "big", "dog", "."], heads=[2, 0, 5, 5, 2, 2],
             rels=["nsubj", "root", "det", "amod", "obj", "punct"]),
    Sentence(id="t2", words=["he", "walked", "the", "happy", "birdie", "."], heads=[2, 0, 5, 5, 2, 2],
             rels=["nsubj", "root", "det", "amod", "obj", "punct"]),
]


@pytest.fixture(scope="module")
def encoders(tiny_encoder_dirs):
    return {family: load_model(family, {"path": str(folder)}, device="cpu")
            for family, folder in tiny_encoder_dirs.items()}


# --- encoding and word alignment ----------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_pair_uses_the_tokenizers_own_special_tokens(encoders, family):
    loaded = encoders[family]
    enc = encode(loaded.tokenizer, PAIR, 0)
    tokens, word_ids = EXPECTED[family]
    assert loaded.tokenizer.convert_ids_to_tokens(enc.input_ids) == tokens
    assert enc.word_ids == word_ids
    n_a = tokens.index(loaded.tokenizer.sep_token) + 1  # [CLS] A [SEP]
    expected_types = [0] * n_a + [1] * (len(tokens) - n_a) if TOKEN_TYPES[family] else [0] * len(tokens)
    assert enc.token_type_ids == expected_types and enc.token_types is TOKEN_TYPES[family]
    assert ("token_type_ids" in collate([enc], 0, "cpu")) is TOKEN_TYPES[family]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_corpus_encoded_in_batches_is_each_sentence_encoded_alone(encoders, family):
    # Single sentences and pairs mixed, in chunks of 2 (a chunk boundary inside each kind):
    # every example is the one tokenizer call of that sentence alone gives.
    tok = encoders[family].tokenizer
    corpus = [(i, s) for i, s in enumerate([CORPUS[1], PAIR, CORPUS[2], PAIR, TREEBANK[0]])]
    for (index, sentence), got in zip(corpus, encode_many(tok, corpus, chunk=2)):
        texts = (sentence.words, sentence.words_b) if sentence.words_b else (sentence.words,)
        alone = tok(*texts, is_split_into_words=True, add_special_tokens=True, return_token_type_ids=True)
        n_a = len(sentence.words)
        assert got.index == index and got.id == sentence.id and got.input_ids == alone["input_ids"]
        assert got.word_ids == [-1 if w is None else w + (n_a if side else 0)
                                for w, side in zip(alone.word_ids(), alone.sequence_ids())]
        assert got.token_type_ids == (alone["token_type_ids"] if TOKEN_TYPES[family] else [0] * len(got))
        assert got == encode(tok, sentence, index)


@pytest.mark.parametrize("family", FAMILIES)
def test_token_types_follow_the_model(encoders, family):
    assert takes_token_types(encoders[family].model) is TOKEN_TYPES[family]


def test_byte_level_bpe_gets_word_markers_only_through_load_tokenizer(tiny_encoder_dirs):
    from transformers import AutoTokenizer

    folder = tiny_encoder_dirs["roberta"]
    raw = AutoTokenizer.from_pretrained(folder)  # add_prefix_space=False, as saved by RoBERTa
    glued = raw(["the", "cat"], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    assert raw.convert_ids_to_tokens(glued) == ["the", "cat"]  # 'thecat': no word boundary at all
    ours = load_tokenizer("rob", {"path": str(folder)})
    marked = ours(["the", "cat"], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    assert ours.convert_ids_to_tokens(marked) == ["Ġthe", "Ġcat"]


def test_a_lone_byte_level_pre_tokenizer_gets_its_prefix_space_and_a_split_sequence_is_refused(
        tiny_encoder_dirs, tmp_path):
    """ModernBERT's generic fast tokenizer ignores add_prefix_space=True: load_tokenizer sets it
    in its ByteLevel pre-tokenizer. Behind a splitting regex (GPT-4 style) the flag would put a
    word marker before inner punctuation too, so such a tokenizer is refused, not changed."""
    from tokenizers import Regex, pre_tokenizers
    from transformers import AutoTokenizer

    folder = tiny_encoder_dirs["modernbert"]
    raw = AutoTokenizer.from_pretrained(folder, add_prefix_space=True)
    assert raw.backend_tokenizer.pre_tokenizer.add_prefix_space is False  # the keyword did nothing
    ours = load_tokenizer("mb", {"path": str(folder)})
    marked = ours(["the", "cat"], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    assert ours.convert_ids_to_tokens(marked) == ["Ġthe", "Ġcat"]
    raw.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\w+|[^\w\s]+|\s+"), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    raw.save_pretrained(tmp_path / "split")
    (tmp_path / "split" / "config.json").write_bytes((folder / "config.json").read_bytes())
    with pytest.raises(ModelError, match="tokenises a list of words differently"):
        load_tokenizer("split", {"path": str(tmp_path / "split")})


@pytest.mark.parametrize("family", ["albert", "deberta-v2"])
def test_a_sentencepiece_model_file_alone_is_converted(family, tmp_path):
    """The hub layout of ALBERT and DeBERTa-v3: spiece.model / spm.model and no tokenizer.json."""
    folder = make_tiny_encoder(tmp_path / family, family, sentencepiece_file=True)
    assert not (folder / "tokenizer.json").exists()
    loaded = load_model(family, {"path": str(folder)}, device="cpu")
    enc = encode(loaded.tokenizer, PAIR, 0)
    # the trained model has no piece 'ie': 'birdie' -> ▁bird i e
    assert loaded.tokenizer.convert_ids_to_tokens(enc.input_ids) == [
        "[CLS]", "▁the", "▁cat", "▁sat", "▁.", "[SEP]", "▁he", "▁saw", "▁a", "▁bird", "i", "e", "▁,", "[SEP]"]
    assert enc.word_ids == [-1, 0, 1, 2, 3, -1, 4, 5, 6, 7, 7, 7, 8, -1]
    stats = extract(loaded, CORPUS, tmp_path / "s.h5", max_length=64, progress=False)
    assert stats["kept"] == 3 and stats["unaligned_words"] == 0


# --- special-token classes, by hand ---------------------------------------------------------------

def test_every_separator_counts_and_punctuation_keeps_its_marker():
    tokens = ["<s>", "Ġthe", "Ġ.", "</s>", "</s>", "▁,", ",", "Ġcat", "</s>"]
    cls, sep, punct = token_masks(tokens, "<s>", "</s>")
    assert np.flatnonzero(cls).tolist() == [0]
    assert np.flatnonzero(sep).tolist() == [3, 4, 8]
    assert np.flatnonzero(punct).tolist() == [2, 5, 6]


def test_special_tokens_with_roberta_separators_by_hand():
    # <s> a </s> </s> b </s>: 1 layer, 1 head; each row's mass worked out below.
    tokens = ["<s>", "Ġa", "</s>", "</s>", "Ġb", "</s>"]
    attn = np.array([[1, 0, 0, 0, 0, 0],       # <s>  -> <s>
                     [0, 0, .5, .5, 0, 0],     # a    -> both middle separators
                     [0, 0, 0, 1, 0, 0],       # </s> -> </s>
                     [0, 0, 1, 0, 0, 0],       # </s> -> </s>
                     [0, .5, 0, 0, .5, 0],     # b    -> a, b
                     [0, 0, 0, 0, 0, 1]],      # </s> -> itself
                    dtype=np.float32)[None, None]
    n = len(tokens)
    example = Example(0, "x", tokens, np.zeros(n), np.zeros(n), np.array([-1, 0, -1, -1, 1, -1]), attn,
                      cls_token="<s>", sep_token="</s>")
    row = run_analysis(SpecialTokens, [example], progress=False).table.iloc[0]
    assert row["cls"] == pytest.approx(1 / 6)
    assert row["sep"] == pytest.approx(4 / 6)  # rows a, </s>, </s>, </s>
    assert row["sep_from_sep"] == pytest.approx(1.0)  # three separator queries, all on separators
    assert row["sep_from_other"] == pytest.approx(1 / 3)  # <s>: 0, a: 1, b: 0


# --- extraction, surface analyses, Table 1 --------------------------------------------------------

def unbatched_forward(loaded, sentence: Sentence) -> np.ndarray:
    """The model run on the tokenizer's own output for one example (no padding, no collate)."""
    pair = (sentence.words, sentence.words_b) if sentence.words_b else (sentence.words,)
    inputs = loaded.tokenizer(*pair, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        out = loaded.model(**inputs, output_attentions=True)
    return torch.stack(out.attentions, 1)[0].numpy()


@pytest.mark.parametrize("family", FAMILIES)
def test_extraction_in_padded_batches_equals_one_forward_each(encoders, family, tmp_path):
    loaded = encoders[family]
    stats = extract(loaded, CORPUS, tmp_path / "s.h5", max_length=64, batch_size=3, progress=False)
    assert stats["kept"] == 3 and stats["unaligned_words"] == 0
    with Store(tmp_path / "s.h5") as store:
        assert (store.attrs["cls_token"], store.attrs["sep_token"]) == (loaded.tokenizer.cls_token,
                                                                        loaded.tokenizer.sep_token)
        examples = {e.id: e for e in store}
    for sentence in CORPUS:  # padding must not change a map, for absolute or relative positions
        np.testing.assert_allclose(examples[sentence.id].attn, unbatched_forward(loaded, sentence),
                                   atol=2e-3)
    pair = examples["p"]
    assert pair.cls_mask.tolist() == [True] + [False] * (pair.n_tokens - 1)
    assert int(pair.sep_mask.sum()) == SEPARATORS.get(family, 2)
    assert [pair.tokens[i] for i in np.flatnonzero(pair.punct_mask)] == [
        t for t in EXPECTED[family][0] if t.lstrip("Ġ▁") in (".", ",")]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_records_value_norms_and_serves_the_norm_view(encoders, family, tmp_path):
    from headatlas.store.schema import NORMS_RECORDED

    loaded = encoders[family]
    extract(loaded, CORPUS, tmp_path / "s.h5", max_length=64, batch_size=3, progress=False)
    with Store(tmp_path / "s.h5", norms=True) as store:
        assert store.attrs["norms"] == NORMS_RECORDED
        example = next(iter(store))
        assert example.value_norms.shape == (2, 2, example.n_tokens) and np.isfinite(example.norm_map).all()
    table = run_analysis(Entropy, tmp_path / "s.h5", progress=False, weighting="norm").table
    assert len(table) == 4 and not table.drop(columns=["layer", "head"]).isna().any().any()


@pytest.mark.parametrize("family", FAMILIES)
def test_surface_analyses_and_table1_run(encoders, family, tmp_path):
    loaded = encoders[family]
    extract(loaded, CORPUS, tmp_path / "wiki.h5", max_length=64, progress=False)
    for analysis in (RelativePosition, SpecialTokens, Entropy):
        table = run_analysis(analysis, tmp_path / "wiki.h5", progress=False).table
        assert len(table) == 4 and not table.drop(columns=["layer", "head"]).isna().any().any()
    special = run_analysis(SpecialTokens, tmp_path / "wiki.h5", progress=False).table
    assert ((special["cls"] + special["sep"] + special["punct"]) <= 1 + 1e-3).all()

    write_jsonl(tmp_path / "tb.jsonl", TREEBANK)
    extract(loaded, TREEBANK, tmp_path / "tb.h5", max_length=64, progress=False)
    scores = run_analysis(DependencyHeads, tmp_path / "tb.h5", corpus=tmp_path / "tb.jsonl", progress=False)
    coverage = scores.tables["coverage"]
    assert "unaligned" not in set(coverage.get("reason", pd.Series(dtype=str)))
    table = table1(scores, min_count=1)
    assert {"det", "nsubj", "obj", "all"} <= set(table["relation"])
    det = table.set_index("relation").loc["det"]
    assert det["n"] == 4  # the, the (t0), the (t1), the (t2)


# --- the position table's limit -------------------------------------------------------------------

def test_max_input_length_by_family():
    from transformers import (AlbertConfig, BertConfig, DebertaV2Config, DistilBertConfig, ElectraConfig,
                              RobertaConfig)

    assert max_input_length(BertConfig()) == 512
    assert max_input_length(RobertaConfig(max_position_embeddings=514, pad_token_id=1)) == 512
    for config in (DistilBertConfig(), ElectraConfig(), AlbertConfig(), DebertaV2Config()):
        assert max_input_length(config) == 512


def test_the_roberta_limit_is_exact(tiny_encoder_dirs, tmp_path):
    loaded = load_model("rob", {"path": str(tiny_encoder_dirs["roberta"])}, device="cpu")
    assert max_input_length(loaded.model.config) == 64  # 66 rows, 2 reserved
    fits = Sentence(id="fits", words=["a"] * 62)  # <s> + 62 x Ġa + </s> = 64 tokens
    stats = extract(loaded, [fits], tmp_path / "s.h5", max_length=64, progress=False)
    assert stats["kept"] == 1
    ids = torch.tensor([encode(loaded.tokenizer, Sentence(id="x", words=["a"] * 63), 0).input_ids])
    with pytest.raises((IndexError, RuntimeError), match="out of"):  # one more is past the table
        loaded.model(input_ids=ids)


def test_max_length_over_the_limit_stops_before_any_work(tiny_encoder_dirs, tmp_path):
    folder = tiny_encoder_dirs["roberta"]
    loaded = load_model("rob", {"path": str(folder)}, device="cpu")
    message = (r"`extraction.max_length`: 65 tokens is more than model 'rob' \(roberta\) can take: 64 "
               r"\(max_position_embeddings 66 minus the 2 positions roberta reserves\)\.\n  how to "
               r"fix: set `extraction.max_length` to at most 64")
    with pytest.raises(ModelError, match=message):  # every sentence is short: no tensor error would come
        extract(loaded, CORPUS, tmp_path / "s.h5", max_length=65, progress=False)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ModelError, match=message):  # segment/document preparation
        load_tokenizer("rob", {"path": str(folder)}, max_length=65)
    assert load_tokenizer("rob", {"path": str(folder)}, max_length=64).sep_token == "</s>"
    with pytest.raises(ModelError, match="`finetune.max_length`: 65 tokens .* model 'b' \\(bert\\) can take: 64"):
        check_max_length(65, loaded_config(tiny_encoder_dirs["bert-cased"]), "b", key="finetune.max_length")


def loaded_config(folder):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(folder)


def test_batches_are_encoded_one_ahead_in_order_and_errors_come_with_their_batch():
    import threading

    from headatlas.encoders.inputs import encoded_ahead

    started = {k: threading.Event() for k in range(4)}

    def encode(k):
        started[k].set()
        if k == 3:
            raise ValueError("record 3 is malformed")
        return [k]

    got = []
    ahead = encoded_ahead(encode, [0, 1, 2, 3])
    for batch in ahead:
        # the next batch is being encoded while this one is in the caller's hands
        assert started[batch[0] + 1].wait(timeout=10)
        got.append(batch)
        if batch == [2]:
            break
    assert got == [[0], [1], [2]]
    with pytest.raises(ValueError, match="record 3"):
        list(encoded_ahead(encode, [2, 3]))
    assert list(encoded_ahead(encode, [])) == []
