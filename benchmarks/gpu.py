#!/usr/bin/env python
"""Benchmark: tokens per second of extraction's paths on one GPU (issue 32); CPU in quick mode.

Usage (from the repository root; nothing to download: the model is random)::

    python benchmarks/gpu.py                 # bert-base geometry, n = 128, half precision on CUDA
    python benchmarks/gpu.py --quick         # a tiny geometry on the CPU: the code path, in CI
    python benchmarks/gpu.py --family mpnet --length 512 --batch 16 --scale 0.125  # long inputs

A random-initialised BERT (or MPNet: ``--family mpnet``) of bert-base geometry (12 layers x 12
heads, hidden 768), inputs of exactly ``n`` wordpieces (``--length``) from a small WordPiece
vocabulary built here, one process, one device.
Timed, each after a warm-up batch, each with its own number of examples:

- ``encode``: the tokenizer alone (host), which ``fused``, ``fused_host`` and ``store`` include
  as extraction does, and ``sdpa`` and ``eager`` do not (their inputs are encoded beforehand);
- ``sdpa``: the bare forward, sdpa attention, no weights returned (the floor);
- ``eager``: the forward returning every layer's attention weights (what extraction needs);
- ``fused``: :func:`headatlas.analyses.fused.fused_extract` with the per-head statistics of the
  default config (surface x 3, sinks, head-type features, patterns, norm shares, rollout; both
  views where they have two), states written, no map stored: each batch read where the model
  computed it (``on_device``: every one of these analyses is batched), no map copied to the
  host, each layer's maps read as the model produces them (``--whole-batch``: every layer's
  at once, as before); forced on the CPU in quick mode so that CI runs that path; the corpus's
  lengths counted beforehand, as the workflow's ``corpus_lengths`` job counts them once for
  every shard (:class:`Counted`);
- ``fused_host``: the same, each batch's maps copied to the host and read one example at a
  time with numpy (``on_device=False``, the CPU's path);
- ``store``: :func:`headatlas.encoders.extract.extract` writing every map to an HDF5 store on
  local disk (``--disk``, default the system's temporary folder), counting the lengths itself
  as its job does;
- ``--breakdown``: fused's seconds by stage, each synchronised (:func:`breakdown`); ``--profile``:
  a fused run under cProfile, unsynchronised (:func:`profiled`): where the host spends its time;
- ``--sample-examples K``: norm shares and distance features keep a sample of K examples, not
  their 2,000: a run of a few thousand inputs then runs mostly past it, as a long corpus does
  (an input past the sample draws no pairs: ``benchmarks/norm_pairs.py``);
- ``fused_xK`` (``--processes K``): ``fused`` in K processes at once on the one device, each
  with its own model copy and inputs (as K shards' jobs share a GPU on one machine): their
  tokens/s together, from the first start to the last end (:func:`concurrent`); where the host
  sets fused's pace, each process's host work runs on a core of its own;
- ``floor`` (``--floor``): the host's share, with compute made negligible: the same layers,
  heads and batch size, 4 dimensions a head, inputs of 8 wordpieces: milliseconds per batch of
  ``sdpa`` and of ``fused`` (the device path, as it reads the layers by default), from runs of
  10 and 40 batches (their difference: a run's start and end left out), and the torch
  operations each issues per batch (counted at torch's dispatcher: on a GPU, each one the host issues, most a
  kernel launch; on the CPU, counted in the code a GPU runs, on the tests' simulated device).
  A batch of the real geometry cannot take less than its path's floor, so ``inputs x n / floor``
  bounds its tokens/s; on the CPU it measures the device path's overhead without a GPU.

Reported (stdout and benchmarks/out/gpu.json): tokens/s of each path, its ratio to ``sdpa``,
on CUDA its peak GPU memory above the model's weights (``torch.cuda.max_memory_allocated``),
the bytes of maps copied from the device to the host per token (the store path and
``fused_host`` copy every map: 2·L·H·n bytes, plus the value norms; ``fused`` none), and for the store path the
disk's write rate in GB/s (its ceiling: tokens/s x bytes per token), and how far ``fused``'s
results are from ``fused_host``'s on the same inputs (each run's states merged and finished as
its rule does: the largest relative difference over its tables and arrays, and whether its
claims are equal): the batched torch path against the numpy one. Requires torch,
transformers, numpy, h5py, pandas, scipy and scikit-learn (``requirements.txt``).
"""

from __future__ import annotations

import argparse
import contextlib
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
PATHS = ("encode", "sdpa", "eager", "fused", "fused_host", "store")
FORWARD_ONLY = ("sdpa", "eager")  # timed on inputs encoded beforehand; the others encode, as extraction does
PLANNED = ("fused", "fused_host")  # timed with their corpus's lengths counted beforehand (:class:`Counted`)
GEOMETRY = {"full": dict(layers=12, heads=12, hidden=768, n=128, batch=64, encode=8192, sdpa=8192, eager=4096,
                         fused=2048, fused_host=256, store=1024),
            "quick": dict(layers=2, heads=4, hidden=64, n=32, batch=8, encode=64, sdpa=64, eager=64, fused=32,
                          fused_host=16, store=32)}
PER_HEAD_RUNS = [("relative_position", "surface", {}, ("attention", "norm")),
                 ("special_tokens", "surface", {}, ("attention", "norm")),
                 ("entropy", "surface", {}, ("attention", "norm")),
                 ("sink_rate", "sinks", {}, ("attention", "norm")),
                 ("distance_features", "headtypes", {"n_windows": 16}, ("attention", "norm")),
                 ("patterns", "patterns", {}, ("attention",)),
                 ("norm_shares", "norms", {"pairs_per_example": 256, "seed": 0}, ("attention",)),
                 ("rollout", "rollout", {"max_offset": 8, "residual": 0.5}, ("attention",))]


SAMPLED = ("distance_features", "norm_shares")  # the runs that keep a sample of examples (sample_examples)


def build(folder: Path, g: dict, device: str, family: str = "bert"):
    """A random BERT (or MPNet) of geometry ``g`` and its tokenizer, as a LoadedModel on ``device``."""
    import torch
    import transformers as tf

    from headatlas.encoders.models import LoadedModel

    sizes = dict(hidden_size=g["hidden"], num_hidden_layers=g["layers"], num_attention_heads=g["heads"],
                 intermediate_size=4 * g["hidden"], attn_implementation="eager")
    if family == "mpnet":  # MPNet's own specials; its positions start after the padding index
        vocab = ["<s>", "<pad>", "</s>", "[UNK]", "<mask>", *WORDS]
        tf.MPNetTokenizer(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True,
                          unk_token="[UNK]").save_pretrained(folder)
        tokenizer = tf.MPNetTokenizer.from_pretrained(folder)
        config = tf.MPNetConfig(vocab_size=len(vocab), pad_token_id=tokenizer.pad_token_id,
                                max_position_embeddings=max(512, g["n"]) + 2, **sizes)
        model_class = tf.MPNetModel
    else:
        tf.BertTokenizer(vocab={w: i for i, w in enumerate(VOCAB)}, do_lower_case=True).save_pretrained(folder)
        tokenizer = tf.BertTokenizer.from_pretrained(folder)
        config = tf.BertConfig(vocab_size=len(VOCAB), max_position_embeddings=max(512, g["n"]), **sizes)
        model_class = tf.BertModel
    torch.manual_seed(0)
    model = model_class(config).eval().to(device)
    if device == "cuda":
        model = model.half()
    info = {"model_name": f"random-{family}", "model_id": "random", "model_revision": "", "random_init": True}
    return LoadedModel(model, tokenizer, info)


def sentences(count: int, n: int, seed: int = 0):
    """``count`` records of exactly ``n`` wordpieces ([CLS] words [SEP])."""
    import random

    from headatlas.corpora.records import Sentence

    rng = random.Random(seed)
    return [Sentence(id=f"s{i}", words=[rng.choice(WORDS) for _ in range(n - 2)]) for i in range(count)]


class Counted:
    """Each corpus's lengths file (:mod:`headatlas.store.lengths`), counted once and untimed, as
    the workflow's ``corpus_lengths`` job counts them once for every shard of a fused extraction
    (:func:`~headatlas.analyses.fused.fused_extract`'s ``lengths``); the store path's ``extract``
    counts its own, as its job does."""

    def __init__(self, loaded, folder: Path):
        self.loaded, self.folder, self._files = loaded, folder, {}
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, records) -> Path:
        from headatlas.encoders.inputs import corpus_lengths
        from headatlas.store.lengths import write_lengths

        key = id(records)
        if key not in self._files:  # the records are kept with their file: their id stays theirs
            path = self.folder / f"lengths-{len(self._files)}.h5"
            write_lengths(path, corpus_lengths(self.loaded.tokenizer, records),
                          {"corpus": "random", "corpus_sha256": "", "model_name": self.loaded.info.get("model_name")})
            self._files[key] = (records, path)
        return self._files[key][1]


def extraction_options(g: dict) -> dict:
    """What every extraction path of the benchmark is given: ``g``'s length and batch, no progress bar."""
    return dict(max_length=g["n"], batch_size=g["batch"], progress=False,
                store_attrs={"corpus": "random", "corpus_sha256": ""})


def device_options(args) -> dict:
    """What fused's device path is given besides: its views' memory and how it reads the layers."""
    return dict(view_bytes=args.view_memory_mb * 2**20, by_layer=not args.whole_batch)


def worker_flags(args) -> list[str]:
    """The flags a worker of ``--processes`` takes from its parent: the same geometry and options."""
    flags = ["--family", args.family, "--scale", str(args.scale), "--view-memory-mb", str(args.view_memory_mb),
             "--disk", str(args.disk), "--processes", str(args.processes)]
    flags += ["--quick"] * args.quick + ["--whole-batch"] * args.whole_batch
    for name in ("length", "batch", "sample_examples"):
        if getattr(args, name):
            flags += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    return flags


def concurrent(args) -> dict:
    """``fused`` in ``args.processes`` processes at once on the one device (as ``extraction.shards``
    jobs share a GPU on one machine), each with its own copy of the model and its own inputs
    (``fused``'s number each): the host's work of each runs on its own core. Each prepares (model,
    inputs, lengths, a warm-up batch), says so, and waits; all are released together. Timed from
    the first start to the last end (``time.monotonic``: one clock for every process)."""
    import subprocess

    command = [sys.executable, str(Path(__file__).resolve()), *worker_flags(args)]
    workers = [subprocess.Popen([*command, "--worker", str(i)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True) for i in range(args.processes)]
    def said(w, first: str) -> str:  # the worker's next line that starts so (a library may print too)
        for line in w.stdout:
            if line.startswith(first):
                return line
        raise RuntimeError(f"a worker of --processes ended (exit {w.wait()}) before it said {first!r}; "
                           "its error is above")

    try:
        for w in workers:
            said(w, "ready")
        for w in workers:
            w.stdin.write("go\n")
            w.stdin.close()
        done = [json.loads(said(w, "{")) for w in workers]
    except BaseException:
        for w in workers:
            w.kill()
        raise
    finally:
        for w in workers:
            w.wait()
            w.stdout.close()
    seconds = max(d["end"] for d in done) - min(d["start"] for d in done)
    examples = sum(d["examples"] for d in done)
    return {"examples": examples, "seconds": seconds, "tokens_per_s": examples * done[0]["n"] / seconds,
            "processes": args.processes, "each_seconds": [d["end"] - d["start"] for d in done]}


def worker(args, g: dict, device: str) -> int:
    """One process of :func:`concurrent`: ready, then (on a line from its parent) ``fused``, timed."""
    import torch

    from headatlas.analyses.fused import fused_extract

    if device == "cuda":  # the host's cores shared out among the processes
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // args.processes))
    with tempfile.TemporaryDirectory(dir=args.disk) as work:
        work = Path(work)
        loaded = build(work / "model", g, device, args.family)
        counted = Counted(loaded, work / "lengths")
        common = dict(**extraction_options(g), **device_options(args), exemplars=0, on_device=True)
        warm_up = sentences(g["batch"], g["n"], seed=1)
        fused_extract(loaded, warm_up, work / "warm.h5", per_head_runs(), lengths=counted(warm_up), **common)
        records = sentences(g["fused"], g["n"], seed=2 + args.worker)
        counted(records)
        print("ready", flush=True)
        sys.stdin.readline()
        start = time.monotonic()
        fused_extract(loaded, records, work / "fused.h5", per_head_runs(), lengths=counted(records), **common)
        if device == "cuda":
            torch.cuda.synchronize()
        end = time.monotonic()
    print(json.dumps({"start": start, "end": end, "examples": len(records), "n": g["n"]}), flush=True)
    return 0


def timed(device: str, work) -> float:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    work()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def encoded(loaded, records, g: dict):
    """The records as the model's inputs (what extraction does first, on the host)."""
    from collections import Counter

    from headatlas.encoders.inputs import encode_corpus

    return encode_corpus(loaded.tokenizer, enumerate(records), g["n"], Counter())[0]


def forwards(loaded, examples, g: dict, device: str, weights: bool) -> None:
    import torch

    from headatlas.encoders.inputs import collate, length_batches

    loaded.model.set_attn_implementation("eager" if weights else "sdpa")
    with torch.inference_mode():
        for batch in length_batches(examples, g["batch"]):
            out = loaded.model(**collate(batch, loaded.tokenizer.pad_token_id or 0, device),
                               output_attentions=weights)
            if weights:
                assert out.attentions is not None and len(out.attentions) == g["layers"]
    loaded.model.set_attn_implementation("eager")


def sampled(limit: int) -> None:
    """Every run of :data:`PER_HEAD_RUNS` that keeps a sample of examples keeps at most ``limit``."""
    global PER_HEAD_RUNS
    PER_HEAD_RUNS = [(a, m, {**o, "sample_examples": limit} if a in SAMPLED else o, w) for a, m, o, w in PER_HEAD_RUNS]


def per_head_runs():
    import importlib

    from headatlas.analyses.fused import Run

    runs = []
    for analysis, module, options, weightings in PER_HEAD_RUNS:
        importlib.import_module(f"headatlas.analyses.{module}")
        runs += [Run(f"{analysis}:{w}", analysis, options, w) for w in weightings]
    return runs


def agreement(device_states: Path, host_states: Path) -> dict:
    """Per run of :data:`PER_HEAD_RUNS`: the largest relative difference between the results of
    the two states files (tables' numbers and arrays) and whether their claims are equal."""
    import numpy as np
    import pandas as pd

    from headatlas.analyses.fused import result_from_states

    found = {}
    for analysis, _, options, weightings in PER_HEAD_RUNS:
        for w in weightings:
            one, two = (result_from_states([path], f"{analysis}:{w}", analysis, w, **options)
                        for path in (device_states, host_states))
            numbers = [(t.select_dtypes("number").to_numpy(float), two.tables[name].select_dtypes("number")
                        .to_numpy(float)) for name, t in one.tables.items()]
            numbers += [(a.astype(float), two.arrays[name].astype(float)) for name, a in one.arrays.items()
                        if np.issubdtype(a.dtype, np.number)]
            worst = 0.0
            for a, b in numbers:
                both = ~(pd.isna(a) | pd.isna(b))
                if (pd.isna(a) != pd.isna(b)).any():
                    worst = float("inf")
                diff = np.abs(a[both] - b[both]) / np.maximum(np.abs(b[both]), 1e-12)
                worst = max(worst, float(diff.max(initial=0.0)))
            found[f"{analysis}:{w}"] = {"max_relative_difference": worst, "claims_equal": one.claims == two.claims}
    return found


@contextlib.contextmanager
def device_branches(loaded, device: str):
    """On the CPU, the code a GPU runs: the simulated device of the tests (the model on a device
    that is not the CPU, so that code takes its device branches: the value norms' batched
    products, not the CPU's cache-sized chunks); on a GPU, nothing to do."""
    if device != "cpu":
        yield
        return
    if str(HERE.parent) not in sys.path:  # the repository root: its tests package
        sys.path.insert(0, str(HERE.parent))
    from tests.simulated_device import SimulatedDevice

    with SimulatedDevice() as simulated:
        simulated.place(loaded.model)
        yield


def floor(g: dict, device: str, family: str, folder: Path, batches: tuple[int, int] = (10, 40)) -> dict:
    """Per batch of ``g``'s size, inputs of 8 wordpieces, at its layers and heads with 4
    dimensions a head (compute negligible): milliseconds of ``sdpa`` and ``fused`` (device path, reading the
    layers as it does by default), and torch operations issued (counted in untimed runs, on the
    CPU in the device's branches: :func:`device_branches`); each the difference between runs of
    ``batches`` batches, so that a run's own start and end (the plan, the states written) are
    left out."""
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    from headatlas.analyses.fused import fused_extract

    tiny = {**g, "hidden": 4 * g["heads"], "n": 8}  # the geometry's batch: per-input host work counts
    loaded = build(folder / "floor-model", tiny, device, family)
    common = dict(**extraction_options(tiny), exemplars=0, on_device=True, by_layer=True)

    def run(path: str, count: int):
        records = sentences(tiny["batch"] * count, tiny["n"])
        if path == "sdpa":
            examples = encoded(loaded, records, tiny)
            # the model's device as the run sees it (the simulated one, where ops are counted)
            return lambda: forwards(loaded, examples, tiny, next(loaded.model.parameters()).device, weights=False)
        return lambda: fused_extract(loaded, records, folder / "floor.h5", per_head_runs(), **common)

    ops = Counter()

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops[current] += 1
            return func(*args, **(kwargs or {}))

    found = {}
    for path in ("sdpa", "fused"):
        few, many = (run(path, count) for count in batches)
        few()  # warm-up
        seconds = timed(device, many) - timed(device, few)
        for current, work in (("few", few), ("many", many)):
            with device_branches(loaded, device), Count():
                work()
        extra = batches[1] - batches[0]
        found[path] = {"ms_per_batch": 1e3 * seconds / extra,
                       "ops_per_batch": (ops.pop("many") - ops.pop("few")) / extra}
    return found


def breakdown(loaded, records, path: Path, common: dict, device: str) -> dict:
    """Seconds of one fused extraction (device path) by stage, each stage synchronised on CUDA
    and counted without the stages inside it: encoding the inputs (in line, not a batch ahead on
    a thread as a run does), the forward with the value norms recorded in it (the layers' maps
    packed as they come), the device views (the maps stacked, rounded as a store holds them, the
    norm view), each run's reductions of the layers (``name:view``, or its batched update when
    every layer is read at once) and its fold (``name:view fold``: the layers joined, the
    per-example scores, the state), and the rest (the plan from the counted lengths, the states
    written)."""
    from collections import Counter

    import torch

    from headatlas.analyses import fused
    from headatlas.analyses.fused import fused_extract

    spent, inside = Counter(), []  # per open stage, the seconds of the stages inside it

    def clocked(key: str, work):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        inside.append(0.0)
        try:
            return work()
        finally:
            if device == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            spent[key] += seconds - inside.pop()
            if inside:
                inside[-1] += seconds

    stream = fused._Stream
    # encoding in line (a run encodes the next batch on a thread meanwhile), so that it is timed alone
    patched = {(fused, "encoded_ahead"): lambda real: lambda encode, batches: map(encode, batches),
               (fused, "_encode"): lambda real: lambda *a, **k: clocked("encode", lambda: real(*a, **k)),
               (fused, "_forward"): lambda real: lambda *a, **k: clocked("forward (with norms)", lambda: real(*a, **k)),
               (fused, "_forward_by_layer"): lambda real: lambda *a, **k: clocked("forward (with norms)",
                                                                                  lambda: real(*a, **k)),
               (fused, "device_views"): lambda real: lambda *a, **k: clocked("views", lambda: real(*a, **k)),
               (stream, "add_batch"): lambda real: lambda self, batch: clocked(
                   f"{self.analysis.name}:{self.weighting}", lambda: real(self, batch)),
               (stream, "reduce"): lambda real: lambda self, batch: clocked(
                   f"{self.analysis.name}:{self.weighting}", lambda: real(self, batch)),
               (stream, "fold"): lambda real: lambda self, batch, parts: clocked(
                   f"{self.analysis.name}:{self.weighting} fold", lambda: real(self, batch, parts))}
    reals = {where: getattr(*where) for where in patched}
    for (owner, name), wrap in patched.items():
        setattr(owner, name, wrap(reals[owner, name]))
    try:
        total = timed(device, lambda: fused_extract(loaded, records, path, per_head_runs(), exemplars=0,
                                                   on_device=True, **common))
    finally:
        for (owner, name), real in reals.items():
            setattr(owner, name, real)
    spent["rest (plan, states)"] = total - sum(spent.values())
    return {"examples": len(records), "seconds": total, "stages": dict(spent.most_common())}


def profiled(work, path: Path) -> None:
    """``work`` under cProfile: the stats written to ``path``, the 30 functions that took the most
    time of their own printed (on a GPU, time waiting for the device shows where the host reads
    a result: a copy to the host, ``.item()``)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(work)
    path.parent.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(path)
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny geometry on the CPU (CI)")
    parser.add_argument("--family", choices=("bert", "mpnet"), default="bert", help="the random model's family")
    parser.add_argument("--length", type=int, help="wordpieces per input (default 128; quick 32)")
    parser.add_argument("--batch", type=int, help="inputs per batch (default 64; quick 8)")
    parser.add_argument("--scale", type=float, default=1.0, help="times each path's number of inputs")
    parser.add_argument("--view-memory-mb", type=int, default=1024,
                        help="fused: memory of one chunk of a batch's views (extraction.view_memory_mb)")
    parser.add_argument("--whole-batch", action="store_true",
                        help="fused: take every layer's maps from the forward pass at once (by_layer=False; "
                        "default: each layer read as the model produces it)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time a fused extraction stage by stage (synchronised)")
    parser.add_argument("--profile", action="store_true",
                        help="also profile a fused extraction (cProfile, unsynchronised): OUT with .prof, "
                        "and its 30 largest functions by own time printed")
    parser.add_argument("--floor", action="store_true",
                        help="also time the host's floor per batch: negligible compute (module docstring)")
    parser.add_argument("--sample-examples", type=int,
                        help="norm shares' and distance features' sample of examples (default theirs, 2,000; "
                        "smaller: a run mostly past it, as every batch of a long corpus is)")
    parser.add_argument("--processes", type=int, default=0,
                        help="also time fused in this many processes at once on the one device (module docstring)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # one of --processes' processes
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS),
                        help="the paths to time (sdpa always runs: the others' ratios are to it)")
    parser.add_argument("--disk", type=Path, default=Path(tempfile.gettempdir()),
                        help="where the store path writes (local disk)")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "gpu.json")
    args = parser.parse_args(argv)
    if args.sample_examples:
        sampled(args.sample_examples)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    from headatlas.analyses.fused import fused_extract
    from headatlas.encoders.extract import extract

    device = "cpu" if args.quick or not torch.cuda.is_available() else "cuda"
    if device == "cpu":
        from headatlas.pipeline.jobs import limit_threads

        limit_threads(1)  # as an extraction job with threads: 1
    g = dict(GEOMETRY["quick" if args.quick else "full"])
    g.update({k: v for k, v in (("n", args.length), ("batch", args.batch)) if v})
    g.update({p: max(g["batch"], round(g[p] * args.scale)) for p in PATHS})
    if args.worker is not None:
        return worker(args, g, device)
    with tempfile.TemporaryDirectory(dir=args.disk) as work:
        work = Path(work)
        loaded = build(work / "model", g, device, args.family)
        common, fused_only = extraction_options(g), device_options(args)
        paths = {
            "encode": lambda r: encoded(loaded, r, g),
            "sdpa": lambda r: forwards(loaded, r, g, device, weights=False),
            "eager": lambda r: forwards(loaded, r, g, device, weights=True),
            "fused": lambda r: fused_extract(loaded, r, work / "fused.h5", per_head_runs(), lengths=counted(r),
                                             exemplars=0, on_device=True, **common, **fused_only),
            "fused_host": lambda r: fused_extract(loaded, r, work / "fused_host.h5", per_head_runs(),
                                                  lengths=counted(r), exemplars=0, on_device=False, **common),
            "store": lambda r: extract(loaded, r, work / "store.h5", **common),
        }
        weights_bytes = torch.cuda.memory_allocated() if device == "cuda" else 0
        counted = Counted(loaded, work / "lengths")
        found = {}
        for name, path in ((k, v) for k, v in paths.items() if k == "sdpa" or k in args.paths):
            warm_up = sentences(g["batch"], g["n"], seed=1)  # kernels, allocator, imports
            path(encoded(loaded, warm_up, g) if name in FORWARD_ONLY else warm_up)
            for leftover in work.glob("*.h5"):
                leftover.unlink()
            records = sentences(g[name], g["n"])
            if name in FORWARD_ONLY:  # inputs ready: the forward alone is timed
                records = encoded(loaded, records, g)
            if name in PLANNED:
                counted(records)
            if device == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            seconds = timed(device, lambda: path(records))
            found[name] = {"examples": len(records), "seconds": seconds,
                           "tokens_per_s": len(records) * g["n"] / seconds}
            if device == "cuda":
                found[name]["peak_gpu_bytes"] = torch.cuda.max_memory_allocated() - weights_bytes
            if name == "fused_host":  # kept for the agreement check (warm-ups clear *.h5)
                (work / "kept").mkdir()
                (work / "fused_host.h5").rename(work / "kept" / "fused_host.h5")
            if name == "store":
                found[name]["disk_bytes"] = (work / "store.h5").stat().st_size
                found[name]["disk_gb_per_s"] = found[name]["disk_bytes"] / seconds / 1e9
            print(f"{name:10s} {found[name]['tokens_per_s']:12,.0f} tokens/s", file=sys.stderr, flush=True)
        if args.processes:
            found[f"fused_x{args.processes}"] = concurrent(args)
        stages = {}
        if args.breakdown:
            records = sentences(g["fused"], g["n"])
            planned = {**common, **fused_only, "lengths": counted(records)}
            stages = breakdown(loaded, records, work / "breakdown.h5", planned, device)
        if args.profile:
            records = sentences(g["fused"], g["n"])
            counted(records)
            profiled(lambda: timed(device, lambda: paths["fused"](records)), args.out.with_suffix(".prof"))
        lowest = floor(g, device, args.family, work) if args.floor else {}
        same = {}
        if "fused_host" in found:  # the device path on fused_host's inputs, untimed
            fused_extract(loaded, sentences(g["fused_host"], g["n"]), work / "kept" / "fused.h5", per_head_runs(),
                          exemplars=0, on_device=True, **common)
            same = agreement(work / "kept" / "fused.h5", work / "kept" / "fused_host.h5")
    maps_per_token = 2 * g["layers"] * g["heads"] * g["n"]  # float16 maps
    norms_per_token = 2 * g["layers"] * (g["heads"] + g["n"])  # value norms and the norm map row
    one_layer = g["batch"] * g["heads"] * g["n"] ** 2  # one batch's maps of one layer, elements
    result = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "family": args.family, "geometry": g, "view_memory_mb": args.view_memory_mb,
        "by_layer": not args.whole_batch, "precision": "float16" if device == "cuda" else "float32",
        "paths": found,
        "ratio_to_sdpa": {k: v["tokens_per_s"] / found["sdpa"]["tokens_per_s"] for k, v in found.items()},
        # fused copies states and per-example scores only (kilobytes per batch)
        "device_to_host_bytes_per_token": {"encode": 0, "sdpa": 0, "eager": 0, "fused": 0,
                                           f"fused_x{args.processes}": 0,
                                           "fused_host": maps_per_token + norms_per_token,
                                           "store": maps_per_token + norms_per_token},
        "one_batch_maps_bytes": {"one_layer_float16": 2 * one_layer, "all_layers_float16": 2 * one_layer * g["layers"],
                                 "all_layers_float32": 4 * one_layer * g["layers"]},
        "fused_vs_fused_host": same,
        "fused_breakdown": stages,
        "floor": lowest,
        "sample_examples": args.sample_examples,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"device: {result['device']}, random {args.family}, {result['precision']}, n = {g['n']}, "
          f"batch {g['batch']}")
    print("| path | inputs | tokens/s | / sdpa | peak GPU memory above the weights | device->host bytes per token |"
          "\n|---|---|---|---|---|---|")
    for name, row in found.items():
        peak = f"{row['peak_gpu_bytes'] / 2**30:.2f} GiB" if "peak_gpu_bytes" in row else "-"
        print(f"| {name} | {row['examples']:,} | {row['tokens_per_s']:,.0f} | {result['ratio_to_sdpa'][name]:.3f} | "
              f"{peak} | {result['device_to_host_bytes_per_token'][name]:,} |")
    maps = result["one_batch_maps_bytes"]
    print(f"one batch's maps: one layer {maps['one_layer_float16'] / 2**30:.2f} GiB, every layer "
          f"{maps['all_layers_float16'] / 2**30:.2f} GiB (float16), {maps['all_layers_float32'] / 2**30:.2f} GiB (float32)")
    if "store" in found:
        print(f"store path: {found['store']['disk_gb_per_s']:.2f} GB/s written "
              f"({found['store']['disk_bytes'] / 1e6:.1f} MB)")
    if stages:
        print(f"fused, stage by stage ({stages['examples']:,} inputs, {stages['seconds']:.2f} s):")
        for key, seconds in stages["stages"].items():
            print(f"  {key:32s} {seconds:8.3f} s  {seconds / stages['seconds']:6.1%}")
    for name, row in lowest.items():
        print(f"floor, {name}: {row['ms_per_batch']:.1f} ms and {row['ops_per_batch']:,.0f} torch operations per batch "
              f"({g['batch']} inputs of 8 wordpieces, 4 dimensions a head): at most "
              f"{g['batch'] * g['n'] / row['ms_per_batch'] * 1e3:,.0f} tokens/s in batches of {g['batch']} x {g['n']}")
    for key, row in same.items():
        print(f"fused vs fused_host, {key}: max relative difference {row['max_relative_difference']:.2e}, "
              f"claims {'equal' if row['claims_equal'] else 'DIFFER'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
