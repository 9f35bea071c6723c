#!/usr/bin/env bash
# One command for a lent GPU machine (an H200, CuPy installed, no network), in at most 9 minutes:
#   bash benchmarks/gpu_check.sh
# 1. preflight (50 s): driver, CUDA runtime, NVRTC, CuPy version, one tiny kernel, and every
#    kernels/*.cu compiled by the loader; the check stops here if any of it fails;
# 2. the CUDA test tier (100 + 200 s): every test marked cuda and the device-parametrised
#    suite on cuda, the most telling files first, --maxfail=25, junit XML in $OUT
#    (cuda-tests-core.xml, cuda-tests.xml);
# 3. the GPU benchmark (110 s): multi-tensor zero of 1000 gradients against
#    torch._foreach_zero_, flat zero of 1 GiB in TB/s, a training step with each set_to_none
#    setting (and no device->host sync inside it, checked with set_sync_debug_mode("error"));
# 4. NCCL (20 s): the distributed tests on the GPU.
# Timeouts sum to 480 s (515 s with every kill-after grace period). Everything printed also
# lands in $OUT/gpu_check.log ($OUT defaults to ./gpu-check-out). Nothing is installed: CuPy, pytest (and PyTorch, if present) come from the
# machine, microtorch from this source tree; tests that need hypothesis are left out when it is
# missing.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset MICROTORCH_TEST_CUDA  # the real CuPy, not the stand-in
pytest=(python3 -m pytest -q -p no:cacheprovider)
# pyproject's addopts spread the tests over pytest-xdist workers; without xdist, run in one.
python3 -c "import xdist" 2>/dev/null || pytest+=(-o "addopts=")
status=0

preflight() {
  echo "== preflight"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || return 1
  timeout -k 5 50 python3 - <<'EOF' || return 1
import cupy
import numpy as np

import microtorch
from microtorch.backend import kernels

rt = cupy.cuda.runtime
print("cupy", cupy.__version__, "| CUDA runtime", rt.runtimeGetVersion(), "| driver",
      rt.driverGetVersion(), "| GPUs", rt.getDeviceCount(), "| NVRTC",
      cupy.cuda.nvrtc.getVersion(), "| microtorch", microtorch.__version__)
props = rt.getDeviceProperties(0)
print("device 0:", props["name"].decode(), f"{props['totalGlobalMem'] / 2**30:.0f} GiB,",
      props["multiProcessorCount"], "SMs")
tiny = cupy.RawKernel(r'extern "C" __global__ void twice(float* x) {'
                      r' x[threadIdx.x] *= 2.0f; }', "twice")
x = cupy.arange(32, dtype=cupy.float32)
tiny((1,), (32,), (x,))
assert (x.get() == 2 * np.arange(32, dtype=np.float32)).all(), "tiny kernel gave wrong values"
print("tiny kernel: ok")
runtime = kernels.current_runtime()
for filename, names in kernels.KERNELS.items():
    for name in names:
        runtime.kernel(filename, name, 0)  # NVRTC with the loader's options, then load
    print(f"compiled kernels/{filename}: {len(names)} kernels")
assert microtorch.cuda.is_available()
EOF
}

cuda_tier() {
  echo "== CUDA test tier"
  local skip=()
  if ! python3 -c "import hypothesis" 2>/dev/null; then
    echo "hypothesis not installed: leaving out the files that import it"
    for f in $(grep -l "^from hypothesis\|^import hypothesis" tests/test_*.py); do
      skip+=(--ignore="$f")
    done
  fi
  # The most telling files first, then the rest; SIGINT first on a timeout, so that pytest
  # stops cleanly and still writes its junit XML.
  local first=(tests/test_cuda_training.py tests/test_kernels.py tests/test_grad_storage.py
               tests/test_optim.py tests/test_autograd.py)
  local rc=0
  timeout -s INT -k 10 100 "${pytest[@]}" -m cuda --maxfail=25 -rfE --durations=5 \
    --junitxml="$out/cuda-tests-core.xml" "${first[@]}" || rc=1
  for f in "${first[@]}"; do skip+=(--ignore="$f"); done
  timeout -s INT -k 10 200 "${pytest[@]}" -m cuda --maxfail=25 -rfE --durations=10 \
    --junitxml="$out/cuda-tests.xml" "${skip[@]}" tests/ || rc=1
  return "$rc"
}

gpu_benchmark() {
  echo "== GPU benchmark"
  OUT_DIR="$out" timeout -k 5 110 python3 - <<'EOF'
import json
import os
import time

import cupy
import numpy as np

import microtorch
from microtorch import nn
from microtorch.backend import get_backend, kernels

try:
    import torch
    torch_cuda = torch.cuda.is_available()
except ImportError:
    torch, torch_cuda = None, False


def gpu_ms(fn, repeat=20):
    """Median milliseconds of fn() on the GPU (CUDA events around each call, after a warm-up)."""
    fn()
    cupy.cuda.Device(0).synchronize()
    times = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return float(np.median(times))


results = {}
rng = np.random.default_rng(0)
sizes = [int(s) for s in rng.integers(1, 200_000, size=1000)]
grads = [cupy.ones(n, dtype=cupy.float32) for n in sizes]
nbytes = 4 * sum(sizes)
ms = gpu_ms(lambda: kernels.multi_tensor_zero(grads))
results["multi_tensor_zero_1000"] = {"ms": ms, "bytes": nbytes, "TB_s": nbytes / ms / 1e9}
if torch_cuda:
    tgrads = [torch.ones(n, device="cuda") for n in sizes]
    tms = gpu_ms(lambda: torch._foreach_zero_(tgrads))
    results["torch_foreach_zero_1000"] = {"ms": tms, "TB_s": nbytes / tms / 1e9}
else:
    results["torch_foreach_zero_1000"] = "PyTorch with CUDA not available"
del grads

backend = get_backend("cuda")
flat = cupy.ones(2**30 // 4, dtype=cupy.float32)  # 1 GiB
ms = gpu_ms(lambda: backend.fill_zero(flat), repeat=10)
results["flat_zero_1GiB"] = {"ms": ms, "TB_s": flat.nbytes / ms / 1e9}
ms = gpu_ms(lambda: kernels.fill_strided(flat[::2], 0), repeat=10)
results["strided_zero_1GiB_every_other"] = {"ms": ms, "TB_s": flat.nbytes / 2 / ms / 1e9}
if torch_cuda:
    tflat = torch.ones(2**30 // 4, device="cuda")
    tms = gpu_ms(lambda: tflat.zero_(), repeat=10)
    results["torch_flat_zero_1GiB"] = {"ms": tms, "TB_s": tflat.numel() * 4 / tms / 1e9}
    del tflat
del flat

microtorch.manual_seed(0)
for storage, options in {"default": {}, "foreach": {"foreach": True},
                         "flat_grads": {"flat_grads": True}}.items():
    for set_to_none in (True, False):
        model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(1024, 1024),
                                                              nn.ReLU())]).to("cuda")
        opt = microtorch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, **options)
        x = microtorch.randn(256, 1024, device="cuda")
        y = microtorch.randn(256, 1024, device="cuda")

        def step():
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=set_to_none)

        step()
        microtorch.cuda.set_sync_debug_mode("error")  # a sync inside the step raises
        try:
            ms = gpu_ms(step, repeat=10)
        finally:
            microtorch.cuda.set_sync_debug_mode("default")
        results[f"train_step_{storage}_set_to_none_{set_to_none}"] = {"ms": ms}
runtime = kernels.current_runtime()
results["launch_tables"] = {"uploads": runtime.uploads, "rewrites": runtime.rewrites}
for key, value in results.items():
    print(f"{key}: {value}")
path = os.path.join(os.environ["OUT_DIR"], "gpu_bench.json")
with open(path, "w") as fh:
    json.dump({"time": time.strftime("%Y-%m-%d %H:%M:%S"), "results": results}, fh, indent=1)
print("wrote", path)
EOF
}

nccl() {
  echo "== NCCL"
  timeout -s INT -k 5 20 "${pytest[@]}" tests/test_distributed.py -k nccl -rs \
    --junitxml="$out/nccl-tests.xml"
}

{
  if preflight; then
    cuda_tier || status=1
    gpu_benchmark || status=1
    nccl || status=1
  else
    echo "preflight failed: the CUDA path cannot run here, nothing else attempted"
    status=1
  fi
  echo "== done (status $status)"
  exit "$status"
} 2>&1 | tee "$out/gpu_check.log"
exit "${PIPESTATUS[0]}"
