"""Fractional max pooling (Graham, 2014): max pooling over windows of a fixed size whose
starts step by a random, non-integer stride.

PyTorch draws one sample in [0, 1) per image, channel and pooled dim (``torch.rand(N, C,
dims)`` in the input's dtype, unless ``_random_samples`` is given) and turns each into the
windows' starts (``ops.pooling.fractional_starts``). The pooled values are a ``gather`` of the
input at each window's maximum (``ops.pooling.fractional_max_indices``), so the gradient goes
to that element, summed where windows overlap, to any order.
"""

from __future__ import annotations

import math

import numpy as np

from ... import _dtype
from ...autograd.function import named
from ...ops import creation
from ...ops import pooling as P
from ...ops._util import Tensor

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]

_AXES = {2: "HW", 3: "THW"}
_AXIS_NAMES = {"T": "time", "H": "height", "W": "width"}


def _ints(value, dims: int, name: str, position: int, op: str) -> tuple[int, ...]:
    """PyTorch's ``int[dims]`` argument: an int repeated, or a sequence of ints kept as it is
    (its length is checked by the kernel)."""
    if isinstance(value, (bool, float)) or value is None:
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be tuple of "
                        f"ints, not {type(value).__name__}")
    if isinstance(value, (int, np.integer)):
        return (int(value),) * dims
    items = tuple(value)
    for pos, v in enumerate(items, 1):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"{op}(): argument '{name}' failed to unpack the object at pos "
                            f"{pos} with error \"type must be tuple of ints,but got "
                            f"{type(v).__name__}\"")
    return tuple(int(v) for v in items)


def _output_size(input: Tensor, dims: int, output_size, output_ratio) -> object:
    """``output_size``, or the input's pooled sizes times ``output_ratio`` (truncated), as
    PyTorch's Python wrapper computes them."""
    op = f"fractional_max_pool{dims}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is not None:
        return output_size
    if dims == 2 and len(output_ratio) > 2:  # (only the 2-D wrapper checks; a number has no len)
        raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of "
                         "Ints.")
    ratio = tuple(output_ratio) if hasattr(output_ratio, "__iter__") else (output_ratio,) * dims
    return [int(input.size(d - dims) * ratio[d]) for d in range(dims)]


def _samples(input: Tensor, dims: int) -> Tensor:
    """PyTorch's draw: ``rand(N, C, dims)`` in the input's dtype on its device (N is 1 for an
    unbatched input)."""
    batch = 1 if input.dim() == dims + 1 else input.size(0)
    channels = input.size(-dims - 1)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):  # (torch.rand's refusal)
        raise NotImplementedError(f'"check_uniform_bounds" not implemented for '
                                  f"'{_dtype.title(input.dtype)}'")
    if input.dtype.is_complex:  # (the kernel refuses it below; nothing to draw)
        return creation.zeros(batch, channels, dims, dtype=input.dtype, device=input.device)
    return creation.rand(batch, channels, dims, dtype=input.dtype, device=input.device)


def _check(input: Tensor, dims: int, kernel: tuple, out: tuple, samples: Tensor) -> None:
    """The kernel's checks, in its order and words."""
    op = f"fractional_max_pool{dims}d"
    where = op if dims == 2 else f"{op}_out"
    three = "" if dims == 2 else " three"
    if len(kernel) != dims:
        raise RuntimeError(f"{op}: kernel_size must either be a single Int or tuple of{three} "
                           "Ints")
    if len(out) != dims:
        raise RuntimeError(f"{op}: output_size must either be a single Int or tuple of{three} "
                           "Ints")
    shape = list(input.shape)
    if input.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(f"{where}(): Expected {dims + 1}D or {dims + 2}D tensor, but got: "
                           f"{shape}")
    for i in range(1, input.dim()):
        if shape[i] == 0:
            raise RuntimeError(f"{where}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{shape} with dimension {i} being empty.")
    spatial = shape[-dims:]
    # The 2-D kernel checks height then width and lets a window reach the last element; the
    # 3-D one checks time, width, height and keeps one element spare.
    order = (0, 1) if dims == 2 else (0, 2, 1)
    for d in order:
        fits = out[d] + kernel[d] - 1 <= spatial[d] - (dims == 3)
        if not fits:
            name = _AXIS_NAMES[_AXES[dims][d]]
            raise RuntimeError(f"{where}(): pool {name} {kernel[d]} too large relative to "
                               f"input {name} {spatial[d]}")
    if min(out) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: "
                           f"{shape[:-dims] + list(out)}")
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    batch = 1 if input.dim() == dims + 1 else shape[0]
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != shape[-dims - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != dims:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {dims}; got "
                           f"{samples.shape[2]}.")


def _fractional_max_pool(input: Tensor, dims: int, kernel_size, output_size, output_ratio,
                         _random_samples) -> tuple[Tensor, Tensor]:
    op = f"fractional_max_pool{dims}d"
    out = _output_size(input, dims, output_size, output_ratio)
    samples = _random_samples if _random_samples is not None else _samples(input, dims)
    kernel = _ints(kernel_size, dims, "kernel_size", 2, op)
    out = _ints(out, dims, "output_size", 3, op)
    _check(input, dims, kernel, out, samples)
    unbatched = input.dim() == dims + 1
    x = input.unsqueeze(0) if unbatched else input
    n, c = x.shape[:2]
    count = math.prod(out)
    if count and n * c and not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{op}_out_frame" not implemented for '
                                  f"'{_dtype.title(input.dtype)}'")
    if min(kernel) <= 0:  # empty windows: PyTorch's -inf at each window's start
        idx = _empty_window_indices(x, samples, out, kernel)
        values = x.new_full((n, c, *out), -math.inf)
    else:
        idx = P.fractional_max_indices(x._data, samples._data, out, kernel)
        index = Tensor._make(idx.reshape(n, c, count), False, None)
        values = x.reshape(n, c, math.prod(x.shape[2:])).gather(2, index).reshape(n, c, *out)
    indices = Tensor._make(idx.reshape(n, c, *out), False, None)
    if unbatched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    named(values, f"FractionalMaxPool{dims}DBackward0", input)
    return values, indices


def _empty_window_indices(x: Tensor, samples: Tensor, out: tuple, kernel: tuple):
    """Each window's first position, what PyTorch's loop leaves as the index of a window of
    no elements (a kernel size of 0 or less, which it does not refuse)."""
    n, c, *spatial = x.shape
    dims = len(spatial)
    order = (1, 0) if dims == 2 else (0, 1, 2)
    flat, stride = 0, 1
    for d in range(dims - 1, -1, -1):
        starts = P.fractional_starts(samples._data[:n, :, order[d]], spatial[d], out[d],
                                     kernel[d])
        shape = [n, c] + [1] * dims
        shape[2 + d] = out[d]
        flat = flat + starts.reshape(shape) * stride
        stride *= spatial[d]
    return flat + x._backend.xp.zeros((n, c, *out), dtype=np.int64)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """2-D fractional max pooling of (N, C, H, W) or (C, H, W) input: ``(values, indices)``,
    the indices flat (h * W + w) in each input plane. ``output_size`` (an int or a pair), or
    ``output_ratio`` of the input's size; ``_random_samples`` (N, C, 2) fixes the windows
    (else drawn as PyTorch does)."""
    return _fractional_max_pool(input, 2, kernel_size, output_size, output_ratio,
                                _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """3-D fractional max pooling of (N, C, T, H, W) or (C, T, H, W) input: ``(values,
    indices)``, the indices flat (t * H * W + h * W + w); see
    ``fractional_max_pool2d_with_indices``."""
    return _fractional_max_pool(input, 3, kernel_size, output_size, output_ratio,
                                _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """2-D fractional max pooling (see ``fractional_max_pool2d_with_indices``); the values,
    or ``(values, indices)`` with ``return_indices``."""
    values, indices = fractional_max_pool2d_with_indices(input, kernel_size, output_size,
                                                         output_ratio, False, _random_samples)
    return (values, indices) if return_indices else values


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """3-D fractional max pooling (see ``fractional_max_pool3d_with_indices``); the values,
    or ``(values, indices)`` with ``return_indices``."""
    values, indices = fractional_max_pool3d_with_indices(input, kernel_size, output_size,
                                                         output_ratio, False, _random_samples)
    return (values, indices) if return_indices else values
