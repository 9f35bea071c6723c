#!/usr/bin/env bash
# One command for a lent GPU machine: run the CUDA tests and a short GPU benchmark.
# Everything it prints also lands under $OUT (or ./gpu-check-out when $OUT is unset).
#   bash benchmarks/gpu_check.sh
# Sections run from the most to the least telling, each under its own time limit, so that a
# slow one (CuPy compiles each elementwise kernel on first use) cannot starve the rest within a
# short device lease: kernel launches, the benchmark, the whole suite on cuda, NCCL.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
pytest=(python3 -m pytest -q -p no:cacheprovider)

{
  echo "== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
  # A lent GPU machine has no network: use its own CuPy, PyTorch and pytest, and microtorch
  # from this source tree (no pip install, which would try to fetch build dependencies).
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
  python3 -c "import cupy, microtorch; print('cupy', cupy.__version__, '| GPUs',
cupy.cuda.runtime.getDeviceCount(), '| microtorch', microtorch.__version__)"

  echo "== nvcc -ptx"
  for f in kernels/*.cu; do nvcc -ptx -arch=sm_90 "$f" -o /dev/null && echo "ok $f"; done

  echo "== kernel launches on the GPU against the NumPy references"
  timeout 120 "${pytest[@]}" tests/test_kernels.py -k cuda -rs

  echo "== GPU benchmark"
  timeout 240 python3 -m microtorch bench --quick --device cuda --out "$out/bench"

  echo "== CUDA tests (everything marked cuda, plus the device-parametrized suite on cuda)"
  timeout 300 "${pytest[@]}" -k "cuda and not test_kernels and not emulator" -x --durations=5

  echo "== NCCL world size 1"
  timeout 60 "${pytest[@]}" tests/test_distributed.py -k nccl -rs
} 2>&1 | tee "$out/gpu_check.log"
