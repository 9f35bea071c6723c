"""The view ops' forms whose results are not views.

- PyTorch's ``*_copy`` ops (``permute_copy``, ``diagonal_copy``, ...): the view op's result,
  materialised as a fresh contiguous tensor. One helper (``materialised``) makes each of them
  from the view op itself, so the values, errors and gradients are the view op's; only the node
  is named as PyTorch names it (the view's node name with ``_copy``).
- ``unsafe_split`` / ``unsafe_split_with_sizes`` / ``unsafe_chunk``: ``split``'s pieces, sharing
  the input's memory but outside the view tracking (no ``_base``, a version counter of their
  own), as PyTorch's.

The namespace functions take PyTorch's ``out=`` (``out_arg.with_exact_out``); the ``*_copy``
results are never views, so an ``out`` receives a plain copy.
"""

from __future__ import annotations

from .. import _memory_format as _mf
from ..autograd.function import Function, finish, named
from ._util import Tensor, is_scalar
from .arrange import unfold
from .copies import Clone
from .matrix import diagonal
from .out_arg import with_exact_out
from .shape import (
    chunk,
    expand,
    narrow,
    permute,
    reshape,
    split,
    squeeze,
    t,
    transpose,
    unbind,
    unsqueeze,
    view,
)

__all__ = ["expand_copy", "diagonal_copy", "alias_copy", "narrow_copy", "view_copy",
           "permute_copy", "split_with_sizes_copy", "unbind_copy", "unfold_copy", "squeeze_copy",
           "unsqueeze_copy", "transpose_copy", "t_copy", "unsafe_split",
           "unsafe_split_with_sizes", "unsafe_chunk"]


def materialised(result, input: Tensor, node: str):
    """A view op's ``result`` (a tensor, or a tuple of them) as fresh contiguous copies whose
    graph node is named ``node`` and leads to ``input``'s, as PyTorch's ``*_copy`` ops."""
    if isinstance(result, (tuple, list)):
        return tuple(materialised(r, input, node) for r in result)
    return named(Clone.apply(result, _mf.contiguous_format), node, input)


def expand_copy(input: Tensor, size, *, implicit: bool = False) -> Tensor:
    """``expand``, materialised."""
    return materialised(expand(input, size), input, "ExpandBackward0_copy")


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``diagonal``, materialised."""
    return materialised(diagonal(input, offset, dim1, dim2), input, "DiagonalBackward0_copy")


def alias_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` (``alias``, the identity view, materialised)."""
    return materialised(input, input, "AliasBackward0_copy")


def narrow_copy(input: Tensor, dim: int, start, length: int) -> Tensor:
    """``narrow``, materialised (PyTorch gives this one a derivative of its own, hence its
    node name)."""
    if input._data.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if dim >= input._data.ndim:  # (a negative dim out of range: IndexError, as PyTorch's)
        raise RuntimeError(f"narrow_copy(): Expected dim < {input._data.ndim} (the number of "
                           f"dimensions of self), but got dim {dim}")
    return materialised(narrow(input, dim, start, length), input, "NarrowCopyBackward0")


def view_copy(input: Tensor, size) -> Tensor:
    """``view``, materialised: to the shape ``size`` (of the elements in row-major order, also
    where ``view`` itself would need other strides), or as the dtype ``size`` (not
    differentiable, as ``view(dtype)``)."""
    if is_scalar(size) or isinstance(size, (tuple, list, Tensor)):
        return materialised(reshape(input, size), input, "ViewBackward0_copy")
    return materialised(view(input, size), input, "ViewBackward0_copy")


def permute_copy(input: Tensor, dims) -> Tensor:
    """``permute``, materialised."""
    return materialised(permute(input, dims), input, "PermuteBackward0_copy")


def split_with_sizes_copy(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split_with_sizes``, each piece materialised."""
    return materialised(split(input, list(split_sizes), dim), input,
                        "SplitWithSizesBackward0_copy")


def unbind_copy(input: Tensor, dim: int = 0) -> tuple:
    """``unbind``, each slice materialised."""
    return materialised(unbind(input, dim), input, "UnbindBackward0_copy")


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``Tensor.unfold``, materialised."""
    return materialised(unfold(input, dimension, size, step), input, "UnfoldBackward0_copy")


def squeeze_copy(input: Tensor, dim=None) -> Tensor:
    """``squeeze``, materialised (the node numbered by the overload, as PyTorch's: all dims,
    one dim, several dims)."""
    overload = 0 if dim is None else 2 if isinstance(dim, (tuple, list)) else 1
    return materialised(squeeze(input, dim), input, f"SqueezeBackward{overload}_copy")


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """``unsqueeze``, materialised."""
    return materialised(unsqueeze(input, dim), input, "UnsqueezeBackward0_copy")


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``transpose``, materialised."""
    return materialised(transpose(input, dim0, dim1), input, "TransposeBackward0_copy")


def t_copy(input: Tensor) -> Tensor:
    """``t``, materialised."""
    return materialised(t(input), input, "TBackward0_copy")


# -- the unsafe splits -------------------------------------------------------------------------
class Unviewed(Function):
    """``x``'s array as a tensor of its own: the same memory, but no view of ``x`` (no
    ``_base``, its own version counter), so in-place changes to it go unchecked, PyTorch's
    "unsafe" contract. Its gradient passes through."""

    lifted = True

    @staticmethod
    def forward(ctx, x, torch_name):
        ctx.torch_name = torch_name
        return x._data

    @staticmethod
    def backward(ctx, grad):
        return finish(grad, None)


def _unviewed(pieces, node: str) -> tuple:
    return tuple(Unviewed.apply(p, node) for p in pieces)


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:
    """``split`` into pieces of ``split_size`` that are not views (see ``Unviewed``)."""
    if not isinstance(split_size, int) or isinstance(split_size, bool):
        raise TypeError(f"unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _unviewed(split(input, split_size, dim), "UnsafeSplitBackward0")


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split_with_sizes`` into pieces that are not views (see ``Unviewed``)."""
    return _unviewed(split(input, list(split_sizes), dim), "UnsafeSplitWithSizesBackward0")


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``chunk`` into pieces that are not views (see ``Unviewed``); PyTorch computes it as an
    ``unsafe_split``, hence the node name."""
    return _unviewed(chunk(input, chunks, dim), "UnsafeSplitBackward0")


# Tensor methods PyTorch has among these (the others are namespace functions only).
METHODS = {"narrow_copy": narrow_copy, "unsafe_split": unsafe_split,
           "unsafe_split_with_sizes": unsafe_split_with_sizes, "unsafe_chunk": unsafe_chunk}

# The namespace functions, with PyTorch's out= (the unsafe splits take none).
_KERNELS = {"unbind_copy": "unbind_copy_int"}
globals().update({name: with_exact_out(name, globals()[name], name == "narrow_copy",
                                       _KERNELS.get(name))
                  for name in __all__ if name.endswith("_copy")})
