"""UPOS tagging: packed inputs, fine-tuning, accuracy -- the task model of the head-type ablation.

Guan et al. (2020, §5) ablate the heads of a SQuAD-fine-tuned BERT-large.
SQuAD is not reachable here, so the default task is token-level UPOS tagging
on a treebank (GUM). So that attention crosses sentence boundaries (the
intra/inter-sentence ablation needs that), every example packs consecutive
sentences of one document into ``[CLS] s1 s2 ... [SEP]`` of at most
``max_length`` wordpieces; a word's label sits on its first wordpiece, the
other pieces and the special tokens are not scored. Every example keeps the
sentence index of each token (``-1`` for ``[CLS]``/``[SEP]``).

Training: AdamW with linear warm-up and decay, dropout on, seeded shuffling;
accuracy on the dev split every ``eval_every`` steps, the best weights kept,
early stop after ``patience`` evaluations without improvement; accuracy of
the best weights on the test split. The checkpoint (model, tokenizer, label
map in ``config.json``) is written with ``save_pretrained`` into a temporary
folder renamed into place.

:func:`fine_tune_model` is the ``finetune_upos`` rule's whole job (base model
config entry -> tuned model, metrics, curve); :func:`ablation_evaluator` the
task's evaluator (:data:`headatlas.tasks.TASKS` ``["upos"]``): the tagger scored
with each batch's extra forward arguments (a head plan of the ablation).
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
import os
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from headatlas.encoders.batching import pad_batch, to_device
from headatlas.corpora.records import Sentence
from headatlas.errors import HeadAtlasError
from headatlas.tasks.base import UNITS
from headatlas.io import partial_path
from headatlas.encoders.models import takes_token_types

log = logging.getLogger(__name__)

IGNORE = -100  # label of unscored wordpieces (CrossEntropyLoss's default ignore_index)
SPLITS = ("train", "dev", "test")


@dataclass
class Packed:
    """One packed example: ``[CLS] s1 s2 ... [SEP]`` from one document."""

    doc: str
    input_ids: list[int]
    labels: list[int]  # label id on each word's first wordpiece, IGNORE elsewhere
    sentence_ids: list[int]  # sentence index within the example; -1 for [CLS]/[SEP]

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def n_words(self) -> int:
        return sum(label != IGNORE for label in self.labels)


@dataclass
class TuneOptions:
    """Training settings; defaults keep MiniLM-L6 on GUM under ~10 minutes on 2 CPU cores."""

    epochs: int = 2
    batch_size: int = 16
    lr: float = 5e-5
    max_steps: int | None = None  # cap on optimiser steps (tiny runs); None = epochs decide
    eval_every: int = 50  # optimiser steps between dev evaluations (and after every epoch)
    patience: int = 3  # dev evaluations without improvement before stopping
    warmup: float = 0.1  # share of the steps with a linearly rising learning rate
    weight_decay: float = 0.01
    max_length: int = 128  # wordpieces per example incl. [CLS]/[SEP]
    eval_batch_size: int = 32
    seed: int = 0


# ----------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------

def split_sentences(sentences: Sequence[Sentence]) -> tuple[dict[str, list[Sentence]], bool]:
    """``{train, dev, test: sentences}`` and whether the split was made here by document.

    A corpus with split labels must have all three. A corpus with none (a
    small treebank) is split by document order: the last ~10% of documents
    (at least one) are test, the ~10% before them dev, the rest train.
    """
    groups: dict[str, list[Sentence]] = {}
    for sentence in sentences:
        groups.setdefault(sentence.split, []).append(sentence)
    if set(groups) >= set(SPLITS):
        return {split: groups[split] for split in SPLITS}, False
    if set(groups) != {""}:
        raise HeadAtlasError(f"fine-tuning needs train/dev/test splits; the corpus has "
                             f"{sorted(groups)}.\n  how to fix: use a corpus with all three "
                             "(e.g. gum) or one without split labels (split by document)")
    docs = list(dict.fromkeys(sentence.doc for sentence in sentences))
    if len(docs) < 3:
        raise HeadAtlasError(f"a corpus without splits needs >= 3 documents to split by "
                             f"document, got {len(docs)}")
    k = max(1, len(docs) // 10)
    part = {doc: "train" for doc in docs[:-2 * k]}
    part.update({doc: "dev" for doc in docs[-2 * k:-k]})
    part.update({doc: "test" for doc in docs[-k:]})
    log.warning("corpus has no split labels: split %d documents by order into %d/%d/%d",
                len(docs), len(docs) - 2 * k, k, k)
    return {split: [s for s in sentences if part[s.doc] == split] for split in SPLITS}, True


def label_map(sentences: Sequence[Sentence]) -> dict[str, int]:
    """UPOS tag -> id over every split (the tag inventory, not the data, so no leak)."""
    missing = [s.id for s in sentences if s.upos is None]
    if missing:
        raise HeadAtlasError(f"{len(missing)} sentence(s) have no UPOS tags (first: {missing[0]})"
                             ".\n  how to fix: fine-tune on a treebank with a UPOS column")
    return {tag: i for i, tag in enumerate(sorted({t for s in sentences for t in s.upos}))}


def pack_documents(tokenizer, sentences: Sequence[Sentence], label2id: dict[str, int],
                   max_length: int = 128, stats: Counter | None = None) -> list[Packed]:
    """Pack consecutive sentences of each document into examples of <= ``max_length`` pieces.

    Greedy and in document order, so every example is a contiguous stretch of
    text. A sentence that alone exceeds the limit is skipped and counted in
    ``stats`` (``too_long_sentences``/``too_long_words``), never cut; words
    the tokenizer maps to no wordpiece are counted as ``unaligned_words``.
    """
    stats = Counter() if stats is None else stats
    room = max_length - 2  # [CLS] and [SEP]
    docs: dict[str, list[Sentence]] = {}
    for sentence in sentences:
        docs.setdefault(sentence.doc, []).append(sentence)
    examples = []
    for doc, members in docs.items():
        pieces = _word_pieces(tokenizer, members, label2id, stats)
        current: list[tuple[list[int], list[int]]] = []
        for sentence, (ids, labels) in zip(members, pieces):
            if len(ids) > room:
                stats["too_long_sentences"] += 1
                stats["too_long_words"] += len(sentence.words)
                continue
            if current and sum(len(c[0]) for c in current) + len(ids) > room:
                examples.append(_example(tokenizer, doc, current))
                current = []
            current.append((ids, labels))
        if current:
            examples.append(_example(tokenizer, doc, current))
    stats["examples"] += len(examples)
    return examples


def sentence_examples(tokenizer, sentences: Sequence[Sentence], label2id: dict[str, int],
                      max_length: int = 128, stats: Counter | None = None) -> list[Packed]:
    """One example per sentence, ``[CLS] s [SEP]``; a sentence over ``max_length`` wordpieces is
    skipped and counted in ``stats`` (``too_long_sentences``), as :func:`pack_documents` does."""
    stats = Counter() if stats is None else stats
    examples = []
    for sentence, (ids, labels) in zip(sentences, _word_pieces(tokenizer, sentences, label2id, stats)):
        if len(ids) > max_length - 2:
            stats["too_long_sentences"] += 1
            continue
        examples.append(_example(tokenizer, sentence.doc, [(ids, labels)]))
    return examples


def _word_pieces(tokenizer, sentences: Sequence[Sentence], label2id: dict[str, int],
                 stats: Counter) -> list[tuple[list[int], list[int]]]:
    """Per sentence: wordpiece ids and labels (first piece of a word labelled)."""
    enc = tokenizer([s.words for s in sentences], is_split_into_words=True,
                    add_special_tokens=False, truncation=False)
    out = []
    for i, sentence in enumerate(sentences):
        word_ids = enc.word_ids(i)
        labels, seen = [], set()
        for w in word_ids:
            labels.append(IGNORE if w is None or w in seen else label2id[sentence.upos[w]])
            seen.add(w)
        stats["unaligned_words"] += len(sentence.words) - len(seen - {None})
        stats["sentences"] += 1
        out.append((enc["input_ids"][i], labels))
    return out


def _example(tokenizer, doc: str, parts: list[tuple[list[int], list[int]]]) -> Packed:
    ids = [tokenizer.cls_token_id] + [t for p in parts for t in p[0]] + [tokenizer.sep_token_id]
    labels = [IGNORE] + [t for p in parts for t in p[1]] + [IGNORE]
    sentence_ids = [-1] + [k for k, p in enumerate(parts) for _ in p[0]] + [-1]
    return Packed(doc, ids, labels, sentence_ids)


def collate(batch: Sequence[Packed], pad_id: int, token_types: bool = True
            ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Model inputs (with ``labels``) and ``sentence_ids`` ``[batch, width]`` (-1 = special/pad).

    ``token_types``: add all-0 ``token_type_ids`` (one segment), for models that take them
    (:func:`headatlas.encoders.models.takes_token_types`; DistilBERT's forward has no such argument).
    """
    inputs = pad_batch(batch, {"input_ids": pad_id, "labels": IGNORE, "sentence_ids": -1})
    sentence_ids = inputs.pop("sentence_ids")
    if token_types:
        inputs["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
    return inputs, sentence_ids


def batches(examples: Sequence[Packed], size: int, order: Sequence[int] | None = None
            ) -> Iterator[list[Packed]]:
    """Consecutive groups of ``size`` examples, in ``order`` (default: as given)."""
    order = list(range(len(examples)) if order is None else order)
    for start in range(0, len(order), size):
        yield [examples[i] for i in order[start:start + size]]


# ----------------------------------------------------------------------------
# evaluation
# ----------------------------------------------------------------------------

@torch.inference_mode()
def tag_scores(model, examples: Sequence[Packed], batch_size: int = 32,
               extra_inputs: Callable[[torch.Tensor], dict] | None = None, units: bool = False) -> dict:
    """Word accuracy (%) and mean cross-entropy over the scored wordpieces.

    ``extra_inputs(sentence_ids)`` adds keyword arguments to each forward
    call (the ablation passes its per-batch state this way). ``units``: also
    :data:`~headatlas.tasks.base.UNITS`, per sentence (in the examples' order) its correct
    and scored words, for bootstrap intervals over sentences.
    """
    if not examples:
        raise ValueError("tag_scores needs at least one example")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    pad = model.config.pad_token_id or 0
    token_types = takes_token_types(model)
    correct = total = offset = 0
    loss_sum = 0.0
    n_sentences = sum(max(e.sentence_ids) + 1 for e in examples)
    unit_correct, unit_total = np.zeros(n_sentences), np.zeros(n_sentences)
    for batch in batches(examples, batch_size):
        inputs, sentence_ids = collate(batch, pad, token_types)
        labels = inputs.pop("labels").to(device)
        extra = extra_inputs(sentence_ids.to(device)) if extra_inputs else {}
        logits = model(**to_device(inputs, device), **extra).logits
        scored = labels != IGNORE
        hits = logits.argmax(-1)[scored] == labels[scored]
        correct += int(hits.sum())
        total += int(scored.sum())
        loss_sum += float(torch.nn.functional.cross_entropy(logits[scored], labels[scored],
                                                            reduction="sum"))
        if units:  # a sentence's unit: the examples' sentences in order (ids are per example)
            per_example = torch.tensor([max(e.sentence_ids) + 1 for e in batch])
            starts = offset + torch.cumsum(per_example, 0) - per_example
            unit = (starts[:, None] + sentence_ids)[scored.cpu()].numpy()
            np.add.at(unit_correct, unit, hits.cpu().numpy())
            np.add.at(unit_total, unit, 1)
            offset += int(per_example.sum())
    model.train(was_training)
    scores = {"accuracy": 100.0 * correct / total, "loss": loss_sum / total, "n_words": total}
    return {**scores, UNITS: (unit_correct, unit_total)} if units else scores


# ----------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------

@dataclass
class TuneResult:
    metrics: dict  # quantity -> value
    curve: pd.DataFrame  # one row per dev evaluation
    model: torch.nn.Module
    tokenizer: object

    def metrics_table(self) -> pd.DataFrame:
        """The metrics as ``quantity, value`` rows (the rule's ``metrics.csv``)."""
        return pd.DataFrame({"quantity": list(self.metrics), "value": list(self.metrics.values())})


def fine_tune(source: str, sentences: Sequence[Sentence], options: TuneOptions | None = None,
              revision: str | None = None, progress: bool = True) -> TuneResult:
    """Fine-tune the encoder at ``source`` (a folder or hub id) for UPOS tagging.

    Returns the best-on-dev model (in memory), its test accuracy and the
    training curve; :func:`save_checkpoint` writes it.
    """
    from transformers import AutoModelForTokenClassification  # TASKS["upos"].model_class

    from headatlas.encoders.models import from_pretrained, tokenizer_from_pretrained

    options = options or TuneOptions()
    torch.manual_seed(options.seed)
    splits, by_document = split_sentences(sentences)
    label2id = label_map(sentences)
    tokenizer = tokenizer_from_pretrained(source, revision)
    model = from_pretrained(
        AutoModelForTokenClassification, source, revision, num_labels=len(label2id), label2id=label2id,
        id2label={i: t for t, i in label2id.items()}, attn_implementation="eager")
    stats = {split: Counter() for split in SPLITS}
    data = {split: pack_documents(tokenizer, splits[split], label2id, options.max_length,
                                  stats[split]) for split in SPLITS}
    for split in SPLITS:
        if not data[split]:
            raise HeadAtlasError(f"no {split} examples fit in {options.max_length} wordpieces")
    started = time.perf_counter()
    curve, best_step = _train(model, data, options, progress)
    seconds = time.perf_counter() - started
    test = tag_scores(model, data["test"], options.eval_batch_size)
    metrics = {"test_accuracy": test["accuracy"], "test_loss": test["loss"],
               "test_words": test["n_words"],
               "dev_accuracy": float(curve["dev_accuracy"].max()), "best_step": best_step,
               "steps": int(curve["step"].max()), "train_seconds": round(seconds, 1),
               "labels": len(label2id), "split_by_document": by_document}
    for split in SPLITS:
        metrics.update({f"{split}_{key}": value for key, value in sorted(stats[split].items())})
    log.info("test accuracy %.2f%% (best dev %.2f%% at step %d) after %.0f s",
             test["accuracy"], metrics["dev_accuracy"], best_step, seconds)
    return TuneResult(metrics, curve, model, tokenizer)


def _train(model, data: dict[str, list[Packed]], options: TuneOptions,
           progress: bool) -> tuple[pd.DataFrame, int]:
    """Train in place, leave the best-on-dev weights loaded; the curve and the best step."""
    per_epoch = math.ceil(len(data["train"]) / options.batch_size)
    total = options.epochs * per_epoch
    if options.max_steps:
        total = min(total, options.max_steps)
    optimizer = torch.optim.AdamW(_param_groups(model, options.weight_decay), lr=options.lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, _linear(options.warmup, total))
    device = next(model.parameters()).device
    pad = model.config.pad_token_id or 0
    token_types = takes_token_types(model)
    rows, losses = [], []
    best = (-1.0, 0, None)  # dev accuracy, step, weights
    stale, started = 0, time.perf_counter()
    model.train()
    stream = itertools.islice(_epochs(data["train"], options), total)
    for step, (epoch, batch) in enumerate(tqdm(stream, total=total, desc="fine-tune", unit="step",
                                               disable=not progress, mininterval=2), 1):
        inputs, _ = collate(batch, pad, token_types)
        loss = model(**to_device(inputs, device)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if step % options.eval_every and step % per_epoch and step != total:
            continue
        dev = tag_scores(model, data["dev"], options.eval_batch_size)
        rows.append({"step": step, "epoch": epoch, "lr": schedule.get_last_lr()[0],
                     "train_loss": sum(losses) / len(losses), "dev_loss": dev["loss"],
                     "dev_accuracy": dev["accuracy"],
                     "seconds": round(time.perf_counter() - started, 1)})
        log.info("step %d: train loss %.4f, dev accuracy %.2f%%", step, rows[-1]["train_loss"],
                 dev["accuracy"])
        losses = []
        if dev["accuracy"] > best[0]:
            best, stale = (dev["accuracy"], step, copy.deepcopy(model.state_dict())), 0
        else:
            stale += 1
        if stale >= options.patience:
            log.info("early stop at step %d: no dev gain in %d evaluations", step, stale)
            break
    model.load_state_dict(best[2])
    model.eval()
    return pd.DataFrame(rows), best[1]


def _linear(warmup_share: float, total: int) -> Callable[[int], float]:
    """Learning-rate factor: linear rise over the warm-up steps, then linear decay to 0."""
    warmup = max(1, int(warmup_share * total))
    return lambda step: min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup)))


def _epochs(train: list[Packed], options: TuneOptions) -> Iterator[tuple[int, list[Packed]]]:
    """``(epoch, batch)`` over every epoch, each in its own seeded random order."""
    generator = torch.Generator().manual_seed(options.seed)
    for epoch in range(1, options.epochs + 1):
        order = torch.randperm(len(train), generator=generator).tolist()
        for batch in batches(train, options.batch_size, order):
            yield epoch, batch


def _param_groups(model, weight_decay: float) -> list[dict]:
    """No weight decay on biases and LayerNorm weights (as in BERT's fine-tuning)."""
    decay, plain = [], []
    for name, param in model.named_parameters():
        (plain if name.endswith("bias") or "LayerNorm" in name else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def fine_tune_model(name: str, spec: dict, sentences: Iterable[Sentence], corpus: str,
                    options: dict | None = None, progress: bool = True) -> TuneResult:
    """Fine-tune the configured model ``name`` (its ``models:`` entry ``spec``) on ``corpus``.

    ``options`` are :class:`TuneOptions` fields. The metrics name the base
    model, its source and the corpus, then :func:`fine_tune`'s metrics, then
    every option.
    """
    from headatlas.encoders.models import resolve

    if spec.get("random_init"):
        raise HeadAtlasError(f"model {name!r} is a random-init variant; fine-tune a pretrained one")
    source, revision = resolve(spec)
    tune = TuneOptions(**(options or {}))
    result = fine_tune(source, list(sentences), tune, revision=revision, progress=progress)
    result.metrics = {"base_model": name,
                      "base_source": spec.get("hub") or spec.get("package") or source,
                      "corpus": corpus, **result.metrics, **vars(tune)}
    return result


def save_checkpoint(model, tokenizer, folder: str | Path) -> Path:
    """``save_pretrained`` model + tokenizer into ``folder``, whole or not at all.

    Written to a hidden sibling folder first and renamed onto ``folder``
    (whatever was there is replaced), so a crash never leaves a half-written
    checkpoint under the final name.
    """
    folder = Path(folder)
    tmp = partial_path(folder)
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


# ----------------------------------------------------------------------------
# the tagger under a head-type ablation
# ----------------------------------------------------------------------------

def upos_task(model, examples: Sequence[Packed], batch_size: int = 32
              ) -> Callable[[Callable | None], dict[str, float]]:
    """``evaluate(batch_kwargs)`` -> word accuracy (%) and loss of the tagger on packed ``examples``.

    ``batch_kwargs(sentence_ids)`` gives each batch's extra forward arguments (an intervention's,
    e.g. :func:`headatlas.interventions.ablation.plan`), or None for the plain forward.
    """

    def evaluate(batch_kwargs: Callable | None = None) -> dict:
        scores = tag_scores(model, examples, batch_size, batch_kwargs, units=True)
        return {"accuracy": scores["accuracy"], "loss": scores["loss"], UNITS: scores[UNITS]}

    return evaluate


def ablation_evaluator(model, tokenizer, sentences: Sequence[Sentence], *, corpus: str = "",
                       split: str = "test", max_examples: int | None = None,
                       max_length: int = 128, batch_size: int = 32
                       ) -> tuple[Callable[[Callable | None], dict[str, float]], str]:
    """The tagger's evaluation on the packed ``split`` of ``sentences``, and its description.

    The task's evaluator (:data:`headatlas.tasks.TASKS`, the contract of
    :mod:`headatlas.tasks.base`): ``corpus`` names the treebank in the description; the first
    ``max_examples`` sentences of the split are packed as in fine-tuning, ``max_length``
    wordpieces per input; every tag must be in the tagger's label map.
    """
    parts, by_document = split_sentences(list(sentences))
    chosen = parts[split][:max_examples]
    unknown = {t for s in chosen for t in s.upos} - set(model.config.label2id)
    if unknown:
        raise HeadAtlasError(f"tags {sorted(unknown)} are not in the tagger's label map; was it "
                             f"fine-tuned on {corpus}?")
    stats = Counter()
    examples = pack_documents(tokenizer, chosen, model.config.label2id, max_length, stats)
    data = (f"UPOS tagging, {corpus} {split} split"
            + (" (documents split by order: the corpus has no splits)" if by_document else "")
            + f", {sum(e.n_words for e in examples)} words in {len(examples)} inputs of <= "
            f"{max_length} wordpieces, each several consecutive sentences of one document"
            + (f"; {stats['too_long_sentences']} sentence(s) longer than that left out"
               if stats["too_long_sentences"] else ""))
    return upos_task(model, examples, batch_size), data
