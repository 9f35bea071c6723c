"""Padding layers: constant, zero, reflection and replication padding in 1-D and 2-D."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
           "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d", "ConstantPad3d", "ZeroPad3d", "ReflectionPad3d",
           "ReplicationPad3d"]


def _ntuple(padding, n: int) -> tuple[int, ...]:
    if isinstance(padding, (tuple, list)):
        if len(padding) != n:
            raise ValueError(f"padding must be an int or a {n}-tuple, got {padding!r}")
        return tuple(int(p) for p in padding)
    return (int(padding),) * n


class _PadNd(Module):
    mode = "constant"
    _n = 4

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(padding, self._n)

    def forward(self, input: Tensor) -> Tensor:
        """Pad ``input``."""
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        """Pad ``input`` with ``value``."""
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with a constant: ``padding`` int or (left, right)."""

    _n = 2


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with a constant: ``padding`` int or (left, right, top, bottom)."""

    _n = 4


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros: ``padding`` int or (left, right, top, bottom)."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection (padding < size)."""

    mode = "reflect"
    _n = 2


class ReflectionPad2d(_PadNd):
    """Pad the last two dims with their reflection (padding < size)."""

    mode = "reflect"
    _n = 4


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values."""

    mode = "replicate"
    _n = 2


class ReplicationPad2d(_PadNd):
    """Pad the last two dims by repeating their edge values."""

    mode = "replicate"
    _n = 4


class _CircularPadNd(Module):
    """Wrap-around padding: the values at one end pad the other (negative padding crops)."""

    _n = 2

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(padding, self._n)

    def _check_input_dim(self, input: Tensor) -> None:
        dims = self._n // 2 + 1, self._n // 2 + 2
        if input.ndim not in dims:
            raise ValueError(f"expected {dims[0]}D or {dims[1]}D input (got {input.ndim}D "
                             f"input)")

    def forward(self, input: Tensor) -> Tensor:
        """Pad ``input`` circularly."""
        self._check_input_dim(input)
        return F.pad(input, self.padding, "circular")

    def extra_repr(self) -> str:
        return f"{self.padding}"


class CircularPad1d(_CircularPadNd):
    """Circular padding of the last dim: ``padding`` int or (left, right); (C, W) or
    (N, C, W) input."""

    _n = 2


class CircularPad2d(_CircularPadNd):
    """Circular padding of the last two dims: ``padding`` int or (left, right, top, bottom);
    (C, H, W) or (N, C, H, W) input."""

    _n = 4


class CircularPad3d(_CircularPadNd):
    """Circular padding of the last three dims: ``padding`` int or (left, right, top, bottom,
    front, back); (C, D, H, W) or (N, C, D, H, W) input."""

    _n = 6


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with a constant: ``padding`` int or a 6-tuple."""

    _n = 6


class ZeroPad3d(ConstantPad3d):
    """Pad the last three dims with zeros: ``padding`` int or a 6-tuple."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad3d(_PadNd):
    """Pad the last three dims with their reflection (padding < size)."""

    mode = "reflect"
    _n = 6


class ReplicationPad3d(_PadNd):
    """Pad the last three dims by repeating their edge values."""

    mode = "replicate"
    _n = 6
