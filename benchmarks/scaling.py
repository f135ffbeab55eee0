#!/usr/bin/env python
"""The arithmetic of docs/scaling.md: store size, FLOPs, memory and hours from L, H, d and lengths.

    python benchmarks/scaling.py            # prints the Markdown tables of docs/scaling.md

Nothing is measured here: the per-unit costs below (CPU seconds per FLOP of the forward pass,
per GB written and read) were measured on the embedded model (docs/scaling.md says where and
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
# Fused mode, measured on MiniLM at one thread (docs/performance.md "Batched statistics"): the
# forward that returns maps and records value norms costs 1.15-1.3x the bare one; the default
# config's per-head jobs on the surface corpus (14 runs, both views) 24.6-26.5 CPU-s per 1,000
# segments of 72 maps with E[n²] = 16,277: ~2.2e-8 CPU-s per map element. The store path reads
# the store once per run (14 reads) and does the same analysis work.
FUSED_FORWARD = 1.2
ANALYSIS_S_PER_ELEMENT = 2.2e-8
STREAMING_READS = 14
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


def states_bytes(L, H, N) -> float:
    """A fused run's states: norm shares' pairs (∝ L) and two views of head-type features for
    the sampled examples, and a few bytes per segment."""
    return min(N, SAMPLE_EXAMPLES) * (PAIRS_BYTES_PER_LAYER * L + 2 * L * H * 21 * 4) + N * BYTES_PER_SEGMENT


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
    print("| model | corpus | store | fused: states + exemplars | CPU-h store path (forward, write, "
          f"{STREAMING_READS} reads, analyses) | CPU-h fused (forward with maps, analyses) |")
    print("|---|---|---|---|---|---|")
    for model, (L, H, d) in MODELS.items():
        for corpus, (N, n, n2) in CORPORA.items():
            if not corpus.startswith("Wikipedia, 10^6"):
                continue
            size, flops = store_bytes(L, H, N, n, n2), forward_flops(L, d, N, n)
            analyses = ANALYSIS_S_PER_ELEMENT * L * H * N * n2
            kept = states_bytes(L, H, N) + store_bytes(L, H, EXEMPLARS, n, n2)
            store_path = (flops / CPU_FLOPS + size / 1e9 * (WRITE_S_PER_GB + STREAMING_READS * READ_S_PER_GB)
                          + analyses)
            fused = flops / CPU_FLOPS * FUSED_FORWARD + analyses
            print(f"| {model} | {corpus} | {fmt_bytes(size)} | {fmt_bytes(kept)} ({100 * kept / size:.3f}%) "
                  f"| {fmt_hours(store_path)} | {fmt_hours(fused)} ({fused / store_path:.2f}x) |")


if __name__ == "__main__":
    main()
