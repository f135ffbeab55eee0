#!/usr/bin/env python
"""Benchmark: what a fused shard pays to plan its batches, counting every record's length
itself or reading them from the ``corpus_lengths`` job's file (issue 32).

Usage (from the repository root)::

    .venv/bin/python benchmarks/shard_plan.py --scale 10 --shards 10
    .venv/bin/python benchmarks/shard_plan.py --quick      # 48 segments, 3 shards: the code path

A fused extraction cuts its batches over the whole corpus and deals them to its K shards, so
each shard needs every record's length. In one run, each measurement in its own child process,
on the embedded MiniLM with one thread and the per-head statistics of ``benchmarks/fused.py``
(``fused_stats``: both views, every job but clustering's):

- ``lengths``: the ``corpus_lengths`` job: every record's length counted and written, once;
- ``counted``: shard 0 of K, counting every record's length itself (a pass of the tokenizer
  over the whole corpus: what each shard did before the lengths file);
- ``read``: shard 0 of K, reading the lengths file.

Reported (benchmarks/out/shard_plan.json and stdout): CPU seconds of each, the shard's
``read / counted``, and the whole extraction's, K shards taken as K times shard 0:
``(lengths + K * read) / (K * counted)``. Ratios within one run only.
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
sys.path.insert(0, str(HERE))
import fused as bench  # noqa: E402  (the same corpus, model, jobs and batches)

KINDS = ("lengths", "counted", "read")


def child(kind: str, corpus: Path, work: Path, shards: int) -> dict:
    from headatlas.pipeline.jobs import limit_threads

    limit_threads(1)
    from headatlas.corpora.records import JsonlRecords

    lengths = work / f"lengths-{corpus.stem}.h5"
    sentences = JsonlRecords(corpus)
    if kind == "lengths":
        from headatlas.encoders.inputs import corpus_lengths
        from headatlas.encoders.models import load_tokenizer
        from headatlas.store.lengths import write_lengths

        start = time.process_time()  # the job: its tokenizer, the pass, the file
        tokenizer = load_tokenizer(*bench.MODEL, bench.MAX_LENGTH)
        write_lengths(lengths, corpus_lengths(tokenizer, sentences),
                      {"corpus": "wikipedia", "corpus_sha256": "", "model_name": bench.MODEL[0]})
        return {"kind": kind, "cpu": time.process_time() - start}
    from headatlas.analyses.fused import fused_extract
    from headatlas.encoders.models import load_model

    loaded = load_model(*bench.MODEL, "cpu")
    limit_threads(1)
    runs = bench.runs("fused_stats")
    states, exemplars = work / f"{kind}-states.h5", work / f"{kind}-exemplars.h5"
    start = time.process_time()
    stats = fused_extract(loaded, sentences, states, runs, exemplar_path=exemplars, max_length=bench.MAX_LENGTH,
                          batch_size=bench.BATCH_SIZE, shard=0, n_shards=shards, progress=False,
                          store_attrs={"corpus": "wikipedia", "corpus_sha256": ""},
                          lengths=lengths if kind == "read" else None)
    cpu = time.process_time() - start
    states.unlink()
    exemplars.unlink()
    return {"kind": kind, "cpu": cpu, "kept": stats["kept"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=10, help="corpus size, in thousands of segments")
    parser.add_argument("--shards", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="48 segments, 3 shards: the code path only")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "shard_plan.json")
    parser.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.quick:
        args.scale, args.shards = 0.048, 3
    if args.child:
        print(json.dumps(child(args.child, args.corpus, args.work, args.shards)))
        return 0
    work = args.out.parent / "fused-work"
    work.mkdir(parents=True, exist_ok=True)
    corpus = bench.segments(int(round(args.scale * 1000)), work)
    found = {}
    for kind in KINDS:  # the lengths file first: `read` reads it
        out = subprocess.run([sys.executable, __file__, "--child", kind, "--corpus", str(corpus),
                              "--work", str(work), "--shards", str(args.shards)],
                             capture_output=True, text=True, cwd=bench.ROOT)
        if out.returncode:
            raise SystemExit(f"{kind} failed:\n{out.stderr[-3000:]}")
        found[kind] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"  {kind:8s} {found[kind]['cpu']:8.1f} CPU-s", file=sys.stderr, flush=True)
    if found["read"]["kept"] != found["counted"]["kept"]:
        raise SystemExit(f"the shard extracted {found['read']['kept']} examples reading the lengths "
                         f"and {found['counted']['kept']} counting them")
    k, cpu = args.shards, {kind: found[kind]["cpu"] for kind in KINDS}
    row = {"segments": sum(1 for _ in open(corpus, encoding="utf-8")), "shards": k, "cpu": cpu,
           "shard read/counted": cpu["read"] / cpu["counted"],
           "extraction (lengths + K read) / (K counted)": (cpu["lengths"] + k * cpu["read"]) / (k * cpu["counted"])}
    args.out.write_text(json.dumps(row, indent=2))
    print(json.dumps(row, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
