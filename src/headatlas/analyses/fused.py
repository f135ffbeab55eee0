"""Fused extraction: every streaming analysis runs inside the forward pass; no map is stored.

:func:`fused_extract` runs the encoder over a corpus shard as :func:`headatlas.encoders.extract.extract`
does (the same inputs, batches, value norms), but instead of writing each batch's maps to a
store it hands them to every planned analysis run (:class:`Run`: an analysis, its options and
the view of the maps), then drops them. It writes the runs' states
(:mod:`headatlas.store.states`: kilobytes to megabytes, whatever the corpus size) and a
small **exemplar store**: the few examples the figures that draw maps read, as a store of
today's schema.

The maps an analysis sees are the store's, bit for bit: each is rounded to float16 and widened
back exactly as a store reader widens it, so a table from a fused run equals the store run's
(up to the order float sums are added in: batches come in length order, stores in corpus order).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
from tqdm.auto import tqdm

from headatlas.analyses.base import Analysis, analysis_class, finish
from headatlas.analyses.batch import MapBatch, Views, join_layers, norm_weighted, upload
from headatlas.analyses.result import Result
from headatlas.corpora.records import Sentence
from headatlas.encoders.allocator import keep_buffers_in_heap, release_free_heap
from headatlas.encoders.batching import HostArray, pack_examples
from headatlas.encoders.extract import (forward_attentions, largest_buffer, shard_range,
                                        store_special_tokens)
from headatlas.encoders.inputs import (CorpusPlan, Encoded, collate, encode, encode_batch, encoded_ahead,
                                       length_batches, plan_corpus)
from headatlas.encoders.models import LoadedModel, check_max_length
from headatlas.encoders.valuenorms import NormRecorder, model_class, norm_recorder, pack_norms
from headatlas.errors import EmptyStoreError, ModelError, StoreError
from headatlas.provenance import code_version
from headatlas.store.example import Example, token_masks
from headatlas.store import halves
from headatlas.store.halves import widen
from headatlas.store.lengths import read_lengths
from headatlas.store.reader import empty_store_message
from headatlas.store.schema import NORMS_RECORDED, SCHEMA_VERSION, rebuild_hint
from headatlas.store.states import Source, Spill, States, write_states
from headatlas.store.writer import StoreWriter
from headatlas.weightings import check_weighting

log = logging.getLogger(__name__)

# The float32 maps of one view of a chunk of a batch (device path): bert-base's batch of 64 at
# 128 wordpieces (0.6 GB) is one chunk, MPNet-base's batch of 16 at 512 (2.4 GB) three.
VIEW_BYTES = 1 << 30
# Examples between two writes to disk of the states that grow with the examples (per-segment
# or per-sentence rows); bounded states (sums, capped samples) stay in memory.
SPILL_EVERY = 1000
# Every this many examples the heap's free pages go back to the system (release_free_heap): the
# free part of a fragmented heap grew with the shard (3,000 MiniLM segments, the per-head
# statistics: peak RSS 2,443 -> 1,829 MB, the same CPU; after every batch: 1,561 MB but 14% more
# CPU, the freed buffers' pages faulted in again; /tmp measurements of 2026-11-28).
RELEASE_EVERY = 256


@dataclass(frozen=True)
class Run:
    """One analysis run inside the extraction: its key in the states file, the registered
    analysis, its options, the view of the maps it reads (``attention`` or ``norm``) and how
    many examples it sees (the first ``max_examples`` of the corpus, as a store run would)."""

    key: str
    analysis: str
    options: dict = field(default_factory=dict, hash=False, compare=False)
    weighting: str = "attention"
    max_examples: int | None = None


def run_key(analysis: str, weighting: str = "attention") -> str:
    """The states file's name for an analysis under a weighting: ``entropy``, ``entropy-norm``."""
    return analysis if check_weighting(weighting) == "attention" else f"{analysis}-{weighting}"


def exemplar_indices(n_records: int, k: int, seed: int = 0, wanted: Iterable[int] = ()) -> set[int]:
    """The corpus positions whose maps a fused extraction keeps (its exemplar store): ``wanted``
    (positions the config asks a figure to draw) and a seeded sample of ``k`` others out of
    ``n_records``. Every shard draws the same sample and keeps the part in its range."""
    chosen = {int(i) for i in wanted if 0 <= int(i) < n_records}
    rest = np.setdiff1d(np.arange(n_records), sorted(chosen))
    if len(rest) and k > 0:
        rng = np.random.default_rng(seed)
        chosen.update(int(i) for i in rng.choice(rest, size=min(k, len(rest)), replace=False))
    return chosen


def _examples(batch: Sequence[Encoded], tokens: list[list[str]], attn: np.ndarray, norms: dict,
              n_layers: int, n_heads: int, special: dict) -> Iterator[Example]:
    """The batch's examples as a store reader returns them: float16 maps widened to float32,
    one at a time (a batch of float32 maps at once is B times one example's: 1.2 GB of MPNet's
    at 512 wordpieces and batch 8)."""
    a0, v0, m0 = 0, 0, 0
    for encoded, toks in zip(batch, tokens):
        n = len(encoded)
        size = n_layers * n_heads * n * n
        value_norms = norm_map = None
        if norms:
            value_norms = widen(norms["value_norms"][v0:v0 + n_layers * n_heads * n]).reshape(n_layers, n_heads, n)
            norm_map = widen(norms["norm_map"][m0:m0 + n_layers * n * n]).reshape(n_layers, n, n)
            v0, m0 = v0 + n_layers * n_heads * n, m0 + n_layers * n * n
        halves = attn[a0:a0 + size].reshape(n_layers, n_heads, n, n)
        yield Example(
            index=encoded.index, id=encoded.id, tokens=toks,
            input_ids=np.asarray(encoded.input_ids, np.int32),
            token_type_ids=np.asarray(encoded.token_type_ids, np.int8),
            word_ids=np.asarray(encoded.word_ids, np.int32),
            attn=widen(halves), value_norms=value_norms, norm_map=norm_map, **special).widened_from(halves)
        a0 += size


def fused_extract(loaded: LoadedModel, sentences: Sequence[Sentence], states_path: str | Path,
                  runs: Sequence[Run], *, exemplar_path: str | Path | None = None, exemplars: int = 16,
                  exemplar_seed: int = 0, wanted: Iterable[int] = (), max_length: int = 128,
                  batch_size: int = 32, max_tokens: int | None = None, shard: int = 0, n_shards: int = 1,
                  store_attrs: dict | None = None, progress: bool = True, norms: bool = True,
                  inputs: dict | None = None, on_device: bool | None = None,
                  view_bytes: int = VIEW_BYTES, by_layer: bool | None = None, layer_group: int | None = None,
                  spill_every: int = SPILL_EVERY, lengths: str | Path | None = None) -> Counter:
    """Run ``runs`` over this shard of ``sentences`` inside the forward pass; write their states
    to ``states_path`` and the exemplars' maps to ``exemplar_path``.

    ``inputs``: what the analyses need beside the maps, by option name (a corpus file, the
    documents of coreference), given to every run that takes it (a run's own ``options`` win).
    ``on_device``: whether the batched analyses (:meth:`Analysis.batched`) read each batch where
    the model computed it, as one :class:`~headatlas.analyses.batch.MapBatch` (default: when the
    model is not on the CPU, where numpy one example at a time is faster); then no map leaves
    the device unless an analysis without a batched path, or an exemplar, needs it. The batch
    is read in chunks of examples whose float32 maps (one view) take at most ``view_bytes``
    (:data:`VIEW_BYTES`; at least one example a chunk), so the device holds the forward's maps
    and one chunk's views and temporaries, not the whole batch's.
    ``by_layer``: whether the batched analyses on the device read each batch as the model
    produces it, a group of layers at a time, each group's maps dropped (or, where a host reader
    or an exemplar needs them, copied to the host) before the next group runs
    (:func:`_forward_by_layer`: as many layers a group as the batch's float32 maps of one view
    fit in ``view_bytes``, one at least; ``layer_group``: so many); default: whenever the device
    path runs and the model's norms are recorded (the recorder's hooks hand the layers on).
    False: every layer's maps first, then the analyses (as on the host).
    ``spill_every``: after every so many examples each run whose state grows with the examples
    (not :attr:`~headatlas.analyses.base.Analysis.bounded`) writes it out
    (:class:`~headatlas.store.states.Spill`) and starts afresh, so the memory of what the runs
    keep per example does not grow with the shard; a result merges the parts exactly
    (:func:`result_from_states`). 0: every state held to the end.
    ``lengths``: the file of every record's length (:mod:`headatlas.store.lengths`, the
    ``corpus_lengths`` rule), counted once for all the shards; None: this job counts them (a
    pass of the tokenizer over the whole corpus, whatever its shard).
    Raises as :func:`~headatlas.encoders.extract.extract` does (a ``max_length`` the model
    cannot take, no example to extract), and leaves nothing behind then.
    """
    check_max_length(max_length, loaded.model.config, loaded.info.get("model_name", loaded.model_class))
    tok, layers, heads = loaded.tokenizer, loaded.n_layers, loaded.n_heads
    # Batches are cut over the whole corpus and dealt to the shards, so an example's batch (and
    # so its maps, to the last bit) does not depend on how many shards there are; each batch is
    # encoded when its turn comes.
    counted = None if lengths is None else read_lengths(
        lengths, len(sentences), corpus_sha256=(store_attrs or {}).get("corpus_sha256"),
        model_name=loaded.info.get("model_name"))
    plan = plan_corpus(tok, sentences, max_length, lengths=counted)
    batches = plan.batches(batch_size, max_tokens)[shard::n_shards]
    n_kept = sum(len(batch) for batch in batches)
    skipped, stats = plan.skipped(sentences, shard_range(len(sentences), shard, n_shards))
    stats["kept"] = n_kept
    attrs = {**loaded.info, **(store_attrs or {}), "n_layers": layers, "n_heads": heads,
             "max_length": max_length, "shard": shard, "n_shards": n_shards, **code_version(),
             "schema_version": SCHEMA_VERSION,  # of its exemplar store
             **store_special_tokens(tok), "n_skipped": len(skipped), "n_too_long": stats["too_long"]}
    if not len(plan.kept):  # a shard may be dealt no batch; the corpus must have examples
        left_out, empty = plan.left_out(range(len(sentences)))
        raise EmptyStoreError(empty_store_message(attrs, len(left_out), len(left_out) - empty,
                                                  where=f"{states_path} not written"))
    attrs["norms"], recorder, warning = norm_recorder(loaded.model, norms)
    halves.start_compiled()  # numba runs the value norms already: its other loops start in ~0.03 s
    attrs["model_class"] = model_class(loaded.model)
    if warning:
        log.warning("%s", warning)
    streams = _streams(runs, layers, heads, inputs or {}, Source(attrs, skipped), plan.kept)
    if any(s.reads_norms for s in streams.values()) and attrs["norms"] != NORMS_RECORDED:
        raise EmptyStoreError(f"{states_path}: an analysis reads value norms, and this model has "
                              f"none (norms: {attrs['norms']}); set its `weightings: [attention]`")
    # On a device (or when asked: the tests), the batched analyses read the whole batch where it
    # was computed; the rest, and every analysis on the CPU, read host examples one at a time.
    on_device = (next(loaded.model.parameters()).device.type != "cpu") if on_device is None else on_device
    on_device_streams = [s for s in streams.values() if on_device and s.analysis.batched()]
    per_example = [s for s in streams.values() if s not in on_device_streams]
    device_weightings = sorted({s.weighting for s in on_device_streams})
    layerwise = (bool(on_device_streams) and isinstance(recorder, NormRecorder)
                 and all(s.analysis.layered() for s in on_device_streams))
    by_layer = layerwise if by_layer is None else by_layer and layerwise
    if n_kept:
        keep_buffers_in_heap(largest_buffer((plan.length(b).max() for b in batches), batch_size, layers, heads))
    keep = exemplar_indices(len(sentences), exemplars, exemplar_seed, wanted)
    writer = StoreWriter(exemplar_path, {**attrs, "n_examples_in_corpus": n_kept}) if exemplar_path else None
    spill, unspilled, unreleased = None, 0, 0
    seconds = Counter()  # process CPU seconds: the forward (and copies), each run
    try:
        spill = Spill(states_path) if spill_every else None
        with recorder, tqdm(total=n_kept, desc=f"fused {Path(states_path).parent.parent.name}",
                            unit="ex", disable=not progress, mininterval=2) as bar:
            ahead = encoded_ahead(functools.partial(_encode, tok, sentences, plan=plan, lengths=lengths), batches)
            for number, batch in enumerate(ahead, start=1):
                start = time.process_time()
                kept = [e for e in batch if e.index in keep] if writer is not None else []
                host = not on_device or bool(kept) or bool(per_example)
                if by_layer:  # the device streams read each layer in the forward pass itself
                    inside = sum(s.seconds for s in on_device_streams)
                    examples = _forward_by_layer(loaded, recorder, batch, attrs, on_device_streams, host,
                                                 view_bytes, layer_group)
                    chunks = ()
                    start += sum(s.seconds for s in on_device_streams) - inside  # theirs, not the forward's
                else:
                    examples, chunks = _forward(loaded, recorder, batch, attrs, host, device_weightings,
                                                view_bytes)
                seconds["forward"] += time.process_time() - start
                for views in chunks:
                    for stream in on_device_streams:
                        stream.add_batch(views[stream.weighting])
                    del views  # freed before the next chunk's are made
                for encoded, example in zip(batch, examples or ()):
                    views = _Views(example)  # each weighting computed once, for every run
                    for stream in per_example:
                        stream.add(views)
                    if example.index in keep and writer is not None:
                        _keep(writer, example, encoded.n_words, attrs)
                bar.update(len(batch))
                unspilled += len(batch)
                unreleased += len(batch)
                if unreleased >= RELEASE_EVERY:
                    release_free_heap()
                    unreleased = 0
                if spill is not None and unspilled >= spill_every and number < len(batches):
                    # a bounded state (sums, a capped sample) stays: written out, its parts
                    # would add up to a size that grows with the shard
                    growing = {key: stream for key, stream in streams.items() if not stream.analysis.bounded}
                    if growing:
                        spill.write({key: stream.restart() for key, stream in growing.items()})
                    unspilled = 0
        if writer is not None:
            writer.skipped_ids = skipped
            writer.close()
            writer = None
        seconds.update({k: s.seconds for k, s in streams.items()})
        attrs["cpu_seconds"] = json.dumps({k: round(v, 3) for k, v in seconds.items()})
        lengths = {int(i): int(n) for b in batches for i, n in zip(b, plan.length(b))}
        write_states(states_path, {k: (s.analysis, s.weighting) for k, s in streams.items()},
                     attrs, skipped, lengths, spill)
    finally:
        for stream in streams.values():
            stream.analysis.close()
        if writer is not None:
            writer._discard()
        if spill is not None:
            spill.close()
    log.info("fused: %d examples through %d analysis runs into %s; skipped %d (too long: %d); "
             "CPU seconds: %s", n_kept, len(streams), states_path, len(skipped),
             stats["too_long"], ", ".join(f"{k} {v:.1f}" for k, v in seconds.most_common()))
    return stats


def extract_examples(loaded: LoadedModel, sentences: Sequence[Sentence], indices: Iterable[int],
                     weighting: str = "attention", max_length: int = 128,
                     batch_size: int = 32) -> dict[int, Example]:
    """The examples at these corpus positions, extracted again in memory under ``weighting``:
    what a figure draws when a fused run's exemplar store lacks them
    (:class:`~headatlas.store.maps.Maps`). Their own batch, so a map may differ from the
    run's by one float16 step (a picture, never a table)."""
    tok = loaded.tokenizer
    encoded = [encode(tok, sentences[i], i) for i in sorted(set(indices))]
    encoded = [e for e in encoded if len(e) <= max_length]
    attrs = store_special_tokens(tok)
    attrs["norms"], recorder, _ = norm_recorder(loaded.model, check_weighting(weighting) == "norm")
    found = {}
    with recorder:
        for batch in length_batches(encoded, batch_size):
            for example in _batch_examples(loaded, recorder, batch, attrs):
                found[example.index] = example.weighted(weighting)
    return found


def _encode(tok, sentences: Sequence[Sentence], positions: np.ndarray, plan: CorpusPlan,
            lengths: str | Path | None) -> list[Encoded]:
    """A batch of the plan, encoded; lengths of another tokenizer or corpus refused, naming the
    file they came from."""
    try:
        return encode_batch(tok, sentences, positions, plan)
    except ValueError as err:
        if lengths is None:
            raise
        raise StoreError(f"{lengths}: {err}; {rebuild_hint(lengths)}") from err


def _batch_examples(loaded: LoadedModel, recorder, batch: Sequence[Encoded], attrs: dict) -> list[Example]:
    """One forward pass over ``batch``: its examples as a store would give them back."""
    return list(_forward(loaded, recorder, batch, attrs, host=True)[0])


def _forward(loaded: LoadedModel, recorder, batch: Sequence[Encoded], attrs: dict, host: bool = True,
             views: Sequence[str] = (), view_bytes: int = VIEW_BYTES
             ) -> tuple[Iterator[Example] | None, Iterator[dict[str, MapBatch]]]:
    """One forward pass over ``batch``: its examples as a store would give them back (``host``:
    the maps copied to the host; widened as they are iterated) and the batch under each
    weighting of ``views`` as :class:`MapBatch` es on the model's device (:func:`device_views`),
    made one chunk of examples at a time as they are iterated (:func:`view_chunks`)."""
    import torch

    tok = loaded.tokenizer
    device = next(loaded.model.parameters()).device
    sizes = [len(e) for e in batch]
    tokens, special = _tokens(loaded, batch, attrs)
    with torch.inference_mode():
        layers = forward_attentions(loaded.model, collate(batch, tok.pad_token_id or 0, device))
        norms = recorder.take_layers()
        examples = None
        if host:
            attn = HostArray(pack_examples(layers, sizes, token_dims=2)).numpy()
            examples = _examples(batch, tokens, attn, pack_norms(norms, sizes).arrays(),
                                 loaded.n_layers, loaded.n_heads, special)
        metas = [_meta(e, t, special, loaded.tokenizer) for e, t in zip(batch, tokens)] if views else []
        return examples, view_chunks(layers, norms, metas, views, view_bytes)


def _forward_by_layer(loaded: LoadedModel, recorder: NormRecorder, batch: Sequence[Encoded], attrs: dict,
                      streams: Sequence["_Stream"], host: bool = False,
                      view_bytes: int = VIEW_BYTES, layer_group: int | None = None) -> Iterator[Example] | None:
    """One forward pass over ``batch`` whose maps the layered ``streams``
    (:meth:`~headatlas.analyses.base.Analysis.reduce`) read as the model produces them, a group
    of consecutive layers at a time: each group's views (in chunks of examples) are reduced and
    dropped before the next group's last layer runs, and the model's outputs keep no map; after
    the last layer each stream folds its groups' reductions. A group has as many layers as the
    whole batch's float32 maps of one view fit in ``view_bytes`` (one at least; ``layer_group``:
    so many), so that a batch makes few passes through the streams (each pass a few hundred
    operations the host issues: on a GPU, the cost of a small batch); where one layer of the
    batch does not fit, the group is one layer, read in chunks of examples whose maps fit.
    ``host``: each layer's maps (and norms) are also packed and copied to the host as the layer
    runs, and the batch's examples are returned as :func:`_forward` returns them (else None).
    Peak device memory: a group's maps, and its views and temporaries (rollout's per-layer maps
    are the largest: 1/H of the maps), and the reductions."""
    import torch

    tok = loaded.tokenizer
    tokens, special = _tokens(loaded, batch, attrs)
    metas = [_meta(e, t, special, loaded.tokenizer) for e, t in zip(batch, tokens)]
    sizes = [len(e) for e in batch]
    weightings = sorted({s.weighting for s in streams})
    chunks: list[tuple[slice, dict]] = []  # rows of the batch, and what their layers share
    parts: dict = {}  # (chunk, stream) -> each group's reductions
    last: dict[int, dict[str, MapBatch]] = {}  # per chunk, its last group's views (for fold)
    done = 0  # layers the model has run so far
    pending: list[tuple] = []  # the layers not yet read: (α, value norms, norm map)
    group = 0  # layers read at once (set at the first layer)
    copies: list[tuple[HostArray, object]] = []  # per layer, its packed maps and norms on the host

    def read() -> None:
        at = range(done - len(pending), done)
        for c, (rows, shared) in enumerate(chunks):
            last[c] = views = device_views([a[rows] for a, _, _ in pending],
                                           [(v[rows], m[rows]) for _, v, m in pending],
                                           metas[rows], weightings, at=at, shared=shared)
            for s, stream in enumerate(streams):
                parts.setdefault((c, s), []).append(stream.reduce(views[stream.weighting]))
        pending.clear()

    def on_layer(attn, value_norms, norm_map) -> None:
        nonlocal done, group
        done += 1
        if host:
            copies.append((HostArray(pack_examples([attn], sizes, token_dims=2)),
                           pack_norms([(value_norms, norm_map)], sizes)))
        if not chunks:
            one = 4 * attn.shape[1] * attn.shape[-1] ** 2  # one example's float32 maps of a layer
            group = layer_group or max(1, min(loaded.n_layers, view_bytes // (one * len(batch))))
            size = max(1, view_bytes // (one * group))
            chunks.extend((slice(a, a + size), {}) for a in range(0, len(batch), size))
        pending.append((attn, value_norms, norm_map))
        if len(pending) == group:
            read()

    with torch.inference_mode(), recorder.layer_by_layer(on_layer):
        loaded.model(**collate(batch, tok.pad_token_id or 0, next(loaded.model.parameters()).device),
                     output_attentions=True, return_dict=True)
    if pending:  # a last group of fewer layers
        read()
    if done != loaded.n_layers:
        raise ModelError(f"{done} of {loaded.n_layers} layers' maps reached the "
                         "analyses: did every attention block run inside the recorder?")
    for c in range(len(chunks)):
        for s, stream in enumerate(streams):
            stream.fold(last[c][stream.weighting], parts.pop((c, s)))
    if not host:
        return None
    layer_norms = [n.arrays() for _, n in copies]
    n_layers, n_heads = loaded.n_layers, loaded.n_heads
    norms = {name: by_example([n[name] for n in layer_norms], [k * n ** d for n in sizes])
             for name, k, d in (("value_norms", n_heads, 1), ("norm_map", 1, 2))} if layer_norms[0] else {}
    attn = by_example([a.numpy() for a, _ in copies], [n_heads * n * n for n in sizes])
    return _examples(batch, tokens, attn, norms, n_layers, n_heads, special)


def by_example(layers: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    """Per-layer packs (each: the examples back to back, ``sizes[b]`` values of example b) as
    one pack of the examples back to back, each example's layers in order (the store's layout,
    :func:`~headatlas.encoders.batching.pack_examples` of every layer at once)."""
    ends = np.cumsum(sizes)[:-1]
    split = [np.split(layer, ends) for layer in layers]
    return np.concatenate([layer[b] for b in range(len(sizes)) for layer in split])


def view_chunks(layers, norms, examples: Sequence[Example], weightings: Sequence[str],
                view_bytes: int = VIEW_BYTES) -> Iterator[dict[str, MapBatch]]:
    """:func:`device_views` of consecutive chunks of the batch's examples, each chunk's float32
    maps (one view) at most ``view_bytes`` (one example at least)."""
    import torch

    if not weightings:
        return
    n_layers, (_, n_heads, width, _) = len(layers), layers[0].shape
    size = max(1, view_bytes // (4 * n_layers * n_heads * width * width))
    for start in range(0, len(examples), size):
        rows = slice(start, start + size)
        with torch.inference_mode():
            views = device_views([t[rows] for t in layers], [(v[rows], m[rows]) for v, m in norms],
                                 examples[rows], weightings)
        yield views
        del views  # before the next chunk is made (the caller drops its own reference)


def device_views(layers, norms, examples: Sequence[Example], weightings: Sequence[str],
                 at: range | None = None, shared: dict | None = None) -> dict[str, MapBatch]:
    """The batch's maps under each of ``weightings`` as one :class:`MapBatch` on their device:
    ``[B, L, H, T, T]`` rounded to float16 and widened back (the store's values), zero past each
    example's length; the norm view weighs them by the value norms (rounded alike) and
    renormalises each row, as :func:`headatlas.weightings.norm_weighted` does on the host.
    ``layers``: the model's layers ``at`` (default: all), one tensor each; ``shared``: the
    examples' cache (:meth:`MapBatch.shared`) the views share with other batches of them."""
    import torch

    if not weightings:
        return {}
    width = layers[0].shape[-1]
    lengths = upload(np.array([e.n_tokens for e in examples]), layers[0].device)
    valid = torch.arange(width, device=lengths.device)[None, :] < lengths[:, None]

    def stored(tensors, token_dims: int):  # [B, L, ...]: as a store holds it, zero past each length
        x = torch.stack([t.to(torch.float16) for t in tensors], dim=1).float()
        mask = valid if token_dims == 1 else valid[:, :, None] & valid[:, None, :]
        return x * mask.reshape(mask.shape[0], *(1,) * (x.dim() - mask.dim()), *mask.shape[1:])

    attn = stored(layers, 2)
    value_norms = stored([vn for vn, _ in norms], 1) if norms else None
    norm_map = stored([nm for _, nm in norms], 2) if norms else None
    out, shared = Views(), {} if shared is None else shared
    for weighting in weightings:
        if check_weighting(weighting) == "attention":
            out[weighting] = MapBatch(attn, examples, weighting, value_norms=value_norms, norm_map=norm_map,
                                      layers=at, shared=shared, views=out)
            continue
        if value_norms is None:
            raise StoreError("the norm view needs value norms, and none were recorded")
        out[weighting] = MapBatch(norm_weighted(attn, value_norms), examples, weighting,
                                  value_norms=value_norms, norm_map=norm_map, layers=at, shared=shared, views=out)
    return out


def _tokens(loaded: LoadedModel, batch: Sequence[Encoded], attrs: dict) -> tuple[list[list[str]], dict]:
    """The batch's tokens, and the special tokens' strings an :class:`Example` carries."""
    special = {k: attrs[k] for k in ("cls_token", "sep_token")}
    strings, _ = _vocabulary(loaded.tokenizer, special["cls_token"], special["sep_token"])
    tokens = [[strings[i] for i in e.input_ids] if max(e.input_ids, default=0) < len(strings)
              else loaded.tokenizer.convert_ids_to_tokens(e.input_ids) for e in batch]
    return tokens, special


@functools.lru_cache(maxsize=4)
def _vocabulary(tokenizer, cls_token: str | None, sep_token: str | None) -> tuple[list[str], np.ndarray]:
    """Every id's token (``convert_ids_to_tokens``) and its ``[CLS]``, ``[SEP]`` and period/comma
    masks, bool ``[3, V]`` (:func:`~headatlas.store.example.token_masks`), made once per tokenizer: an
    input's tokens and masks are then lookups, not a Python pass over its tokens per use."""
    strings = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    return strings, np.stack(token_masks([s or "" for s in strings], cls_token, sep_token))


def _meta(encoded: Encoded, tokens: list[str], special: dict, tokenizer) -> Example:
    """An example without its maps (they stay in the device batch), its token masks looked up
    in ``tokenizer``'s table (:func:`_vocabulary`)."""
    ids = np.asarray(encoded.input_ids, np.int32)
    example = Example(index=encoded.index, id=encoded.id, tokens=tokens, input_ids=ids,
                      token_type_ids=np.asarray(encoded.token_type_ids, np.int8),
                      word_ids=np.asarray(encoded.word_ids, np.int32), attn=None, **special)
    _, masks = _vocabulary(tokenizer, special["cls_token"], special["sep_token"])
    if ids.max(initial=0) < masks.shape[1]:  # else made from the tokens when first asked for
        example.masks = tuple(masks[:, ids])  # Example.masks, as token_masks would make them
    return example


def _keep(writer: StoreWriter, example: Example, n_words: int, attrs: dict) -> None:
    """Write ``example`` to the exemplar store, as extraction writes it to a store."""
    norms = ({"value_norms": example.value_norms, "norm_map": example.norm_map}
             if attrs["norms"] == NORMS_RECORDED else {})
    writer.add(example.index, example.id, example.tokens, example.input_ids, example.token_type_ids,
               example.word_ids, example.attn, n_words=n_words, **norms)


@dataclass
class _Stream:
    """A started analysis inside the extraction: the view it reads, and the examples it may see
    (None: all)."""

    analysis: Analysis
    weighting: str
    allowed: set[int] | None
    start: Callable[[], Analysis] | None = None  # a fresh, started instance of the analysis
    seconds: float = 0.0  # CPU time in its updates (the weighting included), for the log

    def restart(self) -> dict:
        """The state so far, and a fresh instance in the analysis's place (what :class:`Spill`
        writes: merged with the next instance's states, one pass's)."""
        state = self.analysis.state()
        self.analysis.close()
        self.analysis = self.start()
        return state

    @property
    def reads_norms(self) -> bool:
        return self.weighting == "norm" or self.analysis.needs_norms

    def add(self, views: "_Views") -> None:
        if self.allowed is None or views.example.index in self.allowed:
            start = time.process_time()
            self.analysis.add_batch(views[self.weighting])
            self.seconds += time.process_time() - start

    def add_batch(self, batch: MapBatch) -> None:
        """The whole batch (the rows it may see) in one update."""
        batch = self._seen(batch)
        if batch is not None:
            start = time.process_time()
            self.analysis.add_batch(batch)
            self.seconds += time.process_time() - start

    def reduce(self, batch: MapBatch) -> dict | None:
        """The analysis's reduction of one layer's batch (the rows it may see; None: no row)."""
        batch = self._seen(batch)
        if batch is None:
            return None
        start = time.process_time()
        reduced = self.analysis.reduce(batch)
        self.seconds += time.process_time() - start
        return reduced

    def fold(self, batch: MapBatch, parts: list[dict | None]) -> None:
        """Fold every layer's :meth:`reduce` of ``batch``'s examples, and count them."""
        batch = self._seen(batch)
        if batch is not None:
            start = time.process_time()
            self.analysis.add_reduced(batch, join_layers(parts))
            self.seconds += time.process_time() - start

    def _seen(self, batch: MapBatch) -> MapBatch | None:
        """The rows of ``batch`` this stream may see, as a batch (None: no row)."""
        rows = [b for b, e in enumerate(batch.examples) if self.allowed is None or e.index in self.allowed]
        if not rows:
            return None
        return batch if len(rows) == len(batch) else batch.select(rows)


class _Views(Views):
    """One example under each weighting as a batch of one, computed when first asked for: the
    quantities the analyses share (row entropies, column masses) are computed once per view."""

    def __init__(self, example: Example):
        super().__init__()
        self.example = example
        self.shared: dict = {}  # what depends on the example alone, for every view

    def __missing__(self, weighting: str) -> MapBatch:
        self[weighting] = MapBatch.of([self.example.weighted(weighting)], self.shared, views=self)
        return self[weighting]


def _streams(runs: Sequence[Run], layers: int, heads: int, inputs: dict, source: Source,
             kept: np.ndarray) -> dict[str, _Stream]:
    """key -> each run's started analysis; its data options it is not given are None (a
    cache's path: given when the states are merged)."""
    out = {}
    for run in runs:
        cls = analysis_class(run.analysis)
        options = {**{k: v for k, v in inputs.items() if k in cls.option_names()}, **run.options}
        cls.check_options(options)
        options.update({k: None for k in cls.data_options if k not in options})
        if cls.needs_norms and run.weighting != "attention":
            raise ValueError(f"{cls.name} reads the value norms itself: run it under attention")
        allowed = None if run.max_examples is None else set(kept[:run.max_examples].tolist())
        out[run.key] = _Stream(_started(cls, layers, heads, options, source), check_weighting(run.weighting),
                               allowed, functools.partial(_started, cls, layers, heads, options, source))
    return out


def _started(cls: type[Analysis], layers: int, heads: int, options: dict, source: Source) -> Analysis:
    acc = cls(layers, heads, **options)
    acc.start(source)
    return acc


def result_from_states(paths: Iterable[str | Path], key: str, analysis: str | type[Analysis],
                       weighting: str = "attention", **options) -> Result:
    """The result of run ``key`` over every shard's states file, as one pass over the corpus
    would give it: the shards' states merged into a fresh instance with ``options`` (which must
    be those the extraction ran with), then finished with the files' provenance."""
    cls = analysis_class(analysis)
    cls.check_options(options)
    paths = list(paths)
    if not paths:
        raise StoreError("no states file given")
    skipped, shard_attrs = [], []
    for path in paths:
        with States(path) as states:
            shard_attrs.append(states.attrs)
            skipped += states.skipped_ids
    attrs = shard_attrs[0]
    acc = cls(int(attrs["n_layers"]), int(attrs["n_heads"]), **options)
    wanted = json.loads(json.dumps(acc.settings(), default=str, sort_keys=True))
    acc.start(Source(attrs, skipped))
    for path in paths:
        with States(path) as states:
            about, state = states.run(key)
            if about["analysis"] != cls.name or about["weighting"] != weighting:
                raise StoreError(f"{path}: run {key!r} is {about['analysis']} ({about['weighting']}), "
                                 f"not {cls.name} ({weighting}); {rebuild_hint(path)}")
            if about["options"] != wanted:
                raise StoreError(f"{path}: run {key!r} ran with options {about['options']}, not "
                                 f"{wanted}: the states are of another configuration; "
                                 f"{rebuild_hint(path)}")
            acc.merge(state)
            for part in states.parts(key):  # what it wrote out on the way
                acc.merge(part)
    try:
        result = acc.result()
    finally:
        acc.close()
    return finish(acc, result, {**attrs, "n_examples": acc.n_examples}, weighting)
