"""``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``, and their lazy forms (``LazyConv*``,
``LazyConvTranspose*``: ``in_channels`` from the first input)."""

from __future__ import annotations

from ..._tensor import Tensor
from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d"]


class _ConvNd(Module):
    """What the convolutions share: argument checks, parameters, default init, repr."""

    transposed = False
    spatial_dims = 2  # the kernel's dimensions (1 for Conv1d)

    @classmethod
    def _tuple(cls, v) -> tuple[int, ...]:
        """An int or a sequence as one int per spatial dimension."""
        values = tuple(int(x) for x in v) if isinstance(v, (tuple, list)) else (int(v),)
        if len(values) == 1:
            values *= cls.spatial_dims
        if len(values) != cls.spatial_dims:
            raise ValueError(f"expected an int or {cls.spatial_dims} ints, got {v!r}")
        return values

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding,
                 dilation, groups: int, bias: bool, padding_mode: str, output_padding,
                 device, dtype) -> None:
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
            if padding == "same" and any(d != 1 for d in self._tuple(stride)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = self._tuple(kernel_size)
        self.stride = self._tuple(stride)
        self.padding = padding if isinstance(padding, str) else self._tuple(padding)
        self.dilation = self._tuple(dilation)
        self.output_padding = self._tuple(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        # PyTorch's layouts: (out, in / groups, kH, kW), transposed (in, out / groups, kH, kW).
        channels = ((in_channels, out_channels // groups) if self.transposed
                    else (out_channels, in_channels // groups))
        self.weight = Parameter(empty((*channels, *self.kernel_size), device=device,
                                      dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)), bias U(+-1/sqrt(fan_in))."""
        init._default_affine_(self.weight, self.bias, zero_fan_bias=False)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        zeros, ones = (0,) * self.spatial_dims, (1,) * self.spatial_dims
        if isinstance(self.padding, str) or self.padding != zeros:
            s += f", padding={self.padding}"
        if self.dilation != ones:
            s += f", dilation={self.dilation}"
        if self.output_padding != zeros:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class _Conv(_ConvNd):
    """A (non-transposed) convolution; subclasses name their dimensions and functional."""

    functional = "conv2d"  # the ``nn.functional`` op forward calls

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, 0, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        """Convolve ``input`` with the weight."""
        return getattr(F, self.functional)(input, self.weight, self.bias, self.stride,
                                           self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-D convolution (cross-correlation) over (N, C, L) inputs."""

    spatial_dims = 1
    functional = "conv1d"


class Conv2d(_Conv):
    """2-D convolution (cross-correlation) over (N, C, H, W) inputs."""


class Conv3d(_Conv):
    """3-D convolution (cross-correlation) over (N, C, D, H, W) inputs."""

    spatial_dims = 3
    functional = "conv3d"


class _ConvTransposeNd(_ConvNd):
    """A transposed convolution (the gradient of the convolution of the same geometry)."""

    transposed = True
    functional = "conv_transpose2d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        if isinstance(padding, str):
            raise ValueError(f"padding strings are not supported by {type(self).__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, device, dtype)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        """Transposed-convolve ``input``; ``output_size`` (its last spatial entries) picks the
        output padding, as in PyTorch, when several output sizes are possible."""
        output_padding = self.output_padding
        if output_size is not None:
            n = self.spatial_dims
            size = list(output_size)
            if len(size) not in (n, n + 2):
                raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size "
                                 f"must have {n} or {n + 2} elements (got {len(size)})")
            output_padding = self._output_padding_for(input, size[-n:])
        return getattr(F, self.functional)(input, self.weight, self.bias, self.stride,
                                           self.padding, output_padding, self.groups,
                                           self.dilation)

    def _output_padding_for(self, input: Tensor, size: list[int]) -> tuple[int, ...]:
        n = self.spatial_dims
        pads = []
        for d in range(n):
            smallest = ((input.shape[d - n] - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= size[d] <= largest:
                raise ValueError(f"requested an output size of {size}, but valid sizes range "
                                 f"from {smallest} to {largest} (for an input of "
                                 f"{list(input.shape[-n:])})")
            pads.append(size[d] - smallest)
        return tuple(pads)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C, L) inputs."""

    spatial_dims = 1
    functional = "conv_transpose1d"


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C, H, W) inputs (the gradient of ``Conv2d``)."""


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C, D, H, W) inputs."""

    spatial_dims = 3
    functional = "conv_transpose3d"


class _LazyConvMixin(LazyModuleMixin):
    """A convolution whose ``in_channels`` comes from its first input (PyTorch's
    ``_LazyConvXdMixin``): it then becomes the eager class, with its weights drawn as that
    class's constructor draws them."""

    def _lazy_setup(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """The eager initialisation, once the parameters have their shapes."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        """Materialize the weight and bias from the input's channel count."""
        if not self.has_uninitialized_params():
            return
        n = self.spatial_dims + 1
        if input.ndim not in (n, n + 1):
            raise RuntimeError(f"Expected {n}D (unbatched) or {n + 1}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: "
                               f"{list(input.shape)}")
        self.in_channels = input.shape[1] if input.ndim == n + 1 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        channels = ((self.in_channels, self.out_channels // self.groups) if self.transposed
                    else (self.out_channels, self.in_channels // self.groups))
        self.weight.materialize((*channels, *self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


class _LazyConv(_LazyConvMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode)
        self._lazy_setup(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` is inferred from its first input."""

    cls_to_become = ConvTranspose3d
