#!/usr/bin/env python
"""The floor under benchmark 1: the embedded model's forward with its attention maps (eager,
``output_attentions``, as extraction runs it) against the bare sdpa forward, on the same
length-sorted Wikipedia batches, CPU time, rounds alternating (A B, B A, ...).

Usage (from the repository root)::

    .venv/bin/python benchmarks/attention_floor.py [--segments 1000] [--rounds 2]

Prints each round's CPU seconds and the ratio to sdpa. No maps are copied or written: this is
what any extraction pays before packing, norms and the write.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter

import run as bench  # this folder is on sys.path when the script runs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    from headatlas.encoders.allocator import keep_buffers_in_heap
    from headatlas.corpora.records import read_jsonl
    from headatlas.encoders.inputs import collate, encode_corpus, length_batches
    from headatlas.encoders.extract import forward_attentions, largest_buffer

    bench.THREADS = bench.pipeline_threads()
    loaded, bare = bench.load_models()
    sentences = list(read_jsonl(bench.WIKI))[:args.segments]
    examples, _ = encode_corpus(loaded.tokenizer, enumerate(sentences), bench.MAX_LENGTH, Counter())
    keep_buffers_in_heap(largest_buffer(examples, bench.BATCH_SIZE, loaded.n_layers, loaded.n_heads))
    pad = loaded.tokenizer.pad_token_id or 0
    batches = list(length_batches(examples, bench.BATCH_SIZE))

    @torch.inference_mode()
    def with_maps(batches, pad_id) -> None:
        for batch in batches:
            forward_attentions(loaded.model, collate(batch, pad_id, "cpu"))

    runs = {"sdpa (bare)": lambda: bench.bare_forward(bare, batches, pad),
            "eager with maps": lambda: with_maps(batches, pad)}
    for run in runs.values():  # warm-up
        run()
    seconds = {name: [] for name in runs}
    for round_ in range(args.rounds):
        for name in (list(runs) if round_ % 2 == 0 else list(runs)[::-1]):
            with bench.Clock() as clock:
                runs[name]()
            seconds[name].append(clock.cpu)
    print(f"{len(examples)} segments, {len(batches)} batches, {bench.THREADS} thread(s), CPU seconds per round:")
    for name, values in seconds.items():
        ratios = [v / b for v, b in zip(values, seconds["sdpa (bare)"])]
        print(f"  {name:<16} {' '.join(f'{v:6.2f}' for v in values)}   ratio to sdpa "
              + " ".join(f"{r:.3f}" for r in ratios))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
