#!/usr/bin/env bash
# One command for a lent GPU machine: run the CUDA tests and a short GPU benchmark.
# Everything it prints also lands under $OUT (or ./gpu-check-out when $OUT is unset).
#   bash benchmarks/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg

{
  echo "== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
  # A lent GPU machine has no network: use its own CuPy, PyTorch and pytest, and microtorch
  # from this source tree (no pip install, which would try to fetch build dependencies).
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
  python3 -c "import cupy, microtorch; print('cupy', cupy.__version__, '| GPUs',
cupy.cuda.runtime.getDeviceCount(), '| microtorch', microtorch.__version__)"

  echo "== nvcc -ptx"
  for f in kernels/*.cu; do nvcc -ptx -arch=sm_90 "$f" -o /dev/null && echo "ok $f"; done

  echo "== CUDA tests (everything marked cuda, plus the device-parametrized suite on cuda)"
  python3 -m pytest -q -k "cuda" -p no:cacheprovider

  echo "== NCCL world size 1"
  python3 -m pytest -q -p no:cacheprovider tests/test_distributed.py -k nccl || true

  echo "== GPU benchmark"
  python3 -m microtorch bench --quick --device cuda --out "$out/bench"
} 2>&1 | tee "$out/gpu_check.log"
