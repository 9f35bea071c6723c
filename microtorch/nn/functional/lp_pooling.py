"""Power-average pooling (``lp_pool1d/2d/3d``) and the always-with-indices max pooling entry
points (``max_pool*d_with_indices``, ``adaptive_max_pool*d_with_indices``).

``lp_pool`` follows PyTorch's formula step by step, so its values are PyTorch's bit for bit
where the average pool is: ``(sign(a) * relu(|a|) * numel(kernel)) ** (1 / p)`` with ``a`` the
average pool of ``input ** p`` (no padding); ``p = +-inf`` is a max pool of ``|input|``.
"""

from __future__ import annotations

from ..._tensor import Tensor
from .activation import relu
from .pooling import (
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices"]


def _repeat(v, n: int) -> tuple:
    """PyTorch's ``_pair``/``_triple``: a sequence as a tuple, anything else repeated."""
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _lp_pool(input: Tensor, norm_type, kernel_size, stride, ceil_mode: bool, count: int,
             max_pool, avg_pool) -> Tensor:
    """The shared body of ``lp_pool1d/2d/3d`` (``count``: the number of kernel elements)."""
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    powered = input.pow(norm_type)
    if stride is not None:
        out = avg_pool(powered, kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool(powered, kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * relu(out.abs())).mul(count).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """1-D power-average pooling: ``(sum over the window of x ** p) ** (1 / p)``; the gradient
    is zero where the window's sum is zero."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, kernel_size, max_pool1d,
                    avg_pool1d)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """2-D power-average pooling over (N, C, H, W) or (C, H, W) input."""
    kh, kw = _repeat(kernel_size, 2)
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, kh * kw, max_pool2d,
                    avg_pool2d)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """3-D power-average pooling over (N, C, D, H, W) or (C, D, H, W) input."""
    kd, kh, kw = _repeat(kernel_size, 3)
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, kd * kh * kw, max_pool3d,
                    avg_pool3d)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False
                            ) -> tuple[Tensor, Tensor]:
    """``max_pool1d`` returning (values, indices) whatever ``return_indices`` says."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False
                            ) -> tuple[Tensor, Tensor]:
    """``max_pool2d`` returning (values, flat h * W + w indices)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False
                            ) -> tuple[Tensor, Tensor]:
    """``max_pool3d`` returning (values, flat d * H * W + h * W + w indices)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False
                                     ) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool1d`` returning (values, indices)."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False
                                     ) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool2d`` returning (values, indices)."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = False
                                     ) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool3d`` returning (values, indices)."""
    return adaptive_max_pool3d(input, output_size, True)
