"""``torch.testing.make_tensor``: a random tensor of any shape, dtype and device for tests.

The values come from the same draws PyTorch makes (``randint`` for bool and integers,
``uniform_`` for floating and complex dtypes), so after the same ``manual_seed`` the CPU tensor
equals PyTorch's.
"""

from __future__ import annotations

import collections.abc
import math
import warnings

from .. import _dtype
from .._memory_format import memory_format as _memory_format
from .._tensor import Tensor
from .._typeinfo import finfo, iinfo
from ..backend.device import device as _device
from ..ops import empty, randint, view_as_real

__all__ = ["make_tensor"]

_INTEGRAL = {"uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"}
_FLOATING = {"float16", "bfloat16", "float32", "float64"}
_COMPLEX = {"complex32", "complex64", "complex128"}


def make_tensor(*shape: int | collections.abc.Sequence[int], dtype: _dtype.dtype,
                device: str | _device, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False,
                exclude_zero: bool = False,
                memory_format: _memory_format | None = None) -> Tensor:
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``.

    Defaults: bool [0, 2), unsigned [0, 10), signed integers [-9, 10), floating and complex
    [-9, 9); given bounds are clamped to what the dtype can hold. ``noncontiguous`` returns a
    strided view (tensors of two or more elements), ``exclude_zero`` replaces zeros by 1 (bool,
    integers) or the dtype's ``finfo.tiny``; ``memory_format`` clones into that format.
    """
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    name = dtype.name if isinstance(dtype, _dtype.dtype) else None
    integral = name == "bool" or name in _INTEGRAL

    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got {noncontiguous=} and {memory_format=}")
    if requires_grad and integral:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got {dtype=}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        # Twice the last dim, every other element kept below: a view with distinct values.
        shape = (*shape[:-1], 2 * shape[-1])

    if name == "bool":
        low, high = _bounds(low, high, dtype, 0, 2, 0, 2)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif name in _INTEGRAL:
        info = iinfo(dtype)
        # randint takes its bounds as int64, so int64's own maximum cannot be an exclusive high.
        top = info.max + (1 if name != "int64" else 0)
        # The default low -9 is clamped to 0 for unsigned dtypes.
        low, high = _bounds(low, high, dtype, info.min, top, -9, 10)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif name in _FLOATING or name in _COMPLEX:
        info = finfo(dtype)
        low, high = _bounds(low, high, dtype, info.min, info.max, -9, 9)
        result = empty(shape, device=device, dtype=dtype)
        if name in _COMPLEX:
            # the real and imaginary parts are drawn as one real tensor
            _uniform_(view_as_real(result), low, high)
        else:
            _uniform_(result, low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "torch.testing.make_tensor(). To request support, file an issue at: "
                        "https://github.com/pytorch/pytorch/issues")

    if noncontiguous:
        result = result[..., 1::2]  # offset by one to also catch offset bugs
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else finfo(dtype).tiny
    if not integral:
        result.requires_grad = requires_grad
    return result


def _bounds(low, high, dtype, lowest: float, highest: float, default_low: float,
            default_high: float) -> tuple[float, float]:
    """Check ``[low, high)`` against the dtype's ``[lowest, highest)`` and clamp it there."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    integral = dtype.name == "bool" or dtype.name in _INTEGRAL
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
    if low == high and not integral:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. "
                      "Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if integral:
        # Ceil both: low so no value falls below it, high since randint's high is exclusive.
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform_(t: Tensor, low: float, high: float) -> None:
    """``t.uniform_(low, high)`` as PyTorch's make_tensor calls it."""
    if high - low >= finfo(t.dtype).max:
        # uniform_ needs the width finite in the dtype: draw half the range and double it.
        _uniform_(t, low / 2, high / 2)
        t.mul_(2)
    else:
        t.uniform_(low, high)
