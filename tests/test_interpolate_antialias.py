"""``interpolate(..., antialias=True)`` (bilinear and bicubic, 4-D) against PyTorch.

Bit for bit on the CPU (PyTorch's kernels replayed, ``ops/resample_aa.py``): the forward in
float32, float64 and uint8 (the fixed-point path), channels-last included; the input gradient
and the second derivative (the forward op again) in float32 and float64; on this CPU's SIMD
level and, in subprocesses, on each level below it (``test_other_simd_levels``). CUDA runs the
same code with plain multiply-adds (PyTorch's CUDA kernel is another computation): float
rounding there.
"""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

MODES = ["bilinear", "bicubic"]
# (input H, W, interpolate's keywords): down, up, mixed, one axis only, a one-sample-wide
# output (PyTorch's height pass then gives every row row 0's taps), scale factors with and
# without recompute_scale_factor, a scale factor whose size rounds back to the input's
CASES = [
    (8, 8, {"size": (4, 5)}), (13, 17, {"size": (5, 3)}), (7, 9, {"size": (16, 20)}),
    (10, 12, {"scale_factor": 0.37}), (10, 12, {"scale_factor": (0.5, 2.3)}),
    (10, 12, {"scale_factor": 0.37, "recompute_scale_factor": True}),
    (9, 11, {"size": (9, 4)}), (9, 11, {"size": (3, 11)}), (31, 29, {"size": (6, 7)}),
    (5, 6, {"size": (1, 1)}), (9, 7, {"size": (4, 1)}), (40, 3, {"size": (2, 60)}),
    (6, 7, {"scale_factor": 1.1}),
]


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def _assert_same(u: np.ndarray, v: np.ndarray, what: str = "") -> None:
    assert u.shape == v.shape and u.dtype == v.dtype, what
    if not np.array_equal(_bits(u), _bits(v)):
        raise AssertionError(f"{what}: max |diff| {np.abs(u.astype(float) - v).max()}")


def _run(lib, x: np.ndarray, mode: str, align: bool, kw: dict, g: np.ndarray | None = None,
         device: str = "cpu", channels_last: bool = False):
    """(output, input gradient for the output gradient ``g``) of one library, as NumPy."""
    grad = x.dtype.kind == "f"
    a = lib.tensor(x, device=device, requires_grad=grad)
    if channels_last:
        a = a.contiguous(memory_format=lib.channels_last)
    out = lib.nn.functional.interpolate(a, mode=mode, align_corners=align, antialias=True,
                                        **kw)
    if not grad:
        return out.cpu().numpy(), None
    if g is None:
        g = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(x.dtype)
    gx, = lib.autograd.grad(out, a, lib.tensor(g, device=device))
    return out.detach().cpu().numpy(), gx.cpu().numpy()


def _both_ways(torch, dtype: str) -> list[str]:
    """Every case, both libraries in this process (a worker of ``tests/_torch_spread.py`` on
    another SIMD level): the failures, as text."""
    failures = []
    rng = np.random.default_rng(4)
    for h, w, kw in CASES:
        if dtype == "uint8" and kw.get("size") == (1, 1):
            continue  # (PyTorch's AVX2 uint8 kernel fails an internal assert on a 1x1 output)
        x = (rng.standard_normal((2, 3, h, w)) * 50 + (128 if dtype == "uint8" else 0))
        x = np.clip(x, 0, 255).astype(dtype) if dtype == "uint8" else x.astype(dtype)
        for mode in MODES:
            for align in (False, True):
                ours, theirs = _run(mt, x, mode, align, kw), _run(torch, x, mode, align, kw)
                for u, v, what in zip(ours, theirs, ("output", "input grad")):
                    try:
                        if u is not None:
                            _assert_same(u, v)
                    except AssertionError as e:
                        failures.append(f"{dtype} {mode} {align} {(h, w)} {kw} {what}: {e}")
    return failures


@pytest.mark.parametrize("dtype", ["float32", "float64", "uint8"])
def test_bit_for_bit(dtype):
    """Output (and, for floats, the input gradient) in every case, mode and align_corners."""
    failures = _both_ways(torch, dtype)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("seed", range(4))
def test_random_shapes(seed):
    """Random sizes from 1 to 40 each way (window lengths and tap counts of every kind)."""
    rng = np.random.default_rng(seed)
    for i in range(20):
        h, w, oh, ow = (int(v) for v in rng.integers(1, 41, 4))
        dtype = ("float32", "float64", "uint8")[i % 3]
        x = rng.standard_normal((1, 5 if i % 4 else 2, h, w)) * 60
        x = np.clip(x + 128, 0, 255).astype(dtype) if dtype == "uint8" else x.astype(dtype)
        mode, align = MODES[i % 2], bool(rng.integers(2))
        kw = {"size": (oh, ow)}
        for u, v in zip(_run(mt, x, mode, align, kw), _run(torch, x, mode, align, kw)):
            if u is not None:
                _assert_same(u, v, f"{dtype} {mode} {align} {(h, w)} -> {(oh, ow)}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "uint8"])
@pytest.mark.parametrize("channels", [1, 3, 5])
@pytest.mark.parametrize("size", [(4, 5), (4, 1), (17, 20)])
def test_channels_last(dtype, channels, size):
    """A channels-last input gives PyTorch's values and a channels-last result (uint8: its
    AVX2 kernel for up to 4 channels, the generic one above)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, channels, 9, 8)) * 60
    x = np.clip(x + 128, 0, 255).astype(dtype) if dtype == "uint8" else x.astype(dtype)
    for mode in MODES:
        ours = _run(mt, x, mode, False, {"size": size}, channels_last=True)
        theirs = _run(torch, x, mode, False, {"size": size}, channels_last=True)
        for u, v in zip(ours, theirs):
            if u is not None:
                _assert_same(u, v, f"{mode} {size}")
    a = mt.tensor(x).contiguous(memory_format=mt.channels_last)
    out = F.interpolate(a, size=size, mode="bilinear", antialias=True)
    ta = torch.tensor(x).contiguous(memory_format=torch.channels_last)
    assert out.stride() == TF.interpolate(ta, size=size, mode="bilinear",
                                          antialias=True).stride()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [(4, 13), (11, 3)])
def test_gradcheck(mode, size):
    """First and second derivatives by finite differences (float64)."""
    x = mt.tensor(np.random.default_rng(3).standard_normal((1, 2, 7, 9)), requires_grad=True)

    def f(t):
        return F.interpolate(t, size=size, mode=mode, antialias=True)

    assert mt.autograd.gradcheck(f, (x,))
    assert mt.autograd.gradgradcheck(f, (x,))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_double_backward(mode, dtype):
    """create_graph: PyTorch's node names, and the second derivative (in the output gradient:
    the forward op applied again) bit for bit."""
    rng = np.random.default_rng(5)
    x, g = rng.standard_normal((2, 2, 9, 7)), rng.standard_normal((2, 2, 4, 10))
    v = rng.standard_normal(x.shape)
    results, names = [], []
    for lib in (mt, torch):
        a = lib.tensor(x.astype(dtype), requires_grad=True)
        gt = lib.tensor(g.astype(dtype), requires_grad=True)
        out = lib.nn.functional.interpolate(a, size=(4, 10), mode=mode, antialias=True)
        gx, = lib.autograd.grad(out, a, gt, create_graph=True)
        gg, = lib.autograd.grad(gx, gt, lib.tensor(v.astype(dtype)))
        names.append((out.grad_fn.name(), gx.grad_fn.name()))
        results.append((gx.detach().numpy(), gg.numpy()))
    assert names[0] == names[1]
    for u, w in zip(*results):
        _assert_same(u, w)


def test_empty_batch():
    """A batch of 0: the output's shape, and a gradient of the input's."""
    x = mt.zeros(0, 3, 8, 8, requires_grad=True)
    out = F.interpolate(x, size=(4, 5), mode="bicubic", antialias=True)
    assert tuple(out.shape) == (0, 3, 4, 5)
    out.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 8, 8)


def test_same_size_copies():
    """No size change: a copy (any dtype, as PyTorch copies before looking at it)."""
    x = mt.arange(24, dtype=mt.int32).reshape(1, 2, 3, 4)
    out = F.interpolate(x, size=(3, 4), mode="bilinear", antialias=True)
    assert out.dtype == mt.int32 and out.tolist() == x.tolist()
    assert out._data is not x._data


def _error(lib, shape, dtype="float32", **kw):
    try:
        lib.nn.functional.interpolate(lib.zeros(*shape, dtype=getattr(lib, dtype)),
                                      antialias=True, **kw)
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("shape,dtype,kw", [
    ((1, 1, 4, 4), "float32", {"scale_factor": 2, "mode": "nearest"}),
    ((1, 1, 4, 4), "float32", {"scale_factor": 2, "mode": "area"}),
    ((1, 1, 4), "float32", {"scale_factor": 2, "mode": "bilinear"}),
    ((1, 1, 4, 4, 4), "float32", {"scale_factor": 2, "mode": "bicubic"}),
    ((1, 1, 4, 4), "float16", {"size": (2, 3), "mode": "bilinear"}),
    ((0, 1, 4, 4), "bfloat16", {"size": (2, 3), "mode": "bicubic"}),
    ((1, 1, 4, 4), "int32", {"size": (2, 3), "mode": "bicubic"}),
    ((1, 1, 0, 4), "float32", {"size": (2, 3), "mode": "bilinear"}),
    ((1, 1, 4, 4), "float32", {"size": (0, 3), "mode": "bilinear"}),
    ((2, 0, 4, 4), "float32", {"size": (2, 3), "mode": "bilinear"}),
])
def test_errors(shape, dtype, kw):
    """PyTorch's error types and messages."""
    assert _error(mt, shape, dtype, **kw) == _error(torch, shape, dtype, **kw) is not None


def test_other_simd_levels(tmp_path_factory):
    """Under each SIMD level below this CPU's (PyTorch's AVX2 and DEFAULT builds: which steps
    fuse into multiply-adds; uint8's AVX2 kernel or its generic loop), both libraries rerun
    in a subprocess, bit for bit."""
    from _torch_spread import torch_configs, torch_elsewhere

    levels = [name for name in torch_configs(torch) if name.endswith(" SIMD")]
    if not levels:
        pytest.skip("no SIMD level below this CPU's")
    runs = torch_elsewhere(tmp_path_factory, "test_interpolate_antialias:_both_ways",
                           [{"dtype": d} for d in ("float32", "float64", "uint8")])
    failures = [f"{level}: {f}" for level in levels for case in runs[level] for f in case]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "uint8"])
def test_devices(device, mode, dtype):
    """Every device: on the CPU PyTorch's bits; on CUDA the same taps with plain multiply-adds
    (no fused steps: a few ulps of the largest term, 1 for uint8's rounding of such a sum)."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 11, 13)) * 60
    x = np.clip(x + 128, 0, 255).astype(dtype) if dtype == "uint8" else x.astype(dtype)
    for kw in ({"size": (5, 4)}, {"size": (20, 30)}, {"scale_factor": (0.4, 1.7)}):
        ours = _run(mt, x, mode, False, kw, device=device)
        theirs = _run(torch, x, mode, False, kw)
        for u, v in zip(ours, theirs):
            if u is None:
                continue
            if device == "cpu":
                _assert_same(u, v)
            elif dtype == "uint8":
                assert np.abs(u.astype(int) - v).max() <= 1
            else:
                tol = 1e-5 if dtype == "float32" else 1e-12
                np.testing.assert_allclose(u, v, rtol=tol, atol=tol * np.abs(v).max())


def test_opinfo_aten_samples():
    """The samples of PyTorch's OpInfo for ``aten._upsample_bilinear2d_aa`` (which the OpInfo
    report cannot reach: PyTorch has no public name for it), through the op's node: an output
    size with separate mapping scales included. Output and input gradient bit for bit."""
    from torch.testing._internal.common_methods_invocations import op_db

    from microtorch.ops.resample_aa import UpsampleAA

    op = next(o for o in op_db if o.name == "_upsample_bilinear2d_aa")
    for dtype in (torch.float32, torch.float64):
        for sample in op.sample_inputs("cpu", dtype, requires_grad=True):
            kw = sample.kwargs
            x = sample.input.detach().numpy()
            if kw["output_size"] is None:  # (PyTorch's output size: in * factor, truncated)
                scales = tuple(kw["scale_factors"])
                size = tuple(int(n * s) for n, s in zip(x.shape[2:], scales))
            else:
                size, scales = tuple(kw["output_size"]), (kw.get("scales_h"), kw.get("scales_w"))
            a = mt.tensor(x, requires_grad=True)
            out = UpsampleAA.apply(a, size, kw["align_corners"], scales, False)
            expected = op.op(sample.input, **kw)
            g = np.random.default_rng(0).standard_normal(tuple(out.shape)).astype(x.dtype)
            _assert_same(out.detach().numpy(), expected.detach().numpy(), str(kw))
            gx, = mt.autograd.grad(out, a, mt.tensor(g))
            tgx, = torch.autograd.grad(expected, sample.input, torch.tensor(g))
            _assert_same(gx.numpy(), tgx.numpy(), f"gradient {kw}")
