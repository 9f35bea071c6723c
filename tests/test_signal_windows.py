"""microtorch.signal.windows against torch.signal.windows.

PyTorch's OpInfo samples of every window (sizes 0-5, both ``sym``) run in the op_db tier;
here: larger windows and the per-window parameters, the signatures, ``requires_grad`` and the
default dtype, and PyTorch's errors. Values: the sample positions are PyTorch's bit for bit
(``bartlett``, which applies no transcendental function to them, is compared exactly); the
other windows end with ``cos``/``sin``/``exp``/``i0``, whose float32 (float64) kernels may
differ from PyTorch's SIMD ones by an ulp or so, more relative to a value near zero where
terms cancel (the Hann window's ends), hence the tolerances.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

NAMES = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
         "general_hamming", "hamming", "hann", "kaiser", "nuttall"]
# Each window's parameter sets (general_cosine needs its coefficients).
PARAMS = {
    "exponential": [{}, {"tau": 2.5}, {"tau": 43.5}],
    "gaussian": [{}, {"std": 0.1}, {"std": 3.9}],
    "kaiser": [{}, {"beta": 0.0}, {"beta": 2}, {"beta": 41.2}],
    "general_cosine": [{"a": [0.46, 0.23, 0.31]}, {"a": (0.5,)}, {"a": [0.2] * 5}],
    "general_hamming": [{}, {"alpha": 0.23}, {"alpha": 0.9}],
}
SIZES = [0, 1, 2, 3, 4, 5, 8, 16, 33, 64, 255]
TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-14)}
DTYPES = ["float32", "float64"]


def _pair(name: str, M: int, dtype: str, device: str, **kw):
    t = getattr(torch.signal.windows, name)(M, dtype=getattr(torch, dtype), **kw)
    m = getattr(mt.signal.windows, name)(M, dtype=getattr(mt, dtype), device=device, **kw)
    assert m.device.type == device
    assert tuple(m.shape) == tuple(t.shape) and m.dtype.name == dtype
    return m.cpu().numpy(), t.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_values_match_torch(name, dtype, device):
    for kw in PARAMS.get(name, [{}]):
        for M in SIZES:
            for sym in (True, False):
                got, want = _pair(name, M, dtype, device, sym=sym, **kw)
                np.testing.assert_allclose(got, want, **TOL[dtype],
                                           err_msg=f"{name}({M}, sym={sym}, {kw})")


@pytest.mark.parametrize("dtype", DTYPES)
def test_exponential_center(dtype, device):
    for M, center, tau in [(8, 4, 0.5), (16, 8, 2.5), (64, 20, 3.7), (7, 0.5, 1.0)]:
        got, want = _pair("exponential", M, dtype, device, sym=False, center=center, tau=tau)
        np.testing.assert_allclose(got, want, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_bartlett_is_exact(dtype, device):
    # linspace + abs + subtract: no transcendental function, so every bit is PyTorch's.
    for M in SIZES + [1000]:
        for sym in (True, False):
            got, want = _pair("bartlett", M, dtype, device, sym=sym)
            np.testing.assert_array_equal(got, want)


def test_default_dtype_is_followed():
    previous = mt.get_default_dtype()
    mt.set_default_dtype(mt.float64)
    try:
        assert mt.signal.windows.hann(4).dtype == mt.float64
    finally:
        mt.set_default_dtype(previous)
    assert mt.signal.windows.hann(4).dtype == previous


@pytest.mark.parametrize("name", NAMES)
def test_requires_grad_as_torch(name):
    kw = PARAMS.get(name, [{}])[0]
    for M in (0, 1, 4):
        t = getattr(torch.signal.windows, name)(M, requires_grad=True, **kw)
        m = getattr(mt.signal.windows, name)(M, requires_grad=True, **kw)
        assert (m.requires_grad, m.is_leaf) == (t.requires_grad, t.is_leaf), (name, M)


@pytest.mark.parametrize("name", NAMES)
def test_signature_is_torch(name):
    def params(fn):
        out = []
        for p in inspect.signature(fn).parameters.values():
            default = p.default
            if default is torch.strided:
                default = mt.strided
            out.append((p.name, p.kind, default))
        return out

    assert params(getattr(mt.signal.windows, name)) == params(getattr(torch.signal.windows,
                                                                      name))


def _errors(lib, name: str):
    """(call, exception class, message) for each bad input PyTorch refuses."""
    w = getattr(lib.signal.windows, name)
    kw = PARAMS.get(name, [{}])[0]
    # hamming, hann, general_hamming and nuttall report as general_cosine, as in PyTorch.
    label = name if name in ("bartlett", "blackman", "cosine", "exponential", "gaussian",
                             "kaiser") else "general_cosine"
    yield (lambda: w(-1, **kw), ValueError,
           f"{label} requires non-negative window length, got M=-1")
    yield (lambda: w(3, layout=lib.sparse_coo, **kw), ValueError,
           f"{label} is implemented for strided tensors only, got: .*sparse_coo")
    for bad in ("int64", "float16", "bfloat16"):
        yield (lambda bad=bad: w(3, dtype=getattr(lib, bad), **kw), ValueError,
               f"{label} expects float32 or float64 dtypes, got: .*{bad}")


@pytest.mark.parametrize("name", NAMES)
def test_common_errors(name):
    for (m_call, cls, msg), (t_call, t_cls, _) in zip(_errors(mt, name), _errors(torch, name)):
        with pytest.raises(t_cls):
            t_call()
        with pytest.raises(cls, match=msg):
            m_call()


@pytest.mark.parametrize("call, cls, msg", [
    (lambda L: L.signal.windows.exponential(3, tau=-1), ValueError,
     "Tau must be positive, got: -1 instead."),
    (lambda L: L.signal.windows.exponential(3, center=1), ValueError,
     "Center must be None for symmetric windows"),
    (lambda L: L.signal.windows.gaussian(3, std=0), ValueError,
     "Standard deviation must be positive, got: 0 instead."),
    (lambda L: L.signal.windows.kaiser(3, beta=-1), ValueError,
     "beta must be non-negative, got: -1 instead."),
    (lambda L: L.signal.windows.general_cosine(3, a=None), TypeError,
     "Coefficients must be a list/tuple"),
    (lambda L: L.signal.windows.general_cosine(3, a=[]), ValueError,
     "Coefficients cannot be empty"),
    (lambda L: L.signal.windows.hann(3.0), TypeError, None),  # (linspace's: steps an int)
])
def test_parameter_errors(call, cls, msg):
    with pytest.raises(cls):
        call(torch)
    with pytest.raises(cls, match=msg):
        call(mt)


def test_checks_come_before_the_trivial_lengths():
    # PyTorch checks a window's parameters before it returns the empty or one-point window,
    # except general_cosine's coefficients, which a 0- or 1-point window never looks at.
    with pytest.raises(ValueError):
        mt.signal.windows.gaussian(0, std=-1)
    assert mt.signal.windows.general_cosine(1, a=None).tolist() == [1.0]
    assert torch.signal.windows.general_cosine(1, a=None).tolist() == [1.0]
