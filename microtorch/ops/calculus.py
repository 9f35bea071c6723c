"""Numerical integration and differentiation of sampled functions: ``trapezoid`` (and its
older name ``trapz``), ``cumulative_trapezoid`` and ``gradient`` (central differences inside,
one-sided first- or second-order differences at the edges).

All are composed of differentiable ops in the order of PyTorch's implementations (they are
composite there too), so values, dtypes (integer samples give float32) and gradients are
PyTorch's.
"""

from __future__ import annotations

import numbers

from .. import _dtype
from ..autograd.function import named
from ._util import Tensor, wrap_dim, xp_of
from .shape import cat

__all__ = ["trapezoid", "trapz", "cumulative_trapezoid", "gradient"]


def _slice(t: Tensor, dim: int, start: int | None, stop: int | None = None) -> Tensor:
    """``t[..., start:stop, ...]`` along ``dim`` (PyTorch's ``slice``)."""
    if t._data.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _check_no_bool(name: str, *tensors: Tensor) -> None:
    if any(t._data.dtype.kind == "b" for t in tensors):
        which = "`x` or `y`" if len(tensors) > 1 else "`y`"
        raise RuntimeError(f"{name}: received a bool input for {which}, but bool is not "
                           "supported")


def _real_dx(name: str, dx):
    """A scalar spacing: a real number (a 0-d tensor gives its value)."""
    if isinstance(dx, Tensor) and dx._data.ndim == 0:
        dx = dx.item()
    if isinstance(dx, (bool, complex)) or not isinstance(dx, numbers.Number):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
    return float(dx)


def _spacing(name: str, y: Tensor, x: Tensor, dim: int) -> Tensor:
    """The differences of the sample points ``x``, shaped to broadcast against the differences
    of ``y`` along ``dim`` (a 1-d ``x`` lies along ``dim``; a shorter one gains leading 1s)."""
    _check_no_bool(name, y, x)
    nd = y._data.ndim
    if x._data.ndim == 1:
        if nd == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if x._data.shape[0] != y._data.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * nd
        shape[dim] = x._data.shape[0]
        x = x.view(shape)
    elif x._data.ndim < nd:
        x = x.view((1,) * (nd - x._data.ndim) + tuple(x._data.shape))
    return _slice(x, dim, 1) - _slice(x, dim, 0, -1)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: the integral of samples ``y`` at points ``x`` (or
    spaced ``dx`` apart, 1 by default). No samples give 0."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments - got "
                        f"(Tensor, Tensor, dx={type(dx).__name__}), but expected one of:")
    if y._data.ndim == 0:  # (the x form wraps dim first, as for a 1-d tensor)
        shown = dim if x is None else wrap_dim(dim, 1)
        raise IndexError(f"Dimension specified as {shown} but tensor has no dimensions")
    d = wrap_dim(dim, y._data.ndim)
    if y._data.shape[d] == 0:  # (numpy's answer to no samples: zeros, in y's dtype)
        shape = y._data.shape[:d] + y._data.shape[d + 1:]
        return Tensor._make(xp_of(y._data).zeros(shape, y._data.dtype))
    if x is not None:
        step = _spacing("trapezoid", y, x, d)
        total = ((_slice(y, d, 0, -1) + _slice(y, d, 1)) * step).sum(d)
        return named(total / 2.0, "DivBackward1")
    _check_no_bool("trapezoid", y)
    step = _real_dx("trapezoid", 1 if dx is None else dx)
    # constant spacing: dx * (sum of all samples - (first + last) / 2)
    inner = y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5
    return named(inner * step, "MulBackward1")


def trapz(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """``trapezoid`` under its older name (``dx`` a float; bool is read as a number)."""
    if x is None and dx is not None:
        if isinstance(dx, complex) or not isinstance(dx, (numbers.Number, Tensor)):
            raise TypeError(f"trapz() received an invalid combination of arguments - got "
                            f"(Tensor, dx={type(dx).__name__}), but expected one of:")
        dx = float(dx)
    if x is not None and dx is not None:
        raise TypeError("trapz() received an invalid combination of arguments - got (Tensor, "
                        f"Tensor, dx={type(dx).__name__}), but expected one of:")
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None,
                         dim: int = -1) -> Tensor:
    """The running trapezoidal integral along ``dim`` (one element fewer than ``y`` there)."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments - "
                        f"got (Tensor, Tensor, dx={type(dx).__name__}), but expected one of:")
    if x is not None:
        d = wrap_dim(dim, y._data.ndim) if y._data.ndim else wrap_dim(dim, 1)
        step = _spacing("cumulative_trapezoid", y, x, d)
        pairs = _slice(y, d, 0, -1) + _slice(y, d, 1)
        return named((pairs * step).cumsum(d) / 2.0, "DivBackward1")
    _check_no_bool("cumulative_trapezoid", y)
    step = _real_dx("cumulative_trapezoid", 1 if dx is None else dx)
    d = wrap_dim(dim, y._data.ndim) if y._data.ndim else wrap_dim(dim, 1)
    pairs = _slice(y, d, 0, -1) + _slice(y, d, 1)
    return (pairs * (step / 2.0)).cumsum(d)


# -- gradient -----------------------------------------------------------------------------------
def _gradient_dims(y: Tensor, spacing_len, dim, edge_order: int) -> list[int]:
    """PyTorch's ``pre_check_gradient``; the dimensions to differentiate along."""
    nd = y._data.ndim
    if y._data.dtype == _dtype.uint8.np:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    dims = None if dim is None else ([dim] if isinstance(dim, numbers.Integral) else list(dim))
    if spacing_len is not None and dims is None and spacing_len != nd:
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a "
                           f"list of length equal to 'self.dim() = {nd}', since dim argument "
                           f"was not given, but got a list of length {spacing_len}")
    if spacing_len is not None and dims is not None and spacing_len != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's "
                           f"spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {spacing_len} and a dim argument of "
                           f"length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dims is not None:
        wrapped = [wrap_dim(d, nd) for d in dims]
        for d in sorted(set(wrapped)):
            if wrapped.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    else:
        wrapped = list(range(nd))
    for d in wrapped:
        if y._data.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    return wrapped


def _along(y: Tensor, d: int, start: int | None, stop: int | None = None) -> Tensor:
    return _slice(y, d, start, stop)


def _gradient_uniform(y: Tensor, h, d: int, edge_order: int) -> Tensor:
    """Differences along ``d`` for samples ``h`` apart (a number)."""
    center = (_along(y, d, 2) - _along(y, d, 0, -2)) / h
    if edge_order == 1:
        first = (_along(y, d, 1, 2) - _along(y, d, 0, 1)) / h
        last = (_along(y, d, -1) - _along(y, d, -2, -1)) / h
    else:
        first = (-1.5 * _along(y, d, 0, 1) + 2 * _along(y, d, 1, 2)
                 - 0.5 * _along(y, d, 2, 3)) / h
        last = (0.5 * _along(y, d, -3, -2) - 2 * _along(y, d, -2, -1)
                + 1.5 * _along(y, d, -1)) / h
    return cat([first, center / 2, last], d)


def _gradient_points(y: Tensor, x: Tensor, d: int, edge_order: int) -> Tensor:
    """Differences along ``d`` for samples at the 1-d coordinates ``x`` (second-order accurate
    inside for any spacing)."""
    if x._data.ndim != 1:
        raise RuntimeError(f"torch.gradient expected each element of spacing to have one "
                           f"dimension, but got an element with {x._data.ndim} dimensions!")
    shape = [1] * y._data.ndim
    shape[d] = -1
    h = x.diff(1, 0)
    h1, h2 = h[:-1], h[1:]
    a = (-h2 / (h1 * (h1 + h2))).reshape(shape)
    b = ((h2 - h1) / (h1 * h2)).reshape(shape)
    c = (h1 / (h2 * (h1 + h2))).reshape(shape)
    center = a * _along(y, d, 0, -2) + b * _along(y, d, 1, -1) + c * _along(y, d, 2)
    if edge_order == 1:
        first = (_along(y, d, 1, 2) - _along(y, d, 0, 1)) / h[0]
        last = (_along(y, d, -1) - _along(y, d, -2, -1)) / h[-1]
    else:
        a = -(2.0 * h[0] + h[1]) / (h[0] * (h[0] + h[1]))
        b = (h[0] + h[1]) / (h[0] * h[1])
        c = (-h[0]) / (h[1] * (h[0] + h[1]))
        first = a * _along(y, d, 0, 1) + b * _along(y, d, 1, 2) + c * _along(y, d, 2, 3)
        a = h[-1] / (h[-2] * (h[-1] + h[-2]))
        b = -(h[-1] + h[-2]) / (h[-1] * h[-2])
        c = (2 * h[-1] + h[-2]) / (h[-1] * (h[-1] + h[-2]))
        last = a * _along(y, d, -3, -2) + b * _along(y, d, -2, -1) + c * _along(y, d, -1)
    return cat([first, center, last], d)


def _check_not_bool(y: Tensor) -> None:
    # (the differences of PyTorch's formulas subtract bool tensors, which it refuses)
    if y._data.dtype.kind == "b" and y._data.ndim:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")


def _is_number(v) -> bool:
    return isinstance(v, numbers.Number)


def gradient(input: Tensor, *, spacing=None, dim=None, edge_order: int = 1) -> tuple:
    """Estimates of the derivative of the samples ``input`` along each of ``dim`` (all dims by
    default): central differences inside, one-sided differences of ``edge_order`` 1 or 2 at
    the edges. ``spacing``: one number (the step in every dim), one number or one 1-d tensor of
    coordinates per dim. Returns a tuple with one tensor per dim."""
    if isinstance(spacing, Tensor) and spacing._data.ndim == 0:  # (a 0-d tensor is a number)
        spacing = spacing.item()
    if isinstance(spacing, Tensor) or (spacing is not None and not _is_number(spacing)
                                       and not isinstance(spacing, (list, tuple))):
        raise TypeError(f"gradient() received an invalid combination of arguments - got "
                        f"(Tensor, spacing={type(spacing).__name__}), but expected one of:")
    if isinstance(spacing, (list, tuple)):
        coords = [isinstance(s, Tensor) for s in spacing]
        if any(coords) and not all(coords):
            k = coords.index(False)
            raise TypeError(f"expected Tensor as element {k} in argument 1, but got "
                            f"{type(spacing[k]).__name__}")
        dims = _gradient_dims(input, len(spacing), dim, edge_order)
        _check_not_bool(input)
        if spacing and all(coords):
            for s in spacing:
                if s.device != input.device:
                    raise RuntimeError(f"torch.gradient expected each tensor to be on the same "
                                       f"device, but got devices {input.device} and "
                                       f"{s.device}!")
            return tuple(_gradient_points(input, s, d, edge_order)
                         for s, d in zip(spacing, dims))
        return tuple(_gradient_uniform(input, s, d, edge_order) for s, d in zip(spacing, dims))
    # one number (or none): the same step along every dimension asked for
    dims = _gradient_dims(input, None, dim, edge_order)
    _check_not_bool(input)
    step = 1.0 if spacing is None else spacing
    return tuple(_gradient_uniform(input, step, d, edge_order) for d in dims)
