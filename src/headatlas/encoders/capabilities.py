"""What a model can do, read from its files before any work: no torch, no transformers.

The Snakefile imports :mod:`headatlas.pipeline.config` when it is parsed, and the
configuration is checked against each model's capabilities there, so this
module reads only ``config.json`` (JSON) and the checkpoint's tensor names
(the JSON header of ``model.safetensors``: an 8-byte little-endian length, then
that many bytes of JSON; or ``model.safetensors.index.json``). No weight is
loaded.

For every model it answers (:class:`Capabilities`):

* ``norm_layout``: the row of :data:`NORM_LAYOUTS` its attention blocks follow
  (where Kobayashi et al.'s value norms are read), or why none does;
* ``masked_lm_head``: whether the checkpoint carries trained masked-LM head
  weights (tensor names under :data:`MASKED_LM_PREFIXES`), whatever its
  ``architectures`` field says (all-mpnet-base-v2 names ``MPNetForMaskedLM``
  and has no ``lm_head`` tensor);
* ``qa_head``: whether it carries a question-answering head (``qa_outputs``);
* ``token_types``: whether it has a token-type table of >= 2 rows;
* ``max_length``: the usable input length, ``max_position_embeddings`` less the
  positions the family reserves (:data:`PADDING_OFFSET_TYPES`).

A ``package:`` or ``path:`` model is read from its folder; a ``hub:`` model from
the local hub cache when it is there. Anything that cannot be read is None
(unknown): the configuration is then neither refused nor trimmed for it, and
the job itself reports what it finds.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from headatlas.encoders.layouts import (NORM_LAYOUTS, PADDING_OFFSET_TYPES, NormLayout,  # noqa: F401 (re-exported)
                               norm_layout_of, supported_types)

# Top-level tensor-name prefixes of the masked-LM heads transformers saves (BERT and its
# ForPreTraining, RoBERTa/MPNet/XLM-R, ALBERT, DistilBERT, ELECTRA's generator, DeBERTa-v2 new and
# legacy, ModernBERT's decoder: its task models share the `head.` prefix). ELECTRA's discriminator
# head (`discriminator_predictions`) is not one.
MASKED_LM_PREFIXES = ("cls.predictions.", "lm_head.", "predictions.", "vocab_transform.",
                      "vocab_projector.", "generator_predictions.", "generator_lm_head.",
                      "lm_predictions.", "decoder.")
QA_PREFIXES = ("qa_outputs.",)


@dataclass(frozen=True)
class Capabilities:
    """What one model can do; None = unknown (its files could not be read here)."""

    source: str
    model_type: str | None = None
    architectures: tuple[str, ...] = ()
    norm_layout: str | None = None
    norms_reason: str | None = None  # why there are no norms (None when norm_layout is set or unknown)
    tensors: bool = False  # whether the checkpoint's tensor names were read
    masked_lm_head: bool | None = None
    qa_head: bool | None = None
    token_types: bool | None = None
    max_length: int | None = None

    @property
    def norms(self) -> bool | None:
        """Whether value norms can be recorded: True, False, or None when unknown."""
        if self.norm_layout:
            return True
        return False if self.norms_reason else None

    def masked_lm_reason(self) -> str:
        """Why the masked-LM loss cannot be used (call when ``masked_lm_head`` is False)."""
        said = (f" although its config.json names {', '.join(self.architectures)}"
                if any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in self.architectures) else "")
        return (f"its checkpoint ({self.source}) has no masked-LM head weights (no tensor named "
                f"{'* or '.join(p for p in MASKED_LM_PREFIXES[:2])}* ...){said}")


def usable_length(config: dict) -> int | None:
    """``max_position_embeddings`` less ``pad_token_id + 1`` for :data:`PADDING_OFFSET_TYPES`."""
    limit = config.get("max_position_embeddings")
    if not limit:
        return None
    if config.get("model_type") in PADDING_OFFSET_TYPES:
        limit -= int(config.get("pad_token_id", 1) or 0) + 1
    return int(limit)


def safetensors_names(path: Path) -> list[str]:
    """The tensor names in a ``.safetensors`` file's header (the weights are not read)."""
    with open(path, "rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        if size > 100_000_000:
            raise ValueError(f"{path}: implausible safetensors header of {size} bytes")
        header = json.loads(handle.read(size))
    return [name for name in header if name != "__metadata__"]


def tensor_names(folder: Path) -> list[str] | None:
    """The checkpoint's tensor names from its safetensors header(s) or index; None if neither is there."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        return list(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}))
    single = folder / "model.safetensors"
    if single.is_file():
        return safetensors_names(single)
    return None


def hub_snapshot(repo: str, revision: str | None = None) -> Path | None:
    """The local hub-cache folder of ``repo`` at ``revision`` (default ``main``), if downloaded."""
    cache = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if not cache:
        home = os.environ.get("HF_HOME") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
        cache = os.path.join(home, "hub")
    root = Path(cache) / f"models--{repo.replace('/', '--')}"
    ref = root / "refs" / (revision or "main")
    commit = ref.read_text().strip() if ref.is_file() else revision
    folder = root / "snapshots" / commit if commit else None
    return folder if folder is not None and (folder / "config.json").is_file() else None


def package_folder(package: str) -> Path | None:
    """The weights folder of an installed model package (``get_model_path()`` or its config.json)."""
    if importlib.util.find_spec(package) is None:
        return None
    module = importlib.import_module(package)
    if hasattr(module, "get_model_path"):
        return Path(module.get_model_path())
    found = sorted(Path(module.__file__).parent.rglob("config.json"))
    return found[0].parent if found else None


def model_folder(spec: dict) -> Path | None:
    """Where ``spec``'s files are on this machine, or None (not installed, not cached)."""
    if spec.get("package"):
        return package_folder(spec["package"])
    if spec.get("path"):
        folder = Path(spec["path"])
        return folder if (folder / "config.json").is_file() else None
    if spec.get("hub"):
        return hub_snapshot(spec["hub"], spec.get("revision"))
    return None


def read_capabilities(folder: Path, source: str) -> Capabilities:
    """:class:`Capabilities` of the checkpoint in ``folder`` (``source`` names it in messages)."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    model_type = config.get("model_type")
    layout = norm_layout_of(model_type)
    reason = None if layout else (f"model type {model_type!r} has no known attention layout for value "
                                  f"norms (known: {supported_types()})")
    try:
        names = tensor_names(folder)
    except (OSError, ValueError):  # unreadable: unknown, the load itself will say more
        names = None
    has = (lambda prefixes: any(n.startswith(prefixes) for n in names)) if names is not None else None
    return Capabilities(
        source=source, model_type=model_type, architectures=tuple(config.get("architectures") or ()),
        norm_layout=layout.name if layout else None, norms_reason=reason, tensors=names is not None,
        masked_lm_head=has(MASKED_LM_PREFIXES) if has else None,
        qa_head=has(QA_PREFIXES) if has else None,
        token_types=int(config.get("type_vocab_size") or 0) >= 2,
        max_length=usable_length(config))


def source_text(spec: dict) -> str:
    key = next((k for k in ("package", "path", "hub") if spec.get(k)), None)
    return f"{key}: {spec[key]}" if key else "no source"


@functools.lru_cache(maxsize=None)
def _cached(package: str | None, path: str | None, hub: str | None, revision: str | None) -> Capabilities:
    spec = {"package": package, "path": path, "hub": hub, "revision": revision}
    source = source_text(spec)
    try:
        folder = model_folder(spec)
        if folder is None:
            return Capabilities(source=source)
        return read_capabilities(folder, source)
    except (OSError, ValueError, ImportError):
        return Capabilities(source=source)


def capabilities(spec: dict) -> Capabilities:
    """The :class:`Capabilities` of a config's model entry, read once per source (cached)."""
    return _cached(spec.get("package"), spec.get("path"), spec.get("hub"), spec.get("revision"))


def clear_cache() -> None:
    """Forget what was read (tests that rewrite a model folder)."""
    _cached.cache_clear()


# --- what the configuration asks of each model ------------------------------------------------

def _gradient_models(config: dict, asked: bool = True) -> list[str]:
    """Models whose gradient importance runs (a surface corpus, trained weights) and, with
    ``asked``, whose `analyses` ask for it."""
    if not (config.get("surface") or {}).get("corpus"):
        return []
    return [m for m, spec in config["models"].items() if not spec.get("random_init")
            and (not asked or spec.get("analyses") is None or "gradients" in spec["analyses"])]


def capability_problems(config: dict) -> list[str]:
    """What the configuration asks explicitly of a model that cannot do it, each naming its key.

    Explicit asks: ``norm`` in a model's own ``weightings``; ``gradients.loss: mlm``;
    ``extraction.max_length`` beyond a model's usable length; a SQuAD ablation model without
    a question-answering head. Unknown capabilities (None) are never refused here.
    """
    problems = []
    top = list(config.get("weightings") or [])
    for m, spec in config["models"].items():
        caps = capabilities(spec)
        if caps.norms is False:
            if "norm" in (spec.get("weightings") or []):
                problems.append(f"`models.{m}.weightings`: norm asks for value norms, but {m} cannot have "
                                f"them: {caps.norms_reason}; set `models.{m}.weightings: [attention]`")
            elif not spec.get("weightings") and top == ["norm"]:
                problems.append(f"`weightings`: [norm] leaves {m} without a view ({caps.norms_reason}); "
                                f"add attention, or give `models.{m}.weightings: [attention]`")
        limit = caps.max_length
        wanted = (config.get("extraction") or {}).get("max_length")
        if limit is not None and wanted is not None and wanted > limit:
            problems.append(f"`extraction.max_length`: {wanted} tokens is more than {m} ({caps.model_type}) "
                            f"can take: {limit}; set it to at most {limit}")
    if (config.get("gradients") or {}).get("loss") == "mlm":
        for m in _gradient_models(config):
            caps = capabilities(config["models"][m])
            if caps.masked_lm_head is False:
                problems.append(f"`gradients.loss`: mlm needs a trained masked-LM head, but {m}: "
                                f"{caps.masked_lm_reason()}; set `gradients.loss: auto` (the contrastive "
                                "loss where the head is absent) or `contrastive`")
    ablation = config.get("ablation") or {}
    model = ablation.get("model")
    if model in config["models"] and ablation.get("task") == "squad":
        caps = capabilities(config["models"][model])
        if caps.qa_head is False:
            problems.append(f"`ablation.model`: the SQuAD ablation needs a question-answering model, but "
                            f"{model}'s checkpoint ({caps.source}) has no `qa_outputs` head; name a model "
                            "fine-tuned on SQuAD")
    return problems


@dataclass(frozen=True)
class Trim:
    """A default a model cannot serve, left out: the model, what and why."""

    model: str
    what: str
    why: str


def default_views(config: dict) -> tuple[dict[str, list[str]], list[Trim]]:
    """Each model's weightings, with ``norm`` dropped where it came from the top-level default
    and the model has no norm layout (:func:`capability_problems` refuses the explicit asks)."""
    views, trims = {}, []
    for m, spec in config["models"].items():
        chosen = list(spec.get("weightings") or config["weightings"])
        caps = capabilities(spec)
        if not spec.get("weightings") and "norm" in chosen and caps.norms is False and len(chosen) > 1:
            chosen.remove("norm")
            trims.append(Trim(m, f"norm-weighted views, norm shares and rollout of {m}",
                              f"{caps.norms_reason} (the top-level `weightings` default asked for norm; "
                              f"`models.{m}.weightings: [attention]` says so explicitly)"))
        views[m] = chosen
    return views, trims


def gradient_losses(config: dict) -> tuple[dict[str, str], list[Trim]]:
    """The loss gradient importance uses per model: ``gradients.loss``, with ``auto`` resolved
    from the checkpoint's tensors (``mlm`` iff masked-LM head weights are present, whatever
    ``architectures`` says); ``auto`` stays where they could not be read. A Trim names each
    model whose ``architectures`` promise a masked-LM head its checkpoint lacks."""
    asked = (config.get("gradients") or {}).get("loss", "auto")
    losses, trims = {}, []
    for m in _gradient_models(config, asked=False):
        caps = capabilities(config["models"][m])
        if asked != "auto":
            losses[m] = asked
        elif caps.masked_lm_head is None:
            losses[m] = "auto"
        else:
            losses[m] = "mlm" if caps.masked_lm_head else "contrastive"
            claims = any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in caps.architectures)
            if not caps.masked_lm_head and claims:
                trims.append(Trim(m, f"the masked-LM loss of {m}'s gradient importance",
                                  f"{caps.masked_lm_reason()}; `gradients.loss: auto` uses the "
                                  "contrastive loss"))
    return losses, trims
