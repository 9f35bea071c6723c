"""Spectral analysis: the window functions and the short-time Fourier transform.

The windows follow PyTorch's formulas step by step in the window's dtype (``arange``, one
multiply by the step, ``cos``, one multiply and add), so they match PyTorch's to the rounding
of ``cos``. ``stft`` frames the (centre-padded) signal, applies the window (zero-padded to
``n_fft`` when shorter) and takes each frame's FFT (one-sided for real input); ``istft``
inverts each frame, windows it again and overlap-adds, dividing by the overlap-added squared
window, as PyTorch's. Both are compositions of differentiable ops (``ops.fft``'s nodes,
gathers, ``index_add``), so they have gradients of any order.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype
from ..autograd.function import named
from ._util import Tensor, const
from .complex import view_as_real
from .creation import _creation_dtype, arange, ones, zeros
from .fft import BY_N, BY_ROOT_N, NONE, FftC2C, FftC2R, FftR2C
from .vision import Pad

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window", "stft", "istft"]


# --------------------------------------------------------------------------------- windows

def _window_start(name: str, window_length: int, dtype, device, requires_grad: bool,
                  periodic: bool):
    """(None or a finished window of length 0/1, the dtype, the length to compute): the
    checks and edge cases every window shares, as PyTorch's ``window_function_checks``."""
    if not isinstance(window_length, int) or isinstance(window_length, bool):
        raise TypeError(f"{name}(): argument 'window_length' must be int, not "
                        f"{type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    dt = _dtype.from_numpy_dtype(_creation_dtype(dtype))
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if window_length <= 1:
        made = (ones if window_length else zeros)(window_length, dtype=dt, device=device)
        return made.requires_grad_(requires_grad), dt, window_length
    return None, dt, window_length + 1 if periodic else window_length


def _finish_window(w: Tensor, periodic: bool, requires_grad: bool) -> Tensor:
    w = w[:-1].clone() if periodic else w
    return w.requires_grad_(True) if requires_grad else w


def _cosine_window(name: str, window_length: int, periodic: bool, alpha: float, beta: float,
                   dtype, device, requires_grad: bool) -> Tensor:
    done, dt, n = _window_start(name, window_length, dtype, device, requires_grad, periodic)
    if done is not None:
        return done
    w = (arange(n, dtype=dt, device=device) * (math.pi * 2.0 / (n - 1))).cos() * -beta + alpha
    return _finish_window(w, periodic, requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, layout=None, device=None,
                   pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """``alpha - beta * cos(2 pi n / (N - 1))``; ``periodic`` computes N + 1 points and drops
    the last (a window for spectral analysis)."""
    return _cosine_window("hamming_window", window_length, periodic, alpha, beta, dtype, device,
                          requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """The Hann window, ``0.5 - 0.5 * cos(2 pi n / (N - 1))`` (PyTorch's: a Hamming window
    with alpha = beta = 0.5)."""
    return _cosine_window("hann_window", window_length, periodic, 0.5, 0.5, dtype, device,
                          requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, pin_memory: bool = False,
                    requires_grad: bool = False) -> Tensor:
    """``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    done, dt, n = _window_start("blackman_window", window_length, dtype, device,
                                requires_grad, periodic)
    if done is not None:
        return done
    base = arange(n, dtype=dt, device=device) * (math.pi / (n - 1))
    w = (base * 4).cos() * 0.08 - (base * 2).cos() * 0.5 + 0.42
    return _finish_window(w, periodic, requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, pin_memory: bool = False,
                    requires_grad: bool = False) -> Tensor:
    """The triangular window ``1 - |2n / (N - 1) - 1|``."""
    done, dt, n = _window_start("bartlett_window", window_length, dtype, device,
                                requires_grad, periodic)
    if done is not None:
        return done
    w = arange(n, dtype=dt, device=device) * (2.0 / (n - 1))
    half = ((n - 1) >> 1) + 1
    w = w.clone()
    w[half:] = w[half:] * -1 + 2
    return _finish_window(w, periodic, requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None,
                  layout=None, device=None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Tensor:
    """``I0(beta * sqrt(1 - ((n - a) / a)^2)) / I0(beta)``, a = (N - 1) / 2."""
    done, dt, n = _window_start("kaiser_window", window_length, dtype, device, requires_grad,
                                periodic)
    if done is not None:
        return done
    from scipy.special import i0  # (SciPy's Cephes I0, the series PyTorch's calc_i0 follows)

    alpha = (n - 1) / 2.0
    ft = dt.np.type
    pos = (np.arange(n, dtype=dt.np) - ft(alpha)) / ft(alpha)
    w = i0(ft(beta) * np.sqrt(np.abs(1 - pos * pos))) / i0(ft(beta))
    out = const(zeros(1, dtype=dt, device=device), w.astype(dt.np, copy=False))
    return _finish_window(out, periodic, requires_grad)


# ------------------------------------------------------------------------------------ STFT

def _padded_ends(x: Tensor, pad: int, mode: str) -> Tensor:
    """``x`` (..., L) with ``pad`` points added at both ends of its last dim, as
    ``F.pad(x, [pad, pad], mode)`` (constant zeros, reflect, replicate, circular)."""
    if mode == "constant":
        return Pad.apply(x, ((0, 0),) * (x.ndim - 1) + ((pad, pad),), 0.0)
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}.get(mode)
    if np_mode is None:
        raise NotImplementedError(f"stft: pad_mode {mode!r} is not one of 'constant', "
                                  f"'reflect', 'replicate', 'circular'")
    length = x.shape[-1]
    if mode == "reflect" and pad >= length:
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                           f"input dimension, but got: padding ({pad}, {pad}) at dimension "
                           f"{x.ndim - 1} of input {list(x.shape)}")
    index = np.pad(np.arange(length), pad, mode=np_mode)
    return x.index_select(-1, const(x, index).long())


def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect",
         normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a 1-D (L,) or batched 2-D (B, L) signal:
    (..., n_fft // 2 + 1 or n_fft, frames) complex, PyTorch's framing and defaults."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if align_to_window:
        raise NotImplementedError("stft(align_to_window=True) is not implemented in microtorch")
    complex_input = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_input:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which "
                      "is known to cause spectral leakage. Other windows such as "
                      "torch.hann_window or torch.hamming_window are recommended to reduce "
                      "spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.",
                      UserWarning, stacklevel=2)
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D tensor")
    x = input
    if center:
        x = _padded_ends(x.unsqueeze(0) if x.ndim == 1 else x, n_fft // 2, pad_mode)
        x = x.squeeze(0) if input.ndim == 1 else x
    hop_length = n_fft >> 2 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    batched = x.ndim == 2
    x = x if batched else x.unsqueeze(0)
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(window.shape)}")
    if win_length < n_fft:  # the window centred in n_fft points
        left = (n_fft - win_length) // 2
        window = (ones(win_length, dtype=x.dtype, device=x.device) if window is None
                  else window)
        window = Pad.apply(window, ((left, n_fft - win_length - left),), 0.0)
    frames = 1 + (length - n_fft) // hop_length
    index = (np.arange(frames)[:, None] * hop_length + np.arange(n_fft)).reshape(-1)
    x = x.index_select(1, const(x, index).long()).reshape(x.shape[0], frames, n_fft)
    if window is not None:
        x = x * window
    mode = BY_ROOT_N if normalized else NONE
    if x.is_complex():
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = FftC2C.apply(x, (2,), mode, True)
    else:
        out = FftR2C.apply(x, (2,), mode, True if onesided is None else bool(onesided))
    out = out.transpose(1, 2)
    out = out if batched else out.squeeze(0)
    return out if return_complex else view_as_real(out)


def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of ``stft``: overlap-add of the frames' inverse FFTs, divided by the
    overlap-added squared window (which must not vanish anywhere)."""
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop_length = n_fft >> 2 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if input.numel() == 0:
        raise RuntimeError("istft input tensor cannot be empty")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft expected a tensor with 2 or 3 dimensions of complex dtype, "
                           f"but got {input.ndim}")
    fft_size, frames = input.shape[-2], input.shape[-1]
    onesided = fft_size != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(f"istft expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(f"istft expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got "
                           f"{fft_size}")
    if not 0 < hop_length <= win_length:
        raise RuntimeError("istft expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise RuntimeError("istft expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError("Invalid window shape. window has to be 1D and length of "
                           "`win_length`")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    real_dt = _dtype.float32 if input.dtype == _dtype.complex64 else _dtype.float64
    w = ones(win_length, dtype=real_dt, device=input.device) if window is None else window
    if win_length != n_fft:
        left = (n_fft - win_length) // 2
        w = Pad.apply(w, ((left, n_fft - win_length - left),), 0.0)
    batched = input.ndim == 3
    spec = (input if batched else input.unsqueeze(0)).transpose(1, 2)  # (B, frames, freq)
    mode = BY_ROOT_N if normalized else BY_N
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        y = FftC2C.apply(spec, (2,), mode, False)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            spec = spec.narrow(-1, 0, n_fft // 2 + 1)
        y = FftC2R.apply(spec, (2,), mode, n_fft)
    total = n_fft + hop_length * (frames - 1)
    positions = const(y, (np.arange(frames)[:, None] * hop_length
                          + np.arange(n_fft)).reshape(-1)).long()
    frames_y = (y * w).reshape(y.shape[0], -1)
    signal = zeros(y.shape[0], total, dtype=frames_y.dtype,
                   device=input.device).index_add(1, positions, frames_y)
    envelope = zeros(1, total, dtype=w.dtype, device=input.device).index_add(
        1, positions, (w * w).expand(frames, n_fft).reshape(1, -1))
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    stop = min(end, total)
    signal, envelope = signal[:, start:stop], envelope[:, start:stop]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError("istft: window overlap add min: 1e-11 reached: the window and hop "
                           "length do not satisfy the NOLA condition")
    signal = signal / envelope
    if end > total:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        signal = Pad.apply(signal, ((0, 0), (0, end - total)), 0.0)
    return named(signal if batched else signal.squeeze(0), "DivBackward0")


METHODS = {"stft": stft, "istft": istft}  # (Tensor methods: x.stft(n_fft, ...))
