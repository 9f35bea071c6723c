"""The mask machinery of ``torch.masked``: canonical masks and dims, reduction identities.

A masked op replaces the masked-out elements of its input by the identity of the reduction it
performs (0 for sums, 1 for products, -inf for maxima ...), with ``where``, then runs the
ordinary op. ``where`` routes no gradient to the masked-out elements, so the masked ops'
gradients are those of ordinary differentiable ops, as in PyTorch's ``torch/masked/_ops.py``.

Only strided (dense) tensors are supported: PyTorch also takes sparse COO/CSR tensors and
``MaskedTensor`` inputs in some of these ops; microtorch refuses them with
``NotImplementedError`` (:func:`strided_only`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import _dtype
from .._layout import strided
from .._tensor import Tensor
from .._typeinfo import iinfo
from ..ops import broadcast_to, tensor, where

DimOrDims = int | Sequence[int] | None

# The names of the ops ``_output_mask`` knows: a reduction's output mask is "any element of
# the reduced slice is masked in", a normalization's (and a cumulative op's) the input mask.
_REDUCTIONS = frozenset({"sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median",
                         "norm", "var", "std", "logsumexp"})
_NORMALIZATIONS = frozenset({"softmax", "log_softmax", "softmin", "normalize", "cumsum",
                             "cumprod"})


def strided_only(name: str, *tensors: Tensor | None) -> None:
    """Refuse a sparse input or mask: microtorch's masked ops are implemented for strided
    tensors only (PyTorch's sparse COO/CSR paths are not)."""
    for t in tensors:
        lay = getattr(t, "layout", strided)
        if t is not None and lay is not strided:
            raise NotImplementedError(
                f"microtorch.masked.{name} supports strided (dense) tensors only, got a "
                f"{lay} tensor; PyTorch's sparse and MaskedTensor inputs are not implemented "
                f"in microtorch")


def _canonical_dim(dim: DimOrDims, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative dims; None or ``()`` mean every dim."""
    if isinstance(dim, tuple) and dim == ():  # (``()`` reduces every dim, as PyTorch today)
        dim = None
    if dim is None:
        return tuple(range(ndim))
    ndim = max(ndim, 1)  # a 0-d tensor has dim 0 (and -1)
    dims: list[int] = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _reduce_dims(dims: tuple[int, ...]) -> tuple[int, ...] | None:
    """Dims for microtorch's reductions: ``()`` (a 0-d input) as None, which reduces all as
    PyTorch's ``()`` does."""
    return dims if dims else None


def _any(input: Tensor, dim: tuple[int, ...], keepdim: bool) -> Tensor:
    """``input.any`` over each of ``dim`` (last first)."""
    r = input
    for d in reversed(dim):
        r = r.any(dim=d, keepdim=keepdim)
    return r


def _reduction_identity(op_name: str, input: Tensor, *args) -> Tensor | None:
    """The 0-d identity of the reduction ``op_name`` for ``input``'s dtype (the value a
    masked-out element is replaced by), or None where there is none (mean, var, std)."""
    dtype, device = input.dtype, input.device
    op_name = op_name.rsplit(".", 1)[-1]
    is_float = dtype.is_floating_point
    int_like = dtype.is_signed or dtype == _dtype.uint8  # (bool has no identity here)
    is_int = not is_float and not dtype.is_complex and int_like
    value = None
    if op_name in ("sum", "cumsum"):
        value = 0
    elif op_name in ("prod", "cumprod"):
        value = 1
    elif op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if is_float:
            value = -float("inf")
        elif dtype.is_complex and op_name == "logsumexp":
            value = complex(-float("inf"), 0.0)
        elif is_int:
            value = iinfo(dtype).min
    elif op_name in ("amin", "argmin"):
        if is_float:
            value = float("inf")
        elif is_int:
            value = iinfo(dtype).max
    elif op_name in ("mean", "var", "std"):
        # The identity of a mean is the mean itself: ambiguous; fully masked-out slices give
        # nan (0 / 0) instead.
        return None
    elif op_name == "norm":
        ord = args[0] if args else 2
        if ord == float("-inf"):
            if not is_float:
                raise AssertionError(f"input must be floating point, got {dtype}")
            value = float("inf")
        else:
            value = 0
    elif op_name == "median":
        # NaN: the median is taken with nanmedian, which skips NaN.
        nan_dtype = dtype if is_float else _dtype.float32
        return tensor(float("nan"), dtype=nan_dtype, device=device)
    if value is None:
        raise NotImplementedError(f"identity of {op_name} on {dtype} input")
    return tensor(value, dtype=dtype, device=device)


def _where(mask: Tensor, input: Tensor, fill_value: Tensor) -> Tensor:
    """``where(mask, input, fill_value)`` for strided tensors."""
    strided_only("_where", mask, input)
    return where(mask, input, fill_value)


def _input_mask(input: Tensor, *args, **kwargs) -> Tensor:
    """The canonical mask of ``input``: ``kwargs['mask']`` broadcast to ``input``'s shape,
    as bool. A mask of more dims than ``input`` is refused (no broadcasting of the input)."""
    strided_only("_input_mask", input)
    mask = kwargs.get("mask")
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    strided_only("_input_mask", mask)
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = broadcast_to(mask.clone(), input.shape)
    return mask.to(dtype=_dtype.bool_)


def _output_mask(op: Callable, input: Tensor, *args, **kwargs) -> Tensor:
    """The mask of the output of the masked op ``op`` on these arguments: for a reduction,
    True where its slice has a masked-in element; for a normalization, the input mask."""
    if not callable(op):
        raise ValueError(f"_output_mask expected masked operation (got {type(op).__name__} "
                         f"object)")
    name = op.__name__
    if name in _REDUCTIONS:
        if name == "norm" and args:
            args = args[1:]  # (the ord argument)
        dim = args[0] if args else kwargs.get("dim")
        outmask = _input_mask(input, *args, **kwargs)
        keepdim = kwargs.get("keepdim", False)
        return _any(outmask, _canonical_dim(dim, input.ndim), bool(keepdim))
    if name in _NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    raise ValueError(f"_output_mask expected masked operation (got callable "
                     f"{op.__module__}.{name})")


def masked_input(name: str, input: Tensor, mask: Tensor | None, *args) -> Tensor:
    """``input`` with its masked-out elements replaced by the identity of ``name``."""
    if mask is None:
        return input
    canonical = _input_mask(input, mask=mask)
    return _where(canonical, input, _reduction_identity(name, input, *args))


def _combine_input_and_mask(op: Callable, input: Tensor, mask: Tensor | None, *args) -> Tensor:
    """PyTorch's helper of that name: ``input`` with its masked-out elements replaced by the
    identity of the masked op ``op``."""
    if mask is not None and not callable(op):
        raise ValueError(f"_combine_input_and_mask expected masked operation (got "
                         f"{type(op).__name__} object)")
    return masked_input(getattr(op, "__name__", ""), input, mask, *args)
