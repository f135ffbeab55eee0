"""A job is held to its `threads`: torch, BLAS and OpenMP pools, loaded or not yet (pipeline.limit_threads)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CHECK = """
import json, os, sys
import numpy, torch
torch.set_num_threads(4)  # a pool already running with more threads than the job has
from headatlas.pipeline.jobs import THREAD_VARIABLES, limit_threads
from threadpoolctl import threadpool_info
limit_threads(int(sys.argv[1]))
# the fast tokenizer's pool (Rust) starts at the first batch it encodes: count its threads
import tempfile
from transformers import BertTokenizer
folder = tempfile.mkdtemp()
BertTokenizer(vocab={w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"])}).save_pretrained(folder)
tokenizer = BertTokenizer.from_pretrained(folder)
def threads():
    return int(next(line for line in open("/proc/self/status") if line.startswith("Threads")).split()[1])
before = threads()
tokenizer([["a", "b"] * 50] * 2000, is_split_into_words=True)
print(json.dumps({"torch": torch.get_num_threads(),
                  "env": {v: os.environ[v] for v in THREAD_VARIABLES},
                  "pools": [p["num_threads"] for p in threadpool_info()],
                  "tokenizer_threads": threads() - before}))
"""


@pytest.mark.parametrize("n", [1, 2])
def test_limit_threads_holds_every_pool_to_the_jobs_threads(n):
    out = subprocess.run([sys.executable, "-c", CHECK, str(n)], capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout)
    assert seen["torch"] == n
    # pools started later (numba, a lazily imported library, the tokenizer's)
    assert seen["env"] == {v: str(n) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                               "NUMBA_NUM_THREADS", "RAYON_NUM_THREADS")}
    assert seen["tokenizer_threads"] <= n
    assert seen["pools"] and all(k == n for k in seen["pools"])  # BLAS / OpenMP loaded with numpy, torch
