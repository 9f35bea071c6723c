"""``torch.fft``: discrete Fourier transforms with PyTorch's signatures, dtypes and gradients.

Each function is PyTorch's composition of three nodes (``microtorch.ops.fft``): inputs are
promoted as PyTorch promotes them (integers to the default float; float32 gives complex64, as
NumPy < 2 would not by itself), zero-padded or trimmed to ``n``/``s``, and transformed with
the normalization mode the ``norm`` string means for the function's direction. ``hfft``
conjugates its input and ``ihfft`` its output, as PyTorch's do.
"""

from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ..autograd.function import named
from ..ops import arange, conj, roll
from ..ops.creation import _creation_dtype
from ..ops.fft import BY_N, BY_ROOT_N, NONE, FftC2C, FftC2R, FftR2C
from ..ops.vision import Pad

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]


# ----------------------------------------------------------------------------- arguments

def _norm_mode(norm: str | None, forward: bool) -> int:
    """PyTorch's ``norm_from_string``: the scaling mode a norm name means in a direction."""
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promoted(x: Tensor, require_complex: bool = False) -> Tensor:
    """PyTorch's ``promote_tensor_fft``: integers to the default float, floats to complex
    when required; half precision refused."""
    if not isinstance(x, Tensor):
        raise TypeError(f"fft functions expect a Tensor, got {type(x).__name__}")
    dt = x.dtype
    if dt.is_complex:
        return x
    if not dt.is_floating_point:
        dt = _dtype.get_default_dtype()
    if dt not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"Unsupported dtype {_dtype.title(dt)}")
    if require_complex:
        dt = _dtype.complex64 if dt == _dtype.float32 else _dtype.complex128
    return x if dt == x.dtype else x.to(dt)


def _resized(x: Tensor, dims, sizes) -> Tensor:
    """PyTorch's ``resize_fft_input``: ``x`` trimmed or zero-padded to ``sizes[i]`` along
    ``dims[i]`` (-1: as it is)."""
    pads = [(0, 0)] * x.ndim
    for d, n in zip(dims, sizes):
        if n == -1:
            continue
        if x.shape[d] > n:
            x = x.narrow(d, 0, n)
        elif x.shape[d] < n:
            pads[d] = (0, n - x.shape[d])
    return Pad.apply(x, tuple(pads), 0.0) if any(p for _, p in pads) else x


def _one_dim(x: Tensor, n, dim: int) -> tuple[int, int | None]:
    if x.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    d = _wrap_dim(dim, x.ndim)
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return d, n


def _shape_and_dims(x: Tensor, s, dim) -> tuple[list[int], list[int]]:
    """PyTorch's ``canonicalize_fft_shape_and_dim_args``: (sizes, dims) of an n-d transform."""
    if dim is not None:
        dims = [_wrap_dim(d, x.ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = list(s)
        if dim is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if dim is None:
            if len(s) > x.ndim:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only "
                                   f"has {x.ndim} dimensions.")
            dims = list(range(x.ndim - len(s), x.ndim))
        sizes = [x.shape[d] if n == -1 else int(n) for n, d in zip(s, dims)]
        for n in sizes:
            if n <= 0:
                raise RuntimeError(f"Invalid number of data points ({n}) specified")
    else:
        if dim is None:
            dims = list(range(x.ndim))
        sizes = [x.shape[d] for d in dims]
    return sizes, dims


def _c2r_shape_and_dims(x: Tensor, s, dim) -> tuple[list[int], list[int], int]:
    """PyTorch's ``canonicalize_fft_c2r_shape_and_dim_args``: the one-sided input sizes, the
    dims and the output length of the last dim."""
    sizes, dims = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError("Must transform at least one dimension")
    last = sizes[-1] if s is not None else 2 * (x.shape[dims[-1]] - 1)
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    sizes[-1] = last // 2 + 1
    return sizes, dims, last


# ------------------------------------------------------------------------------- 1-D

def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D discrete Fourier transform of ``input`` along ``dim``."""
    return _c2c_or_r2c(input, n, dim, norm, True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D inverse discrete Fourier transform of ``input`` along ``dim``."""
    return _c2c_or_r2c(input, n, dim, norm, False)


def _c2c_or_r2c(input, n, dim, norm, forward: bool) -> Tensor:
    x = _promoted(input)
    d, n = _one_dim(x, n, dim)
    mode = _norm_mode(norm, forward)
    if n is not None:
        x = _resized(x, [d], [n])
    if x.is_complex():
        return FftC2C.apply(x, (d,), mode, forward)
    out = FftR2C.apply(x, (d,), mode, False)
    return out if forward else conj(out)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-sided 1-D Fourier transform of real ``input`` (n // 2 + 1 frequencies)."""
    _check_real("rfft", input)
    x = _promoted(input)
    d, n = _one_dim(x, n, dim)
    if n is not None:
        x = _resized(x, [d], [n])
    return FftR2C.apply(x, (d,), _norm_mode(norm, True), True)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``rfft``: a real signal of ``n`` points (default 2 * (size - 1))."""
    return _c2r(input, n, dim, norm, False)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D transform of a one-sided Hermitian ``input``: a real signal of ``n`` points."""
    return _c2r(input, n, dim, norm, True)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``hfft``: the one-sided inverse transform of real ``input``."""
    _check_real("ihfft", input)
    x = _promoted(input)
    d, n = _one_dim(x, n, dim)
    if n is not None:
        x = _resized(x, [d], [n])
    return conj(FftR2C.apply(x, (d,), _norm_mode(norm, False), True))


def _c2r(input, n, dim, norm, forward: bool) -> Tensor:
    x = _promoted(input, require_complex=True)
    d, _ = _one_dim(x, n, dim)
    last = n if n is not None else 2 * (x.shape[d] - 1)
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    if n is not None:
        x = _resized(x, [d], [last // 2 + 1])
    if forward:  # hfft: the transform of the conjugate, PyTorch's formulation
        x = conj(x)
    return FftC2R.apply(x, (d,), _norm_mode(norm, forward), last)


def _check_real(name: str, input) -> None:
    if isinstance(input, Tensor) and input.is_complex():
        raise RuntimeError(f"{name} expects a real input tensor, but got "
                           f"{_dtype.title(input.dtype)}")


# ------------------------------------------------------------------------------- n-D

def fftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The n-D discrete Fourier transform over ``dim`` (default: all, or the last len(s))."""
    return _nd_c2c_or_r2c(input, s, dim, norm, True)


def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The n-D inverse discrete Fourier transform."""
    return _nd_c2c_or_r2c(input, s, dim, norm, False)


def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """``fftn`` over the last two dims by default."""
    return fftn(input, s, dim, norm)


def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """``ifftn`` over the last two dims by default."""
    return ifftn(input, s, dim, norm)


def _nd_c2c_or_r2c(input, s, dim, norm, forward: bool) -> Tensor:
    x = _promoted(input)
    sizes, dims = _shape_and_dims(x, s, dim)
    x = _resized(x, dims, sizes)
    mode = _norm_mode(norm, forward)
    if x.is_complex():
        return FftC2C.apply(x, tuple(dims), mode, forward) if dims else x.clone()
    if not dims:
        return x.to(_promoted(x, require_complex=True).dtype)
    out = FftR2C.apply(x, tuple(dims), mode, False)
    return out if forward else conj(out)


def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The n-D Fourier transform of real ``input``, one-sided over the last of ``dim``."""
    _check_real("rfftn", input)
    x = _promoted(input)
    sizes, dims = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    return FftR2C.apply(_resized(x, dims, sizes), tuple(dims), _norm_mode(norm, True), True)


def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """``rfftn`` over the last two dims by default."""
    return rfftn(input, s, dim, norm)


def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The inverse of ``rfftn``: a real tensor, ``s[-1]`` (default 2 * (size - 1)) points in
    the last of ``dim``."""
    x = _promoted(input, require_complex=True)
    sizes, dims, last = _c2r_shape_and_dims(x, s, dim)
    return FftC2R.apply(_resized(x, dims, sizes), tuple(dims), _norm_mode(norm, False), last)


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """``irfftn`` over the last two dims by default."""
    return irfftn(input, s, dim, norm)


def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The n-D transform of a Hermitian ``input``, one-sided over the last of ``dim``: a real
    tensor."""
    x = _promoted(input, require_complex=True)
    sizes, dims, last = _c2r_shape_and_dims(x, s, dim)
    x = _resized(x, dims, sizes)
    mode = _norm_mode(norm, True)
    if len(dims) > 1:
        x = FftC2C.apply(x, tuple(dims[:-1]), mode, True)
    return FftC2R.apply(conj(x), (dims[-1],), mode, last)


def hfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """``hfftn`` over the last two dims by default."""
    return hfftn(input, s, dim, norm)


def ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The inverse of ``hfftn``: the one-sided n-D inverse transform of real ``input``."""
    _check_real("ihfftn", input)
    x = _promoted(input)
    sizes, dims = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError("ihfftn must transform at least one axis")
    mode = _norm_mode(norm, False)
    out = conj(FftR2C.apply(_resized(x, dims, sizes), (dims[-1],), mode, True))
    if len(dims) > 1:
        out = FftC2C.apply(out, tuple(dims[:-1]), mode, False)
    return out


def ihfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """``ihfftn`` over the last two dims by default."""
    return ihfftn(input, s, dim, norm)


# ------------------------------------------------------------------------- helpers

def fftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``."""
    return _frequencies(n, d, dtype, device, requires_grad, full=True)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an ``n``-point ``rfft``: ``arange(n // 2 + 1) / (d * n)``."""
    return _frequencies(n, d, dtype, device, requires_grad, full=False)


def _frequencies(n, d, dtype, device, requires_grad, full: bool) -> Tensor:
    dt = _dtype.from_numpy_dtype(_creation_dtype(dtype))
    if not dt.is_floating_point and not dt.is_complex:
        raise RuntimeError(f"{'fftfreq' if full else 'rfftfreq'} requires a floating point "
                           f"or complex dtype")
    # PyTorch: arange in the dtype, the negative half shifted by -n, then one multiply by the
    # (double) scale 1 / (n * d) in the dtype
    out = arange(n // 2 + 1 if not full else n, dtype=dt, device=device)
    if full:
        half = (n + 1) // 2
        out = out.clone()
        out[half:] = out[half:] - n
    out = out * (1.0 / (n * d))
    return out.requires_grad_(True) if requires_grad else out


def _shift_dims(input: Tensor, dim) -> list[int]:
    if dim is None:
        return list(range(input.ndim))
    return [_wrap_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)]


def fftshift(input: Tensor, dim=None) -> Tensor:
    """Rolls the zero frequency to the centre of each of ``dim`` (default: all dims)."""
    dims = _shift_dims(input, dim)
    if not dims:
        return input.clone()
    return named(roll(input, [input.shape[d] // 2 for d in dims], dims), "RollBackward0")


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of ``fftshift``."""
    dims = _shift_dims(input, dim)
    if not dims:
        return input.clone()
    return named(roll(input, [(input.shape[d] + 1) // 2 for d in dims], dims),
                 "RollBackward0")

