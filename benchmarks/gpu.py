#!/usr/bin/env python
"""Benchmark: tokens per second of extraction's paths on one GPU (issue 32); CPU in quick mode.

Usage (from the repository root; nothing to download: the model is random)::

    python benchmarks/gpu.py                 # bert-base geometry, n = 128, half precision on CUDA
    python benchmarks/gpu.py --quick         # a tiny geometry on the CPU: the code path, in CI

A random-initialised BERT of bert-base geometry (12 layers x 12 heads, hidden 768), inputs of
exactly ``n`` wordpieces from a small WordPiece vocabulary built here, one process, one device.
Timed, each after a warm-up batch, each with its own number of examples:

- ``sdpa``: the bare forward, sdpa attention, no weights returned (the floor);
- ``eager``: the forward returning every layer's attention weights (what extraction needs);
- ``fused``: :func:`headatlas.analyses.fused.fused_extract` with the per-head statistics of the
  default config (surface x 3, sinks, head-type features, patterns, norm shares, rollout; both
  views where they have two), states written, no map stored: each batch read where the model
  computed it (``on_device``: every one of these analyses is batched), no map copied to the
  host; forced on the CPU in quick mode so that CI runs that path;
- ``fused_host``: the same, each batch's maps copied to the host and read one example at a
  time with numpy (``on_device=False``, the CPU's path);
- ``store``: :func:`headatlas.encoders.extract.extract` writing every map to an HDF5 store on
  local disk (``--disk``, default the system's temporary folder).

Reported (stdout and benchmarks/out/gpu.json): tokens/s of each path, its ratio to ``sdpa``,
the bytes of maps copied from the device to the host per token (the store path and
``fused_host`` copy every map: 2·L·H·n bytes, plus the value norms; ``fused`` none), and for the store path the
disk's write rate in GB/s (its ceiling: tokens/s x bytes per token). Requires torch,
transformers, numpy, h5py, pandas, scipy and scikit-learn (``requirements.txt``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "a", "big", "red", "house", "and",
         "she", "saw", "it", "was", "very", "happy", "in", "park", ".", ","]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
GEOMETRY = {"full": dict(layers=12, heads=12, hidden=768, n=128, batch=64, sdpa=8192, eager=4096,
                         fused=1024, fused_host=1024, store=1024),
            "quick": dict(layers=2, heads=4, hidden=64, n=32, batch=8, sdpa=64, eager=64, fused=32,
                          fused_host=32, store=32)}
PER_HEAD_RUNS = [("relative_position", "surface", {}, ("attention", "norm")),
                 ("special_tokens", "surface", {}, ("attention", "norm")),
                 ("entropy", "surface", {}, ("attention", "norm")),
                 ("sink_rate", "sinks", {}, ("attention", "norm")),
                 ("distance_features", "headtypes", {"n_windows": 16}, ("attention", "norm")),
                 ("patterns", "patterns", {}, ("attention",)),
                 ("norm_shares", "norms", {"pairs_per_example": 256, "seed": 0}, ("attention",)),
                 ("rollout", "rollout", {"max_offset": 8, "residual": 0.5}, ("attention",))]


def build(folder: Path, g: dict, device: str):
    """A random BERT of geometry ``g`` and its tokenizer, as a LoadedModel on ``device``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    from headatlas.encoders.models import LoadedModel

    BertTokenizer(vocab={w: i for i, w in enumerate(VOCAB)}, do_lower_case=True).save_pretrained(folder)
    tokenizer = BertTokenizer.from_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=g["hidden"], num_hidden_layers=g["layers"],
                        num_attention_heads=g["heads"], intermediate_size=4 * g["hidden"],
                        max_position_embeddings=max(512, g["n"]), attn_implementation="eager")
    model = BertModel(config).eval().to(device)
    if device == "cuda":
        model = model.half()
    info = {"model_name": "random-bert", "model_id": "random", "model_revision": "", "random_init": True}
    return LoadedModel(model, tokenizer, info)


def sentences(count: int, n: int, seed: int = 0):
    """``count`` records of exactly ``n`` wordpieces ([CLS] words [SEP])."""
    import random

    from headatlas.corpora.records import Sentence

    rng = random.Random(seed)
    return [Sentence(id=f"s{i}", words=[rng.choice(WORDS) for _ in range(n - 2)]) for i in range(count)]


def timed(device: str, work) -> float:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    work()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def forwards(loaded, records, g: dict, device: str, weights: bool) -> None:
    from collections import Counter

    import torch

    from headatlas.encoders.inputs import collate, encode_corpus, length_batches

    loaded.model.set_attn_implementation("eager" if weights else "sdpa")
    examples, _ = encode_corpus(loaded.tokenizer, enumerate(records), g["n"], Counter())
    with torch.inference_mode():
        for batch in length_batches(examples, g["batch"]):
            out = loaded.model(**collate(batch, loaded.tokenizer.pad_token_id or 0, device),
                               output_attentions=weights)
            if weights:
                assert out.attentions is not None and len(out.attentions) == g["layers"]
    loaded.model.set_attn_implementation("eager")


def per_head_runs():
    import importlib

    from headatlas.analyses.fused import Run

    runs = []
    for analysis, module, options, weightings in PER_HEAD_RUNS:
        importlib.import_module(f"headatlas.analyses.{module}")
        runs += [Run(f"{analysis}:{w}", analysis, options, w) for w in weightings]
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny geometry on the CPU (CI)")
    parser.add_argument("--disk", type=Path, default=Path(tempfile.gettempdir()),
                        help="where the store path writes (local disk)")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "gpu.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    from headatlas.analyses.fused import fused_extract
    from headatlas.encoders.extract import extract

    device = "cpu" if args.quick or not torch.cuda.is_available() else "cuda"
    if device == "cpu":
        from headatlas.pipeline.jobs import limit_threads

        limit_threads(1)  # as an extraction job with threads: 1
    g = GEOMETRY["quick" if args.quick else "full"]
    attrs = {"corpus": "random", "corpus_sha256": ""}
    with tempfile.TemporaryDirectory(dir=args.disk) as work:
        work = Path(work)
        loaded = build(work / "model", g, device)
        common = dict(max_length=g["n"], batch_size=g["batch"], progress=False, store_attrs=attrs)
        paths = {
            "sdpa": lambda r: forwards(loaded, r, g, device, weights=False),
            "eager": lambda r: forwards(loaded, r, g, device, weights=True),
            "fused": lambda r: fused_extract(loaded, r, work / "states.h5", per_head_runs(),
                                             exemplars=0, on_device=True, **common),
            "fused_host": lambda r: fused_extract(loaded, r, work / "states.h5", per_head_runs(),
                                                  exemplars=0, on_device=False, **common),
            "store": lambda r: extract(loaded, r, work / "store.h5", **common),
        }
        found = {}
        for name, path in paths.items():
            path(sentences(g["batch"], g["n"], seed=1))  # warm-up: kernels, allocator, imports
            for leftover in work.glob("*.h5"):
                leftover.unlink()
            records = sentences(g[name], g["n"])
            seconds = timed(device, lambda: path(records))
            found[name] = {"examples": len(records), "seconds": seconds,
                           "tokens_per_s": len(records) * g["n"] / seconds}
            if name == "store":
                found[name]["disk_bytes"] = (work / "store.h5").stat().st_size
                found[name]["disk_gb_per_s"] = found[name]["disk_bytes"] / seconds / 1e9
            print(f"{name:6s} {found[name]['tokens_per_s']:12,.0f} tokens/s", file=sys.stderr, flush=True)
    maps_per_token = 2 * g["layers"] * g["heads"] * g["n"]  # float16 maps
    norms_per_token = 2 * g["layers"] * (g["heads"] + g["n"])  # value norms and the norm map row
    result = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "geometry": g, "precision": "float16" if device == "cuda" else "float32", "paths": found,
        "ratio_to_sdpa": {k: v["tokens_per_s"] / found["sdpa"]["tokens_per_s"] for k, v in found.items()},
        # fused copies states and per-example scores only (kilobytes per batch)
        "device_to_host_bytes_per_token": {"sdpa": 0, "eager": 0, "fused": 0,
                                           "fused_host": maps_per_token + norms_per_token,
                                           "store": maps_per_token + norms_per_token},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"device: {result['device']}, {result['precision']}, n = {g['n']}, batch {g['batch']}")
    print("| path | tokens/s | / sdpa | device->host bytes per token |\n|---|---|---|---|")
    for name, row in found.items():
        print(f"| {name} | {row['tokens_per_s']:,.0f} | {result['ratio_to_sdpa'][name]:.3f} | "
              f"{result['device_to_host_bytes_per_token'][name]:,} |")
    print(f"store path: {found['store']['disk_gb_per_s']:.2f} GB/s written "
          f"({found['store']['disk_bytes'] / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
