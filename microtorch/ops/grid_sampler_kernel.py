"""PyTorch's CPU grid-sampler kernels, replayed on arrays operation by operation, so that
``grid_sample`` and its gradients are PyTorch's bit for bit (float32 and float64).

- 2-D (``aten/src/ATen/native/cpu/GridSamplerKernel.cpp``): vectorised with ``at::vec``, one
  vector of output points at a time. Its rounding depends on the kernel build PyTorch runs
  (``backend.cpu_capability``; there is no AVX512 one, an AVX512 CPU runs the AVX2 build,
  32-byte vectors): in the AVX2 build GCC fuses a product into the
  addition or subtraction that uses it (an FMA). It does so walking the code backwards, so in
  ``a*b + c*d`` the *last* product is fused and the first rounded; products of products are
  rounded; every formula below says which product is fused. The input gradient is scattered
  one vector at a time, corner after corner, lane after lane: its sums run in that order.
- 3-D (``aten/src/ATen/native/GridSampler.cpp``): scalar code, built without FMA, corner
  after corner for each output point; its reflection and clipping are the scalar helpers of
  ``GridSampler.h``.

On CUDA the same code runs with plain multiply-adds and unordered scatters: it matches
PyTorch within rounding there (PyTorch's CUDA kernel is another computation). float16 and
bfloat16 are computed in float32 and rounded once (PyTorch rounds after every operation).
"""

from __future__ import annotations

import functools

import numpy as np

from ..backend import cpu_capability, exact_fma
from ._util import scatter_add_arrays, xp_of

__all__ = ["forward_2d", "backward_2d", "forward_3d", "backward_3d"]

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")


def _plain(a, b, c):
    return a * b + c


def _mul_add(xp):
    """``a * b + c`` as the 2-D kernel computes it: one rounding in PyTorch's AVX2 build (the
    one an AVX512 capability runs too: the kernel has no AVX512 entry), replayed on NumPy;
    two in its DEFAULT build and on CUDA."""
    if xp is np and cpu_capability.build() != "DEFAULT":
        return exact_fma.fma
    return _plain


# -- shared: gathering and ordered scattering ---------------------------------------------------
def _index(xp, coords, sizes, inside):
    """Flat index into a (prod sizes) plane of integer-valued float coordinates (x, y[, z]),
    0 where ``inside`` is False (those lanes read or add nothing)."""
    flat = None
    for c, size in zip(coords[::-1], sizes[::-1]):  # slowest dimension first
        # (a NaN coordinate counted inside, where PyTorch reads undefined memory: pixel 0)
        c = xp.where(inside & xp.isfinite(c), c, 0).astype(np.int64)
        flat = c if flat is None else flat * size + c
    return flat


def _gather(xp, planes, flat, inside):
    """``planes`` (N, C, S) at ``flat`` (N, P), zero where not ``inside``: (N, C, P)."""
    n, c = planes.shape[:2]
    vals = planes[xp.arange(n)[:, None, None], xp.arange(c)[None, :, None], flat[:, None, :]]
    return xp.where(inside[:, None, :], vals, planes.dtype.type(0))


@functools.lru_cache(maxsize=64)
def _order(rows: int, length: int, corners: int, lanes: int) -> np.ndarray:
    """Positions ``corner * P + point`` of a plane's gradient contributions in the order the
    kernel adds them: the P = rows * length output points cut into vectors of ``lanes``
    (within each row), vector after vector, corner after corner, lane after lane."""
    p = np.arange(rows * length)
    row, col = p // length, p % length
    vector = row * -(-length // lanes) + col // lanes
    shape = (corners, p.size)
    corner = np.broadcast_to(np.arange(corners)[:, None], shape).ravel()
    return np.lexsort((np.broadcast_to(col % lanes, shape).ravel(), corner,
                       np.broadcast_to(vector, shape).ravel()))


def _scatter(xp, shape, dtype, flat, values, order):
    """The input gradient (N, C, *spatial): zeros plus ``values`` (N, C, K, P) at plane
    indices ``flat`` (N, K, P), added in ``order`` (see ``_order``; NumPy's add.at adds one
    element after another, so each sum is PyTorch's)."""
    n, c = shape[:2]
    grad = xp.zeros((n, c, int(np.prod(shape[2:]))), dtype)
    flat = flat.reshape(n, order.size)
    values = values.reshape(n, c, order.size)
    if xp is np:
        flat, values = flat[:, order], values[:, :, order]
    key = (xp.arange(n)[:, None, None], xp.arange(c)[None, :, None], flat[:, None, :])
    scatter_add_arrays(xp, grad, key, values)
    return grad.reshape(shape)


def _contiguous(sizes, strides) -> bool:
    """PyTorch's ``geometry_is_contiguous`` (dimensions of size 1 have any stride)."""
    expected = 1
    for size, stride in zip(sizes[::-1], strides[::-1]):
        if size == 0:
            return True
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _rows(grid) -> tuple[int, int]:
    """How the 2-D kernel walks a grid slice (N, H, W, 2): all H*W points as one line when
    the slice (or its H x W plane of x coordinates) is contiguous, else row by row."""
    _, h, w, _ = grid.shape
    s = [st // grid.itemsize for st in grid.strides[1:]]
    if _contiguous((h, w, 2), s) or ((s[1] == 1 or w == 1) and _contiguous((h, w), s[:2])):
        return 1, h * w
    return h, w


# -- 2-D: ComputeLocation ------------------------------------------------------------------
class _Axis:
    """``ComputeLocation`` of the vectorised kernel for one spatial dimension."""

    def __init__(self, xp, size: int, padding: str, align: bool, dtype) -> None:
        self.xp, self.padding, self.align, self.dt = xp, padding, align, dtype.type
        self.ma = _mul_add(xp)
        self.max_val = float(size - 1)
        self.scale = (size - 1) / 2 if align else size / 2
        self.low = 0.0 if align else -0.5
        self.twice_span = 2.0 * (size - 1) if align else 2.0 * size
        self.empty = align and size <= 1

    def unnormalize(self, g):
        if self.align:
            return (g + 1) * self.scale
        return self.ma(g + 1, self.scale, -0.5)  # (g + 1) * scale - 0.5: the product fused

    def clip(self, x):
        # clamp_min(0) first: NaN becomes 0 (the max instruction returns its second operand)
        return self.xp.minimum(self.xp.where(x > 0, x, self.dt(0)), self.max_val)

    def reflect(self, x, with_sign: bool = False):
        """Reflect into [low, low + span] by whole double spans, then once more if needed;
        with the gradient's sign (-1 where the reflections flip the direction)."""
        xp = self.xp
        if self.empty:
            zero = xp.zeros_like(x)
            return (zero, zero) if with_sign else zero
        v = x if self.align else x - self.low
        a = xp.abs(v)
        flips = xp.trunc(a / self.twice_span)
        extra = self.ma(-flips, self.twice_span, a)  # a - flips * span2: the product fused
        other = self.twice_span - extra
        if not with_sign:
            r = xp.minimum(extra, other)
            return r if self.align else r + self.low
        more = extra > other
        r = xp.where(more, other, extra)
        sign = xp.where(more ^ (v < 0), self.dt(-1), self.dt(1))
        return (r if self.align else r + self.low), sign

    def coordinates(self, x):
        """The padding mode applied to pixel coordinates (``compute_coordinates``)."""
        if self.padding == "border":
            return self.clip(x)
        if self.padding == "reflection":
            return self.clip(self.reflect(x))
        return x

    def apply(self, g):
        return self.coordinates(self.unnormalize(g))

    def apply_get_grad(self, g):
        """Coordinates and d coordinate / d g. Border pixels count as outside (gradient 0);
        NaN passes through (PyTorch's bit tests)."""
        xp = self.xp
        x = self.unnormalize(g)
        mult = xp.full_like(x, self.scale)
        if self.padding == "zeros":
            return x, mult
        if self.padding == "reflection":
            x, sign = self.reflect(x, True)
            mult = sign * mult
        res = xp.minimum(xp.maximum(x, self.dt(0)), self.max_val)  # NaN propagates
        inside = ((x > 0) | xp.isnan(x)) & (res != self.max_val)
        return res, xp.where(inside, mult, self.dt(0))


def _corner_masks(xp, x_w, y_n, w: int, h: int, padding: str):
    """In-bounds masks of the nw, ne, sw, se corners (padded modes: only the east and south
    neighbours can fall outside)."""
    if padding != "zeros":
        east, south = x_w + 1 < w, y_n + 1 < h
        return xp.ones_like(east), east, south, east & south
    xs = [(x_w + d > -1) & (x_w + d < w) for d in (0, 1)]
    ys = [(y_n + d > -1) & (y_n + d < h) for d in (0, 1)]
    return xs[0] & ys[0], xs[1] & ys[0], xs[0] & ys[1], xs[1] & ys[1]


def _bilinear(xp, x, y, w: int, h: int, padding: str):
    """The kernel's ``compute_interp_params``: distances, corner weights (nw, ne, sw, se),
    masks and flat indices."""
    x_w, y_n = xp.floor(x), xp.floor(y)
    dw = x - x_w
    de = 1 - dw
    dn = y - y_n
    ds = 1 - dn
    weights = (ds * de, ds * dw, dn * de, dn * dw)
    masks = _corner_masks(xp, x_w, y_n, w, h, padding)
    flats = [_index(xp, (x_w + dx, y_n + dy), (w, h), m)
             for (dy, dx), m in zip(((0, 0), (0, 1), (1, 0), (1, 1)), masks)]
    return (dn, ds, dw, de), weights, masks, flats


def _cubic(ma, t):
    """Keys' cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for offset t
    (``get_cubic_coefficients``). A is a runtime value in the kernel, so its products with
    constants are the products GCC fuses (exactly: they are exact); the others are rounded."""
    a = -0.75

    def near(x):  # ((A + 2) x - (A + 3)) x x + 1
        return ma(ma(a + 2, x, -(a + 3)) * x, x, 1.0)

    def far(x):  # ((A x - 5A) x + 8A) x - 4A
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _cubic_grad(t):
    """d weight / d t of the four taps (``get_cubic_coefficients_grad``; nothing fused but
    exact constant products)."""
    a = -0.75
    x0, x1, x2, x3 = -1 - t, 0 - t, 1 - t, 2 - t
    return ((-3 * a * x0 - 10 * a) * x0 - 8 * a,
            (-3 * (a + 2) * x1 - 2 * (a + 3)) * x1,
            (3 * (a + 2) * x2 - 2 * (a + 3)) * x2,
            (3 * a * x3 - 10 * a) * x3 + 8 * a)


def _sum4(ma, w, v):
    """w0 v0 + w1 v1 + w2 v2 + w3 v3 left to right, each later product fused."""
    acc = w[0] * v[0]
    for k in (1, 2, 3):
        acc = ma(w[k], v[k], acc)
    return acc


def _tap_sum(ma, w, v):
    """The same sum over four gathered taps (bicubic's rows): here GCC fuses only the first
    product, w0 v0, into the first addition (measured against PyTorch's builds)."""
    return (ma(w[0], v[0], w[1] * v[1]) + w[2] * v[2]) + w[3] * v[3]


class _Bicubic:
    """The 16 taps of bicubic sampling at floor(x) - 1 .. + 2 (``get_value_bounded``)."""

    def __init__(self, xp, ax_w: _Axis, ax_h: _Axis, w: int, h: int, padding: str, x, y):
        self.xp, self.ax_w, self.ax_h, self.w, self.h = xp, ax_w, ax_h, w, h
        self.padding = padding
        self.ix, self.iy = xp.floor(x), xp.floor(y)

    def tap(self, i: int, j: int):
        """(flat index, mask) of the tap i along x and j along y (offsets -1 .. 2): the
        padding applied to the coordinate, then truncated to an integer."""
        xp = self.xp
        cx = xp.trunc(self.ax_w.coordinates(self.ix + (i - 1)))
        cy = xp.trunc(self.ax_h.coordinates(self.iy + (j - 1)))
        if self.padding == "zeros":
            inside = (cx > -1) & (cx < self.w) & (cy > -1) & (cy < self.h)
        else:
            inside = xp.ones(cx.shape, bool)
        return _index(xp, (cx, cy), (self.w, self.h), inside), inside


# -- 2-D: forward and backward -------------------------------------------------------------
def _setup_2d(inp, grid, padding, align):
    xp = xp_of(inp)
    n, c, h, w = inp.shape
    planes = xp.ascontiguousarray(inp).reshape(n, c, h * w)
    points = grid.shape[1] * grid.shape[2]
    gx = grid[..., 0].reshape(n, points)
    gy = grid[..., 1].reshape(n, points)
    ax_w = _Axis(xp, w, padding, align, inp.dtype)
    ax_h = _Axis(xp, h, padding, align, inp.dtype)
    return xp, planes, gx, gy, ax_w, ax_h


def forward_2d(inp, grid, mode: str, padding: str, align: bool):
    """``grid_sampler_2d`` (N, C, H, W) x (N, Ho, Wo, 2) -> (N, C, Ho, Wo)."""
    xp, planes, gx, gy, ax_w, ax_h = _setup_2d(inp, grid, padding, align)
    n, c, h, w = inp.shape
    ma = _mul_add(xp)
    if mode == "bicubic":
        x, y = ax_w.unnormalize(gx), ax_h.unnormalize(gy)
        taps = _Bicubic(xp, ax_w, ax_h, w, h, padding, x, y)
        cx = [k[:, None] for k in _cubic(ma, x - taps.ix)]
        cy = [k[:, None] for k in _cubic(ma, y - taps.iy)]
        rows = [_tap_sum(ma, cx, [_gather(xp, planes, *taps.tap(i, j)) for i in range(4)])
                for j in range(4)]
        out = _sum4(ma, cy, rows)
    else:
        x, y = ax_w.apply(gx), ax_h.apply(gy)
        if mode == "nearest":  # round half to even
            x, y = xp.rint(x), xp.rint(y)
            inside = _corner_masks(xp, x, y, w, h, padding)[0]
            out = _gather(xp, planes, _index(xp, (x, y), (w, h), inside), inside)
        else:
            _, weights, masks, flats = _bilinear(xp, x, y, w, h, padding)
            vals = [_gather(xp, planes, f, m) for f, m in zip(flats, masks)]
            out = _sum4(ma, vals, [k[:, None] for k in weights])
    return out.reshape(n, c, *grid.shape[1:3])


def backward_2d(grad, inp, grid, mode: str, padding: str, align: bool, input_grad: bool):
    """``grid_sampler_2d_backward``: (gradient of the input or None, of the grid)."""
    xp, planes, gx, gy, ax_w, ax_h = _setup_2d(inp, grid, padding, align)
    n, c, h, w = inp.shape
    ma = _mul_add(xp)
    dt = inp.dtype
    gout = xp.ascontiguousarray(grad).reshape(n, c, gx.shape[1])
    lanes = cpu_capability.vector_lanes(dt, cpu_capability.build())
    rows = _rows(grid)
    gin = None
    if mode == "nearest":
        x, y = xp.rint(ax_w.apply(gx)), xp.rint(ax_h.apply(gy))
        if input_grad:
            inside = _corner_masks(xp, x, y, w, h, padding)[0]
            flat = _index(xp, (x, y), (w, h), inside)
            vals = xp.where(inside[:, None, :], gout, dt.type(0))
            gin = _scatter(xp, inp.shape, dt, flat, vals, _order(*rows, 1, lanes))
        return gin, xp.zeros(grid.shape, dt)  # PyTorch's grid gradient: zero
    sx = xp.zeros(gx.shape, dt)
    sy = xp.zeros(gy.shape, dt)
    if mode == "bicubic":  # (no padding in the multipliers: PyTorch's bicubic gradient)
        x, y = ax_w.unnormalize(gx), ax_h.unnormalize(gy)
        mx, my = ax_w.scale, ax_h.scale
        taps = _Bicubic(xp, ax_w, ax_h, w, h, padding, x, y)
        tx, ty = x - taps.ix, y - taps.iy
        cx, cy = _cubic(ma, tx), _cubic(ma, ty)
        dx, dy = _cubic_grad(tx), _cubic_grad(ty)
        where = [taps.tap(i, j) for i in range(4) for j in range(4)]  # i along x, j along y
        vals = [_gather(xp, planes, f, m) for f, m in where]
        for ch in range(c):  # gx - val * gOut * dx_i * cy_j: the last product fused
            g = gout[:, ch]
            for k, v in enumerate(vals):
                i, j = divmod(k, 4)
                vg = v[:, ch] * g
                sx = ma(-(vg * dx[i]), cy[j], sx)
                sy = ma(-(vg * dy[j]), cx[i], sy)
        if input_grad:
            contrib = [xp.where(m[:, None, :], (gout * cx[i][:, None]) * cy[j][:, None],
                                dt.type(0)) for (i, j), (_, m) in
                       zip(((i, j) for i in range(4) for j in range(4)), where)]
            gin = _scatter(xp, inp.shape, dt, xp.stack([f for f, _ in where], 1),
                           xp.stack(contrib, 2), _order(*rows, 16, lanes))
    else:
        x, mx = ax_w.apply_get_grad(gx)
        y, my = ax_h.apply_get_grad(gy)
        (dn, ds, dw, de), weights, masks, flats = _bilinear(xp, x, y, w, h, padding)
        nw, ne, sw, se = (_gather(xp, planes, f, m) for f, m in zip(flats, masks))
        for ch in range(c):
            g = gout[:, ch]
            # ((ne - nw) s + (se - sw) n) gOut and ((sw - nw) e + (se - ne) w) gOut, added
            # to the sums: the later product fused each time
            sx = ma(ma(se[:, ch] - sw[:, ch], dn, (ne[:, ch] - nw[:, ch]) * ds), g, sx)
            sy = ma(ma(se[:, ch] - ne[:, ch], dw, (sw[:, ch] - nw[:, ch]) * de), g, sy)
        if input_grad:
            contrib = [xp.where(m[:, None, :], k[:, None] * gout, dt.type(0))
                       for k, m in zip(weights, masks)]
            gin = _scatter(xp, inp.shape, dt, xp.stack(flats, 1), xp.stack(contrib, 2),
                           _order(*rows, 4, lanes))
    ggrid = xp.stack([sx * mx, sy * my], -1).reshape(grid.shape)
    return gin, ggrid


# -- 3-D: the scalar kernel ----------------------------------------------------------------
class _ScalarAxis:
    """``GridSampler.h``'s scalar coordinate helpers for one spatial dimension."""

    def __init__(self, xp, size: int, padding: str, align: bool, dtype) -> None:
        self.xp, self.size, self.padding, self.align, self.dt = xp, size, padding, align, \
            dtype.type
        self.max_val = float(size - 1)
        self.scale = (size - 1) / 2 if align else size / 2

    def unnormalize(self, g):
        if self.align:
            return ((g + 1) / 2) * (self.size - 1)
        return ((g + 1) * self.size - 1) / 2

    def clip(self, x, with_grad: bool = False):
        """Into [0, size - 1]. ``std::min(size - 1, std::max(x, 0))`` makes NaN size - 1; the
        gradient version keeps NaN (gradient 1) and gives the borders gradient 0."""
        xp, dt = self.xp, self.dt
        if not with_grad:
            lo = xp.where(x < 0, dt(0), x)
            return xp.where(lo < self.max_val, lo, dt(self.max_val))
        low, high = x <= 0, x >= self.max_val
        r = xp.where(low, dt(0), xp.where(high, dt(self.max_val), x))
        return r, xp.where(low | high, dt(0), dt(1))

    def reflect(self, x, with_grad: bool = False):
        """Reflect into [low, high] (``reflect_coordinates``: fmod for the remainder, the
        parity of int(floor(|x - low| / span)) for the direction)."""
        xp, dt = self.xp, self.dt
        twice_low, twice_high = (0, 2 * (self.size - 1)) if self.align else \
            (-1, 2 * self.size - 1)
        if twice_low == twice_high:
            zero = xp.zeros_like(x)
            return (zero, zero) if with_grad else zero
        low, span = twice_low / 2, (twice_high - twice_low) / 2
        v = x - low
        a = xp.abs(v)
        extra = xp.fmod(a, span)
        flips = xp.floor(a / span)
        # static_cast<int>(flips): beyond int's range (and NaN) x86 gives INT_MIN, even
        even = (xp.fmod(flips, 2) == 0) | ~(flips < 2.0 ** 31)
        r = xp.where(even, extra + low, (span - extra) + low)
        if not with_grad:
            return r
        flip = xp.where(v < 0, dt(-1), dt(1))
        return r, xp.where(even, flip, -flip)

    def source(self, g):
        """``grid_sampler_compute_source_index``."""
        x = self.unnormalize(g)
        if self.padding == "border":
            return self.clip(x)
        if self.padding == "reflection":
            return self.clip(self.reflect(x))
        return x

    def source_with_grad(self, g):
        """``grid_sampler_compute_source_index_set_grad``: coordinates and multipliers."""
        x = self.unnormalize(g)
        mult = self.xp.full_like(x, self.scale)
        if self.padding == "border":
            x, clip = self.clip(x, True)
            mult = mult * clip
        elif self.padding == "reflection":
            x, refl = self.reflect(x, True)
            x, clip = self.clip(x, True)
            mult = mult * refl * clip
        return x, mult


_CORNERS_3D = [(bx, by, bz) for bz in (0, 1) for by in (0, 1) for bx in (0, 1)]  # tnw .. bse


def _setup_3d(inp, grid, padding, align, with_grad):
    xp = xp_of(inp)
    n, c, d, h, w = inp.shape
    planes = xp.ascontiguousarray(inp).reshape(n, c, d * h * w)
    axes = [_ScalarAxis(xp, size, padding, align, inp.dtype) for size in (w, h, d)]
    points = grid.shape[1] * grid.shape[2] * grid.shape[3]
    coords = [grid[..., k].reshape(n, points) for k in range(3)]
    if with_grad:
        pairs = [ax.source_with_grad(g) for ax, g in zip(axes, coords)]
        return xp, planes, [p[0] for p in pairs], [p[1] for p in pairs]
    return xp, planes, [ax.source(g) for ax, g in zip(axes, coords)], None


def _trilinear(xp, coords, sizes):
    """Per corner (tnw .. bse): flat index, mask, and the distance factors along x, y, z
    (``(x1 - x)`` for a corner at x0, ``(x - x0)`` at x1)."""
    lows = [xp.floor(v) for v in coords]
    dist = [((lo + 1) - v, v - lo) for lo, v in zip(lows, coords)]
    corners = []
    for bits in _CORNERS_3D:
        at = [lo + b for lo, b in zip(lows, bits)]
        inside = None
        for v, size in zip(at, sizes):
            ok = (v >= 0) & (v < size)
            inside = ok if inside is None else inside & ok
        factors = [dist[k][b] for k, b in enumerate(bits)]
        corners.append((bits, _index(xp, at, sizes, inside), inside, factors))
    return corners


def _nearest_3d(xp, coords, sizes):
    at = [xp.rint(v) for v in coords]  # std::nearbyint: half to even
    inside = None
    for v, size in zip(at, sizes):
        ok = (v >= 0) & (v < size)
        inside = ok if inside is None else inside & ok
    return _index(xp, at, sizes, inside), inside


def forward_3d(inp, grid, mode: str, padding: str, align: bool):
    """``grid_sampler_3d`` (N, C, D, H, W) x (N, Do, Ho, Wo, 3) -> (N, C, Do, Ho, Wo)."""
    xp, planes, coords, _ = _setup_3d(inp, grid, padding, align, False)
    n, c, d, h, w = inp.shape
    zero = inp.dtype.type(0)
    if mode == "nearest":
        out = _gather(xp, planes, *_nearest_3d(xp, coords, (w, h, d)))
    else:  # out = 0, then += value * weight for each corner in bounds
        out = xp.zeros((n, c, coords[0].shape[1]), inp.dtype)
        for _, flat, inside, (fx, fy, fz) in _trilinear(xp, coords, (w, h, d)):
            vals = _gather(xp, planes, flat, inside)
            out = out + xp.where(inside[:, None, :], vals * ((fx * fy) * fz)[:, None], zero)
    return out.reshape(n, c, *grid.shape[1:4])


def backward_3d(grad, inp, grid, mode: str, padding: str, align: bool, input_grad: bool):
    """``grid_sampler_3d_backward``: (gradient of the input or None, of the grid)."""
    xp, planes, coords, mults = _setup_3d(inp, grid, padding, align, True)
    n, c = inp.shape[:2]
    sizes = inp.shape[:1:-1]  # (W, H, D)
    dt = inp.dtype
    zero = dt.type(0)
    points = coords[0].shape[1]
    gout = xp.ascontiguousarray(grad).reshape(n, c, points)
    if mode == "nearest":
        gin = None
        if input_grad:
            flat, inside = _nearest_3d(xp, coords, sizes)
            vals = xp.where(inside[:, None, :], gout, zero)
            gin = _scatter(xp, inp.shape, dt, flat[:, None], vals, _order(1, points, 1, 1))
        return gin, xp.zeros(grid.shape, dt)
    corners = _trilinear(xp, coords, sizes)
    sums = [xp.zeros((n, points), dt) for _ in range(3)]
    for ch in range(c):
        g = gout[:, ch]
        for bits, flat, inside, factors in corners:
            val = _gather(xp, planes[:, ch:ch + 1], flat, inside)[:, 0]
            for k in range(3):  # d/dx: val * fy * fz * gOut, added for x1, subtracted for x0
                f = [factors[i] for i in range(3) if i != k]
                term = xp.where(inside, ((val * f[0]) * f[1]) * g, zero)
                sums[k] = sums[k] + term if bits[k] else sums[k] - term
    gin = None
    if input_grad:
        contrib = [xp.where(inside[:, None, :], ((fx * fy) * fz)[:, None] * gout, zero)
                   for _, _, inside, (fx, fy, fz) in corners]
        gin = _scatter(xp, inp.shape, dt, xp.stack([k[1] for k in corners], 1),
                       xp.stack(contrib, 2), _order(1, points, 8, 1))
    ggrid = xp.stack([m * s for m, s in zip(mults, sums)], -1).reshape(grid.shape)
    return gin, ggrid
