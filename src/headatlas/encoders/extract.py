"""Run an encoder over a prepared corpus and write its attention maps to a store.

Examples are tokenised once, sorted by length and cut into batches of similar
length (little padding), run with ``output_attentions=True`` under eager
attention, and written to the store as float16 ``[layers, heads, n, n]``
blocks. Examples longer than ``max_length`` are never silently dropped: they
are counted, listed in the store (``/skipped_ids``) and in the stats.

Inputs are built by the model's own tokenizer from word lists: ``[CLS] A [SEP]``
or ``[CLS] A [SEP] B [SEP]`` in BERT's notation, ``<s> A </s></s> B </s>`` for
RoBERTa (every separator token counts as ``[SEP]``). Segment ids are fed only
to a model with a token-type table (:func:`headatlas.encoders.models.takes_token_types`);
for the others (DistilBERT, RoBERTa, DeBERTa-v3) the store records 0 throughout.
For BERT-layout models the value-vector norms of Kobayashi et al. (2020) are
recorded beside the maps in the same forward pass (:mod:`headatlas.encoders.valuenorms`).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from headatlas.encoders.allocator import keep_buffers_in_heap
from headatlas.encoders.batching import HostArray, pack_examples
from headatlas.encoders.inputs import collate, count_unaligned, encode_batch, encoded_ahead, plan_corpus
from headatlas.corpora.records import Sentence
from headatlas.errors import EmptyStoreError, ModelError
from headatlas.encoders.models import LoadedModel, check_max_length
from headatlas.io import check_free_space
from headatlas.provenance import code_version
from headatlas.store.schema import NORMS_RECORDED, store_bytes
from headatlas.store.writer import StoreWriter
from headatlas.store.reader import empty_store_message
from headatlas.encoders.valuenorms import model_class, norm_recorder

log = logging.getLogger(__name__)


def forward_attentions(model, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Run ``model`` with ``output_attentions``: one ``[batch, heads, T, T]`` tensor per layer."""
    out = model(**inputs, output_attentions=True, return_dict=True)
    if not out.attentions or any(a is None for a in out.attentions):
        raise ModelError("the model returned no attentions; it must be loaded with "
                         "attn_implementation='eager' (sdpa/flash attention return none)")
    return out.attentions


@torch.inference_mode()
def batch_attentions(model, inputs: dict[str, torch.Tensor]) -> np.ndarray:
    """``[batch, layers, heads, T, T]`` float16 attention probabilities (padding kept)."""
    # Halve each layer before stacking: the float32 stack alone costs more than the cast.
    return torch.stack([a.to(torch.float16) for a in forward_attentions(model, inputs)], dim=1).cpu().numpy()


@torch.inference_mode()
def capture_batch(model, inputs: dict[str, torch.Tensor], lengths: Sequence[int]) -> HostArray:
    """Forward, and every example's ``[layers, heads, n, n]`` float16 maps back to back, flat.

    What the store keeps, in one buffer (:func:`~headatlas.encoders.batching.pack_examples`: the
    padding cut and the float16 cast in one copy), moved to the host once per batch without
    waiting for the device (:class:`~headatlas.encoders.batching.HostArray`).
    """
    return HostArray(pack_examples(forward_attentions(model, inputs), lengths, token_dims=2))


def largest_buffer(widths: Iterable[int], batch_size: int, n_layers: int, n_heads: int) -> int:
    """Bytes of the largest per-batch array extraction allocates: a layer's float32 attention
    ``[batch, heads, T, T]`` or the batch's packed float16 maps (every layer) at the widest of
    the examples' ``widths`` (wordpieces)."""
    width = int(max(widths))
    return batch_size * n_heads * width * width * max(4, 2 * n_layers)


def store_special_tokens(tokenizer) -> dict[str, str]:
    """The store's ``cls_token`` / ``sep_token`` attributes: the tokenizer's own strings.

    Every token equal to ``sep_token`` counts as ``[SEP]``: RoBERTa's pairs
    ``<s> A </s></s> B </s>`` have three.
    """
    missing = [name for name in ("cls_token", "sep_token") if getattr(tokenizer, name, None) is None]
    if missing:
        raise ModelError(f"{type(tokenizer).__name__} has no {' and no '.join(missing)}: the analyses "
                         "find [CLS] and [SEP] by the tokenizer's own special tokens")
    return {"cls_token": str(tokenizer.cls_token), "sep_token": str(tokenizer.sep_token)}


def shard_range(n: int, shard: int, n_shards: int) -> range:
    """The example indices of shard ``shard`` (0-based) of ``n_shards``: contiguous, balanced."""
    if not 0 <= shard < n_shards:
        raise ValueError(f"shard {shard} is not in 0..{n_shards - 1}")
    return range(n * shard // n_shards, n * (shard + 1) // n_shards)


class WriteBehind:
    """Run ``write(item)`` on one background thread, at most ``max_pending`` items queued.

    Extraction hands each batch's maps to it and goes on with the next forward pass, so the
    HDF5 write of batch k overlaps the forward of batch k+1 (torch releases the GIL during
    its kernels; h5py holds it for most of a write). The queue is bounded: at most
    ``max_pending`` batches wait, plus the one being written, so memory stays bounded when
    writing is slower than the forward pass (the producer then waits in :meth:`put`).

    Use as a context manager. An exception in ``write`` is raised in the caller's thread, at
    the next :meth:`put` or at the end of the ``with`` block; the items after it are dropped.
    When the caller's block raises, the thread is stopped (queued items dropped) and joined
    before the exception goes on, so nothing writes to the store after it is discarded.
    ``max_pending=0``: no thread, ``write`` runs inline in :meth:`put` (the sequential path).
    """

    _STOP = object()

    def __init__(self, write: Callable[[object], None], max_pending: int = 2):
        if max_pending < 0:
            raise ValueError(f"max_pending must be >= 0, got {max_pending}")
        self._write, self.max_pending = write, max_pending
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._abort = threading.Event()

    def __enter__(self) -> "WriteBehind":
        if self.max_pending:
            self._queue = queue.Queue(maxsize=self.max_pending)
            self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is self._STOP:
                return
            if self._error is None and not self._abort.is_set():
                try:
                    self._write(item)
                except BaseException as err:  # handed to the caller's thread
                    self._error = err
            # After an error or an abort the queue is still drained, so put() never blocks forever.

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def put(self, item) -> None:
        """Queue ``item`` (waits while ``max_pending`` items are queued); raise the writer's error."""
        if self._thread is None:
            self._write(item)
            return
        self._raise_error()
        self._queue.put(item)

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._thread is None:
            return
        if exc_type is not None:
            self._abort.set()
        self._queue.put(self._STOP)
        self._thread.join()
        if exc_type is None:
            self._raise_error()


def extract(loaded: LoadedModel, sentences: Sequence[Sentence], out_path: str | Path, *,
            max_length: int = 128, batch_size: int = 32, max_tokens: int | None = None,
            shard: int = 0, n_shards: int = 1, store_attrs: dict | None = None,
            progress: bool = True, norms: bool = True, write_ahead: int = 2) -> Counter:
    """Extract the attention of ``sentences`` (this shard) into a new store at ``out_path``.

    ``norms``: also record the value norms and norm maps (Kobayashi et al. 2020) when the
    model has the BERT layout; other models are extracted without them, with a warning.
    ``write_ahead``: batches that may wait for the background writer (:class:`WriteBehind`)
    while the next forward pass runs; 0 writes each batch before the next forward
    (sequential). The store's contents do not depend on it.
    Raises :class:`~headatlas.errors.ModelError` before any work when
    ``max_length`` is longer than the model's position table allows, and
    :class:`~headatlas.errors.EmptyStoreError` (naming the corpus and why, writing
    nothing) when no record of this shard can be extracted.
    """
    check_max_length(max_length, loaded.model.config, loaded.info.get("model_name", loaded.model_class))
    tok = loaded.tokenizer
    part = shard_range(len(sentences), shard, n_shards)
    plan = plan_corpus(tok, sentences, max_length, part)  # each batch encoded in its turn
    kept, (skipped, stats) = plan.kept, plan.skipped(sentences, part)
    stats["kept"] = len(kept)
    widths = plan.length(kept)
    device = next(loaded.model.parameters()).device
    attrs = {**loaded.info, **(store_attrs or {}), "n_layers": loaded.n_layers,
             "n_heads": loaded.n_heads, "max_length": max_length, "shard": shard,
             "n_shards": n_shards, **code_version(),
             **store_special_tokens(tok),
             "n_skipped": len(skipped), "n_too_long": stats["too_long"]}
    if not len(kept):
        shard_note = f" (shard {shard} of {n_shards})" if n_shards > 1 else ""
        raise EmptyStoreError(empty_store_message(attrs, len(skipped), stats["too_long"],
                                                  where=f"{out_path} not written{shard_note}"))
    attrs["norms"], recorder, warning = norm_recorder(loaded.model, norms)
    keep_buffers_in_heap(largest_buffer(widths, batch_size, loaded.n_layers, loaded.n_heads))
    attrs["model_class"] = model_class(loaded.model)
    if warning:
        log.warning("%s", warning)
    expected = store_bytes(widths.tolist(), loaded.n_layers, loaded.n_heads,
                           attrs["norms"] == NORMS_RECORDED)
    check_free_space(Path(out_path).parent, expected)  # refuse now, not after hours
    with StoreWriter(out_path, attrs) as writer, recorder, \
            tqdm(total=len(kept), desc=f"extract {Path(out_path).parent.name}", unit="ex",
                 disable=not progress, mininterval=2) as bar:

        writer.expected_bytes = expected

        def write_batch(item) -> None:
            batch, attn, norms = item
            writer.add_batch([e.index for e in batch], [e.id for e in batch],
                             [tok.convert_ids_to_tokens(e.input_ids) for e in batch],
                             [e.input_ids for e in batch], [e.token_type_ids for e in batch],
                             [e.word_ids for e in batch], attn.numpy(), layers=loaded.n_layers,
                             heads=loaded.n_heads, n_words=[e.n_words for e in batch], **norms.arrays())
            bar.update(len(batch))

        # The writer thread is joined before the store is closed (or, on an error, discarded).
        with WriteBehind(write_batch, write_ahead) as pending:
            for batch in encoded_ahead(lambda positions: encode_batch(tok, sentences, positions),
                                       plan.batches(batch_size, max_tokens)):
                for example in batch:
                    count_unaligned(example, stats)
                lengths = [len(e) for e in batch]
                attn = capture_batch(loaded.model, collate(batch, tok.pad_token_id or 0, device), lengths)
                pending.put((batch, attn, recorder.take_packed(lengths)))
        writer.skipped_ids = skipped
    log.info("extracted %d examples into %s; skipped %d (too long: %d, empty: %d)",
             len(kept), out_path, len(skipped), stats["too_long"], stats["empty"])
    return stats
