"""The device abstraction: parsing, backends, CPU-only behaviour, memory statistics."""

from __future__ import annotations

import pytest

import microtorch as mt
from microtorch.backend import get_backend


@pytest.mark.parametrize("spec, kind, index, text", [
    ("cpu", "cpu", None, "cpu"),
    ("cuda", "cuda", None, "cuda"),
    ("cuda:1", "cuda", 1, "cuda:1"),
])
def test_device_parsing(spec, kind, index, text):
    d = mt.device(spec)
    assert (d.type, d.index, str(d)) == (kind, index, text)
    assert d == spec and d == mt.device(d) and hash(d) == hash(mt.device(spec))


def test_device_repr_like_pytorch():
    assert repr(mt.device("cpu")) == "device(type='cpu')"
    assert repr(mt.device("cuda", 0)) == "device(type='cuda', index=0)"


@pytest.mark.parametrize("spec", ["gpu", "cuda:x", "cpu:1", "cuda:0:1"])
def test_bad_device_strings(spec):
    with pytest.raises(RuntimeError):
        mt.device(spec)


def test_tensor_device_and_backend():
    t = mt.ones(2)
    assert t.device == mt.device("cpu") and not t.is_cuda
    assert t._backend is get_backend("cpu") and t._backend.xp.__name__ == "numpy"
    assert t.to("cpu") is t and t.cpu() is t


@pytest.mark.skipif(mt.cuda.is_available(), reason="checks the behaviour without a GPU")
def test_cuda_absent_is_a_clear_runtime_error():
    assert mt.cuda.is_available() is False and mt.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        mt.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        mt.ones(2).cuda()
    assert mt.cuda.memory_allocated() == 0  # (PyTorch's CPU build answers 0 too)


def test_mixing_devices_names_both(device):
    if device == "cpu":
        pytest.skip("needs a second device kind: runs on CUDA machines")
    a, b = mt.ones(2), mt.ones(2, device=device)
    with pytest.raises(RuntimeError, match="cpu.*cuda|cuda.*cpu"):
        a + b


def test_round_trip_between_devices(device):
    t = mt.arange(6, dtype=mt.float32).reshape(2, 3)
    moved = t.to(device)
    assert moved.device.type == device
    assert moved.cpu().tolist() == t.tolist()


def test_numpy_on_cuda_is_a_clear_error(device):
    if device == "cpu":
        pytest.skip("CUDA-only behaviour")
    with pytest.raises(TypeError, match="Tensor.cpu"):
        mt.ones(2, device=device).numpy()


def test_memory_stats_per_device(device):
    stats = mt.cpu if device == "cpu" else mt.cuda
    before = stats.memory_allocated()
    t = mt.zeros(256, 256, device=device)
    assert stats.memory_allocated() - before == 256 * 256 * 4
    stats.reset_peak_memory_stats()
    peak_before = stats.max_memory_allocated()
    u = t + 1
    assert stats.max_memory_allocated() >= peak_before + 256 * 256 * 4
    del t, u
    assert stats.memory_allocated() == before


def test_memory_counting_starts_with_a_census_of_live_buffers():
    """Buffers made before the first stats call are counted (fresh process: tracking off)."""
    import subprocess
    import sys

    script = """
import microtorch as mt
from microtorch.backend.base import tracking
a = mt.zeros(1000, dtype=mt.float64)              # 8000 bytes, made while not counting
x = mt.ones(250, requires_grad=True)              # 1000 bytes
y = (x * 2).exp()                                 # 1000 (x * 2 is freed; exp keeps y's buffer)
assert not tracking.on
held = mt.cpu.memory_allocated()
assert tracking.on
del a
after = mt.cpu.memory_allocated()
print(held, after)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    held, after = map(int, out)
    assert held == 8000 + 1000 + 1000
    assert held - after == 8000


@pytest.mark.parametrize("n", [(33 << 20) // 4 + 7, (40 << 20) // 8 + 1])
def test_cpu_fill_zero_of_large_buffers_covers_every_element(n):
    """Large contiguous buffers are zeroed by several threads: no element may be missed."""
    import numpy as np

    arr = np.ones(n, dtype=np.float32 if n % 2 else np.float64)
    get_backend("cpu").fill_zero(arr)
    assert not arr.any()
    strided = np.ones((2048, 1024), dtype=np.float32)[:, ::2]  # non-contiguous: one fill
    get_backend("cpu").fill_zero(strided)
    assert not strided.any()


def test_cpu_fill_zero_many_shares_out_every_array():
    import numpy as np

    sizes = [1, 7, 1000, (33 << 20) // 4 + 3, 5, (1 << 20) + 1]
    arrays = [np.ones(n, dtype=np.float32) for n in sizes]
    arrays.append(np.ones((512, 1024), dtype=np.float64)[:, ::3])  # non-contiguous
    get_backend("cpu").fill_zero_many(arrays)
    assert not any(a.any() for a in arrays)
