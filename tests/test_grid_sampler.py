"""``grid_sample`` and ``affine_grid`` against PyTorch, bit for bit.

Bit-exact by design (float32 and float64, on x86-64, where the replayed kernels were
measured): ``grid_sample``'s output and its input and grid gradients in every mode, padding
and ``align_corners`` (PyTorch's CPU kernels replayed operation by operation:
``ops/grid_sampler_kernel.py``), and ``affine_grid``'s grid and theta gradient (PyTorch's
linspace and bmm, with MKL's summation orders: ``ops/vision.py``); so the spatial-transformer
tutorial's sampler, first batches included. PyTorch's bits depend on the CPU's SIMD level:
its kernel build (``ATEN_CPU_CAPABILITY``; microtorch detects the same, checked against
PyTorch here) and MKL's kernel family. Every comparison runs PyTorch in the same process, on
the machine at hand, and ``test_other_simd_levels`` reruns both libraries under each level
below this CPU's (an AVX2-only, a pre-AVX2 CPU), bit for bit too. Where MKL runs a kernel
family microtorch does not detect (found at run time by running PyTorch's bmm: possible on
another vendor's CPU), the grid and theta gradient take twice the rounding bound of a sum in
any order (Higham's gamma_K times the sum of the absolute products) instead.

Within tolerance, and why: on CUDA (PyTorch's CUDA kernels are another computation);
PyTorch's own float16/bfloat16 kernel (it rounds after every operation; ours is its float32
kernel rounded once, bit for bit); second derivatives (``create_graph``: we differentiate the
sampling composed of ops, PyTorch its own formula); the tutorial's loss (``mse_loss``'s sum,
whose order follows PyTorch's SIMD level).
"""

from __future__ import annotations

import functools
import platform
import warnings

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as F
from microtorch.backend import cpu_capability

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

X86 = platform.machine().lower() in ("x86_64", "amd64")
CASES = [("bilinear", 2), ("nearest", 2), ("bicubic", 2), ("bilinear", 3), ("nearest", 3)]
PADDINGS = ["zeros", "border", "reflection"]


def _assert_same(ours, theirs, what: str) -> None:
    """Bitwise equal (NaN where PyTorch has NaN) on x86; elsewhere the kernels' FMA and
    vector layout were not measured, so float rounding is allowed."""
    ours = np.asarray(ours)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, what
    if X86:
        np.testing.assert_array_equal(ours, theirs, err_msg=what)
    else:
        tol = 1e-5 if theirs.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(ours, theirs, rtol=tol,
                                   atol=tol * max(1.0, float(np.abs(theirs).max())))


def _sample_both(x, grid, mode, padding, align, dtype, view=None, upstream=None):
    """Output, input gradient and grid gradient of both libraries for the same arrays
    (``view`` makes the grid a non-contiguous view of the given array)."""
    results = []
    for lib in (mt, torch):
        a = lib.tensor(x.astype(dtype), requires_grad=True)
        g = lib.tensor(grid.astype(dtype), requires_grad=True)
        out = lib.nn.functional.grid_sample(a, view(g) if view else g, mode, padding, align)
        w = upstream if upstream is not None else np.random.default_rng(0).standard_normal(
            tuple(out.shape))
        (out * lib.tensor(np.asarray(w, dtype))).sum().backward()
        results.append([out.detach().numpy(), a.grad.numpy(), g.grad.numpy()])
    return results


def _grid(rng, shape, spread=3.0):
    """Random normalized coordinates beyond [-1, 1] (reflections over several spans), with
    the edges, the centre and pixel centres / edges of a few sizes exactly."""
    g = rng.uniform(-spread, spread, shape)
    flat = g.reshape(-1)
    exact = [-1.0, 1.0, 0.0, -0.5, 0.5, 0.25, -1 / 3, 1 / 7, -1.2, 2.0][:flat.size]
    flat[:len(exact)] = exact
    return g


def test_capability_agrees_with_pytorch():
    """microtorch replays the kernel build PyTorch runs here."""
    if not X86:
        pytest.skip("the CPU capability rule is PyTorch's x86 one")
    assert cpu_capability.aten() == torch.backends.cpu.get_cpu_capability()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,nd", CASES)
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_bit_for_bit(dtype, mode, nd, padding, align):
    rng = np.random.default_rng([nd, len(mode), len(padding), align, len(dtype)])
    # odd sizes: output points that do not fill the last vector, repeated input pixels
    x = rng.standard_normal((2, 3, 5, 7) if nd == 2 else (2, 2, 3, 4, 5))
    grid = _grid(rng, (2, 9, 11, 2) if nd == 2 else (2, 3, 4, 5, 3))
    ours, theirs = _sample_both(x, grid, mode, padding, align, dtype)
    for u, v, what in zip(ours, theirs, ("output", "input gradient", "grid gradient")):
        _assert_same(u, v, what)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("nd", [2, 3])
def test_random_shapes(seed, nd):
    """Random input and grid shapes (sizes 1 to 8 and 11: partial vectors, unit sizes), every
    mode, padding, align_corners and dtype, bit for bit."""
    rng = np.random.default_rng([seed, nd, 17])
    n, c = (int(v) for v in rng.integers(1, 4, 2))
    x = rng.standard_normal((n, c, *(int(v) for v in rng.integers(1, 9, nd))))
    grid = _grid(rng, (n, *(int(v) for v in rng.integers(1, 12, nd)), nd), spread=2.0)
    for mode, dim in CASES:
        for padding in PADDINGS if dim == nd else ():
            for align in (False, True):
                for dtype in ("float32", "float64"):
                    ours, theirs = _sample_both(x, grid, mode, padding, align, dtype)
                    for u, v, what in zip(ours, theirs, ("output", "input grad", "grid grad")):
                        _assert_same(u, v, f"{x.shape} {grid.shape} {mode} {padding} {align} "
                                           f"{dtype} {what}")


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("layout", ["channels_first", "sliced", "transposed"])
def test_grid_views(mode, layout):
    """PyTorch walks a grid whose (H, W) plane is contiguous as one line of points and any
    other row by row: the input gradient's sums follow that order."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 5, 6))
    shape, view = {"channels_first": ((2, 2, 7, 9), lambda g: g.permute(0, 2, 3, 1)),
                   "sliced": ((2, 7, 9, 3), lambda g: g[..., :2]),
                   "transposed": ((2, 9, 7, 2), lambda g: g.transpose(1, 2))}[layout]
    grid = rng.uniform(-1.3, 1.3, shape)
    ours, theirs = _sample_both(x, grid, mode, "zeros", False, "float32", view)
    for u, v, what in zip(ours, theirs, ("output", "input gradient", "grid gradient")):
        _assert_same(u, v, what)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,nd", CASES)
@pytest.mark.parametrize("padding", PADDINGS)
def test_special_coordinates(dtype, mode, nd, padding):
    """NaN, infinities and coordinates far outside: PyTorch's values (NaN or 0 in the 2-D
    kernel, 0 in the 3-D one, clamped by padding) and gradients. Only where PyTorch's result
    is defined: a NaN coordinate with border or reflection padding, or an infinite one with
    reflection, makes PyTorch index memory at an undefined offset (it may crash), so those
    are left out."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 2, 4, 5) if nd == 2 else (2, 2, 3, 4, 5))
    grid = rng.uniform(-1.2, 1.2, (2, 4, 5, nd) if nd == 2 else (2, 2, 3, 4, 3))
    flat = grid.reshape(-1, nd)
    specials = {"zeros": [np.nan, np.inf, -np.inf], "border": [np.inf, -np.inf],
                "reflection": []}[padding] + [1e10, -1e10, 3e9, -1.0, 1.0]
    for i, v in enumerate(specials):
        flat[2 * i, i % nd] = v
    for align in (False, True):
        ours, theirs = _sample_both(x, grid, mode, padding, align, dtype)
        for u, v, what in zip(ours, theirs, ("output", "input gradient", "grid gradient")):
            _assert_same(u, v, what)


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (2, 2, 1, 5), (2, 2, 4, 1), (1, 1, 1, 1, 3)])
def test_single_pixel_dimensions(shape):
    """Size-1 dimensions: align_corners maps everything onto the pixel, reflection has an
    empty span."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape)
    nd = len(shape) - 2
    grid = rng.uniform(-2, 2, (shape[0], 3, 4, 2) if nd == 2 else (shape[0], 2, 3, 4, 3))
    for mode, n in CASES:
        if n != nd:
            continue
        for padding in PADDINGS:
            for align in (False, True):
                ours, theirs = _sample_both(x, grid, mode, padding, align, "float32")
                for u, v in zip(ours, theirs):
                    _assert_same(u, v, f"{mode} {padding} {align}")


@pytest.mark.parametrize("x_shape,g_shape", [((0, 2, 3, 4), (0, 2, 2, 2)),
                                             ((2, 0, 3, 4), (2, 2, 2, 2)),
                                             ((2, 2, 3, 4), (2, 0, 3, 2)),
                                             ((0, 2, 2, 3, 4), (0, 1, 2, 2, 3))])
def test_empty(x_shape, g_shape):
    ours, theirs = _sample_both(np.ones(x_shape), np.zeros(g_shape), "bilinear", "zeros",
                                False, "float32")
    for u, v in zip(ours, theirs):
        _assert_same(u, v, "empty")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,nd", [("bilinear", 2), ("nearest", 2), ("bicubic", 2),
                                     ("bilinear", 3), ("nearest", 3)])
def test_devices(device, dtype, mode, nd):
    """Every device: the CPU is PyTorch's kernel bit for bit; CUDA runs the same code with
    plain multiply-adds and unordered scatters, so float rounding (sums of products that
    cancel: scaled by the largest value)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 5, 6) if nd == 2 else (2, 3, 4, 5, 6))
    grid = rng.uniform(-1.4, 1.4, (2, 4, 7, 2) if nd == 2 else (2, 3, 4, 5, 3))
    outs = []
    for lib, dev in ((mt, device), (torch, "cpu")):
        a = lib.tensor(x.astype(dtype), device=dev, requires_grad=True)
        g = lib.tensor(grid.astype(dtype), device=dev, requires_grad=True)
        out = lib.nn.functional.grid_sample(a, g, mode, "reflection", True)
        w = np.random.default_rng(0).standard_normal(tuple(out.shape)).astype(dtype)
        (out * lib.tensor(w, device=dev)).sum().backward()
        outs.append([t.detach().cpu().numpy() for t in (out, a.grad, g.grad)])
    for u, v in zip(*outs):
        if device == "cpu":
            _assert_same(u, v, mode)
        else:
            tol = 2e-5 if dtype == "float32" else 1e-10
            np.testing.assert_allclose(u, v, rtol=tol, atol=tol * max(1.0, np.abs(v).max()))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode,nd", [("bilinear", 2), ("bicubic", 2), ("nearest", 2),
                                     ("bilinear", 3)])
def test_reduced_precision(dtype, mode, nd):
    """float16/bfloat16 by design: PyTorch's float32 kernel on the same (upcast) values,
    rounded once to the dtype, bit for bit. PyTorch's own reduced-precision kernel rounds
    after each operation instead; its output is within 16 ulps of the dtype of ours (about
    16 operations per bicubic point). Its gradients are not compared: a coordinate rounded
    differently can land on the other side of a pixel edge or bound, where the gradient
    jumps (seen: 0 against 2.3 for one grid point)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 5, 6) if nd == 2 else (1, 2, 3, 4, 5))
    grid = rng.uniform(-1.2, 1.2, (2, 3, 4, 2) if nd == 2 else (1, 2, 3, 4, 3))
    w = np.random.default_rng(1).standard_normal(tuple(grid.shape[:1]) + (2,) + grid.shape[1:-1])
    outs = []
    for lib, work in ((mt, dtype), (torch, "float32")):
        d, wd = getattr(lib, dtype), getattr(lib, work)
        a = lib.tensor(x, dtype=d).to(wd).requires_grad_()
        g = lib.tensor(grid, dtype=d).to(wd).requires_grad_()
        out = lib.nn.functional.grid_sample(a, g, mode, "zeros", False)
        assert out.dtype == wd
        (out * lib.tensor(w, dtype=d).to(wd)).sum().backward()
        outs.append([t.detach().to(d).float().numpy() for t in (out, a.grad, g.grad)])
    for u, v, what in zip(*outs, ("output", "input gradient", "grid gradient")):
        _assert_same(u, v, what)
    native = TF.grid_sample(torch.tensor(x, dtype=getattr(torch, dtype)),
                            torch.tensor(grid, dtype=getattr(torch, dtype)), mode, "zeros",
                            False).float().numpy()
    eps = float(torch.finfo(getattr(torch, dtype)).eps)
    np.testing.assert_allclose(outs[0][0], native, rtol=0,
                               atol=16 * eps * max(1.0, np.abs(native).max()))


@pytest.mark.parametrize("mode,nd", [("bilinear", 2), ("bicubic", 2), ("bilinear", 3)])
@pytest.mark.parametrize("padding", PADDINGS)
def test_second_derivatives(mode, nd, padding):
    """create_graph: the gradients are differentiable again (the sampling composed of ops,
    differentiated); first and second derivatives agree with PyTorch's within float64
    rounding of sums that cancel."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 2, 4, 5) if nd == 2 else (1, 2, 3, 4, 5))
    grid = rng.uniform(-1.2, 1.2, (2, 3, 3, 2) if nd == 2 else (1, 2, 2, 3, 3))
    outs = []
    for lib in (mt, torch):
        a = lib.tensor(x, requires_grad=True)
        g = lib.tensor(grid, requires_grad=True)
        out = lib.nn.functional.grid_sample(a, g, mode, padding, False)
        w = lib.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)))
        ga, gg = lib.autograd.grad((out * w).sum(), [a, g], create_graph=True)
        second = lib.autograd.grad((ga ** 2).sum() + (gg ** 3).sum(), [a, g])
        outs.append([t.detach().numpy() for t in (ga, gg, *second)])
    for u, v in zip(*outs):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(v).max()))


def test_errors():
    cases = [
        lambda lib: (lib.ones(1, 1, 3, 3), lib.zeros(1, 2, 2, 2, 2), "bilinear"),
        lambda lib: (lib.ones(1, 1, 3, 3), lib.zeros(1, 2, 2, 3), "bilinear"),
        lambda lib: (lib.ones(1, 1, 3, 3), lib.zeros(2, 2, 2, 2), "bilinear"),
        lambda lib: (lib.ones(1, 1, 0, 3), lib.zeros(1, 2, 2, 2), "bilinear"),
        lambda lib: (lib.ones(1, 1, 3), lib.zeros(1, 2, 1), "bilinear"),
        lambda lib: (lib.ones(1, 1, 2, 2, 2), lib.zeros(1, 1, 1, 1, 3), "bicubic"),
        lambda lib: (lib.ones(1, 1, 3, 3, dtype=lib.float64), lib.zeros(1, 2, 2, 2), "nearest"),
        lambda lib: (lib.ones(1, 1, 3, 3, 3, dtype=lib.int64), lib.zeros(1, 1, 1, 1, 3),
                     "bilinear"),
        lambda lib: (lib.ones(1, 1, 3, 3, dtype=lib.int64), lib.zeros(1, 1, 1, 2), "bilinear"),
    ]
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as theirs:
            TF.grid_sample(*case(torch)[:2], case(torch)[2], align_corners=False)
        with pytest.raises(theirs.type) as ours:
            F.grid_sample(*case(mt)[:2], case(mt)[2], align_corners=False)
        assert str(ours.value) == str(theirs.value)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(mt.ones(1, 1, 2, 2), mt.zeros(1, 1, 1, 2))
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or "
                                         "'bicubic', but got: 'cubic'"):
        F.grid_sample(mt.ones(1, 1, 2, 2), mt.zeros(1, 1, 1, 2), "cubic", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or "
                                         "'reflection', but got: 'wrap'"):
        F.grid_sample(mt.ones(1, 1, 2, 2), mt.zeros(1, 1, 1, 2), padding_mode="wrap",
                      align_corners=False)


# -- affine_grid ---------------------------------------------------------------------------
SIZES = [(3, 1, 3, 4), (3, 2, 7, 9), (3, 1, 28, 28), (2, 1, 40, 33), (2, 1, 1, 7),
         (2, 1, 60, 2), (2, 1, 3, 4, 5), (2, 1, 6, 7, 8), (2, 1, 1, 4, 4), (1, 1, 20, 30, 4)]


def _affine_both(lib, theta, size, align, dtype):
    """The grid and theta's gradient (upstream: fixed random weights) of one library."""
    t = lib.tensor(theta.astype(dtype), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit sizes with align_corners warn (both)
        grid = lib.nn.functional.affine_grid(t, size, align)
    w = np.random.default_rng(5).standard_normal(tuple(grid.shape)).astype(dtype)
    (grid * lib.tensor(w)).sum().backward()
    return [grid.detach().numpy(), t.grad.numpy()], w


@functools.cache
def _torch_mkl_family(dtype: str = "float32"):
    """The MKL kernel family PyTorch's bmm runs here for ``dtype``, found by running it: the
    family whose replayed sum order gives its bits for affine_grid's theta gradient (2-D and
    3-D: sums of 1,000 and 60 terms, MKL by any rule) (None: none of those microtorch replays;
    MKL's float64 kernels need not follow its float32 ones, e.g. on an AMD Zen 5 at PyTorch's
    scalar SIMD level)."""
    rng = np.random.default_rng(0)
    cases = [((1, 1, 40, 25), rng.standard_normal((1, 2, 3))),
             ((1, 1, 10, 10, 10), rng.standard_normal((1, 3, 4))),
             ((2, 1, 3, 4, 5), rng.standard_normal((2, 3, 4)))]
    theirs = [_affine_both(torch, theta, size, False, dtype)[0][1] for size, theta in cases]
    detected = cpu_capability.mkl
    try:
        for family in ("AVX512", "AVX2", "SSE"):
            cpu_capability.mkl = lambda family=family: family
            if all(np.array_equal(_affine_both(mt, theta, size, False, dtype)[0][1], t)
                   for (size, theta), t in zip(cases, theirs)):
                return family
    finally:
        cpu_capability.mkl = detected
    return None


def _sum_bound(dtype, terms, abs_sum):
    """|ours - PyTorch's| for two sums of ``terms`` products in different orders: each within
    gamma_K * sum |products| of the exact sum (Higham's bound), so twice that apart."""
    u = float(np.finfo(dtype).eps) / 2
    return 2 * terms * u / (1 - terms * u) * abs_sum


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_bit_for_bit(dtype, size, align):
    """Below and above the 400 multiply-adds where PyTorch's bmm leaves its plain loop for
    MKL, 2-D and 3-D, unit sizes: bit for bit where ``_affine_exact`` says so (here: all),
    else within the rounding bound of a sum in any order."""
    rng = np.random.default_rng(list(size))
    theta = rng.standard_normal((size[0], 2, 3) if len(size) == 4 else (size[0], 3, 4))
    ours, w = _affine_both(mt, theta, size, align, dtype)
    theirs, _ = _affine_both(torch, theta, size, align, dtype)
    _assert_affine(ours, theirs, theta, w, size, align, dtype)


def _affine_exact(size, dtype: str = "float32") -> tuple[bool, bool]:
    """Whether affine_grid's grid and its theta gradient for ``size`` are PyTorch's bits by
    design here: where PyTorch's bmm runs its plain loop, or the MKL family microtorch
    detects."""
    from microtorch.ops import vision as V

    if not X86:  # _assert_same's tolerance
        return True, True
    k = len(size) - 1  # the base grid's columns: (x, y[, z], 1)
    points = int(np.prod(size[2:]))
    grid_family, grad_family = V._family(np, k, points, k - 1), V._family(np, points, k, k - 1)
    found = _torch_mkl_family(dtype)
    return grid_family in ("plain", found), grad_family in ("plain", found)


def _assert_affine(ours, theirs, theta, w, size, align, dtype) -> None:
    """affine_grid's grid and theta gradient (upstream ``w``) against PyTorch's: bit for bit
    where ``_affine_exact``, else within twice the rounding bound of a sum in any order."""
    k = len(size) - 1
    points = int(np.prod(size[2:]))
    exact = _affine_exact(size, dtype)
    if all(exact):
        for u, v, what in zip(ours, theirs, ("grid", "theta gradient")):
            _assert_same(u, v, what)
        return
    # the base grid (x, y[, z]) is the grid of the identity theta, exactly (sums with zeros)
    eye = torch.eye(k - 1, k, dtype=getattr(torch, dtype)).expand(size[0], k - 1, k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit sizes with align_corners warn
        base = np.abs(TF.affine_grid(eye, size, align).numpy()[0].reshape(points, k - 1))
    base = np.concatenate([base, np.ones((points, 1))], 1)  # (P, K)
    grid_bound = (base @ np.abs(theta).transpose(0, 2, 1)).reshape(theirs[0].shape)
    grad_bound = np.abs(w.reshape(size[0], points, k - 1)).transpose(0, 2, 1) @ base
    for u, v, bound, terms, what, bits in (
            (ours[0], theirs[0], grid_bound, k, "grid", exact[0]),
            (ours[1], theirs[1], grad_bound, points, "theta grad", exact[1])):
        if bits:
            _assert_same(u, v, what)
            continue
        tolerance = _sum_bound(dtype, terms, bound) + float(np.finfo(dtype).tiny)
        np.testing.assert_array_less(np.abs(u.astype(float) - v), tolerance, err_msg=what)


def _spatial_transformer(lib, weights, batches):
    """The spatial-transformer tutorial's sampler on its first batches: theta from the
    localisation net (whose last layer starts at the identity transform) for the first
    batch, a given theta (as after training) for the next; affine_grid and grid_sample with
    the defaults, a loss, backward. The images fed to grid_sample are their own leaf, so
    that their gradient is the sampler's alone (the net's convolutions are not compared)."""
    nn = lib.nn
    loc = nn.Sequential(nn.Conv2d(1, 8, kernel_size=7), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
                        nn.Conv2d(8, 10, kernel_size=5), nn.MaxPool2d(2, stride=2),
                        nn.ReLU(True))
    fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(True), nn.Linear(32, 3 * 2))
    with lib.no_grad():
        for p, value in zip([*loc.parameters(), *fc_loc.parameters()], weights):
            p.copy_(lib.tensor(value))
        fc_loc[2].weight.zero_()
        fc_loc[2].bias.copy_(lib.tensor([1, 0, 0, 0, 1, 0], dtype=lib.float32))
    results = []
    for images, theta, target in batches:
        x = lib.tensor(images)
        if theta is None:
            theta = fc_loc(loc(x).view(-1, 10 * 3 * 3)).view(-1, 2, 3)
            theta.retain_grad()
        else:
            theta = lib.tensor(theta, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tutorial leaves align_corners at its default
            grid = lib.nn.functional.affine_grid(theta, x.size())
            grid.retain_grad()
            img = lib.tensor(images, requires_grad=True)
            out = lib.nn.functional.grid_sample(img, grid)
        loss = lib.nn.functional.mse_loss(out, lib.tensor(target))
        loss.backward()
        results.append({"theta": theta.detach().numpy(), "grid": grid.detach().numpy(),
                        "output": out.detach().numpy(), "loss": loss.detach().numpy(),
                        "input gradient": img.grad.numpy(), "grid gradient": grid.grad.numpy(),
                        "theta gradient": theta.grad.numpy()})
    return results


def test_spatial_transformer_tutorial():
    """The tutorial's first two batches (64 MNIST-sized images): theta, grid, sampled images
    and the gradients of the images, the grid and theta equal PyTorch's bit for bit (the
    grid and theta's gradient through MKL's sums: bit for bit where PyTorch runs the MKL
    family microtorch detects, else within the rounding bound of ``_assert_affine``)."""
    torch.manual_seed(0)
    net = [torch.nn.Conv2d(1, 8, 7), torch.nn.Conv2d(8, 10, 5), torch.nn.Linear(90, 32),
           torch.nn.Linear(32, 6)]
    weights = [p.detach().numpy().copy() for m in net for p in m.parameters()]
    rng = np.random.default_rng(28)
    batches = []
    for b in range(2):
        images = ((rng.uniform(0, 1, (64, 1, 28, 28)) - 0.1307) / 0.3081).astype(np.float32)
        theta = None if b == 0 else (np.array([[1, 0, 0], [0, 1, 0]]) + 0.1 * rng.standard_normal(
            (64, 2, 3))).astype(np.float32)
        batches.append((images, theta, rng.standard_normal(images.shape).astype(np.float32)))
    ours = _spatial_transformer(mt, weights, batches)
    theirs = _spatial_transformer(torch, weights, batches)
    for b, (u, v) in enumerate(zip(ours, theirs)):
        _assert_same(u["theta"], v["theta"], f"batch {b}: theta")
        _assert_affine([u["grid"], u["theta gradient"]], [v["grid"], v["theta gradient"]],
                       v["theta"], v["grid gradient"], (64, 1, 28, 28), False, "float32")
        if not all(_affine_exact((64, 1, 28, 28))):
            continue  # another grid: the sampling of the same grid is test_grid_sample_*'s
        for what in ("output", "input gradient", "grid gradient"):
            _assert_same(u[what], v[what], f"batch {b}: {what}")
        # the loss is mse_loss's mean, whose sum order follows PyTorch's SIMD level (not this
        # op's business): within the bound of a sum of positive terms in any order
        bound = _sum_bound(np.float32, u["output"].size, float(v["loss"]))
        assert abs(float(u["loss"]) - float(v["loss"])) <= bound, (b, u["loss"], v["loss"])


def _both_ways(torch, dtype):
    """In a worker of ``tests/_torch_spread.py`` (another SIMD level): microtorch's and
    PyTorch's results compared here, where both run that level; the failures, as text."""
    import microtorch as mt

    failures = []

    def check(fn, *args, what):
        try:
            fn(*args)
        except AssertionError as e:
            failures.append(f"{what}: {e}")

    # + sizes whose grid product has rows MKL's AVX2 kernel sums apart (``_leftover_rows``)
    for size in SIZES + [(2, 1, 7, 8, 5), (3, 1, 11, 11, 2), (2, 1, 13, 13)]:
        for align in (False, True):
            theta = np.random.default_rng(list(size)).standard_normal(
                (size[0], 2, 3) if len(size) == 4 else (size[0], 3, 4))
            ours, w = _affine_both(mt, theta, size, align, dtype)
            theirs, _ = _affine_both(torch, theta, size, align, dtype)
            check(_assert_affine, ours, theirs, theta, w, size, align, dtype,
                  what=f"affine_grid {size} {align}")
    rng = np.random.default_rng(4)
    for mode, nd in CASES:
        for padding in PADDINGS:
            x = rng.standard_normal((2, 3, 5, 7) if nd == 2 else (2, 2, 3, 4, 5))
            grid = _grid(rng, (2, 9, 11, 2) if nd == 2 else (2, 3, 4, 5, 3))
            for align in (False, True):
                results = _sample_both(x, grid, mode, padding, align, dtype)
                for u, v, what in zip(*results, ("output", "input grad", "grid grad")):
                    check(_assert_same, u, v, what,
                          what=f"grid_sample {mode} {nd}-D {padding} {align} {what}")
    return failures


def test_other_simd_levels(tmp_path_factory):
    """PyTorch's kernels on the SIMD levels below this CPU's (``ATEN_CPU_CAPABILITY`` and
    ``MKL_ENABLE_INSTRUCTIONS`` set as ``tests/_torch_spread.py`` does: what an AVX2-only or a
    pre-AVX2 CPU runs): microtorch, run in the same process, follows them bit for bit, as on
    this CPU (``_assert_affine``: where PyTorch runs an MKL family microtorch replays)."""
    from _torch_spread import torch_configs, torch_elsewhere

    if not X86:
        pytest.skip("the SIMD levels are x86's")
    levels = [name for name in torch_configs(torch) if name.endswith(" SIMD")]
    if not levels:
        pytest.skip("no SIMD level below this CPU's")
    runs = torch_elsewhere(tmp_path_factory, "test_grid_sampler:_both_ways",
                           [{"dtype": "float32"}, {"dtype": "float64"}])
    failures = [f"{level}: {f}" for level in levels for case in runs[level] for f in case]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 4, 2), (2, 3, 1, 5)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_devices(device, dtype, size, align):
    theta = np.random.default_rng(9).standard_normal((2, 2, 3) if len(size) == 4 else
                                                     (2, 3, 4))
    outs = []
    for lib, dev in ((mt, device), (torch, "cpu")):
        t = lib.tensor(theta.astype(dtype), device=dev, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grid = lib.nn.functional.affine_grid(t, size, align)
        (grid * 1.5).sum().backward()
        outs.append([grid.detach().cpu().numpy(), t.grad.cpu().numpy()])
    for u, v in zip(*outs):
        if device == "cpu":
            _assert_same(u, v, "affine_grid")
        else:  # CUDA: sums in cuBLAS's order
            np.testing.assert_allclose(u, v, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_affine_grid_errors():
    for call in [lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 3, 3), (2, 3, 4, 5), False),
                 lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3), (2, 3, 0, 5), False),
                 lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3, dtype=lib.int64),
                                                           (2, 3, 4, 5), False)]:
        with pytest.raises(ValueError) as theirs:
            call(torch)
        with pytest.raises(ValueError) as ours:
            call(mt)
        assert str(ours.value).replace("microtorch", "torch") == str(theirs.value)
