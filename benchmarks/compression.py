#!/usr/bin/env python
"""Size, write and read CPU cost of lossless HDF5 filters on a real store's attention (float16).

    python benchmarks/compression.py STORE N_EXAMPLES OUT_DIR

Copies the first N examples' attention of STORE into one dataset per filter, appended one
example at a time as StoreWriter does (1 M-element chunks), then reads every example back as
float32 as Store.example does, with h5py's default 1 MB chunk cache and with 64 MB. Prints
each filter's size relative to the raw bytes and the CPU seconds (docs/scaling.md,
"Compression").
"""
import os
import sys
import time

import h5py
import numpy as np

src, n_ex, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with h5py.File(src, "r") as f:
    off = f["attn_offsets"][: n_ex + 1]
    attn = f["attn"][: off[-1]]
CH = 1 << 20
variants = {"none": {}, "lzf+shuffle": dict(compression="lzf", shuffle=True),
            "gzip1+shuffle": dict(compression="gzip", compression_opts=1, shuffle=True),
            "gzip4+shuffle": dict(compression="gzip", compression_opts=4, shuffle=True),
            "gzip1": dict(compression="gzip", compression_opts=1)}
for name, kw in variants.items():
    path = f"{out}/c_{name}.h5"
    t = time.process_time()
    with h5py.File(path, "w") as g:
        d = g.create_dataset("attn", (0,), np.float16, maxshape=(None,), chunks=(CH,), **kw)
        for i in range(n_ex):  # appended per example, as StoreWriter does
            a = attn[off[i]:off[i + 1]]
            s = d.shape[0]; d.resize((s + len(a),)); d[s:] = a
    wt = time.process_time() - t
    for cache in (1 << 20, 64 << 20):
        t = time.process_time()
        with h5py.File(path, "r", rdcc_nbytes=cache) as g:
            d = g["attn"]
            for i in range(n_ex):
                x = d[off[i]:off[i + 1]].astype(np.float32)
        rt = time.process_time() - t
        print(f"{name:14s} size {os.path.getsize(path)/attn.nbytes:.3f} of raw  write {wt:.2f}s  "
              f"read(cache {cache>>20} MB) {rt:.2f}s CPU")
    os.remove(path)
print("raw bytes", attn.nbytes)
