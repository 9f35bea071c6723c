"""Adaptive pooling, upsampling, pixel (un)shuffle, padding layers and channel dropout:
thin wrappers over ``nn.functional``."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .dropout import Dropout
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "Upsample",
           "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle",
           "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
           "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "Dropout1d", "Dropout2d",
           "Dropout3d"]


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


class Upsample(Module):
    """Resize by ``size`` or ``scale_factor`` ('nearest', 'nearest-exact', 'linear',
    'bilinear' or 'area')."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Resize ``input``."""
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with ``align_corners=True``."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Shuffle ``input``."""
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Unshuffle ``input``."""
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


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


class Dropout1d(Dropout):
    """Zero whole channels of (N, C, L) / (C, L) input with probability ``p`` in training."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel dropout when training."""
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """Zero whole channels of (N, C, H, W) input with probability ``p`` in training."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel dropout when training."""
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """Zero whole channels of (N, C, D, H, W) input with probability ``p`` in training."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel dropout when training."""
        return F.dropout3d(input, self.p, self.training, self.inplace)
