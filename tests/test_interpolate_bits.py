"""``interpolate`` without antialias against PyTorch, bit for bit on the CPU (its kernels
replayed: ``ops/resample_exact.py``, ``ops/resample_area.py``).

Modes linear, bilinear, bicubic, trilinear, area, nearest and nearest-exact; float32 and
float64; the output and the input gradient compared as bytes. The cases reach each of
PyTorch's kernels: bilinear's channels-last kernel (a channels-last input with C > 3, an output
of oh + ow <= 128, or C == 3 at one thread) with vectorized and left-over channels, its generic
kernel (larger outputs), trilinear's two kernels, the nearest modes' two index rules, area's
contiguous and channels-last kernels; align_corners both ways, size, scale_factor with and
without recompute_scale_factor. On this CPU's SIMD level, and in subprocesses on each level
below it (``ATEN_CPU_CAPABILITY`` avx2 and default, read by both libraries:
``test_other_simd_levels``).
"""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
from microtorch.backend import compiled

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

# (mode, input shape, interpolate's keywords); align_corners is added where it applies
CASES = [
    ("linear", (2, 3, 9), {"size": 17}),
    ("linear", (2, 5, 13), {"scale_factor": 0.43}),
    ("linear", (1, 2, 7), {"scale_factor": 2.7, "recompute_scale_factor": True}),
    ("linear", (2, 3, 9), {"size": 9}),
    ("bilinear", (2, 3, 9, 11), {"size": (17, 23)}),  # channels-last kernel (oh + ow <= 128)
    ("bilinear", (2, 3, 9, 11), {"size": (70, 80)}),  # generic kernel (C == 3: one thread)
    ("bilinear", (2, 2, 9, 11), {"size": (70, 80)}),  # generic kernel
    ("bilinear", (1, 16, 10, 10), {"scale_factor": 2.5}),  # vectorized channels
    ("bilinear", (2, 13, 6, 7), {"size": (9, 11)}),  # vectorized and left-over channels
    ("bilinear", (2, 4, 12, 12), {"scale_factor": (0.37, 1.9)}),
    ("bilinear", (2, 4, 12, 12), {"scale_factor": 1.3, "recompute_scale_factor": True}),
    ("bilinear", (1, 2, 8, 8), {"size": (8, 8)}),
    ("bicubic", (2, 3, 6, 9), {"size": (13, 17)}),
    ("bicubic", (2, 5, 9, 11), {"size": (70, 80)}),
    ("bicubic", (1, 2, 10, 12), {"scale_factor": (0.45, 1.7)}),
    ("bicubic", (1, 3, 7, 7), {"size": (7, 7)}),
    ("trilinear", (2, 2, 4, 5, 6), {"size": (7, 9, 11)}),
    ("trilinear", (1, 9, 3, 4, 5), {"scale_factor": 1.7}),  # channels-last kernel when CL
    ("trilinear", (1, 3, 6, 5, 4), {"scale_factor": (0.5, 0.7, 2.1)}),
    ("area", (2, 3, 17), {"size": 5}),
    ("area", (2, 5, 13, 17), {"size": (4, 7)}),
    ("area", (1, 17, 9, 10), {"size": (4, 3)}),
    ("area", (2, 3, 12, 12), {"scale_factor": 0.4}),
    ("area", (1, 9, 5, 6, 7), {"size": (2, 4, 3)}),
    ("nearest", (2, 3, 11), {"scale_factor": 2.3}),
    ("nearest", (2, 5, 9, 11), {"size": (70, 80)}),
    ("nearest", (2, 5, 9, 11), {"scale_factor": (1.7, 0.6)}),
    ("nearest", (1, 2, 6, 6, 2), {"scale_factor": (3.13, 1.2, 1.09)}),  # generic: double scale
    ("nearest-exact", (2, 3, 11), {"size": 25}),
    ("nearest-exact", (2, 5, 9, 11), {"size": (71, 80)}),
    ("nearest-exact", (1, 9, 4, 5, 6), {"scale_factor": 1.9}),
]
INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")


def _run(lib, x: np.ndarray, mode: str, kw: dict, channels_last: bool, g=None):
    """(output, input gradient for the output gradient ``g``) of one library, as NumPy."""
    leaf = lib.tensor(x, requires_grad=True)
    a = leaf
    if channels_last:
        a = a.contiguous(memory_format=lib.channels_last if x.ndim == 4 else
                         lib.channels_last_3d)
    out = lib.nn.functional.interpolate(a, mode=mode, **kw)
    if g is None:
        g = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(x.dtype)
    out.backward(lib.tensor(g))
    return np.ascontiguousarray(out.detach().numpy()), leaf.grad.numpy(), g


def _variants():
    """(mode, shape, keywords, channels_last) for every case: both align_corners where they
    apply, channels-last for 4-D and 5-D inputs."""
    for mode, shape, kw in CASES:
        aligns = (False, True) if mode in INTERPOLATING else (None,)
        layouts = (False, True) if len(shape) >= 4 else (False,)
        for align in aligns:
            for cl in layouts:
                extra = {} if align is None else {"align_corners": align}
                yield mode, shape, {**kw, **extra}, cl


def _both_ways(torch, dtype: str, path: str) -> list[str]:
    """Every case, both libraries in this process: the failures, as text (a worker of
    ``tests/_torch_spread.py`` on another SIMD level too). ``path``: "numpy" (no compiled
    loops) or "numba" (the compiled loops at any size, where numba is installed)."""
    failures = []
    if torch.get_num_threads() != mt.get_num_threads():
        return [f"thread counts differ: {torch.get_num_threads()} {mt.get_num_threads()}"]
    rng = np.random.default_rng(4)
    saved = compiled.MIN_ELEMENTS
    compiled.set_enabled(path == "numba")
    compiled.MIN_ELEMENTS = 0
    try:
        for mode, shape, kw, cl in _variants():
            x = rng.standard_normal(shape).astype(dtype)
            ours = _run(mt, x, mode, kw, cl)
            theirs = _run(torch, x, mode, kw, cl, ours[2])
            for u, v, what in zip(ours[:2], theirs[:2], ("output", "input grad")):
                if u.shape != v.shape or u.tobytes() != v.tobytes():
                    diff = np.abs(u - v).max() if u.shape == v.shape else "shape"
                    failures.append(f"{path} {dtype} {mode} {shape} {kw} cl={cl} {what}: "
                                    f"{diff}")
    finally:
        compiled.set_enabled(None)
        compiled.MIN_ELEMENTS = saved
    return failures


@pytest.mark.parametrize("path", ["numpy", "numba"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bit_for_bit(dtype, path):
    """Output and input gradient of every case, bit for bit, by the NumPy code and by the
    compiled loops (the same bits)."""
    failures = _both_ways(torch, dtype, path)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("seed", range(3))
def test_random_shapes(seed):
    """Random sizes, channel counts and modes (every kernel and tap pattern)."""
    rng = np.random.default_rng(seed)
    failures = []
    for i in range(24):
        mode, nd = [("linear", 1), ("bilinear", 2), ("bicubic", 2), ("trilinear", 3),
                    ("area", 2), ("nearest", 2), ("nearest-exact", 3), ("area", 3)][i % 8]
        hi = 8 if nd == 3 else 40
        shape = (int(rng.integers(1, 3)), int(rng.choice([1, 3, 4, 5, 8, 9, 16, 17])),
                 *(int(v) for v in rng.integers(1, hi, nd)))
        kw = {"size": tuple(int(v) for v in rng.integers(1, 2 * hi, nd))}
        if mode in INTERPOLATING:
            kw["align_corners"] = bool(rng.integers(2))
        cl = nd >= 2 and bool(rng.integers(2))
        x = rng.standard_normal(shape).astype(("float32", "float64")[i % 2])
        ours = _run(mt, x, mode, kw, cl)
        theirs = _run(torch, x, mode, kw, cl, ours[2])
        for u, v, what in zip(ours[:2], theirs[:2], ("output", "input grad")):
            if u.tobytes() != v.tobytes():
                failures.append(f"{x.dtype} {mode} {shape} {kw} cl={cl} {what}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "area"])
def test_second_derivative(mode):
    """The backward op's gradient is the forward op again: PyTorch's bits too."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 7, 9)).astype("float32")
    g = rng.standard_normal((2, 3, 11, 5)).astype("float32")
    gg = rng.standard_normal((2, 3, 7, 9)).astype("float32")
    results = []
    for lib in (mt, torch):
        a = lib.tensor(x, requires_grad=True)
        go = lib.tensor(g, requires_grad=True)
        out = lib.nn.functional.interpolate(a, size=(11, 5), mode=mode)
        (gi,) = lib.autograd.grad(out, a, go, create_graph=True)
        (ggo,) = lib.autograd.grad(gi, go, lib.tensor(gg))
        results.append(ggo.numpy().tobytes())
    assert results[0] == results[1]


def test_large_input_takes_the_compiled_loops():
    """A common case above ``compiled.MIN_ELEMENTS`` (the compiled loops, where numba is
    installed): PyTorch's bits."""
    x = np.random.default_rng(5).standard_normal((64, 3, 32, 32)).astype("float32")
    for mode in ("bilinear", "bicubic", "area", "nearest"):
        size = (12, 10) if mode == "area" else (64, 64)
        ours = _run(mt, x, mode, {"size": size}, False)
        theirs = _run(torch, x, mode, {"size": size}, False, ours[2])
        assert ours[0].tobytes() == theirs[0].tobytes(), mode
        assert ours[1].tobytes() == theirs[1].tobytes(), mode


def test_upsample_aliases():
    """``nn.Upsample`` and the deprecated ``upsample_*`` functions take the same kernels."""
    x = np.random.default_rng(3).standard_normal((2, 4, 9, 10)).astype("float32")
    outs = []
    for lib in (mt, torch):
        a = lib.tensor(x)
        up = lib.nn.Upsample(scale_factor=1.7, mode="bilinear", align_corners=False)
        with pytest.warns(UserWarning):
            b = lib.nn.functional.upsample_bilinear(a, size=(30, 31))
        outs.append([up(a).numpy().tobytes(), b.numpy().tobytes()])
    assert outs[0] == outs[1]


def test_other_simd_levels(tmp_path_factory):
    """Under each SIMD level below this CPU's (PyTorch's AVX2 and DEFAULT builds: which steps
    fuse into multiply-adds, the vector width), and at other thread counts (bilinear's kernel
    choice for C == 3), both libraries rerun in a subprocess, bit for bit."""
    from _torch_spread import torch_configs, torch_elsewhere

    if len(torch_configs(torch)) < 2:
        pytest.skip("no other configuration here")
    runs = torch_elsewhere(tmp_path_factory, "test_interpolate_bits:_both_ways",
                           [{"dtype": d, "path": p} for d in ("float32", "float64")
                            for p in ("numpy", "numba")])
    failures = [f"{name}: {f}" for name, cases in runs.items() for case in cases
                for f in case]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("mode", ["linear", "bilinear", "bicubic", "trilinear", "area",
                                  "nearest", "nearest-exact"])
def test_devices(device, mode):
    """Every device: on the CPU PyTorch's bits; on CUDA the same terms with plain
    multiply-adds (no fused steps: a few ulps)."""
    nd = {"linear": 1, "trilinear": 3}.get(mode, 2)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 5) + (7,) * nd)
    size = (11,) * nd if mode != "area" else (3,) * nd
    for dtype in ("float32", "float64"):
        xd = x.astype(dtype)
        a = mt.tensor(xd, device=device, requires_grad=True)
        out = mt.nn.functional.interpolate(a, size=size, mode=mode)
        g = rng.standard_normal(tuple(out.shape)).astype(dtype)
        out.backward(mt.tensor(g, device=device))
        ref = _run(torch, xd, mode, {"size": size}, False, g)
        ours = (out.detach().cpu().numpy(), a.grad.cpu().numpy())
        for u, v in zip(ours, ref[:2]):
            if device == "cpu":
                assert u.tobytes() == np.ascontiguousarray(v).tobytes()
            else:
                tol = 1e-5 if dtype == "float32" else 1e-12
                np.testing.assert_allclose(u, v, rtol=tol, atol=tol)
