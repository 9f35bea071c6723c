"""``softmin``, ``glu`` and the 1-D convolution and pooling functions.

The 1-D layers run the 2-D ones on a height-1 view (an unsqueezed axis), as PyTorch's
``conv1d`` / ``max_pool1d`` do on the CPU, so they share their gradients (of any order).
"""

from __future__ import annotations

from ..autograd.function import named
from ..ops._util import Tensor, wrap_dim
from ..ops.nn_ops import softmax

__all__ = ["softmin", "glu", "conv1d", "max_pool1d", "avg_pool1d"]


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype=None) -> Tensor:
    """softmax(-input) along ``dim``."""
    if dim is None:  # PyTorch's legacy implicit dim: 0 for 0-, 1- and 3-d inputs, else 1
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return softmax(-input, dim, dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: a * sigmoid(b), with a, b the two halves of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.narrow(d, 0, n // 2), input.narrow(d, n // 2, n // 2)
    return named(a * b.sigmoid(), "GluBackward0")


def _single(v, name: str) -> int:
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of 1 "
                               f"values to match the convolution dimensions, but got {name}="
                               f"{list(v)}")
        v = v[0]
    return int(v)


def _as_3d(input: Tensor, name: str) -> tuple[Tensor, bool]:
    if input.ndim == 2:
        return input.unsqueeze(0), True
    if input.ndim != 3:
        raise RuntimeError(f"{name}: Expected 2D (unbatched) or 3D (batched) input to {name}, "
                           f"but got input of size: {list(input.shape)}")
    return input, False


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-D cross-correlation over (N, C, L) or (C, L) inputs with a (O, C / groups, K)
    weight; ``padding`` may be an int, ``'same'`` or ``'valid'``."""
    from .functional import conv2d

    x, unbatched = _as_3d(input, "conv1d")
    if weight.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional weight for 3-dimensional input "
                           f"{list(input.shape)}, but got weight of size {list(weight.shape)} "
                           "instead")
    pad = padding if isinstance(padding, str) else (0, _single(padding, "padding"))
    out = conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, _single(stride, "stride")), pad,
                 (1, _single(dilation, "dilation")), groups).squeeze(2)
    return named(out.squeeze(0) if unbatched else out, "ConvolutionBackward0")


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Maximum over sliding windows of the last dim (stride defaults to the kernel size)."""
    from .functional import max_pool2d

    x, unbatched = _as_3d(input, "max_pool1d")
    k = _single(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] or stride == () else _single(stride, "stride")
    out = max_pool2d(x.unsqueeze(2), (1, k), (1, s), (0, _single(padding, "padding")),
                     (1, _single(dilation, "dilation")), ceil_mode, return_indices)
    return out.squeeze(2).squeeze(0) if unbatched else out.squeeze(2)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Average over sliding windows of the last dim (stride defaults to the kernel size)."""
    from .functional import avg_pool2d

    x, unbatched = _as_3d(input, "avg_pool1d")
    k = _single(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] or stride == () else _single(stride, "stride")
    out = avg_pool2d(x.unsqueeze(2), (1, k), (1, s), (0, _single(padding, "padding")),
                     ceil_mode, count_include_pad)
    return out.squeeze(2).squeeze(0) if unbatched else out.squeeze(2)
