"""Vision: ``pad`` (constant and index padding modes), ``interpolate`` / ``upsample``,
``pixel_shuffle`` / ``pixel_unshuffle``, ``channel_shuffle``, ``affine_grid`` and
``grid_sample``.

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.vision``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from ...autograd.function import named
from ...ops import vision as V
from ...ops._autocast import autocast_op
from ...ops._util import Tensor, scalar_name
from ...ops.grid_sampler import grid_sampler
from ...ops.resample_aa import UpsampleAA
from ...ops.resample_exact import Interpolate, UpsampleNearest
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "affine_grid", "grid_sample"]


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
        ) -> Tensor:
    """Pad with a constant, or by 'reflect', 'replicate' or 'circular'; ``pad`` lists
    (left, right) of the last dim, then the one before..."""
    if mode in ("reflect", "replicate", "circular"):
        # PyTorch's op names: reflection/replication padding is on CPU autocast's float32 list
        kind = {"reflect": "reflection", "replicate": "replication"}.get(mode, mode)
        return autocast_op(f"{kind}_pad{len(pad) // 2}d")(pad_index)(input, pad, mode)
    if mode != "constant":
        raise NotImplementedError(f"pad mode {mode!r} is not supported (only 'constant', "
                                  f"'reflect', 'replicate' and 'circular')")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length must be divisible by 2 and at most twice the number "
                           "of dimensions of the input")
    pairs = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        pairs[input.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    if any(lo < 0 or hi < 0 for lo, hi in pairs):  # negative padding crops that side first
        crop = []
        for (lo, hi), n in zip(pairs, input.shape):
            if n + lo + hi < 0:
                raise RuntimeError("narrow(): length must be non-negative.")  # (PyTorch's)
            crop.append(slice(max(-lo, 0), n - max(-hi, 0)))
        input = input[tuple(crop)]
        pairs = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    return V.Pad.apply(input, tuple(pairs), 0.0 if value is None else value)


# -- interpolation -------------------------------------------------------------------------------
_MODES = "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact"
# the kernel PyTorch names when it refuses an integer dtype in a mode
_INTEGER_KERNELS = {"nearest": "compute_indices_weights_nearest",
                    "nearest-exact": "compute_indices_weights_nearest",
                    "linear": "compute_indices_weights_linear",
                    "trilinear": "compute_indices_weights_linear",
                    "bilinear": "upsample_bilinear2d_channels_last",
                    "bicubic": "compute_indices_weights_cubic", "area": "adaptive_avg_pool{}d"}


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
    'linear' (3-D), 'bilinear' / 'bicubic' (4-D), 'trilinear' (5-D) (``align_corners`` False
    or True) or 'area' (3-D, 4-D),
    with PyTorch's source-index rules (the given ``scale_factor`` is used for the mapping
    unless ``recompute_scale_factor``); ``antialias`` for 'bilinear' / 'bicubic' on 4-D input
    (float32, float64, uint8)."""
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
        if mode not in ("bilinear", "bicubic", "lanczos") or input.ndim != 4:
            raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                             "modes and requires a 4-D tensor as input")
        return _antialiased(input, out_size, align_corners, scales, mode)
    if scales is None:
        scales = [None] * dim
    if input._data.dtype.kind in "biu" and dim in (1, 2, 3):
        # PyTorch's CPU kernels take uint8 in the nearest modes and (fixed-point) in bilinear
        # and bicubic, no other integer dtype in any mode
        if input._data.dtype == np.uint8 and (mode, dim) in (("bilinear", 2), ("bicubic", 2)):
            return Tensor._make(V.uint8_resample(input._data, out_size, align_corners, scales,
                                                 mode == "bicubic"))
        if input._data.dtype != np.uint8 or mode not in ("nearest", "nearest-exact"):
            raise NotImplementedError(f'"{_INTEGER_KERNELS.get(mode, mode).format(dim)}" not '
                                      f"implemented for '{scalar_name(input)}'")
    if mode in ("nearest", "nearest-exact") and dim in (1, 2, 3):
        # (PyTorch's forward indices by its kernel; its gradient sums in PyTorch's order)
        out = UpsampleNearest.apply(input, tuple(out_size), tuple(scales),
                                    mode == "nearest-exact")
        exact = "Exact" if mode == "nearest-exact" else ""
        return named(out, f"UpsampleNearest{exact}{dim}DBackward0")
    if mode == "area" and dim in (1, 2, 3):
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dim - 1]
        return pool(input, out_size)
    if (mode, dim) in (("linear", 1), ("bilinear", 2), ("trilinear", 3), ("bicubic", 2)):
        # PyTorch's CPU kernels replayed, their summation order and fused steps included
        out = Interpolate.apply(input, mode, tuple(out_size), align_corners, tuple(scales))
        return named(out, f"Upsample{mode.capitalize()}{dim}DBackward0")
    for name, need in (("linear", 1), ("bilinear", 2), ("bicubic", 2), ("trilinear", 3)):
        if mode == name and dim != need:
            raise NotImplementedError(f"Got {input.ndim}D input, but {name} mode needs "
                                      f"{need + 2}D input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{input.ndim}D) for the modes: {_MODES} (got {mode})")


def _antialiased(input: Tensor, out_size: list, align_corners: bool, scales: list | None,
                 mode: str) -> Tensor:
    """``interpolate(antialias=True)`` of a 4-D input: PyTorch's ``_upsample_bilinear2d_aa`` /
    ``_upsample_bicubic2d_aa``, with their checks in PyTorch's order."""
    if mode == "lanczos":
        raise NotImplementedError("interpolate(mode='lanczos') is not supported")
    (h, w), (oh, ow) = input.shape[2:], out_size
    if min(h, w, oh, ow) <= 0:
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"(H: {h}, W: {w}) output (H: {oh}, W: {ow})")
    if input.shape[1] == 0:
        raise RuntimeError(f"Non-empty 4D data tensor expected but got a tensor with sizes "
                           f"{list(input.shape)}")
    # (PyTorch's CPU kernels: float32, float64 and uint8; a resize to the same size copies
    # before the dtype is looked at)
    if input._data.dtype not in (np.float32, np.float64, np.uint8) and [h, w] != out_size:
        raise NotImplementedError(f'"compute_index_ranges_weights" not implemented for '
                                  f"'{scalar_name(input)}'")
    out = UpsampleAA.apply(input, tuple(out_size), align_corners,
                           tuple(scales or (None, None)), mode == "bicubic")
    return named(out, f"Upsample{mode.capitalize()}2DAaBackward0")


def _deprecated(name: str) -> None:
    # (a UserWarning, as PyTorch's: a DeprecationWarning is hidden by default)
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  f"instead.", stacklevel=3)


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`interpolate`."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: :func:`interpolate` with ``mode="nearest"``."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: :func:`interpolate` with ``mode="bilinear", align_corners=True``."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


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
        size = n + left + right  # (negative padding crops: PyTorch's errors below 0)
        if mode != "circular" and (size < 0 or (size == 0 and npad == 1)):
            if npad == 1:
                raise RuntimeError(f"input (W: {n}) is too small. Calculated output W: {size}")
            raise RuntimeError(f"Trying to create tensor with negative dimension {size}: "
                               f"{list(input.shape[:d]) + [size] + list(input.shape[d + 1:])}")
        if mode == "circular" and size < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({left}, "
                               f"{right}) at dimension {d} of input {list(input.shape)}")
        kept = n - max(-left, 0) - max(-right, 0)  # (what cropping leaves to wrap around)
        if mode == "circular" and (left > kept or right > kept):
            if kept == n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            # PyTorch copies the padding out of its own result: overlapping copies, refused
            # (or, when its check misses them, values that depend on the copy order)
            raise RuntimeError("unsupported operation: some elements of the input tensor and "
                               "the written-to tensor refer to a single memory location. Please "
                               "clone() the tensor before performing the operation.")
        if mode == "replicate" and n == 0 and (left or right):
            raise RuntimeError(f"Expected input's non-batch dimensions to have positive "
                               f"length, but input has a shape of {list(input.shape)}")
        j = np.arange(-left, n + right)
        if mode == "reflect":
            j = np.abs(j)
            j = np.where(j > n - 1, 2 * (n - 1) - j, j)
        elif mode == "replicate":
            j = np.clip(j, 0, n - 1)
        else:  # circular: crop first, then wrap around what is left (PyTorch's order)
            lo = max(-left, 0)
            j = lo + (np.arange(size) - max(left, 0)) % max(n - lo - max(-right, 0), 1)
        out = out.index_select(d, Tensor._make(input._backend.asarray(j), False, None))
    if out is input:
        return out
    if mode == "circular":  # (PyTorch copies the input and its wrapped edges into slices)
        return named(out, "torch::autograd::CopySlices")
    return named(out, f"{'Reflection' if mode == 'reflect' else 'Replication'}Pad{npad}"
                      f"DBackward0")


# -- channel shuffle -----------------------------------------------------------------------------
def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` groups: (N, g * k, *) -> channel order
    0, k, 2k, ..., 1, k + 1, ... (ShuffleNet)."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = input.shape[2:]
    out = input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)
    return named(out, "ViewBackward0")


# -- sampling grids ------------------------------------------------------------------------------
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta``
    (N, 2, 3) (or (N, 3, 4)) over normalized [-1, 1] output coordinates, for ``grid_sample``."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    rows = {4: (2, 3), 5: (3, 4)}.get(len(size))
    if rows is None:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if theta.ndim != 3 or tuple(theta.shape[-2:]) != rows:
        kind = "2D" if len(size) == 4 else "3D"
        raise ValueError(f"Expected a batch of {kind} affine matrices of shape "
                         f"Nx{rows[0]}x{rows[1]} for size {size}. Got {theta.shape}.")
    spatial = list(size[2:])
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return V.AffineGridGenerator.apply(theta, tuple(int(v) for v in size), bool(align_corners))


@autocast_op("grid_sampler")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (N, C, H, W) at the normalized (x, y) locations of ``grid``
    (N, H_out, W_out, 2), or (N, C, D, H, W) input at (x, y, z) of an (N, D_out, H_out, W_out,
    3) grid: 'bilinear' (trilinear for 5-D), 'nearest' or 'bicubic' (4-D), with 'zeros',
    'border' or 'reflection' padding: PyTorch's CPU kernels, bit for bit in float32 and
    float64 (``ops.grid_sampler``); differentiable in input and grid to any order."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return grid_sampler(input, grid, mode, padding_mode, bool(align_corners))
