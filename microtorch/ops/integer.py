"""Integer arithmetic: ``gcd`` and ``lcm`` (element-wise, broadcast, no gradients)."""

from __future__ import annotations

import numpy as np

from ..autograd.node import broadcast_message
from ._util import Tensor, _wrap, promote_operands, scalar_name, xp_of

__all__ = ["gcd", "lcm"]


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
