"""``MaxPool1d`` and ``AvgPool1d`` (over (N, C, L) or (C, L) inputs); ``Conv1d`` is in conv.py."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["MaxPool1d", "AvgPool1d"]


def _one(v) -> tuple[int]:
    return (int(v[0]),) if isinstance(v, (tuple, list)) else (int(v),)


class MaxPool1d(Module):
    """Maximum over sliding windows; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool1d(Module):
    """Average over sliding windows; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _one(kernel_size)
        self.stride = _one(stride if stride is not None else kernel_size)
        self.padding = _one(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
