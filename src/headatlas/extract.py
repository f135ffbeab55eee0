"""Run an encoder over a prepared corpus and write its attention maps to a store.

Examples are tokenised once, sorted by length and cut into batches of similar
length (little padding), run with ``output_attentions=True`` under eager
attention, and written to the store as float16 ``[layers, heads, n, n]``
blocks. Examples longer than ``max_length`` are never silently dropped: they
are counted, listed in the store (``/skipped_ids``) and in the stats.

For BERT-layout models the value-vector norms of Kobayashi et al. (2020) are
recorded beside the maps in the same forward pass (:mod:`headatlas.valuenorms`).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

import headatlas
from headatlas.batching import pad_batch
from headatlas.corpora.records import Sentence
from headatlas.errors import ModelError
from headatlas.models import LoadedModel
from headatlas.store import StoreWriter
from headatlas.valuenorms import model_class, norm_recorder

log = logging.getLogger(__name__)


@dataclass
class Encoded:
    """One tokenised example; ``word_ids`` index A's and then B's words, -1 = special."""

    index: int
    id: str
    input_ids: list[int]
    token_type_ids: list[int]
    word_ids: list[int]
    n_words: int

    def __len__(self) -> int:
        return len(self.input_ids)


def encode(tokenizer, sentence: Sentence, index: int) -> Encoded:
    """``[CLS] words [SEP]`` or ``[CLS] A [SEP] B [SEP]`` with segment ids 0 / 1."""
    pair = (sentence.words, sentence.words_b) if sentence.words_b else (sentence.words,)
    enc = tokenizer(*pair, is_split_into_words=True, add_special_tokens=True,
                    return_token_type_ids=True, truncation=False)
    offset = {0: 0, 1: len(sentence.words)}
    word_ids = [-1 if w is None else w + offset[s] for w, s in zip(enc.word_ids(), enc.sequence_ids())]
    n_words = len(sentence.words) + len(sentence.words_b or [])
    return Encoded(index, sentence.id, enc["input_ids"], enc["token_type_ids"], word_ids, n_words)


def encode_corpus(tokenizer, sentences: Iterable[tuple[int, Sentence]], max_length: int,
                  stats: Counter) -> tuple[list[Encoded], list[str]]:
    """Tokenise; return the examples that fit and the ids of those that do not."""
    kept, skipped = [], []
    for index, sentence in sentences:
        if not sentence.words:
            stats["empty"] += 1
            skipped.append(sentence.id)
            continue
        example = encode(tokenizer, sentence, index)
        if len(example) > max_length:
            skipped.append(sentence.id)
            stats["too_long"] += 1
            continue
        aligned = len({w for w in example.word_ids if w >= 0})
        if aligned < example.n_words:
            stats["examples_with_unaligned_words"] += 1
            stats["unaligned_words"] += example.n_words - aligned
        kept.append(example)
    stats["kept"] = len(kept)
    return kept, skipped


def length_batches(examples: Sequence[Encoded], batch_size: int,
                   max_tokens: int | None = None) -> Iterator[list[Encoded]]:
    """Batches of similar length: sort by length, cut every ``batch_size`` (or token budget)."""
    ordered = sorted(examples, key=len)
    batch: list[Encoded] = []
    for example in ordered:
        longest = max([len(example)] + [len(e) for e in batch[-1:]])
        if batch and (len(batch) == batch_size or (max_tokens and longest * (len(batch) + 1) > max_tokens)):
            yield batch
            batch = []
        batch.append(example)
    if batch:
        yield batch


def collate(batch: Sequence[Encoded], pad_id: int, device) -> dict[str, torch.Tensor]:
    """Model inputs ``input_ids``, ``token_type_ids``, ``attention_mask`` ``[batch, width]`` on ``device``."""
    inputs = pad_batch(batch, {"input_ids": pad_id, "token_type_ids": 0})
    return {name: tensor.to(device) for name, tensor in inputs.items()}


@torch.inference_mode()
def batch_attentions(model, inputs: dict[str, torch.Tensor]) -> np.ndarray:
    """``[batch, layers, heads, T, T]`` float16 attention probabilities."""
    out = model(**inputs, output_attentions=True, return_dict=True)
    if not out.attentions or any(a is None for a in out.attentions):
        raise ModelError("the model returned no attentions; it must be loaded with "
                         "attn_implementation='eager' (sdpa/flash attention return none)")
    # Halve each layer before stacking: the float32 stack alone costs more than the cast.
    return torch.stack([a.to(torch.float16) for a in out.attentions], dim=1).cpu().numpy()


def shard_range(n: int, shard: int, n_shards: int) -> range:
    """The example indices of shard ``shard`` (0-based) of ``n_shards``: contiguous, balanced."""
    if not 0 <= shard < n_shards:
        raise ValueError(f"shard {shard} is not in 0..{n_shards - 1}")
    return range(n * shard // n_shards, n * (shard + 1) // n_shards)


def extract(loaded: LoadedModel, sentences: Sequence[Sentence], out_path: str | Path, *,
            max_length: int = 128, batch_size: int = 32, max_tokens: int | None = None,
            shard: int = 0, n_shards: int = 1, store_attrs: dict | None = None,
            progress: bool = True, norms: bool = True) -> Counter:
    """Extract the attention of ``sentences`` (this shard) into a new store at ``out_path``.

    ``norms``: also record the value norms and norm maps (Kobayashi et al. 2020) when the
    model has the BERT layout; other models are extracted without them, with a warning.
    """
    stats: Counter = Counter()
    indices = shard_range(len(sentences), shard, n_shards)
    examples, skipped = encode_corpus(loaded.tokenizer, ((i, sentences[i]) for i in indices),
                                      max_length, stats)
    tok = loaded.tokenizer
    device = next(loaded.model.parameters()).device
    attrs = {**loaded.info, **(store_attrs or {}), "n_layers": loaded.n_layers,
             "n_heads": loaded.n_heads, "max_length": max_length, "shard": shard,
             "n_shards": n_shards, "package_version": headatlas.__version__,
             "cls_token": tok.cls_token or "", "sep_token": tok.sep_token or "",
             "n_skipped": len(skipped), "n_too_long": stats["too_long"]}
    attrs["norms"], recorder, warning = norm_recorder(loaded.model, norms)
    attrs["model_class"] = model_class(loaded.model)
    if warning:
        log.warning("%s", warning)
    with StoreWriter(out_path, attrs) as writer, recorder, \
            tqdm(total=len(examples), desc=f"extract {Path(out_path).parent.name}", unit="ex",
                 disable=not progress, mininterval=2) as bar:
        for batch in length_batches(examples, batch_size, max_tokens):
            attn = batch_attentions(loaded.model, collate(batch, tok.pad_token_id or 0, device))
            recorded = recorder.take()
            for row, example in enumerate(batch):
                n = len(example)
                writer.add(example.index, example.id, tok.convert_ids_to_tokens(example.input_ids),
                           example.input_ids, example.token_type_ids, example.word_ids,
                           attn[row, :, :, :n, :n], n_words=example.n_words, **recorded.example(row, n))
            bar.update(len(batch))
        writer.skipped_ids = skipped
    log.info("extracted %d examples into %s; skipped %d (too long: %d, empty: %d)",
             len(examples), out_path, len(skipped), stats["too_long"], stats["empty"])
    return stats
