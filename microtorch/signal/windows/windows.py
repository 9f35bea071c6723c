"""The window functions of ``torch.signal.windows``, computed as PyTorch computes them.

Each window is PyTorch's composition of ops, in its order and in the window's dtype: the
sample positions come from one ``linspace`` between endpoints worked out in Python floats
(Kaiser's in the window's dtype; microtorch's ``linspace`` rounds as PyTorch's CPU kernel
does), then the waveform's
elementwise ops. So the positions agree with PyTorch's bit for bit, and the window agrees to
the last-bit rounding of the transcendental function it ends with (``cos``, ``sin``, ``exp``,
``i0``). Everything runs through microtorch's ops, on NumPy or CuPy alike.

Unlike the legacy ``torch.hann_window`` family (``periodic=True`` by default), these follow
SciPy: ``sym=True`` (a symmetric window for filter design) is the default and ``sym=False``
gives the periodic window for spectral analysis.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable

from ... import _dtype
from ..._layout import layout as _layout_type
from ..._layout import strided
from ..._tensor import Tensor
from ...ops import (
    abs,
    arange,
    cos,
    empty,
    exp,
    i0,
    linspace,
    minimum,
    ones,
    pow,
    sin,
    sqrt,
    tensor,
)

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]

_FLOATS = (_dtype.float32, _dtype.float64)


def _checks(function_name: str, M: int, dtype: _dtype.dtype | None,
            layout: _layout_type | None) -> _dtype.dtype:
    """PyTorch's ``_window_function_checks`` (same order, same ``ValueError``s); the dtype
    the window is computed in (the default dtype when none is given)."""
    if dtype is None:
        dtype = _dtype.get_default_dtype()
    if M < 0:
        raise ValueError(f"{function_name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{function_name} is implemented for strided tensors only, got: "
                         f"{layout}")
    if dtype not in _FLOATS:
        raise ValueError(f"{function_name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _empty(dtype: _dtype.dtype, device, requires_grad: bool) -> Tensor:
    return empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)


def _positions(start: float, end: float, M: int, dtype: _dtype.dtype, device,
               requires_grad: bool) -> Tensor:
    """``torch.linspace(start, end, M)`` in ``dtype``: where the window is sampled."""
    # PyTorch's linspace takes an int number of steps and raises TypeError for anything
    # else; NumPy would quietly take a float.
    return linspace(start, end, operator.index(M), dtype=dtype, device=device,
                    requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype: _dtype.dtype | None = None, layout: _layout_type = strided,
                device=None, requires_grad: bool = False) -> Tensor:
    """The exponential (Poisson) window ``exp(-|n - center| / tau)``; ``center`` defaults to
    the window's middle and may be given only for a periodic window (``sym=False``)."""
    dtype = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = _positions(-center * constant, (-center + (M - 1)) * constant, M, dtype, device,
                   requires_grad)
    return exp(-abs(k))


def cosine(M: int, *, sym: bool = True, dtype: _dtype.dtype | None = None,
           layout: _layout_type = strided, device=None, requires_grad: bool = False) -> Tensor:
    """The cosine (sine) window ``sin(pi (n + 0.5) / M)``, SciPy's definition."""
    dtype = _checks("cosine", M, dtype, layout)
    if M == 0:
        return _empty(dtype, device, requires_grad)
    start = 0.5
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _positions(start * constant, (start + (M - 1)) * constant, M, dtype, device,
                   requires_grad)
    return sin(k)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: _dtype.dtype | None = None,
             layout: _layout_type = strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """The Gaussian window ``exp(-(n / (2 std))^2)``, ``n`` measured from the middle."""
    dtype = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _empty(dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _positions(start * constant, (start + (M - 1)) * constant, M, dtype, device,
                   requires_grad)
    return exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: _dtype.dtype | None = None,
           layout: _layout_type = strided, device=None, requires_grad: bool = False) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2n / N - 1)^2)) / I0(beta)``,
    ``N = M - 1`` when ``sym`` else ``M``."""
    dtype = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if M == 1:
        return ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    # beta, the step and the end point in the window's dtype, as PyTorch (which casts beta
    # to avoid NaNs): sqrt(beta^2 - k^2) must see the same rounded beta as k does.
    beta_t = tensor(beta, dtype=dtype, device=device)
    start = -beta_t
    constant = 2.0 * beta_t / (M if not sym else M - 1)
    end = minimum(beta_t, start + (M - 1) * constant)  # never past beta: no sqrt of < 0
    k = _positions(start.item(), end.item(), M, dtype, device, requires_grad)
    return i0(sqrt(beta_t * beta_t - pow(k, 2))) / i0(beta_t)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype: _dtype.dtype | None = None,
                   layout: _layout_type = strided, device=None,
                   requires_grad: bool = False) -> Tensor:
    """The generalized cosine window ``sum_i (-1)^i a_i cos(2 pi i n / N)``,
    ``N = M - 1`` when ``sym`` else ``M``."""
    dtype = _checks("general_cosine", M, dtype, layout)
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if M == 1:
        return ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _positions(0, (M - 1) * constant, M, dtype, device, requires_grad)
    a_i = tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device,
                 requires_grad=requires_grad)
    i = arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device,
               requires_grad=a_i.requires_grad)
    # One row per term, summed over the rows in order: PyTorch's sum over an outer dim adds
    # up to 4 rows one after another (every built-in window); with 5 or more terms some of
    # its columns use interleaved partial sums, which can round differently.
    return (a_i.unsqueeze(-1) * cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True,
                    dtype: _dtype.dtype | None = None, layout: _layout_type = strided,
                    device=None, requires_grad: bool = False) -> Tensor:
    """The generalized Hamming window ``alpha - (1 - alpha) cos(2 pi n / N)``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: _dtype.dtype | None = None,
            layout: _layout_type = strided, device=None, requires_grad: bool = False) -> Tensor:
    """The Hamming window ``0.54 - 0.46 cos(2 pi n / N)``."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: _dtype.dtype | None = None,
         layout: _layout_type = strided, device=None, requires_grad: bool = False) -> Tensor:
    """The Hann window ``0.5 - 0.5 cos(2 pi n / N)``."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: _dtype.dtype | None = None,
             layout: _layout_type = strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``."""
    dtype = _checks("blackman", M, dtype, layout)  # (its own name in the errors)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: _dtype.dtype | None = None,
             layout: _layout_type = strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """The Bartlett (triangular) window ``1 - |2n / N - 1|``."""
    dtype = _checks("bartlett", M, dtype, layout)
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if M == 1:
        return ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    start = -1
    constant = 2 / (M if not sym else M - 1)
    k = _positions(start, start + (M - 1) * constant, M, dtype, device, requires_grad)
    return 1 - abs(k)


def nuttall(M: int, *, sym: bool = True, dtype: _dtype.dtype | None = None,
            layout: _layout_type = strided, device=None, requires_grad: bool = False) -> Tensor:
    """Nuttall's minimum 4-term Blackman-Harris window."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
