"""Convolutions: ``conv1d``, ``conv2d``, ``conv3d`` and their transposes.

The 1-D convolutions run the 2-D ones on a height-1 view (an unsqueezed axis), as PyTorch's
``conv1d`` does on the CPU, so they share their gradients (of any order). The 3-D ones are sums
over the kernel's depth of 2-D ones: ``conv3d`` convolves, for each depth offset, the input
slices that offset reaches (gathered into the batch) with that kernel slice;
``conv_transpose3d`` transposes every input slice with every kernel slice and adds each result
at its output depth (a 0/1 placement matrix).

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.conv``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

import numpy as np

from ...autograd.function import named
from ...ops import matmul
from ...ops._autocast import autocast_op
from ...ops._util import Tensor, const
from ...ops.conv import Conv2d, ConvInputGrad
from ...ops.linalg import cpp_name
from ...ops.shape import stack
from ...ops.vision import Pad
from ._util import _as_3d, _as_4d, _pair, _single
from ._window_index import tuple_of

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]


def _check_stride(stride) -> None:
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")


def _check_conv(x: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation,
                groups: int) -> None:
    """PyTorch's argument checks of a convolution, in its order, on the batched input ``x``
    (``padding`` None for a padding string), before any work: Python ints and shapes only."""
    if weight.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if padding is not None and any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    _check_stride(stride)
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if weight.ndim != x.ndim:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-"
                           f"dimensional weight {list(weight.shape)}, but got {x.ndim}-"
                           f"dimensional input of size {list(x.shape)} instead")
    # (no implicit promotion: PyTorch refuses mixed dtypes rather than casting)
    if weight._data.dtype != x._data.dtype:
        raise RuntimeError(f"Input type ({cpp_name(x)}) and weight type ({cpp_name(weight)}) "
                           "should be the same")
    if bias is not None and bias._data.dtype != x._data.dtype:
        raise RuntimeError(f"Input type ({cpp_name(x)}) and bias type ({cpp_name(bias)}) "
                           "should be the same")


def _check_groups(x: Tensor, weight: Tensor, groups: int) -> None:
    """PyTorch's channel checks of a grouped convolution (any number of spatial dims)."""
    out_channels, group_channels = weight.shape[0], weight.shape[1]
    if x.shape[1] != group_channels * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {group_channels * groups} "
                           f"channels, but got {x.shape[1]} channels instead")
    if out_channels % groups:
        raise RuntimeError("out_channels must be divisible by groups")


def _check_kernel_fits(sizes, pads, kernel, dilation) -> None:
    """PyTorch's error for a (dilated) kernel larger than the padded input, naming both."""
    padded = [s + a + b for s, (a, b) in zip(sizes, pads)]
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(p < r for p, r in zip(padded, reach)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, reach))}). Kernel size can't be greater "
                           f"than actual input size")


@autocast_op("conv2d")
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D cross-correlation; ``padding`` may be an int, a pair, ``'same'`` or ``'valid'``."""
    x, unbatched = _as_4d(input, "conv2d")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    groups = int(groups)
    _check_conv(x, weight, bias, stride,
                None if isinstance(padding, str) else _pair(padding, "padding"), dilation, groups)
    o, cg, kh, kw = weight.shape
    _check_groups(x, weight, groups)
    if padding == "valid":
        pads = (0, 0, 0, 0)
    elif padding == "same":
        if stride != (1, 1):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        # PyTorch puts the odd extra pixel of padding on the bottom/right.
        th, tw = dilation[0] * (kh - 1), dilation[1] * (kw - 1)
        pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    elif isinstance(padding, str):
        raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                         f"{{'valid', 'same'}}")
    else:
        ph, pw = _pair(padding, "padding")
        pads = (ph, ph, pw, pw)
    _check_kernel_fits(x.shape[2:], (pads[:2], pads[2:]), (kh, kw), dilation)
    out = Conv2d.apply(x, weight, bias, stride, pads, dilation, int(groups))
    return out.squeeze(0) if unbatched else out


@autocast_op("conv_transpose2d")
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-D transposed convolution ("deconvolution"): the input gradient of ``conv2d``.

    ``weight`` is (C_in, C_out / groups, KH, KW); the output is (N, C_out, H_out, W_out) with
    ``H_out = (H - 1) * stride - 2 * padding + dilation * (KH - 1) + output_padding + 1``.
    """
    x, unbatched = _as_4d(input, "conv_transpose2d")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    _check_stride(stride)
    (ph, pw), (oph, opw) = _pair(padding, "padding"), _pair(output_padding, "output_padding")
    cin, cout_g, kh, kw = weight.shape
    groups = int(groups)
    if x.shape[1] != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {cin} channels, but got {x.shape[1]} "
                           f"channels instead")
    if groups <= 0 or cin % groups:
        raise RuntimeError(f"in_channels ({cin}) must be divisible by groups ({groups})")
    for op_, s_, d_ in ((oph, stride[0], dilation[0]), (opw, stride[1], dilation[1])):
        if not (0 <= op_ < s_ or 0 <= op_ < d_):
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got output_padding: {(oph, opw)}, stride: {stride}, "
                               f"dilation: {dilation}")
    h, w = x.shape[2:]
    out_hw = ((h - 1) * stride[0] - 2 * ph + dilation[0] * (kh - 1) + oph + 1,
              (w - 1) * stride[1] - 2 * pw + dilation[1] * (kw - 1) + opw + 1)
    if min(out_hw) <= 0:
        raise RuntimeError(f"Given input size per channel: ({h} x {w}). Calculated output size "
                           f"per channel: ({out_hw[0]} x {out_hw[1]}). Output size is too small")
    out = ConvInputGrad.apply(x, weight, bias, out_hw, stride, (ph, ph, pw, pw),
                              dilation, groups)
    return out.squeeze(0) if unbatched else out


@autocast_op("conv1d")
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-D cross-correlation over (N, C, L) or (C, L) inputs with a (O, C / groups, K)
    weight; ``padding`` may be an int, ``'same'`` or ``'valid'``."""
    x, unbatched = _as_3d(input, "conv1d")
    pad = padding if isinstance(padding, str) else (0, _single(padding, "padding"))
    _check_conv(x, weight, bias, (_single(stride, "stride"),),
                None if isinstance(padding, str) else pad[1:],
                (_single(dilation, "dilation"),), int(groups))
    if not isinstance(padding, str):  # (PyTorch's message names the 1-D sizes)
        _check_kernel_fits(x.shape[2:], [(pad[1], pad[1])], weight.shape[2:],
                           [_single(dilation, "dilation")])
    out = conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, _single(stride, "stride")), pad,
                 (1, _single(dilation, "dilation")), groups).squeeze(2)
    return named(out.squeeze(0) if unbatched else out, "ConvolutionBackward0")


def _as_5d(input: Tensor, weight: Tensor | None, name: str) -> tuple[Tensor, bool]:
    """(N, C, D, H, W) input; ``weight`` (unless None) must have 5 dims."""
    if input.ndim not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to {name}, but got "
                           f"input of size: {list(input.shape)}")
    if weight is not None and weight.ndim != 5:
        raise RuntimeError(f"Expected 5-dimensional weight for 5-dimensional input "
                           f"{list(input.shape)}, but got weight of size {list(weight.shape)} "
                           "instead")
    return (input.unsqueeze(0), True) if input.ndim == 4 else (input, False)


def _same_pads(kernel, dilation) -> list[tuple[int, int]]:
    """padding='same': the total d * (k - 1) per dim, the odd one on the far side."""
    return [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(kernel, dilation)]


@autocast_op("conv3d")
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """3-D cross-correlation over (N, C, D, H, W) or (C, D, H, W) input with a
    (O, C / groups, KD, KH, KW) weight; ``padding`` may be an int, a triple, ``'same'`` or
    ``'valid'``."""
    x, unbatched = _as_5d(input, None, "conv3d")
    stride, dilation = tuple_of(stride, 3, "stride"), tuple_of(dilation, 3, "dilation")
    groups = int(groups)
    _check_conv(x, weight, bias, stride, None if isinstance(padding, str) else
                tuple_of(padding, 3, "padding"), dilation, groups)
    o, cg, kd, kh, kw = weight.shape
    _check_groups(x, weight, groups)
    if padding == "valid":
        pads = [(0, 0)] * 3
    elif padding == "same":
        if stride != (1, 1, 1):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pads = _same_pads((kd, kh, kw), dilation)
    elif isinstance(padding, str):
        raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                         f"{{'valid', 'same'}}")
    else:
        pads = [(p, p) for p in tuple_of(padding, 3, "padding")]
    _check_kernel_fits(x.shape[2:], pads, (kd, kh, kw), dilation)
    if any(pads[0]):
        x = Pad.apply(x, ((0, 0), (0, 0), pads[0], (0, 0), (0, 0)), 0.0)
    n, c, depth, h, w = x.shape
    od = (depth - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    total = None
    for k in range(kd):
        index = const(x, np.arange(od) * stride[0] + k * dilation[0]).long()
        slices = x.index_select(2, index).permute(0, 2, 1, 3, 4).reshape(n * od, c, h, w)
        part = Conv2d.apply(slices, weight[:, :, k], None, stride[1:], (*pads[1], *pads[2]),
                            dilation[1:], groups)
        total = part if total is None else total + part
    out = total.reshape(n, od, o, *total.shape[2:]).permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1, 1)
    named(out, "ConvolutionBackward0")
    return out.squeeze(0) if unbatched else out


def _check_output_padding(output_padding, stride, dilation) -> None:
    if all(0 <= op < s or 0 <= op < d for op, s, d in zip(output_padding, stride, dilation)):
        return
    if len(stride) == 3:
        names = ("depth", "height", "width")
        parts = [f"{what}_{n}: {v}" for what, vals in (("output_padding", output_padding),
                                                       ("stride", stride),
                                                       ("dilation", dilation))
                 for n, v in zip(names, vals)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, "
                           "but got " + " ".join(parts))
    raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                       f"output_padding: {output_padding}, stride: {stride}, dilation: "
                       f"{dilation}")


@autocast_op("conv_transpose1d")
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-D transposed convolution over (N, C_in, L) or (C_in, L) input with a
    (C_in, C_out / groups, K) weight: the 2-D one on a height-1 view."""
    x, unbatched = _as_3d(input, "conv_transpose1d")
    if weight.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional weight for 3-dimensional input "
                           f"{list(input.shape)}, but got weight of size {list(weight.shape)} "
                           "instead")
    s, d = _single(stride, "stride"), _single(dilation, "dilation")
    p, op = _single(padding, "padding"), _single(output_padding, "output_padding")
    _check_stride((s,))
    _check_output_padding((op,), (s,), (d,))
    out = conv_transpose2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, s), (0, p), (0, op),
                           groups, (1, d)).squeeze(2)
    return named(out.squeeze(0) if unbatched else out, "ConvolutionBackward0")


@autocast_op("conv_transpose3d")
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-D transposed convolution over (N, C_in, D, H, W) or unbatched input with a
    (C_in, C_out / groups, KD, KH, KW) weight; output sizes as PyTorch's
    ``(D - 1) * stride - 2 * padding + dilation * (KD - 1) + output_padding + 1``."""
    x, unbatched = _as_5d(input, weight, "conv_transpose3d")
    stride, dilation = tuple_of(stride, 3, "stride"), tuple_of(dilation, 3, "dilation")
    pad, out_pad = tuple_of(padding, 3, "padding"), tuple_of(output_padding, 3, "output_padding")
    _check_stride(stride)
    _check_output_padding(out_pad, stride, dilation)
    cin, cout_g, kd, kh, kw = weight.shape
    groups = int(groups)
    if x.shape[1] != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {cin} channels, but got {x.shape[1]} "
                           f"channels instead")
    if groups <= 0 or cin % groups:
        raise RuntimeError(f"in_channels ({cin}) must be divisible by groups ({groups})")
    n, _, depth, h, w = x.shape
    sizes = [(s - 1) * st - 2 * p + d * (k - 1) + op + 1 for s, st, p, d, k, op in
             zip((depth, h, w), stride, pad, dilation, (kd, kh, kw), out_pad)]
    if min(sizes) <= 0:
        raise RuntimeError(f"Given input size per channel: ({depth} x {h} x {w}). Calculated "
                           f"output size per channel: ({' x '.join(map(str, sizes))}). Output "
                           "size is too small")
    slices = x.permute(0, 2, 1, 3, 4).reshape(n * depth, cin, h, w)
    parts = [ConvInputGrad.apply(slices, weight[:, :, k], None, tuple(sizes[1:]), stride[1:],
                                 (pad[1], pad[1], pad[2], pad[2]), dilation[1:], groups)
             for k in range(kd)]
    cout = cout_g * groups
    stacked = stack(parts).reshape(kd, n, depth, -1).permute(1, 0, 2, 3).reshape(
        n, kd * depth, -1)
    # place[t, k * D + d] = 1 where input depth d through kernel depth k lands at output t
    place = np.zeros((sizes[0], kd * depth))
    for k in range(kd):
        t = np.arange(depth) * stride[0] + k * dilation[0] - pad[0]
        ok = (t >= 0) & (t < sizes[0])
        place[t[ok], k * depth + np.arange(depth)[ok]] = 1.0
    out = matmul(const(x, place), stacked).reshape(n, sizes[0], cout, *sizes[1:])
    out = out.permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, cout, 1, 1, 1)
    named(out, "ConvolutionBackward0")
    return out.squeeze(0) if unbatched else out
