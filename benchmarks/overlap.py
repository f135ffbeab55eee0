#!/usr/bin/env python
"""Benchmark 7: overlapped vs sequential extraction on the CPU (ratios, same run).

Usage (from the repository root)::

    .venv/bin/python benchmarks/overlap.py            # 1,000 Wikipedia segments, 3 rounds
    .venv/bin/python benchmarks/overlap.py --n 300 --rounds 2 --corpus PATH

Each round times, back to back and in an order that flips every round:

- ``forward``: the forward passes alone, exactly as extraction runs them (the same
  ``length_batches``, ``collate``, eager attention with ``output_attentions``, the value-norm
  hooks and the float16 copies), with nothing written: the floor for any writer;
- ``sequential``: ``extract(..., write_ahead=0)``: every batch written before the next forward;
- ``overlapped``: ``extract(..., write_ahead=2)`` (the pipeline's default): a background thread
  writes batch k while batch k+1 runs forward.

Reported: the median of per-round ratios overlapped/sequential and overlapped/forward, in wall
time and in process CPU time, and the share of extraction's CPU time spent in
``StoreWriter.add`` (thread CPU time, so load-robust): the work the overlap can hide. On the CPU the forward pass and the writer compete for the same
cores, so the gain is bounded by the idle share of the cores during the write; on a GPU the
forward runs on the device and the write can hide behind it almost entirely. GPU figures are
not measured here. Results: benchmarks/out/overlap.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import BATCH_SIZE, MAX_LENGTH, MODEL_NAME, MODEL_SPEC, THREADS, WIKI, Clock, log  # noqa: E402


def forward_only(loaded, examples) -> None:
    """Extraction's forward work (attentions + norms to float16 numpy), nothing written."""
    from headatlas.encoders.inputs import collate, length_batches
    from headatlas.encoders.extract import batch_attentions
    from headatlas.encoders.valuenorms import norm_recorder

    pad = loaded.tokenizer.pad_token_id or 0
    _, recorder, _ = norm_recorder(loaded.model, True)
    with recorder:
        for batch in length_batches(examples, BATCH_SIZE):
            batch_attentions(loaded.model, collate(batch, pad, "cpu"))
            recorder.take()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=WIKI, help="prepared segments (JSON Lines)")
    parser.add_argument("--n", type=int, default=1000, help="segments to extract")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    torch.set_num_threads(THREADS)
    from headatlas.corpora.records import read_jsonl
    from headatlas.encoders.inputs import encode_corpus
    from headatlas.encoders.extract import extract
    from headatlas.encoders.models import load_model
    from headatlas.store.writer import StoreWriter

    sentences = list(read_jsonl(args.corpus))[:args.n]
    loaded = load_model(MODEL_NAME, MODEL_SPEC, "cpu")
    torch.set_num_threads(THREADS)
    examples, _ = encode_corpus(loaded.tokenizer, enumerate(sentences), MAX_LENGTH, Counter())
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "overlap.h5"

    real_add, in_add = StoreWriter.add, [0.0]

    def timed_add(self, *args, **kwargs):  # CPU time of the thread that writes
        start = time.thread_time()
        try:
            return real_add(self, *args, **kwargs)
        finally:
            in_add[0] += time.thread_time() - start

    StoreWriter.add = timed_add
    add_shares: list[float] = []

    def run_extract(ahead: int) -> Clock:
        store.unlink(missing_ok=True)
        in_add[0] = 0.0
        with Clock() as clock:
            extract(loaded, sentences, store, max_length=MAX_LENGTH, batch_size=BATCH_SIZE,
                    progress=False, write_ahead=ahead)
        add_shares.append(in_add[0] / clock.cpu)
        return clock

    def run_forward() -> Clock:
        with Clock() as clock:
            forward_only(loaded, examples)
        return clock

    steps = {"forward": run_forward, "sequential": lambda: run_extract(0),
             "overlapped": lambda: run_extract(2)}
    forward_only(loaded, examples[-2 * BATCH_SIZE:])  # warm-up
    times: dict[str, list[Clock]] = {k: [] for k in steps}
    loads = []
    for r in range(args.rounds):
        order = list(steps) if r % 2 == 0 else list(reversed(steps))
        for name in order:
            times[name].append(steps[name]())
            log(f"round {r}: {name} {times[name][-1].wall:.1f} s wall, {times[name][-1].cpu:.1f} s CPU")
        loads.append(os.getloadavg()[0])
    size = store.stat().st_size
    store.unlink()

    def ratio(a: str, b: str, what: str) -> float:
        return statistics.median(getattr(x, what) / getattr(y, what) for x, y in zip(times[a], times[b]))

    result = {
        "examples": len(examples), "rounds": args.rounds, "threads": THREADS, "load_avg": loads,
        "store_bytes": size,
        "wall": {k: [c.wall for c in v] for k, v in times.items()},
        "cpu": {k: [c.cpu for c in v] for k, v in times.items()},
        "overlapped/sequential": {w: ratio("overlapped", "sequential", w) for w in ("wall", "cpu")},
        "overlapped/forward": {w: ratio("overlapped", "forward", w) for w in ("wall", "cpu")},
        "sequential/forward": {w: ratio("sequential", "forward", w) for w in ("wall", "cpu")},
        "store_writer_add_cpu_share": statistics.median(add_shares),
    }
    (args.out / "overlap.json").write_text(json.dumps(result, indent=2))
    for key in ("overlapped/sequential", "overlapped/forward", "sequential/forward"):
        print(f"{key:24s} wall {result[key]['wall']:.3f}  cpu {result[key]['cpu']:.3f}")
    print(f"median wall s: " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in result["wall"].items()))
    print(f"StoreWriter.add: {100 * result['store_writer_add_cpu_share']:.1f}% of extraction CPU time")
    print(f"{len(examples)} examples, store {size / 1e6:.0f} MB, load {loads}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
