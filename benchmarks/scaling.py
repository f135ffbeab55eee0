#!/usr/bin/env python
"""The arithmetic of docs/scaling.md: store size, FLOPs, memory and hours from L, H, d and lengths.

    python benchmarks/scaling.py            # prints the Markdown tables of docs/scaling.md

Nothing is measured here: the per-unit costs below (CPU seconds per FLOP of the forward pass,
per GB written and read, and fused mode's and the store path's per map element, from one row of
``benchmarks/fused.py``) were measured on the embedded model (docs/scaling.md says where and
how); every other number is arithmetic from them and from the model's and corpus's shapes.
"""

from __future__ import annotations

# Encoders: layers L, heads H, hidden size d (FFN 4d); non-embedding parameters 12·L·d².
MODELS = {"MiniLM-L6 (embedded)": (6, 12, 384), "bert-base": (12, 12, 768), "bert-large": (24, 16, 1024)}
# Corpora: examples N, mean wordpieces E[n], E[n²] (the store grows with Σn² = N·E[n²]).
CORPORA = {
    # ~40k sentences; 23.5 words/sentence x ~1.2 wordpieces/word + [CLS]/[SEP] ≈ 30; E[n²]/E[n]²
    # = 1.48 as measured on GUM (666 / 21.2²).
    "PTB (WSJ), 40k sentences": (40_000, 30, 1.48 * 30 ** 2),
    # 3.5k documents cut to 128 wordpieces (Clark et al.'s regime; nearly all fill it).
    "OntoNotes, 3.5k documents cut to 128": (3_500, 128, 128 ** 2),
    # The same documents whole: ~1.4M words ≈ 1.7M wordpieces, 512-wordpiece windows, stride 256.
    "OntoNotes, whole documents (6.6k windows of 512)": (6_600, 512, 512 ** 2),
    # Segments cut to the 128-wordpiece budget as Clark et al.; E[n] and E[n²] measured on our
    # 1,000 (127.6, 16,277; 2026-11-23 store).
    "Wikipedia, 10^5 segments of 128": (100_000, 127.6, 16_277),
    "Wikipedia, 10^6 segments of 128": (1_000_000, 127.6, 16_277),
    "Wikipedia, 10^6 segments of 512": (1_000_000, 512, 512 ** 2),
}
# Measured (docs/scaling.md, "Measured"), CPU, one thread per job as the pipeline runs:
# MiniLM 92 and MPNet-base 116 GFLOP per CPU-second on a 32 x 128 forward; the extraction jobs of
# an MPNet-base run (200 Wikipedia segments, 2,076 EWT sentences) match it. The older 19e9 was
# read at two threads under load, where waiting OpenMP threads spin and burn CPU time.
CPU_FLOPS = 100e9       # forward FLOPs per CPU-second (extraction's forward incl. eager attention + norms)
WRITE_S_PER_GB = 1.0    # CPU-seconds per GB appended to the store (StoreWriter, float16, no filter)
READ_S_PER_GB = 2.0     # CPU-seconds per GB read back as float32 (the floor of every analysis)
# Assumed, not measured here: a GPU's effective throughput on eager fp32 attention-returning
# forwards, and the sustained write rate of one extraction job's store.
GPU_FLOPS = 20e12
DISK_GB_S = 0.5
# Fused mode beside the store path, calibrated on one run (docs/scaling.md, "Fused mode"):
# `benchmarks/fused.py --scale 1 10 --paths store_stats fused_stats` at c4a994e, MiniLM, both
# views, the per-head statistics' 13 runs (clustering's distances left out), one thread. CPU
# seconds of its rows, and their segments' Σn and Σn². The 1,000-segment row calibrates (its
# segments fill the 128 wordpieces, as the table's do); the 9,388-segment row (E[n] = 98) checks.
CALIBRATION = {"tokens": 127_576, "sum_n2": 16_276_516, "bare": 49.4, "forward_with_maps": 54.8,
               "fused": 74.1, "store": 134.9}
CHECK = {"tokens": 921_116, "sum_n2": 97_197_434, "bare": 364.5, "forward_with_maps": 392.0,
         "fused": 527.5, "store": 997.3}
# A path's CPU is then (forward FLOPs / CPU_FLOPS) x the forward-with-maps ratio (the forward
# that returns the maps and records the value norms, over the bare one) plus a cost per map
# element (L·H·n² per example): in fused mode the analyses' updates and the widening, in the
# store path the write, 13 reads and the updates. Measured seconds are rescaled by this page's
# forward rate over that run's, so that both terms are in one machine's seconds.

# States: what two analyses keep per example (~39 KB per MiniLM segment measured before the cap):
# norm shares' sampled pairs, capped per layer and token class (~27 KB at 6 layers, so ∝ L and
# not n), and the head-type features (21 float32 per head and view, 2 views), both for at most
# SAMPLE_EXAMPLES examples (norms.sample_examples, headtypes.sample_examples); what grows with
# every segment: its corpus position and length (12 bytes) and the sinks analysis's 3 int64 in
# each of 2 views (48 bytes); plus a fixed exemplar store of 16 examples.
PAIRS_BYTES_PER_LAYER = 27e3 / 6
SAMPLE_EXAMPLES = 2000
BYTES_PER_SEGMENT = 12 + 48
EXEMPLARS = 16


def nonembedding_params(L: int, d: int) -> float:
    return 12 * L * d * d


def store_bytes(L, H, N, n, n2) -> float:
    """2 bytes per float16: maps L·H·n², norm maps L·n², value norms L·H·n."""
    return N * (2 * L * (H + 1) * n2 + 2 * L * H * n)


def forward_flops(L, d, N, n) -> float:
    """2·params per token for the matrix products, + 4·L·n·d per token for QKᵀ and AV."""
    return N * n * (2 * nonembedding_params(L, d) + 4 * L * n * d)


def corpus_flops(L, d, tokens, sum_n2) -> float:
    """:func:`forward_flops` of a corpus given by its Σn and Σn² (segments of unequal length)."""
    return tokens * 2 * nonembedding_params(L, d) + 4 * L * d * sum_n2


def states_bytes(L, H, N) -> float:
    """A fused run's states: norm shares' pairs (∝ L) and two views of head-type features for
    the sampled examples, and a few bytes per segment."""
    return min(N, SAMPLE_EXAMPLES) * (PAIRS_BYTES_PER_LAYER * L + 2 * L * H * 21 * 4) + N * BYTES_PER_SEGMENT


def calibrated(run: dict = CALIBRATION) -> tuple[float, float, float]:
    """The forward-with-maps ratio, and the fused and store paths' CPU-s per map element, from
    one measured row (MiniLM)."""
    L, H, d = MODELS["MiniLM-L6 (embedded)"]
    speed = corpus_flops(L, d, run["tokens"], run["sum_n2"]) / CPU_FLOPS / run["bare"]
    elements = L * H * run["sum_n2"]
    return (run["forward_with_maps"] / run["bare"], (run["fused"] - run["forward_with_maps"]) * speed / elements,
            (run["store"] - run["forward_with_maps"]) * speed / elements)


def fused_over_store(L: int, H: int, d: int, tokens: float, sum_n2: float) -> tuple[float, float]:
    """CPU-s of the store path and of fused mode for a corpus of ``tokens`` wordpieces and Σn²."""
    with_maps, fused_per_element, store_per_element = calibrated()
    forward = corpus_flops(L, d, tokens, sum_n2) / CPU_FLOPS * with_maps
    return forward + store_per_element * L * H * sum_n2, forward + fused_per_element * L * H * sum_n2


def fmt_bytes(b: float) -> str:
    return f"{b / 1e12:.1f} TB" if b >= 1e12 else f"{b / 1e9:.1f} GB" if b >= 1e9 else f"{b / 1e6:.0f} MB"


def fmt_hours(s: float) -> str:
    return f"{s / 3600:.1f}" if s >= 360 else f"{s / 3600:.2f}" if s >= 36 else "< 0.01"


def main() -> None:
    print("| model | corpus | Σn² | store | forward FLOPs | CPU-h forward | CPU-h write | CPU-h one streaming read "
          "| GPU-h forward (est.) | hours at the disk rate (est.) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model, (L, H, d) in MODELS.items():
        for corpus, (N, n, n2) in CORPORA.items():
            size = store_bytes(L, H, N, n, n2)
            flops = forward_flops(L, d, N, n)
            print(f"| {model} | {corpus} | {N * n2:.2e} | {fmt_bytes(size)} | {flops:.1e} "
                  f"| {fmt_hours(flops / CPU_FLOPS)} | {fmt_hours(size / 1e9 * WRITE_S_PER_GB)} "
                  f"| {fmt_hours(size / 1e9 * READ_S_PER_GB)} | {fmt_hours(flops / GPU_FLOPS)} "
                  f"| {fmt_hours(size / 1e9 / DISK_GB_S)} |")
    print()
    print("| model | store per example, n = 128 | store per example, n = 512 | one batch of 32 in flight, T = 128 "
          "(fp32 attentions / fp16 copy) | T = 512 |")
    print("|---|---|---|---|---|")
    for model, (L, H, d) in MODELS.items():
        per = [store_bytes(L, H, 1, n, n * n) for n in (128, 512)]
        batch = [32 * L * H * t * t for t in (128, 512)]
        print(f"| {model} | {fmt_bytes(per[0])} | {fmt_bytes(per[1])} | {fmt_bytes(4 * batch[0])} / "
              f"{fmt_bytes(2 * batch[0])} | {fmt_bytes(4 * batch[1])} / {fmt_bytes(2 * batch[1])} |")

    print()
    print("| model | corpus | store | fused: states + exemplars | CPU-h store path (forward with maps, write, "
          "13 reads and updates) | CPU-h fused (forward with maps, updates) |")
    print("|---|---|---|---|---|---|")
    for model, (L, H, d) in MODELS.items():
        for corpus, (N, n, n2) in CORPORA.items():
            if not corpus.startswith("Wikipedia, 10^6"):
                continue
            size = store_bytes(L, H, N, n, n2)
            kept = states_bytes(L, H, N) + store_bytes(L, H, EXEMPLARS, n, n2)
            store_path, fused = fused_over_store(L, H, d, N * n, N * n2)
            print(f"| {model} | {corpus} | {fmt_bytes(size)} | {fmt_bytes(kept)} ({100 * kept / size:.3f}%) "
                  f"| {fmt_hours(store_path)} | {fmt_hours(fused)} ({fused / store_path:.2f}x) |")
    store_path, fused = fused_over_store(*MODELS["MiniLM-L6 (embedded)"], CHECK["tokens"], CHECK["sum_n2"])
    print(f"\nThe check row (MiniLM, {CHECK['tokens']:,} wordpieces): fused {fused / store_path:.2f}x the store "
          f"path predicted, {CHECK['fused'] / CHECK['store']:.2f}x measured.")


if __name__ == "__main__":
    main()
