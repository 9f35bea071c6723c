"""Run one op on microtorch and PyTorch from the same NumPy inputs and compare everything an op
promises: result structure, dtypes, shapes, values (bitwise unless a tolerance is given, NaN in
the same places), which results require grad, their grad_fn names, and the gradients of a
fixed random weighting of the float results; or, for bad inputs, the exception class and
message."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt


class OnDevice:
    """microtorch with tensors made on ``device`` (``m.tensor``, ``m.zeros`` ...)."""

    _MADE = ("tensor", "zeros", "ones", "empty", "full", "arange", "scalar_tensor",
             "empty_strided", "empty_permuted")

    def __init__(self, device: str) -> None:
        self._device = device

    def __getattr__(self, name):
        attr = getattr(mt, name)
        if name in self._MADE:
            return lambda *a, **k: attr(*a, **{"device": self._device, **k})
        return attr


def _inputs(lib, arrays, device, grad: bool):
    made = []
    for a in arrays:
        if not isinstance(a, np.ndarray):
            made.append(a)
            continue
        requires = grad and a.dtype.kind == "f"
        if lib is mt:
            made.append(mt.tensor(a, device=device, requires_grad=requires))
        else:
            made.append(lib.tensor(a, requires_grad=requires))
    return made


def _outputs(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _numpy(t) -> np.ndarray:
    t = t.detach()
    if t.dtype.__str__().endswith("bfloat16"):
        t = t.float()
    return np.asarray(t.cpu().numpy())


def _assert_values(got: np.ndarray, want: np.ndarray, tol, what: str) -> None:
    assert got.shape == want.shape, what
    if tol is None or got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        if got.dtype.kind == "f":  # bitwise: the sign of zero too
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=what)
    else:
        np.testing.assert_allclose(got, want, err_msg=what, **tol)


def parity(fn, *arrays, device: str = "cpu", grad: bool = True, tol=None):
    """``fn(lib, *inputs)`` on both libraries (float arrays become tensors requiring grad when
    ``grad``); everything compared as the module docstring says. Returns microtorch's
    result."""
    import torch

    m_in, t_in = _inputs(mt, arrays, device, grad), _inputs(torch, arrays, device, grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = fn(OnDevice(device), *m_in), fn(torch, *t_in)
    got_l, want_l = _outputs(got), _outputs(want)
    assert isinstance(got, (tuple, list)) == isinstance(want, (tuple, list))
    assert (got is None) == (want is None)
    assert len(got_l) == len(want_l)
    for k, (g, w) in enumerate(zip(got_l, want_l)):
        if not isinstance(w, torch.Tensor):
            assert g == w, f"output {k}"
            continue
        assert g.dtype.name == str(w.dtype).removeprefix("torch."), f"dtype of output {k}"
        assert g.device.type == device
        _assert_values(_numpy(g), _numpy(w), tol, f"output {k}")
        assert g.requires_grad == w.requires_grad, f"requires_grad of output {k}"
        if w.grad_fn is not None:
            assert g.grad_fn.name() == w.grad_fn.name()
    if grad:
        _compare_grads(got_l, want_l, m_in, t_in, device, tol)
    return got


def _compare_grads(got_l, want_l, m_in, t_in, device, tol) -> None:
    import torch

    pairs = [(g, w) for g, w in zip(got_l, want_l)
             if isinstance(w, torch.Tensor) and w.requires_grad]
    leaves = [(m, t) for m, t in zip(m_in, t_in)
              if isinstance(t, torch.Tensor) and t.requires_grad]
    if not pairs or not leaves:
        return
    rng = np.random.default_rng(7)
    weights = [rng.standard_normal(tuple(w.shape)).astype(_numpy(w).dtype) for _, w in pairs]
    t_loss = sum((w * torch.tensor(x)).sum() for (_, w), x in zip(pairs, weights))
    m_loss = sum((g * mt.tensor(x, device=device)).sum() for (g, _), x in zip(pairs, weights))
    t_grads = torch.autograd.grad(t_loss, [t for _, t in leaves], allow_unused=True)
    m_grads = mt.autograd.grad(m_loss, [m for m, _ in leaves], allow_unused=True)
    for k, (mg, tg) in enumerate(zip(m_grads, t_grads)):
        if tg is None and mg is None:
            continue
        if tg is None or mg is None:  # (an unused input: no gradient on one side, zeros)
            assert not np.any(_numpy(tg if mg is None else mg)), f"gradient of input {k}"
            continue
        assert mg.dtype.name == str(tg.dtype).removeprefix("torch."), f"gradient {k} dtype"
        _assert_values(_numpy(mg), _numpy(tg), tol, f"gradient of input {k}")


def parity_error(fn, *arrays, device: str = "cpu", exc: type | None = None) -> None:
    """``fn`` raises on both libraries: the same exception class (``exc`` when given) and the
    same first message line (microtorch's names read as torch's)."""
    import torch

    errors = []
    for lib in (OnDevice(device), torch):
        inputs = _inputs(mt if lib is not torch else torch, arrays, device, grad=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as caught:
                fn(lib, *inputs)
        errors.append(caught.value)
    got, want = errors
    assert type(got) is type(want), f"{type(got).__name__}: {got} | PyTorch {want!r}"
    if exc is not None:
        assert isinstance(got, exc)
    first, wanted = str(got).replace("microtorch", "torch").splitlines()[0], \
        str(want).splitlines()[0]
    # (a GPU's deferred check adds where it found the problem)
    assert first == wanted or device != "cpu" and first.startswith(wanted + " (found by a")
