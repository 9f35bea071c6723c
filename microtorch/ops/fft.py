"""Graph nodes of the discrete Fourier transforms, as PyTorch's three primitives.

Every ``torch.fft`` function is a composition of three nodes (``microtorch.fft`` builds them):

- ``FftC2C``: complex to complex, forward or inverse, over any dims;
- ``FftR2C``: real to complex (forward), one-sided over the last dim or full;
- ``FftC2R``: one-sided complex to real (inverse) of a given last-dim length.

``norm`` is PyTorch's normalization *mode* (``NONE``, ``BY_ROOT_N``, ``BY_N``: scale the
result by 1, 1/sqrt(n), 1/n), which the public functions derive from their ``norm`` string and
direction. The backward passes are PyTorch's (``derivatives.yaml``): a C2C's gradient is the
C2C of the other direction with the same mode; an R2C's pads a one-sided gradient with zeros
to the full spectrum, inverts and keeps the real part; a C2R's is the R2C of the gradient,
with the bins that stand for two (their mirror images were dropped) doubled. Each is made of
the nodes themselves, so gradients of any order flow.

The arrays go through ``xp.fft`` (NumPy's pocketfft, CuPy's cuFFT), in single precision for
float32/complex64 (NumPy >= 2 and CuPy keep it; older NumPy is cast back).
"""

from __future__ import annotations

from .. import _dtype
from ..autograd.function import Function
from ._util import Tensor, xp_of

__all__ = ["FftC2C", "FftR2C", "FftC2R", "NONE", "BY_ROOT_N", "BY_N"]

NONE, BY_ROOT_N, BY_N = 0, 1, 2  # PyTorch's fft_norm_mode
# NumPy's norm names per mode: for a forward transform ("backward" scales the inverse only),
# and for an inverse one.
_FORWARD_NAMES = {NONE: "backward", BY_ROOT_N: "ortho", BY_N: "forward"}
_INVERSE_NAMES = {NONE: "forward", BY_ROOT_N: "ortho", BY_N: "backward"}


def _complex_of(np_dtype):
    """The complex dtype of a float32/float64 (or complex) array dtype."""
    return (_dtype.complex64 if np_dtype.itemsize == 4 or np_dtype == _dtype.complex64.np
            else _dtype.complex128).np


def _real_of(np_dtype):
    return _dtype.float32.np if np_dtype == _dtype.complex64.np else _dtype.float64.np


class FftC2C(Function):
    """``_fft_c2c(x, dims, norm, forward)``: the complex DFT over ``dims``."""

    torch_name = "FftC2CBackward0"

    @staticmethod
    def forward(ctx, x, dims, norm, forward):
        ctx.args = dims, norm, forward
        arr = x._data
        fft = xp_of(arr).fft
        if forward:
            out = fft.fftn(arr, axes=dims, norm=_FORWARD_NAMES[norm])
        else:
            out = fft.ifftn(arr, axes=dims, norm=_INVERSE_NAMES[norm])
        return out.astype(arr.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        dims, norm, forward = ctx.args
        return FftC2C.apply(grad, dims, norm, not forward), None, None, None


class FftR2C(Function):
    """``_fft_r2c(x, dims, norm, onesided)``: the forward DFT of a real tensor, one-sided
    over the last of ``dims`` (``onesided``) or full."""

    torch_name = "FftR2CBackward0"

    @staticmethod
    def forward(ctx, x, dims, norm, onesided):
        arr = x._data
        ctx.args = dims, norm, onesided, arr.shape[dims[-1]]
        fft = xp_of(arr).fft
        if onesided:
            out = fft.rfftn(arr, axes=dims, norm=_FORWARD_NAMES[norm])
        else:
            out = fft.fftn(arr, axes=dims, norm=_FORWARD_NAMES[norm])
        return out.astype(_complex_of(arr.dtype), copy=False)

    @staticmethod
    def backward(ctx, grad):
        dims, norm, onesided, last_size = ctx.args
        if onesided and grad.shape[dims[-1]] < last_size:  # the dropped half: zero gradient
            from .vision import Pad

            pads = [(0, 0)] * grad.ndim
            pads[dims[-1]] = (0, last_size - grad.shape[dims[-1]])
            grad = Pad.apply(grad, tuple(pads), 0.0)
        return FftC2C.apply(grad, dims, norm, False).real, None, None, None


class FftC2R(Function):
    """``_fft_c2r(x, dims, norm, last_dim_size)``: the inverse DFT of a one-sided spectrum
    (Hermitian over the last of ``dims``) to a real tensor with ``last_dim_size`` points
    there."""

    torch_name = "FftC2RBackward0"

    @staticmethod
    def forward(ctx, x, dims, norm, last_dim_size):
        ctx.args = dims, norm
        arr = x._data
        sizes = [arr.shape[d] for d in dims[:-1]] + [last_dim_size]
        out = xp_of(arr).fft.irfftn(arr, s=sizes, axes=dims, norm=_INVERSE_NAMES[norm])
        return out.astype(_real_of(arr.dtype), copy=False)

    @staticmethod
    def backward(ctx, grad):
        dims, norm = ctx.args
        g = FftR2C.apply(grad, dims, norm, True)
        # Bins 1 .. n - (n//2 + 1) of the one-sided input each stand for a mirrored pair.
        double = grad.shape[dims[-1]] - g.shape[dims[-1]]
        if double > 0:
            scale = [1.0] * g.shape[dims[-1]]
            scale[1:1 + double] = [2.0] * double
            shape = [1] * g.ndim
            shape[dims[-1]] = len(scale)
            g = g * Tensor._make(xp_of(g._data).asarray(scale, dtype=_real_of(g._data.dtype))
                                 .reshape(shape))
        return g, None, None, None
