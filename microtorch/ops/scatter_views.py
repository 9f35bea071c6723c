"""``diagonal_scatter``, ``select_scatter``, ``slice_scatter``: a copy of the input with ``src``
written into one of its views, the functional form of writing through that view.

One node serves the three (``ScatterIntoView``): it is given the view op as a function of a
tensor (the *region*), writes ``src`` into that region of a copy of the input, and
differentiates as PyTorch's derivatives.yaml says for each: the input's gradient is ``grad``
with the region zeroed (the same scatter, of zeros), ``src``'s is the region of ``grad`` (the
view op itself, so a double backward comes for free).
"""

from __future__ import annotations

import builtins

from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ._util import Tensor, reduce_grad, wrap_dim, writable_copy
from .matrix import diagonal
from .out_arg import with_exact_out
from .shape import select

__all__ = ["diagonal_scatter", "select_scatter", "slice_scatter"]


class ScatterIntoView(Function):
    """A copy of ``x`` with ``src`` written (cast to ``x``'s dtype, as ``copy_`` casts) into
    ``region(copy)``; ``region`` maps a tensor to a view of it of ``src``'s shape."""

    @staticmethod
    def forward(ctx, x, src, region, torch_name):
        ctx.region, ctx.torch_name = region, torch_name
        ctx.src = (src._data.shape, src._data.dtype)
        out = writable_copy(x._data, src._data)
        with no_grad():
            target = region(Tensor._make(out))._data
        target[...] = src._data
        return out

    @staticmethod
    def backward(ctx, grad):
        shape, dtype = ctx.src
        gx = ScatterIntoView.apply(grad, grad.new_zeros(shape), ctx.region, ctx.torch_name)
        return gx, reduce_grad(ctx.region(grad), shape, dtype), None, None


def _scatter(input: Tensor, src, region, fn: str, node: str) -> Tensor:
    """``ScatterIntoView`` after PyTorch's checks: ``src`` a tensor of the region's shape (the
    region of ``input`` itself raises the view op's errors for bad dims or indices)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"{fn}(): argument 'src' (position 2) must be Tensor, not "
                        f"{type(src).__name__}")
    with no_grad():
        expected = region(input)._data.shape
    if src._data.shape != expected:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._data.shape)}, slice size = {list(expected)}")
    return ScatterIntoView.apply(input, src, region, node)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` as its diagonal ``diagonal(offset, dim1, dim2)``."""
    return _scatter(input, src, lambda t: diagonal(t, offset, dim1, dim2), "diagonal_scatter",
                    "DiagonalScatterBackward0")


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` as its slice ``select(dim, index)``."""
    return _scatter(input, src, lambda t: select(t, dim, index), "select_scatter",
                    "SelectScatterBackward0")


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` as its slice ``start:end:step`` along ``dim`` (Python's
    slice bounds: negative ones count from the end, out-of-range ones are clipped)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    key = (slice(None),) * d + (slice(None if start is None else builtins.int(start),
                                      None if end is None else builtins.int(end),
                                      builtins.int(step)),)
    return _scatter(input, src, lambda t: t[key], "slice_scatter", "SliceScatterBackward0")


METHODS = {name: globals()[name] for name in __all__}
# (PyTorch gives slice_scatter alone an out= among the three)
slice_scatter = with_exact_out("slice_scatter", slice_scatter, grad_check=False)
