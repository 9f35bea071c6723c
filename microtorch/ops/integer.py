"""Integer arithmetic: ``gcd``, ``lcm`` and the bit shifts ``bitwise_left_shift`` /
``bitwise_right_shift`` (``<<``, ``>>``): element-wise, broadcast, no gradients."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.node import broadcast_message
from ._util import Tensor, _wrap, promote_operands, scalar_name, xp_of

__all__ = ["gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift"]


def _integer_pair(name: str, input: Tensor, other) -> tuple:
    """The two operands' arrays in their promoted integer dtype, with PyTorch's errors."""
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    a, b, dt = promote_operands(input, other)
    if dt.kind not in "iu":
        bad = input if input._data.dtype.kind not in "iu" else other
        raise NotImplementedError(f"\"{name}_{input.device.type}\" not implemented for "
                                  f"'{scalar_name(bad)}'")
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise RuntimeError(broadcast_message((input, other))) from None
    return a, b


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor of each pair of integers (non-negative; gcd(0, 0) = 0)."""
    a, b = _integer_pair("gcd", input, other)
    return _wrap(xp_of(a).gcd(a, b))


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple of each pair of integers (non-negative; 0 with a zero)."""
    a, b = _integer_pair("lcm", input, other)
    return _wrap(xp_of(a).lcm(a, b))


def _shift(name: str, kernel: str, input, other) -> Tensor:
    """``input << other`` or ``input >> other`` in the promoted integer dtype, as PyTorch's
    CPU kernel: shifts by a negative amount or by the width or more give 0 (left) or the
    sign fill (right); left shifts wrap."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{name}(): expected a Tensor, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    a, b, dt = promote_operands(input, other)
    if dt.kind not in "iu":
        what = "lshift" if kernel == "left_shift" else "rshift"
        ref = input if isinstance(input, Tensor) else other
        raise NotImplementedError(f"\"{what}_{ref.device.type}\" not implemented for "
                                  f"'{_dtype.title(_dtype.from_numpy_dtype(dt))}'")
    ref = a if hasattr(a, "shape") and not isinstance(a, np.generic) else b
    xp = xp_of(ref)
    a, b = xp.asarray(a, dtype=dt), xp.asarray(b, dtype=dt)
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise RuntimeError(broadcast_message((input, other))) from None
    bits = dt.itemsize * 8
    bad = (b < 0) | (b >= bits)
    amount = xp.where(bad, 0, b).astype(dt, copy=False)
    if kernel == "left_shift":
        out = xp.where(bad, 0, xp.left_shift(a, amount))
    else:
        fill = xp.right_shift(a, bits - 1) if dt.kind == "i" else xp.zeros_like(a)
        out = xp.where(bad, fill, xp.right_shift(a, amount))
    return _wrap(xp.asarray(out, dtype=dt))


def bitwise_left_shift(input, other) -> Tensor:
    """``input << other`` on integers (either may be a number)."""
    return _shift("bitwise_left_shift", "left_shift", input, other)


def bitwise_right_shift(input, other) -> Tensor:
    """``input >> other`` on integers (arithmetic for signed types; either may be a number)."""
    return _shift("bitwise_right_shift", "right_shift", input, other)
