"""torch.fft, the window functions, stft and istft against PyTorch (issue 24).

PyTorch's OpInfo samples of every ``fft.*``, ``stft`` and ``istft`` entry (values, dtypes,
shapes and gradients) run in the op_db tier; here: dtypes and PyTorch's errors, the norm modes
and ``n``/``s`` resizing against PyTorch, gradients of two orders, the windows, and stft/istft
with their warnings and round trip. Tolerances: the transforms are computed by other FFT
libraries (PyTorch's MKL, NumPy's pocketfft, cuFFT), which sum in other orders: a float32
result of a length-n transform is within n * eps of the exact one relative to the input's
magnitude; float64 comparisons are tight. The windows' one ``cos`` per point may differ by an
ulp between SIMD implementations (SLEEF in PyTorch, NumPy's own).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch
from microtorch.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

RNG = np.random.default_rng(0)
REAL = RNG.standard_normal((3, 5, 6))
CPLX = REAL + 1j * RNG.standard_normal((3, 5, 6))


def _tol(dtype) -> float:
    return 1e-4 if dtype in (np.float32, np.complex64) else 1e-10


CASES = {  # name -> (call, input)
    "fft": (lambda L, x: L.fft.fft(x), REAL),
    "fft_n_dim": (lambda L, x: L.fft.fft(x, n=8, dim=1, norm="ortho"), CPLX),
    "ifft_trim": (lambda L, x: L.fft.ifft(x, n=4, dim=0, norm="forward"), REAL),
    "fft2": (lambda L, x: L.fft.fft2(x, s=(4, 8)), CPLX),
    "fftn_all": (lambda L, x: L.fft.fftn(x, norm="ortho"), REAL),
    "ifftn_s": (lambda L, x: L.fft.ifftn(x, s=(-1, 3)), CPLX),
    "rfft": (lambda L, x: L.fft.rfft(x, n=7), REAL),
    "irfft": (lambda L, x: L.fft.irfft(x, n=9, dim=1, norm="ortho"), CPLX),
    "irfft_default": (lambda L, x: L.fft.irfft(x), CPLX),
    "rfft2": (lambda L, x: L.fft.rfft2(x, norm="forward"), REAL),
    "irfftn": (lambda L, x: L.fft.irfftn(x, s=(4, 5, 7)), CPLX),
    "hfft": (lambda L, x: L.fft.hfft(x, n=10, norm="ortho"), CPLX),
    "ihfft": (lambda L, x: L.fft.ihfft(x), REAL),
    "hfftn": (lambda L, x: L.fft.hfftn(x, dim=(0, 2)), CPLX),
    "ihfft2": (lambda L, x: L.fft.ihfft2(x, norm="forward"), REAL),
    "fftshift": (lambda L, x: L.fft.fftshift(x, dim=(0, 2)), REAL),
    "ifftshift": (lambda L, x: L.fft.ifftshift(x), CPLX),
}


def _numpy(t):
    t = t.detach()
    t = t.resolve_conj() if hasattr(t, "resolve_conj") else t
    return t.cpu().numpy()


@pytest.mark.parametrize("precision", ["single", "double"])
@pytest.mark.parametrize("name", CASES)
def test_transforms_and_their_gradients_match_pytorch(name, precision, device):
    call, data = CASES[name]
    dt = {("single", "f"): np.float32, ("double", "f"): np.float64,
          ("single", "c"): np.complex64, ("double", "c"): np.complex128}[precision,
                                                                          data.dtype.kind]
    data = data.astype(dt)
    tx = torch.tensor(data, requires_grad=True)
    mx = microtorch.tensor(data, requires_grad=True, device=device)
    expected, got = call(torch, tx), call(microtorch, mx)
    e = _numpy(expected)
    assert got.dtype.name == str(expected.dtype).split(".")[-1] and got.shape == e.shape
    np.testing.assert_allclose(_numpy(got), e, rtol=_tol(dt), atol=_tol(dt) * np.abs(e).max())
    weight = RNG.standard_normal(e.shape).astype(e.real.dtype)
    (expected.real if expected.is_complex() else expected).mul(torch.tensor(weight)).sum() \
        .backward()
    (got.real if got.is_complex() else got).mul(
        microtorch.tensor(weight, device=device)).sum().backward()
    g = _numpy(tx.grad)
    np.testing.assert_allclose(_numpy(mx.grad), g, rtol=_tol(dt) * 10,
                               atol=_tol(dt) * 10 * np.abs(g).max())


@pytest.mark.parametrize("call", [
    lambda x: microtorch.fft.rfft(x, n=6),
    lambda x: microtorch.fft.irfft(microtorch.fft.rfft(x), n=5),
    lambda x: microtorch.fft.hfft(microtorch.fft.fft(x), n=7, norm="ortho"),
    lambda x: microtorch.fft.fftn(x, norm="forward").abs(),
])
def test_gradients_of_two_orders_by_finite_differences(call):
    x = microtorch.tensor(RNG.standard_normal((2, 5)), requires_grad=True)
    real = lambda x: (lambda y: y.real if y.is_complex() else y)(call(x))  # noqa: E731
    assert gradcheck(real, (x,))
    assert gradgradcheck(real, (x,))


def test_dtypes_and_errors_as_pytorch():
    assert microtorch.fft.fft(microtorch.arange(4)).dtype == microtorch.complex64
    assert microtorch.fft.rfft(microtorch.ones(4, dtype=microtorch.float64)).dtype == \
        microtorch.complex128
    assert microtorch.fft.irfft(microtorch.ones(3, dtype=microtorch.complex64)).dtype == \
        microtorch.float32
    for call, match in [
        (lambda L: L.fft.fft(L.ones(4), norm="xyz"), 'Invalid normalization mode: "xyz"'),
        (lambda L: L.fft.fft(L.ones(4), n=0), r"Invalid number of data points \(0\)"),
        (lambda L: L.fft.fftn(L.ones(2, 3), s=(2,), dim=(0, 1)), "same length"),
        (lambda L: L.fft.fft(L.ones(4, dtype=L.float16)), "Unsupported dtype Half"),
        (lambda L: L.fft.rfft(L.ones(4, dtype=L.complex64)), "rfft expects a real input"),
        (lambda L: L.fft.fftn(L.ones(2, 3), dim=(0, 0)), "FFT dims must be unique"),
    ]:
        with pytest.raises(RuntimeError, match=match):
            call(torch)
        with pytest.raises(RuntimeError, match=match):
            call(microtorch)
    with pytest.raises(IndexError):
        microtorch.fft.fft(microtorch.tensor(1.0))


def test_frequencies_and_shifts_equal_pytorchs():
    for n, d in ((5, 1.0), (4, 0.1), (1, 2.0)):
        for dtype in ("float32", "float64"):
            for name in ("fftfreq", "rfftfreq"):
                ours = getattr(microtorch.fft, name)(n, d, dtype=getattr(microtorch, dtype))
                theirs = getattr(torch.fft, name)(n, d, dtype=getattr(torch, dtype))
                assert ours.numpy().tobytes() == theirs.numpy().tobytes(), (name, n, d, dtype)
    f = microtorch.fft.fftfreq(6)
    assert microtorch.fft.ifftshift(microtorch.fft.fftshift(f)).tolist() == f.tolist()


WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8, 33])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_equal_pytorchs(name, n, periodic, dtype, device):
    ours = getattr(microtorch, name)(n, periodic, dtype=getattr(microtorch, dtype),
                                     device=device)
    theirs = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
    assert ours.dtype.name == dtype and ours.shape == theirs.shape and ours.device.type == device
    # one cos (or Bessel I0) per point: within 2 ulps of the value's own precision
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=4 * eps, atol=4 * eps)


def test_window_errors_as_pytorch():
    for make in (lambda L: L.hann_window(-1), lambda L: L.hann_window(4, dtype=L.int64),
                 lambda L: L.kaiser_window(-2)):
        with pytest.raises(RuntimeError) as theirs:
            make(torch)
        with pytest.raises(RuntimeError) as ours:
            make(microtorch)
        assert str(ours.value).split(",")[0] == str(theirs.value).split(",")[0]


STFT = [dict(n_fft=16), dict(n_fft=16, hop_length=5, win_length=10),
        dict(n_fft=15, center=False), dict(n_fft=16, normalized=True, onesided=False),
        dict(n_fft=16, pad_mode="constant"), dict(n_fft=8, pad_mode="replicate")]


@pytest.mark.parametrize("kwargs", STFT)
@pytest.mark.parametrize("batched", [False, True])
def test_stft_istft_match_pytorch_with_gradients(kwargs, batched, device):
    x = RNG.standard_normal((2, 120) if batched else (120,)).astype(np.float32)
    window = kwargs.get("win_length", kwargs["n_fft"])
    tx, mx = torch.tensor(x, requires_grad=True), microtorch.tensor(x, requires_grad=True,
                                                                   device=device)
    tw, mw = torch.hann_window(window), microtorch.hann_window(window, device=device)
    a = torch.stft(tx, window=tw, return_complex=True, **kwargs)
    b = microtorch.stft(mx, window=mw, return_complex=True, **kwargs)
    assert b.shape == a.shape and b.dtype == microtorch.complex64
    np.testing.assert_allclose(_numpy(b), _numpy(a), atol=1e-4)
    weight = RNG.standard_normal(a.shape).astype(np.float32)
    (a.real * torch.tensor(weight)).sum().backward()
    (b.real * microtorch.tensor(weight, device=device)).sum().backward()
    np.testing.assert_allclose(_numpy(mx.grad), _numpy(tx.grad), atol=1e-4)
    inverse = {k: v for k, v in kwargs.items() if k != "pad_mode"}
    if kwargs.get("center", True):  # (center=False with a Hann window breaks NOLA at the ends)
        back = microtorch.istft(b.detach(), window=mw, length=120, **inverse)
        theirs = torch.istft(a.detach(), window=tw, length=120, **inverse)
        np.testing.assert_allclose(_numpy(back), _numpy(theirs), atol=1e-5)
        np.testing.assert_allclose(_numpy(back), x, atol=1e-5)  # the round trip


def test_stft_warnings_and_errors_as_pytorch():
    x = microtorch.randn(64)
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        microtorch.stft(x, 16)
    with pytest.warns(UserWarning, match="A window was not provided"):
        microtorch.stft(x, 16, return_complex=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = microtorch.stft(x, 16, window=microtorch.ones(16), return_complex=False)
    assert old.shape == (9, 17, 2) and old.dtype == microtorch.float32
    with pytest.raises(RuntimeError, match=r"expected 0 < n_fft < 10, but got n_fft=16"):
        microtorch.stft(microtorch.randn(10), 16, window=microtorch.ones(16), center=False,
                        return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input"):
        microtorch.istft(microtorch.randn(9, 5), 16)
    spec = microtorch.stft(x, 15, window=microtorch.hann_window(15), center=False,
                           return_complex=True)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        microtorch.istft(spec, 15, window=microtorch.hann_window(15), center=False)
    assert x.stft(16, window=microtorch.ones(16), return_complex=True).shape == (9, 17)


def test_second_derivatives_through_complex_magnitudes():
    """|z| and sgn(z) of a spectrum have second derivatives (Abs's gradient used ``sign``,
    a constant under create_graph, so these were silently wrong)."""
    x = microtorch.tensor(RNG.standard_normal((2, 5)), requires_grad=True)
    for f in (lambda x: microtorch.fft.fft(x).abs(), lambda x: microtorch.fft.rfft(x).sgn().imag,
              lambda x: (x.to(microtorch.complex128) * (1 + 2j)).abs() ** 3):
        assert gradgradcheck(f, (x,))
    data = RNG.standard_normal((2, 5)) + 1j * RNG.standard_normal((2, 5))
    weight = np.arange(10.0).reshape(2, 5)
    results = []
    for lib in (torch, microtorch):
        z = lib.tensor(data, requires_grad=True)
        g = lib.autograd.grad((z.abs() * lib.tensor(weight)).sum(), z, create_graph=True)[0]
        (g.real * lib.tensor(weight) + g.imag).sum().backward()
        results.append(_numpy(z.grad))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12, atol=1e-12)
