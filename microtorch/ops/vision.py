"""Constant padding (``constant_pad_nd`` and its node), the graph node of affine sampling
grids, and uint8 interpolation (PyTorch's fixed-point separable kernel).

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function, named
from ..autograd.grad_mode import recording
from ..backend import cpu_capability, exact_fma
from ._util import Tensor, checked_scalar, const, xp_of
from .linalg import matmul

__all__ = ["Pad", "constant_pad_nd", "AffineGridGenerator", "uint8_matrix", "uint8_resample"]


# -- padding ------------------------------------------------------------------------------------
class Pad(Function):
    """Constant padding; ``pads`` holds (before, after) per dimension, first dimension first."""

    torch_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pads, value):
        xa = x._data
        ctx.crop = tuple(slice(lo, lo + n) for (lo, _), n in zip(pads, xa.shape))
        return xp_of(xa).pad(xa, pads, mode="constant", constant_values=value)

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.crop], None, None


def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    """``input`` padded with ``value`` by ``pad`` = (before, after) pairs of the last dim, then
    of the dim before...; a negative amount crops that side instead (PyTorch's op behind
    ``F.pad``'s constant mode, with its own errors)."""
    pad = [int(p) for p in pad]
    shape = input._data.shape
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) // 2 > len(shape):
        raise RuntimeError(f"Length of pad should be no more than twice the number of "
                           f"dimensions of the input. Pad length is {len(pad)}while the input "
                           f"has {len(shape)}dimensions.")  # (sic: PyTorch's spacing)
    pairs = [(0, 0)] * len(shape)
    for i in range(len(pad) // 2):
        pairs[len(shape) - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    crop = []
    for (lo, hi), n in zip(pairs, shape):  # the negative amounts narrow the input first
        if n + min(lo, 0) + min(hi, 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        crop.append(slice(max(-lo, 0), n - max(-hi, 0)))
    fill = checked_scalar(value, input._data.dtype)
    if not shape:  # (a 0-d tensor takes no padding: a copy)
        from .copies import Clone

        return named(Clone.apply(input), "ConstantPadNdBackward0", input)
    cropped = input[tuple(crop)] if any(lo < 0 or hi < 0 for lo, hi in pairs) else input
    out = Pad.apply(cropped, tuple((max(lo, 0), max(hi, 0)) for lo, hi in pairs), fill)
    return named(out, "ConstantPadNdBackward0", input)


# -- affine grids (PyTorch's AffineGridGenerator.cpp) ------------------------------------------
def _plain(a, b, c):
    return a * b + c


def _linspace_from_neg_one(steps: int, align: bool, dtype: np.dtype) -> np.ndarray:
    """One axis of the base grid as PyTorch builds it: ``linspace(-1, 1, steps)`` in the
    dtype, by its CPU kernel (the first half -1 + step * i, the second 1 - step * (steps - 1 -
    i), fused multiply-adds in the AVX2/AVX512 builds), then ``* (steps - 1) / steps``
    unless ``align`` (two roundings, as written); 0 for a single step."""
    ft = dtype.type
    if steps <= 1:
        return np.zeros(1, dtype)
    ma = exact_fma.fma if cpu_capability.build() != "DEFAULT" else _plain
    step = ft(2) / ft(steps - 1)
    i = np.arange(steps, dtype=dtype)
    r = np.where(i < steps // 2, ma(step, i, -1.0), ma(-step, (steps - 1) - i, 1.0))
    if not align:
        r = r * ft(steps - 1) / ft(steps)
    return r.astype(dtype)


def _base_grid(spatial, align: bool, dtype: np.dtype) -> np.ndarray:
    """(prod spatial, nd + 1) rows (x, y[, z], 1), x running along the last spatial dim."""
    axes = [_linspace_from_neg_one(n, align, dtype) for n in reversed(spatial)]
    mesh = np.meshgrid(*axes[::-1], indexing="ij")[::-1]
    return np.stack([*mesh, np.ones(tuple(spatial), dtype)], -1).reshape(-1, len(spatial) + 1)


def _family(xp, k: int, rows: int, cols: int) -> str:
    """How PyTorch's CPU bmm sums a (rows, k) x (k, cols) product: below 400 multiply-adds a
    plain loop ("plain": 0, then + each rounded product, no FMA); above, MKL's kernel family
    (``cpu_capability.mkl``). On CUDA: plain (cuBLAS is another computation anyway)."""
    if xp is not np or k * rows * cols < 400:
        return "plain"
    return cpu_capability.mkl()


def _blocks(length: int, kc: int) -> np.ndarray:
    """How MKL cuts a sum of ``length`` terms (measured with cancellation probes): blocks of
    ``kc`` (384 in its AVX-512 kernel, 96 in its AVX2 one) while more than 2 kc terms remain,
    then the rest as one block, or as two halves (the first rounded up) when over kc. As
    (blocks, longest block) term indices, ``length`` marking padding."""
    bounds, start = [], 0
    while length - start > 2 * kc:
        bounds.append((start, start + kc))
        start += kc
    rest = length - start
    half = start + -(-rest // 2)
    bounds += [(start, half), (half, length)] if rest > kc else [(start, length)]
    index = np.full((len(bounds), max(hi - lo for lo, hi in bounds)), length)
    for b, (lo, hi) in enumerate(bounds):
        index[b, :hi - lo] = np.arange(lo, hi)
    return index


def _dot(xp, x, y, family: str):
    """The sum over the first axis of x * y (the rest broadcast) in ``family``'s order:
    "plain" and MKL's "SSE" kernels add the rounded products in order; its "AVX512" kernel
    runs one FMA chain from 0 per block and adds the block sums in order; its "AVX2" kernel
    runs two chains per block (even and odd terms), adds them, FMAs an odd block's last term
    onto that, and adds the block sums in order. Blocks run side by side, padded with zero
    terms (which change no sum)."""
    if family in ("plain", "SSE"):
        return xp.cumsum(x * y, axis=0)[-1] + 0.0  # cumsum adds in order; + 0.0: 0 + first
    fma = exact_fma.fma
    length = x.shape[0]
    index = _blocks(length, 384 if family == "AVX512" else 96)
    kc = index.shape[1]
    xb = np.concatenate([x, np.zeros_like(x[:1])])[index]  # (blocks, kc, ...)
    yb = np.concatenate([y, np.zeros_like(y[:1])])[index]
    zeros = np.zeros(np.broadcast_shapes(xb[:, 0].shape, yb[:, 0].shape), x.dtype)
    if family == "AVX512":
        acc = exact_fma.fma_chain(xb.swapaxes(0, 1), yb.swapaxes(0, 1), zeros)
    else:  # AVX2
        count = (index < length).sum(1)
        odd = (count % 2 == 1).reshape((-1,) + (1,) * (zeros.ndim - 1))
        last = np.maximum(count - 1, 0)
        rows = np.arange(len(index))
        xl, yl = np.where(odd, xb[rows, last], 0), np.where(odd, yb[rows, last], 0)
        pairs = count // 2 * 2  # terms in the two chains; past them: zero terms
        live = (np.arange(kc) < pairs[:, None]).reshape(index.shape + odd.shape[1:])
        xs = np.where(live, xb, 0).swapaxes(0, 1)  # (kc, blocks, ...), the odd tails zeroed
        ys = yb.swapaxes(0, 1)
        even = exact_fma.fma_chain(xs[0::2], ys[0::2], zeros)
        odd_sum = exact_fma.fma_chain(xs[1::2], ys[1::2], zeros)
        acc = fma(xl, yl, even + odd_sum)
    return np.cumsum(acc, axis=0)[-1]


def _leftover_rows(m: int, mc: int = 96, mr: int = 6) -> list[int]:
    """The rows of an (m, K) x (K, N) product that MKL's AVX2 kernel sums on its own (for
    K = 3 and 4, measured with torch.bmm over m = 30 .. 4,000): it cuts the m rows into
    blocks of ``mc`` = 96 while more than 2 mc remain, then the rest as one block, or as two
    halves (the first rounded up) when over 1.5 mc (``_blocks``' cut, another threshold); its
    kernel takes ``mr`` = 6 rows at a time, and a block's last 1 or 2 rows (not 3 to 5) go
    through other code."""
    bounds, start = [], 0
    while m - start > 2 * mc:
        bounds.append((start, start + mc))
        start += mc
    rest = m - start
    half = start + -(-rest // 2)
    bounds += [(start, half), (half, m)] if 2 * rest > 3 * mc else [(start, m)]
    return [r for lo, hi in bounds if (hi - lo) % mr in (1, 2)
            for r in range(hi - (hi - lo) % mr, hi)]


def _avx2_leftovers(out, base, theta) -> None:
    """Redo, in ``out`` (N, P, J) = base (P, K) theta^T, the rows MKL's AVX2 kernel leaves
    over (``_leftover_rows``) as it sums them: rounded products, no FMA, (p0 + p1) + p2 for
    K = 3 and (p0 + p2) + (p1 + p3) for K = 4 (its two accumulators)."""
    rows = _leftover_rows(base.shape[0])
    if not rows:
        return
    p = [base[rows, i][None, :, None] * theta[:, None, :, i] for i in range(base.shape[1])]
    out[:, rows] = (p[0] + p[1]) + p[2] if len(p) == 3 else (p[0] + p[2]) + (p[1] + p[3])


class AffineGridGenerator(Function):
    """``affine_grid_generator``: the base grid (P, K) times each theta^T, (N, P, J) -> the
    (N, *spatial, J) sampling grid; its backward base^T grad (N, K, J), transposed."""

    torch_name = "AffineGridGeneratorBackward0"

    @staticmethod
    def forward(ctx, theta, size, align):
        ta = theta._data
        xp = xp_of(ta)
        work = np.dtype(np.float32) if ta.dtype in _dtype.REDUCED_FLOATS else ta.dtype
        spatial = [int(v) for v in size[2:]]
        base = _base_grid(spatial, align, work)
        ctx.base, ctx.dtype = base, ta.dtype
        p, k = base.shape
        t = ta.astype(work, copy=False)
        b = xp.asarray(base)  # grid[n, p, j] = sum over i of base[p, i] * theta[n, j, i]
        family = _family(xp, k, p, k - 1)
        out = _dot(xp, b.T[:, None, :, None], t.transpose(2, 0, 1)[:, :, None, :], family)
        if family == "AVX2":
            _avx2_leftovers(out, base, t)
        return out.astype(ta.dtype, copy=False).reshape(ta.shape[0], *spatial, k - 1)

    @staticmethod
    def backward(ctx, grad):
        base = ctx.base
        p, k = base.shape
        n = grad.shape[0]
        if recording():  # create_graph: the product as a differentiable node of grad
            g = grad.reshape(n, p, k - 1)
            return matmul(const(grad, base.T), g).transpose(1, 2), None, None
        ga = grad._data
        xp = xp_of(ga)
        g = ga.reshape(n, p, k - 1).astype(base.dtype, copy=False)
        b = xp.asarray(base)  # grad_theta[n, j, i] = sum over p of base[p, i] * g[n, p, j]
        out = _dot(xp, b[:, None, None, :], g.transpose(1, 0, 2)[..., None],
                   _family(xp, p, k, k - 1))
        return Tensor._make(out.astype(ctx.dtype, copy=False), False, None), None, None


# -- uint8 interpolation (PyTorch's fixed-point separable kernel) ---------------------------------
def _linear_filter(x: float) -> float:
    x = abs(x)
    return 1.0 - x if x < 1.0 else 0.0


def _cubic_filter(x: float) -> float:  # Keys' cubic, A = -0.75 (antialias=False)
    a, x = -0.75, abs(x)
    if x < 1.0:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2.0:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def uint8_matrix(size: int, out: int, align_corners: bool, scale: float | None,
                 cubic: bool) -> tuple[np.ndarray, int]:
    """(out, size) int64 matrix of one axis' fixed-point weights and their precision (bits),
    as PyTorch's uint8 bilinear/bicubic kernel computes them: double-precision weights at its
    source positions (taps beyond the edges folded onto the edge sample), scaled by 2**bits for
    the largest bits that keep the largest weight within int16, rounded half away from 0."""
    taps = 4 if cubic else 2
    if align_corners:
        s = (size - 1) / (out - 1) if out > 1 else 0.0
    else:
        s = 1.0 / scale if scale is not None and scale > 0 else size / out
    support = taps // 2
    rows = []
    wt_max = 0.0
    for i in range(out):
        src = s * i if align_corners else s * (i + 0.5) - 0.5
        if not align_corners and not cubic and src < 0:
            src = 0.0
        index = min(int(np.floor(np.float32(src))), size - 1)
        lam = min(max(src - index, 0.0), 1.0)
        first = index - support + 1
        lo = max(first, 0)
        n = min(max(min(index + support + 1, size) - lo, 0), taps)
        weights = [0.0] * taps
        k = 0
        for j in range(taps):
            w = (_cubic_filter if cubic else _linear_filter)(j + 1 - support - lam)
            if first + j <= 0:
                k = 0
            elif first + j >= size - 1:
                k = n - 1
            weights[k] += w
            wt_max = max(wt_max, weights[k])
            k += 1
        rows.append((lo, weights[:n]))
    bits = 0
    while bits < 22 and int(0.5 + wt_max * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    m = np.zeros((out, size), dtype=np.int64)
    for i, (lo, weights) in enumerate(rows):
        for j, w in enumerate(weights):
            v = w * (1 << bits)
            m[i, lo + j] += int(v - 0.5) if v < 0 else int(v + 0.5)
    return m, bits


def uint8_resample(arr, out_size: list, align_corners: bool, scales: list, cubic: bool):
    """Bilinear/bicubic interpolation of a uint8 (N, C, H, W) array as PyTorch's CPU kernel:
    one pass per resized axis, the last axis first, each rounded back to uint8 (integer
    arithmetic with fixed-point weights, +half, shift, clamp to [0, 255])."""
    xp = xp_of(arr)
    out = arr
    for axis in range(arr.ndim - 1, 1, -1):
        n, size = out_size[axis - 2], arr.shape[axis]
        if n == size:
            continue
        m, bits = uint8_matrix(size, n, align_corners, scales[axis - 2], cubic)
        moved = xp.moveaxis(out, axis, -1).astype(np.int64)
        acc = xp.matmul(moved, xp.asarray(m.T)) + (1 << (bits - 1))
        out = xp.moveaxis(xp.clip(acc >> bits, 0, 255).astype(np.uint8), -1, axis)
    return xp.ascontiguousarray(out) if out is not arr else out.copy()
