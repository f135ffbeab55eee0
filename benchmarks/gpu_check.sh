#!/usr/bin/env bash
# The GPU check (issue 32), one script for a machine with one CUDA GPU, about 5 minutes (its
# timeouts sum to 560 s, inside the device's 600 s a call):
#   1. the unit tests that run the tiny model, on CUDA (HEADATLAS_TEST_DEVICE=cuda): extraction,
#      fused states against the store's tables, value norms, ablation, gradients, on the GPU's path;
#   2. benchmarks/gpu.py at bert-base geometry, n = 128, float16: tokens/s and peak GPU memory of
#      each path, fused stage by stage and under cProfile (gpu_bert128.prof), and the device
#      path's results against the host path's; the host's floor per batch (compute negligible:
#      what the operations the host issues cost on this GPU);
#   3. fused again with a sample of 64 examples (norm shares, distance features): its inputs
#      mostly past the sample, as every batch of a long corpus is; alone and in 8 processes at
#      once on the GPU (as 8 shards' jobs on one machine), each with its host work on its own cores;
#   4. benchmarks/gpu.py at 512 wordpieces on a random MPNet-base geometry: peak GPU memory of the
#      eager forward, fused (its layers read in groups as they are produced) and store extraction; then fused
#      taking every layer's maps at once (--whole-batch);
#   5. benchmarks/host_work.py's steps that need no packaged model: the host's numpy and Python work
#      per batch, to set this machine's host beside the development machine's (docs/performance.md).
# Usage: benchmarks/gpu_check.sh OUT_FOLDER   (logs and JSON there; python3 must hold torch,
# transformers, numpy, h5py, pandas, scipy, scikit-learn, numba, pytest, pytest-xdist and the
# rest of requirements.txt's runtime packages)
set -uo pipefail
out="${1:?usage: benchmarks/gpu_check.sh OUT_FOLDER}"
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONPATH="src:.${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi -L
python3 -c "import torch, transformers, numpy, h5py; print('torch', torch.__version__, 'transformers',
transformers.__version__, 'numpy', numpy.__version__, 'h5py', h5py.__version__, torch.cuda.get_device_name())"
status=0
HEADATLAS_TEST_DEVICE=cuda timeout 100 python3 -m pytest -q -n 4 -p no:cacheprovider \
  tests/unit/test_{ablation,batch,contract,extract,fused,gradients,importance,provenance,squad,store,upos,valuenorms,write_behind}.py \
  2>&1 | tee "$out/pytest_cuda.log" | tail -25 || status=1
timeout 160 python3 benchmarks/gpu.py --breakdown --profile --floor --out "$out/gpu_bert128.json" 2>&1 | tee "$out/gpu_bert128.log" || status=1
# fused past the sample of examples (an input the sample does not admit draws no pairs), and in
# 8 processes at once: how far the host's cores lift a host-bound fused
timeout 130 python3 benchmarks/gpu.py --paths fused --sample-examples 64 --processes 8 \
  --out "$out/gpu_bert128_past_sample.json" 2>&1 | tee "$out/gpu_bert128_past_sample.log" || status=1
timeout 100 python3 benchmarks/gpu.py --family mpnet --length 512 --batch 16 --scale 0.03 \
  --paths eager fused store --breakdown --out "$out/gpu_mpnet512.json" 2>&1 | tee "$out/gpu_mpnet512.log" || status=1
# the same fused extraction with every layer's maps at once (before the layer-by-layer reading)
timeout 50 python3 benchmarks/gpu.py --family mpnet --length 512 --batch 16 --scale 0.03 \
  --paths fused --whole-batch --out "$out/gpu_mpnet512_whole.json" 2>&1 | tee "$out/gpu_mpnet512_whole.log" || status=1
timeout 20 python3 benchmarks/host_work.py --steps "head-type bins" "sink roles" "token classes" "patterns fold" \
  2>&1 | tee "$out/host_work.log" || status=1
exit $status
