"""``grid_sampler``: the node behind ``grid_sample``, PyTorch's checks, and its gradients.

Forward and a plain backward run PyTorch's CPU kernels (``grid_sampler_kernel``), so values
and gradients are PyTorch's bit for bit. Under ``create_graph`` the backward differentiates
the same sampling composed of differentiable ops (gathers and arithmetic) instead, so
gradients of any order exist, as in PyTorch; those gradients agree with the kernels' within
rounding. This module must not import ``microtorch.nn``.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import _dtype
from ..autograd.function import Function
from ..autograd.grad_mode import recording
from . import grid_sampler_kernel as K
from ._util import Tensor, _needs, const, scalar_name

__all__ = ["grid_sampler", "grid_sampler_2d", "grid_sampler_3d"]


def _check(input: Tensor, grid: Tensor, mode: str, nd: int | None = None) -> None:
    """PyTorch's ``check_grid_sampler_common`` and ``_2d`` / ``_3d`` (``nd``: 4 or 5, by
    default the input's rank), in its order."""
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but "
                           f"input is on {input.device} and grid is on {grid.device}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in "
                           f"last dimension, but got grid with sizes {list(grid.shape)}")
    for i in range(2, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")
    nd = nd or (4 if input.ndim == 4 else 5)
    if input.ndim != nd or grid.ndim != nd:
        raise RuntimeError(f"grid_sampler(): expected {nd}D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    if nd == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.is_floating_point():
        kernel = "grid_sampler_2d_cpu_kernel_impl" if nd == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_name(input)}'")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(input)} but found "
                           f"{scalar_name(grid)}")


def _compute(fn, dtype, *arrays):
    """Run a kernel in ``dtype``'s precision: float16 and bfloat16 through float32. (NumPy's
    warnings about NaN and infinite coordinates are silenced: those propagate as PyTorch's.)"""
    with np.errstate(invalid="ignore", over="ignore"):
        if dtype not in _dtype.REDUCED_FLOATS:
            return fn(*arrays)
        out = fn(*(a.astype(np.float32) for a in arrays))
    return tuple(None if o is None else o.astype(dtype) for o in out) \
        if isinstance(out, tuple) else out.astype(dtype)


class GridSampler(Function):
    """``grid_sampler_2d`` / ``grid_sampler_3d`` (which one: the input's rank)."""

    @staticmethod
    def forward(ctx, input, grid, mode, padding, align):
        nd = input.ndim - 2
        ctx.torch_name = f"GridSampler{nd}DBackward0"
        ctx.save_for_backward(input, grid)
        ctx.options = mode, padding, align
        kernel = K.forward_2d if nd == 2 else K.forward_3d
        return _compute(lambda i, g: kernel(i, g, mode, padding, align), input._data.dtype,
                        input._data, grid._data)

    @staticmethod
    def backward(ctx, grad):
        input, grid = ctx.saved_tensors
        mode, padding, align = ctx.options
        if recording():  # create_graph: differentiate the composed sampling instead
            return _replay_backward(ctx, grad, input, grid)
        kernel = K.backward_2d if input.ndim == 4 else K.backward_3d
        gin, ggrid = _compute(lambda g, i, gr: kernel(g, i, gr, mode, padding, align,
                                                      _needs(ctx, 0)),
                              input._data.dtype, grad._data, input._data, grid._data)
        return (None if gin is None else Tensor._make(gin, False, None),
                Tensor._make(ggrid, False, None) if _needs(ctx, 1) else None, None, None, None)


# ATen's enums of the modes, by their integer values.
_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


def _named(value, names: tuple, arg: str, position: int, fn: str) -> str:
    """The name of ATen's enum ``value`` (a name passes through, for ``grid_sample``)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{fn}(): argument '{arg}' (position {position}) must be int, not "
                        f"{type(value).__name__}")
    if not 0 <= value < len(names):  # (PyTorch's kernels leave such a result unwritten)
        raise RuntimeError(f"{fn}(): expected {arg} to be one of 0..{len(names) - 1} "
                           f"({', '.join(names)}), but got {value}")
    return names[value]


def _sample(input: Tensor, grid: Tensor, interpolation_mode, padding_mode,
            align_corners: bool, fn: str, nd: int | None) -> Tensor:
    mode = _named(interpolation_mode, _MODES, "interpolation_mode", 3, fn)
    padding = _named(padding_mode, _PADDINGS, "padding_mode", 4, fn)
    _check(input, grid, mode, nd)
    return GridSampler.apply(input, grid, mode, padding, bool(align_corners))


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int | str,
                 padding_mode: int | str, align_corners: bool) -> Tensor:
    """``torch.grid_sampler``: sample ``input`` (N, C, H, W) / (N, C, D, H, W) at the
    normalized coordinates of ``grid`` (N, Ho, Wo, 2) / (N, Do, Ho, Wo, 3); the modes are
    ATen's integers (0 bilinear, 1 nearest, 2 bicubic; 0 zeros, 1 border, 2 reflection) or
    their names."""
    return _sample(input, grid, interpolation_mode, padding_mode, align_corners,
                   "grid_sampler", None)


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """``torch.grid_sampler_2d``: ``grid_sampler`` of a 4-D input and grid only."""
    return _sample(input, grid, interpolation_mode, padding_mode, align_corners,
                   "grid_sampler_2d", 4)


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """``torch.grid_sampler_3d``: ``grid_sampler`` of a 5-D input and grid only."""
    return _sample(input, grid, interpolation_mode, padding_mode, align_corners,
                   "grid_sampler_3d", 5)


# -- composed of differentiable ops (gradients of gradients) -----------------------------------
def _replay_backward(ctx, grad: Tensor, input: Tensor, grid: Tensor) -> tuple:
    from ..autograd import grad as autograd_grad

    inputs = (input, grid)
    wanted = [i for i in range(2) if _needs(ctx, i)]
    out = _composed(input, grid, *ctx.options)
    found = autograd_grad(out, [inputs[i] for i in wanted], grad, create_graph=True,
                          allow_unused=True)
    grads: list = [None] * 5
    for i, g in zip(wanted, found):  # ('nearest' has no path to the grid: PyTorch's zeros)
        grads[i] = g if g is not None else inputs[i].new_zeros(inputs[i].shape)
    return tuple(grads)


def _unnormalize(coord: Tensor, size: int, align: bool) -> Tensor:
    if align:  # -1 and 1 are the centres of the corner pixels
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2  # -1 and 1 are the outer edges of the corner pixels


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Reflect ``coord`` into [low, high] (bounds given doubled); the reflections' signs
    reach the gradient."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    flips = (dist.detach() / span).floor()
    extra = dist - flips * span
    even = (flips.remainder(2) == 0).to(coord.dtype)
    return even * (extra + low) + (1 - even) * (span - extra + low)


def _pad_coord(coord: Tensor, size: int, padding: str, align: bool) -> Tensor:
    if padding == "border":
        coord = coord.clamp(0, size - 1)
    elif padding == "reflection":
        coord = (_reflect(coord, 0, 2 * (size - 1)) if align else
                 _reflect(coord, -1, 2 * size - 1))
        coord = coord.clamp(0, size - 1)
    return coord


def _cubic_coefficients(t: Tensor) -> list[Tensor]:
    a = -0.75

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _composed(input: Tensor, grid: Tensor, mode: str, padding: str, align: bool) -> Tensor:
    """The sampling as gathers and arithmetic on tensors (differentiable to any order;
    'nearest' gives the grid no gradient path, where PyTorch's is zero)."""
    nd = input.ndim - 2
    sizes = list(input.shape[:1:-1])  # (W, H[, D]): the order of the grid's coordinates
    n = input.shape[0]
    batch = const(input, np.arange(n).reshape((n,) + (1,) * nd)).long()

    def tap(coords: list) -> Tensor:
        """input at integer coordinates (x, y[, z]) as (N, *out, C); zero outside."""
        inside = None
        index = []
        for c, size in zip(coords, sizes):
            ok = (c >= 0) & (c <= size - 1)
            inside = ok if inside is None else inside & ok
            index.append(c.clamp(0, size - 1).long())
        return input[(batch, slice(None), *index[::-1])] * inside.to(input.dtype).unsqueeze(-1)

    raw = [_unnormalize(grid[..., k], size, align) for k, size in enumerate(sizes)]
    if mode == "bicubic":
        lo = [r.detach().floor() for r in raw]
        cx, cy = (_cubic_coefficients(r - f) for r, f in zip(raw, lo))
        out = None
        for i in range(4):
            yc = _pad_coord(lo[1] + (i - 1), sizes[1], padding, align)
            row = None
            for j in range(4):
                xc = _pad_coord(lo[0] + (j - 1), sizes[0], padding, align)
                term = tap([xc, yc]) * cx[j].unsqueeze(-1)
                row = term if row is None else row + term
            term = row * cy[i].unsqueeze(-1)
            out = term if out is None else out + term
    else:
        src = [_pad_coord(r, size, padding, align) for r, size in zip(raw, sizes)]
        if mode == "nearest":  # round half to even, as std::nearbyint
            out = tap([Tensor._make(input._backend.xp.rint(c._data), False, None) for c in src])
        else:
            lo = [c.detach().floor() for c in src]
            out = None
            for bits in itertools.product((0, 1), repeat=nd):  # (z,) y, x; x fastest
                corner = [f + b for f, b in zip(lo, bits[::-1])]
                weight = None
                for c, f, b in zip(src, lo, bits[::-1]):
                    w = (c - f) if b else (f + 1 - c)
                    weight = w if weight is None else weight * w
                term = tap(corner) * weight.unsqueeze(-1)
                out = term if out is None else out + term
    return out.permute(0, nd + 1, *range(1, nd + 1))
