"""``Conv1d``, ``MaxPool1d`` and ``AvgPool1d`` (over (N, C, L) or (C, L) inputs)."""

from __future__ import annotations

from ..._tensor import Tensor
from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "MaxPool1d", "AvgPool1d"]


def _one(v) -> tuple[int]:
    return (int(v[0]),) if isinstance(v, (tuple, list)) else (int(v),)


class Conv1d(Module):
    """1-D convolution (cross-correlation); weight (out, in / groups, kernel), PyTorch's init."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise NotImplementedError("only padding_mode='zeros' is supported")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and _one(stride) != (1,):
                raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _one(kernel_size), _one(stride)
        self.padding = padding if isinstance(padding, str) else _one(padding)
        self.dilation, self.groups, self.padding_mode = _one(dilation), groups, padding_mode
        self.weight = Parameter(empty((out_channels, in_channels // groups, *self.kernel_size),
                                      device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)), bias U(+-1/sqrt(fan_in))."""
        init._default_affine_(self.weight, self.bias, zero_fan_bias=False)

    def forward(self, input: Tensor) -> Tensor:
        """Convolve ``input`` with the weight."""
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if isinstance(self.padding, str) or self.padding != (0,):
            s += f", padding={self.padding}"
        if self.dilation != (1,):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


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
