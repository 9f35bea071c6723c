"""Pooling layers: ``MaxPool1d/2d/3d``, ``AvgPool1d/2d/3d``, adaptive and fractional pooling
(over batched or unbatched inputs)."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "MaxPool1d", "AvgPool1d", "MaxPool3d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool3d", "AdaptiveMaxPool1d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "FractionalMaxPool2d", "FractionalMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d"]


class MaxPool2d(Module):
    """Maximum over sliding windows; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """Average over sliding windows; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(MaxPool2d):
    """Maximum over sliding 3-D windows of (N, C, D, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(AvgPool2d):
    """Average over sliding 3-D windows of (N, C, D, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


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


class _AdaptivePool(Module):
    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average over adaptive windows giving ``output_size`` positions."""

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average over adaptive windows giving an ``output_size`` (int or pair, None keeps the
    input's size) map."""

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool2d(_AdaptivePool):
    """Maximum over adaptive windows; ``return_indices`` also returns flat indices."""

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        """Pool ``input``."""
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveAvgPool3d(_AdaptivePool):
    """Average over adaptive windows giving an ``output_size`` (int or triple, None keeps the
    input's size) volume."""

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptivePool):
    """Maximum over adaptive windows of a volume; ``return_indices`` also returns flat
    indices."""

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        """Pool ``input``."""
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptivePool):
    """Maximum over adaptive windows giving ``output_size`` positions; ``return_indices``
    also returns their indices."""

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        """Pool ``input``."""
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    """The inverse of max pooling given its indices (zeros where no maximum came from)."""

    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()

        def sizes(v):
            return tuple(int(x) for x in v) if isinstance(v, (tuple, list)) else (int(v),) * \
                self._n

        self.kernel_size = sizes(kernel_size)
        self.stride = sizes(stride if stride is not None else kernel_size)
        self.padding = sizes(padding)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        """Unpool ``input`` with the indices its max pooling returned."""
        fn = getattr(F, f"max_unpool{self._n}d")
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of ``MaxPool1d``."""

    _n = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of ``MaxPool2d``."""

    _n = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of ``MaxPool3d``."""

    _n = 3


def _repeat(v, n: int) -> tuple:
    """PyTorch's ``_pair``/``_triple``: a sequence as a tuple, anything else repeated."""
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _FractionalMaxPoolNd(Module):
    """Fractional max pooling (``F.fractional_max_pool2d``/``3d``): ``output_size`` or an
    ``output_ratio`` in (0, 1); ``_random_samples`` (a buffer, as PyTorch's) fixes the windows."""

    _n = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        name = type(self).__name__
        if self._n == 3 and any(k <= 0 for k in _repeat(kernel_size, 1)):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _repeat(kernel_size, self._n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _repeat(output_size, self._n) if output_size is not None else None
        self.output_ratio = _repeat(output_ratio, self._n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(
                0 < self.output_ratio[i] < 1 for i in range(self._n)):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):
        """Pool ``input`` (values, or values and indices with ``return_indices``)."""
        pool = F.fractional_max_pool2d if self._n == 2 else F.fractional_max_pool3d
        return pool(input, self.kernel_size, self.output_size, self.output_ratio,
                    self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling over (N, C, H, W) or (C, H, W) input."""

    _n = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling over (N, C, T, H, W) or (C, T, H, W) input."""

    _n = 3


class _LPPoolNd(Module):
    """Power-average pooling: ``(sum over the window of x ** p) ** (1 / p)``."""

    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def _pool(self):
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:
        """Pool ``input``."""
        return self._pool()(input, float(self.norm_type), self.kernel_size, self.stride,
                            self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """1-D power-average pooling over (N, C, L) or (C, L) input."""

    def _pool(self):
        return F.lp_pool1d


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling over (N, C, H, W) or (C, H, W) input."""

    def _pool(self):
        return F.lp_pool2d


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling over (N, C, D, H, W) or (C, D, H, W) input."""

    def _pool(self):
        return F.lp_pool3d
