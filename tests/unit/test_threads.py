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
print(json.dumps({"torch": torch.get_num_threads(),
                  "env": [os.environ[v] for v in THREAD_VARIABLES],
                  "pools": [p["num_threads"] for p in threadpool_info()]}))
"""


@pytest.mark.parametrize("n", [1, 2])
def test_limit_threads_holds_every_pool_to_the_jobs_threads(n):
    out = subprocess.run([sys.executable, "-c", CHECK, str(n)], capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout)
    assert seen["torch"] == n
    assert seen["env"] == [str(n)] * 4  # pools started later (numba, a lazily imported library)
    assert seen["pools"] and all(k == n for k in seen["pools"])  # BLAS / OpenMP loaded with numpy, torch
