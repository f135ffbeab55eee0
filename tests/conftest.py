"""Shared fixtures: tiny random encoders (seconds on CPU) and the corpus mirror location."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "'", "s", "the", "a", "cat",
         "dog", "sat", "on", "mat", "it", "was", "happy", "big", "red", "house", "run", "##s",
         "##ning", "walk", "##ed", "and", "he", "she", "saw", "bird", "##ie"]


def mirror_dir() -> Path | None:
    """The corpus mirror: $HEADATLAS_MIRROR, else ../shared/data beside the repo."""
    path = Path(os.environ.get("HEADATLAS_MIRROR") or ROOT.parent / "shared" / "data")
    return path if path.is_dir() else None


def raises_at(path: Path, line: int, problem: str):
    """Expect a CorpusFormatError whose message starts with ``path:line: problem``."""
    from headatlas.errors import CorpusFormatError

    return pytest.raises(CorpusFormatError, match="^" + re.escape(f"{path}:{line}: {problem}"))


def make_tiny_model(folder: Path, layers: int = 2, heads: int = 2, seed: int = 0) -> Path:
    """Save a random BertModel + WordPiece tokenizer; both load with from_pretrained."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    BertTokenizer(vocab={w: i for i, w in enumerate(VOCAB)}, do_lower_case=True).save_pretrained(folder)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=32, max_position_embeddings=64)
    BertModel(config).save_pretrained(folder)
    return folder


# --- tiny random encoders of every supported family -----------------------------------------
# Each builder saves a tokenizer built here (no network) next to a random model of its
# architecture; both load with from_pretrained. Word lists for BPE/Unigram vocabularies:
WORDS = [w for w in VOCAB if not w.startswith("[") and not w.startswith("##")]
PIECES = ["s", "ning", "ed", "ie"]  # word-internal pieces, as in VOCAB's ##-pieces
CASED = ["The", "It", "He", "She"]  # the cased WordPiece vocabulary's extra words
FAMILIES = ("bert-uncased", "bert-cased", "roberta", "distilbert", "electra", "albert", "deberta-v2",
            "modernbert")


def _tiny_sizes(layers: int, heads: int) -> dict:
    return {"hidden_size": 16, "num_hidden_layers": layers, "num_attention_heads": heads,
            "intermediate_size": 32}


def _unigram_vocab(specials: list[str]) -> list[tuple[str, float]]:
    """SentencePiece-style pieces: specials, ``▁word``, word-internal pieces, single characters."""
    chars = sorted({c for w in WORDS + PIECES for c in w})
    return ([(s, 0.0) for s in specials] + [("▁", -3.0)] + [("▁" + w, -2.0) for w in WORDS]
            + [(p, -2.5) for p in PIECES] + [(c, -6.0) for c in chars if c not in WORDS])


def _byte_bpe_tokenizer(specials: list[str]):
    """A byte-level BPE tokenizer trained on the tiny words (deterministic), ``specials`` first."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    trainer = trainers.BpeTrainer(vocab_size=320, show_progress=False, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([" ".join(WORDS + ["running", "walked", "birdie", "cats"])] * 4, trainer)
    return tok


def _byte_bpe() -> tuple[dict, list]:
    """RoBERTa's byte-level BPE vocabulary and merges."""
    model = json.loads(_byte_bpe_tokenizer(["<s>", "<pad>", "</s>", "<unk>", "<mask>"]).to_str())["model"]
    return model["vocab"], [tuple(m) for m in model["merges"]]


def _modernbert_tokenizer():
    """ModernBERT's kind of tokenizer: byte-level BPE without a prefix space (as the hub's
    tokenizer.json), BERT's special tokens, ``[CLS] A [SEP] B [SEP]`` from a template, no token types."""
    from tokenizers import decoders, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tok = _byte_bpe_tokenizer(specials)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[(t, tok.token_to_id(t)) for t in ("[CLS]", "[SEP]")])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]",
                                   model_input_names=["input_ids", "attention_mask"])


def _sentencepiece_model(path: Path, specials: list[str]) -> int:
    """Train a tiny SentencePiece unigram model (``specials``: pad, unk, cls, sep, mask); its size."""
    import sentencepiece as spm

    text = path.with_suffix(".txt")
    text.write_text("".join(" ".join(WORDS[i:] + WORDS[:i]) + "\n" for i in range(len(WORDS))))
    pad, unk, cls, sep, mask = specials
    ids = {name: specials.index(name) for name in (pad, unk, cls, sep)}
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(path.with_suffix("")), vocab_size=60, model_type="unigram",
        pad_id=ids[pad], unk_id=ids[unk], bos_id=ids[cls], eos_id=ids[sep], pad_piece=pad, unk_piece=unk,
        bos_piece=cls, eos_piece=sep, user_defined_symbols=[mask], hard_vocab_limit=False, num_threads=1,
        minloglevel=2)
    text.unlink()
    path.with_suffix(".vocab").unlink()
    return spm.SentencePieceProcessor(model_file=str(path)).get_piece_size()


def make_tiny_encoder(folder: Path, family: str, layers: int = 2, heads: int = 2, seed: int = 0,
                      max_positions: int = 64, head: str = "", sentencepiece_file: bool = False) -> Path:
    """Save a tiny random encoder of ``family`` (one of :data:`FAMILIES`) and its tokenizer.

    ``head="mlm"`` saves the ``...ForMaskedLM`` model instead of the bare encoder.
    ``max_positions`` is the usable input length: RoBERTa's table gets 2 rows more.
    ``sentencepiece_file`` (ALBERT, DeBERTa-v2): ship a trained ``spiece.model`` /
    ``spm.model`` and no ``tokenizer.json``, as those checkpoints do on the hub.
    """
    import torch
    import transformers as tf

    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {FAMILIES}")
    folder.mkdir(parents=True, exist_ok=True)
    wordpiece = {w: i for i, w in enumerate(VOCAB)}
    sizes = _tiny_sizes(layers, heads)
    if family == "bert-uncased":
        tokenizer = tf.BertTokenizer(vocab=wordpiece, do_lower_case=True)
        config = tf.BertConfig(vocab_size=len(VOCAB), max_position_embeddings=max_positions, **sizes)
    elif family == "bert-cased":
        cased = {w: i for i, w in enumerate(VOCAB + CASED)}
        tokenizer = tf.BertTokenizer(vocab=cased, do_lower_case=False)
        config = tf.BertConfig(vocab_size=len(cased), max_position_embeddings=max_positions, **sizes)
    elif family == "electra":
        tokenizer = tf.BertTokenizer(vocab=wordpiece, do_lower_case=True)
        config = tf.ElectraConfig(vocab_size=len(VOCAB), embedding_size=16,
                                  max_position_embeddings=max_positions, **sizes)
    elif family == "distilbert":
        tokenizer = tf.DistilBertTokenizer(vocab=wordpiece, do_lower_case=True)
        config = tf.DistilBertConfig(vocab_size=len(VOCAB), dim=16, n_layers=layers, n_heads=heads,
                                     hidden_dim=32, max_position_embeddings=max_positions)
    elif family == "roberta":
        vocab, merges = _byte_bpe()
        tokenizer = tf.RobertaTokenizer(vocab=vocab, merges=merges)
        config = tf.RobertaConfig(vocab_size=len(vocab), pad_token_id=tokenizer.pad_token_id,
                                  bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                                  max_position_embeddings=max_positions + 2, type_vocab_size=1, **sizes)
    elif family == "albert":
        vocab = _unigram_vocab(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"])
        tokenizer = tf.AlbertTokenizer(vocab=vocab)
        config = tf.AlbertConfig(vocab_size=len(vocab), embedding_size=16,
                                 max_position_embeddings=max_positions, **sizes)
    elif family == "modernbert":  # pre-LN, RoPE, every other layer a sliding window of +-4 tokens
        tokenizer = _modernbert_tokenizer()
        ids = {f"{t}_token_id": tokenizer.convert_tokens_to_ids(f"[{t.upper()}]") for t in ("pad", "cls", "sep")}
        config = tf.ModernBertConfig(vocab_size=len(tokenizer), max_position_embeddings=max_positions,
                                     local_attention=8, global_attn_every_n_layers=2,
                                     bos_token_id=ids["cls_token_id"], eos_token_id=ids["sep_token_id"],
                                     **ids, **sizes)
    else:  # deberta-v2 (v3 layout: relative attention, no absolute positions, no token types)
        vocab = _unigram_vocab(["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"])
        tokenizer = tf.DebertaV2Tokenizer(vocab=vocab, do_lower_case=True)
        config = tf.DebertaV2Config(vocab_size=len(vocab), max_position_embeddings=max_positions,
                                    relative_attention=True, position_buckets=16, max_relative_positions=-1,
                                    pos_att_type=["p2c", "c2p"], position_biased_input=False,
                                    type_vocab_size=0, pad_token_id=tokenizer.pad_token_id, **sizes)
    tokenizer.save_pretrained(folder)
    if sentencepiece_file:
        if family not in ("albert", "deberta-v2"):
            raise ValueError(f"{family} has no SentencePiece model file")
        name = "spiece.model" if family == "albert" else "spm.model"
        specials = [tokenizer.pad_token, tokenizer.unk_token, tokenizer.cls_token, tokenizer.sep_token,
                    tokenizer.mask_token]
        config.vocab_size = max(config.vocab_size, _sentencepiece_model(folder / name, specials))
        (folder / "tokenizer.json").unlink()
    torch.manual_seed(seed)
    cls = tf.AutoModelForMaskedLM if head == "mlm" else tf.AutoModel
    cls.from_config(config).save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    """Tiny models gain nothing from threads; on a busy machine extra threads only spin."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny-bert"))


# Where the tests that take ``tiny_model`` run it (docs/development.md): the CPU; a GPU
# (``HEADATLAS_TEST_DEVICE=cuda``, benchmarks/gpu_check.sh); or the CPU posing as another device
# (``simulated``: tests/simulated_device.py), where mixing host and device tensors fails as on CUDA.
TEST_DEVICE = os.environ.get("HEADATLAS_TEST_DEVICE", "cpu")


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir):
    from headatlas.encoders.models import load_model

    return load_model("tiny", {"path": str(tiny_model_dir)}, device="cuda" if TEST_DEVICE == "cuda" else "cpu")


@pytest.fixture(autouse=TEST_DEVICE == "simulated")
def tiny_model_on_a_simulated_device(request):
    """``HEADATLAS_TEST_DEVICE=simulated``: each test that takes ``tiny_model`` runs with it on
    the simulated device."""
    if "tiny_model" not in request.fixturenames:
        yield
        return
    from tests.simulated_device import SimulatedDevice

    model = request.getfixturevalue("tiny_model")
    with SimulatedDevice() as device:
        device.place(model.model)
        yield


@pytest.fixture(scope="session")
def tiny_encoder_dirs(tmp_path_factory) -> dict[str, Path]:
    """One saved tiny random encoder (2 layers x 2 heads, 64 positions) per family."""
    root = tmp_path_factory.mktemp("tiny-encoders")
    return {family: make_tiny_encoder(root / family, family) for family in FAMILIES}


# --- two test processes (make test: pytest -n 2, issue 33) ----------------------------------------
# pytest-xdist hands each process whole groups of tests: a test file, so a file's module fixtures
# (a whole workflow run) are built once, in one process; or TINY_RUN, the files that run
# Snakemake inside the shared tiny run (test_reruns edits its code while the others plan it).
# Groups go out in collection order, sorted here longest first: the other process meanwhile
# takes the shorter ones, and the unit tests fill in at the end. (A scheduler of our own, not
# xdist_group marks: xdist 3.8 groups those by rewriting item._nodeid, which pytest 9 ignores.)
TINY_RUN = "tiny-run"
TINY_RUN_FILES = ("test_pipeline.py", "test_reruns.py", "test_dottest.py", "test_report.py",
                  "test_atlas_browser.py")
LONGEST_FIRST = ("test_paper.py", TINY_RUN, "test_slurm.py", "test_fused.py", "test_optional.py",
                 "test_isolation.py", "test_module.py", "test_declarations.py", "test_fingerprints.py",
                 "test_inputs.py")


def group_of(nodeid: str) -> str:
    """The group of a test: its file, or TINY_RUN."""
    file = nodeid.split("::")[0]
    return TINY_RUN if Path(file).name in TINY_RUN_FILES else file


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        group = group_of(item.nodeid)
        name = group if group == TINY_RUN else Path(group).name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: a file's tests stay together and in order


@pytest.hookimpl(optionalhook=True)  # pytest without xdist runs the tests in one process
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    config.option.loadscopereorder = False  # keep the order above
    return ByGroup(config, log)


@pytest.fixture(params=["numpy", "compiled"])
def loops(request, monkeypatch):
    """A test run on both paths of the per-map quantities: numpy's, and the compiled loops a
    process takes once it has widened enough maps or a fused extraction starts them
    (:func:`headatlas.store.halves.compiled`)."""
    from headatlas.store import halves

    monkeypatch.setattr(halves, "_started", request.param == "compiled")
    monkeypatch.setattr(halves, "NUMPY_HALVES", 10 ** 18)
    return request.param
