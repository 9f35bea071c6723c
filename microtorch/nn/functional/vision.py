"""Vision: ``pad`` (constant and index padding modes), ``interpolate`` / ``upsample`` and
``pixel_shuffle`` / ``pixel_unshuffle``.

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.vision``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...autograd.function import named
from ...ops import matmul
from ...ops import vision as V
from ...ops._util import Tensor, const
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

__all__ = ["pad", "interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle"]


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
        ) -> Tensor:
    """Pad with a constant, or by 'reflect', 'replicate' or 'circular'; ``pad`` lists
    (left, right) of the last dim, then the one before..."""
    if mode in ("reflect", "replicate", "circular"):
        return pad_index(input, pad, mode)
    if mode != "constant":
        raise NotImplementedError(f"pad mode {mode!r} is not supported (only 'constant', "
                                  f"'reflect', 'replicate' and 'circular')")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length must be divisible by 2 and at most twice the number "
                           "of dimensions of the input")
    if any(int(p) < 0 for p in pad):
        raise NotImplementedError("negative padding (cropping) is not supported")
    pairs = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        pairs[input.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    return V.Pad.apply(input, tuple(pairs), 0.0 if value is None else value)


# -- interpolation -------------------------------------------------------------------------------
_MODES = "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact"


def _nearest_index(size: int, out: int, scale: float | None, exact: bool) -> np.ndarray:
    if exact:
        s = V.source_scale(size, out, scale)
        src = np.floor(((np.arange(out) + 0.5) * np.float64(s)).astype(np.float32))
        return np.minimum(src.astype(np.int64), size - 1)
    if out == size:
        return np.arange(out)
    if out == 2 * size:
        return np.arange(out) >> 1
    return V.nearest_indices(size, out, scale)


def _per_dim(v, input: Tensor, cast, what: str, given: str, form: str) -> list:
    """``size`` / ``scale_factor`` (a number, or one per spatial dim) as one value per spatial
    dim of ``input``; the ValueError reads as PyTorch's (``what``, ``given`` and ``form`` name
    the argument)."""
    dim = input.ndim - 2
    if not isinstance(v, (list, tuple)):
        return [cast(v)] * dim
    if len(v) != dim:
        raise ValueError(f"Input and {what} must have the same number of spatial dimensions, but "
                         f"got input with spatial dimensions of {list(input.shape[2:])} and "
                         f"{given} {v}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                         f"format and {form} format.")
    return [cast(s) for s in v]


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims: ``mode`` 'nearest' / 'nearest-exact' (3-D, 4-D, 5-D input),
    'linear' (3-D), 'bilinear' (4-D, ``align_corners`` False or True) or 'area' (3-D, 4-D),
    with PyTorch's source-index rules (the given ``scale_factor`` is used for the mapping
    unless ``recompute_scale_factor``)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    scales: list | None = None
    if size is not None:
        out_size = _per_dim(size, input, int, "output", "output size of",
                            "output size in (o1, o2, ...,oK)")
    elif scale_factor is not None:
        scales = _per_dim(scale_factor, input, float, "scale_factor", "scale_factor of shape",
                          "scale_factor in (s1, s2, ...,sK)")
        out_size = [int(math.floor(input.shape[i + 2] * scales[i])) for i in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        scales = None
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not supported")
    if scales is None:
        scales = [None] * dim
    if mode in ("nearest", "nearest-exact") and dim in (1, 2, 3):
        out = input
        for i in range(dim):
            idx = _nearest_index(input.shape[i + 2], out_size[i], scales[i],
                                 mode == "nearest-exact")
            out = out.index_select(i + 2, Tensor._make(input._backend.asarray(idx), False,
                                                       None))
        exact = "Exact" if mode == "nearest-exact" else ""
        return named(out, f"UpsampleNearest{exact}{dim}DBackward0")
    if mode == "area" and dim in (1, 2):
        return (adaptive_avg_pool1d if dim == 1 else adaptive_avg_pool2d)(input, out_size)
    if (mode, dim) in (("linear", 1), ("bilinear", 2)):
        out = input
        for i in range(dim):
            m = V.linear_matrix(input.shape[i + 2], out_size[i], align_corners, scales[i],
                                input._data.dtype)
            if i == dim - 1:
                out = matmul(out, const(input, m.T))
            else:  # along H: (OH, H) @ (..., H, W)
                out = matmul(const(input, m), out)
        return named(out, "UpsampleLinear1DBackward0" if dim == 1 else
                     "UpsampleBilinear2DBackward0")
    if mode == "bilinear" and dim != 2:
        raise NotImplementedError(f"Got {input.ndim}D input, but bilinear mode needs 4D input")
    if mode == "linear" and dim != 1:
        raise NotImplementedError(f"Got {input.ndim}D input, but linear mode needs 3D input")
    if mode in ("bicubic", "trilinear"):
        raise NotImplementedError(f"interpolate mode {mode!r} is not supported")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{input.ndim}D) for the modes: {_MODES} (got {mode})")


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)


# -- pixel shuffle -------------------------------------------------------------------------------
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return named(x.reshape(*lead, c // (r * r), h * r, w * r), "PixelShuffleBackward0", input)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W), the inverse of :func:`pixel_shuffle`."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by "
                           f"downscale_factor, but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return named(x.reshape(*lead, c * r * r, h // r, w // r), "PixelUnshuffleBackward0",
                 input)


# -- padding modes (used by ``functional.pad``) --------------------------------------------------
def pad_index(input: Tensor, pad: Sequence[int], mode: str) -> Tensor:
    """'reflect', 'replicate' or 'circular' padding as index_selects along the padded dims."""
    npad = len(pad) // 2
    if len(pad) % 2 or not npad + 1 <= input.ndim <= npad + 2 or npad > 3:
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            f"Supported combinations for non-constant padding:\n"
            f"  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            f"  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            f"  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    out = input
    for i in range(npad):
        d = input.ndim - 1 - i
        left, right = int(pad[2 * i]), int(pad[2 * i + 1])
        n = input.shape[d]
        if left < 0 or right < 0:
            raise NotImplementedError("negative padding (cropping) is not supported")
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({left}, "
                               f"{right}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (left > n or right > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and n == 0 and (left or right):
            raise RuntimeError(f"Expected input's non-batch dimensions to have positive "
                               f"length, but input has a shape of {list(input.shape)}")
        j = np.arange(-left, n + right)
        if mode == "reflect":
            j = np.abs(j)
            j = np.where(j > n - 1, 2 * (n - 1) - j, j)
        elif mode == "replicate":
            j = np.clip(j, 0, n - 1)
        else:
            j = j % n
        out = out.index_select(d, Tensor._make(input._backend.asarray(j), False, None))
    if out is input:
        return out
    if mode == "circular":  # (PyTorch copies the input and its wrapped edges into slices)
        return named(out, "torch::autograd::CopySlices")
    return named(out, f"{'Reflection' if mode == 'reflect' else 'Replication'}Pad{npad}"
                      f"DBackward0")
