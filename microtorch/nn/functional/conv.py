"""Convolutions: ``conv1d``, ``conv2d``, ``conv_transpose2d``.

The 1-D convolution runs the 2-D one on a height-1 view (an unsqueezed axis), as PyTorch's
``conv1d`` does on the CPU, so they share their gradients (of any order).

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.conv``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

from ...autograd.function import named
from ...ops._autocast import autocast_op
from ...ops._util import Tensor
from ...ops.conv import Conv2d, ConvInputGrad
from ._util import _as_3d, _as_4d, _pair, _single

__all__ = ["conv2d", "conv_transpose2d", "conv1d"]


@autocast_op("conv2d")
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D cross-correlation; ``padding`` may be an int, a pair, ``'same'`` or ``'valid'``."""
    x, unbatched = _as_4d(input, "conv2d")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    o, cg, kh, kw = weight.shape
    if x.shape[1] != cg * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {cg * groups} channels, but "
                           f"got {x.shape[1]} channels instead")
    if o % groups:
        raise RuntimeError("out_channels must be divisible by groups")
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
    if weight.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional weight for 3-dimensional input "
                           f"{list(input.shape)}, but got weight of size {list(weight.shape)} "
                           "instead")
    pad = padding if isinstance(padding, str) else (0, _single(padding, "padding"))
    out = conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, _single(stride, "stride")), pad,
                 (1, _single(dilation, "dilation")), groups).squeeze(2)
    return named(out.squeeze(0) if unbatched else out, "ConvolutionBackward0")
