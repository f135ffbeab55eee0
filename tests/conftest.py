"""Shared fixtures: a tiny random BERT (seconds on CPU) and the corpus mirror location."""

from __future__ import annotations

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


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir):
    from headatlas.models import load_model

    return load_model("tiny", {"path": str(tiny_model_dir)}, device="cpu")
