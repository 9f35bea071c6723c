"""Shared helpers of the layer tests: run microtorch and PyTorch on the same inputs and compare
outputs and gradients (float64 to 1e-12, float32 to 1e-6); copy a PyTorch module's weights."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt

TOL = {"float32": dict(rtol=1e-6, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-12)}


def copy_weights(src_torch, dst, device: str = "cpu") -> None:
    """Load a PyTorch module's state_dict into a microtorch module (via NumPy)."""
    result = dst.load_state_dict({k: mt.tensor(v.detach().numpy(), device=device)
                                  for k, v in src_torch.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys


def to_mt(a, dtype, device, grad):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return mt.tensor(a.astype(dtype), device=device, requires_grad=grad)
    return mt.tensor(a, device=device)


def to_torch(torch, a, dtype, grad):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return torch.tensor(a.astype(dtype), requires_grad=grad)
    return torch.tensor(a)


def compare(torch, mt_fn, torch_fn, arrays, dtype, device, grad=(0,), seed=0, tol=None,
            outputs=None):
    """Same output (values, dtype, shape) and the same gradients of the float inputs listed
    in ``grad`` for a random upstream gradient. Returns the microtorch inputs and output."""
    tol = {**TOL[dtype], **(tol or {})}
    mins = [None if a is None else to_mt(a, dtype, device, k in grad)
            for k, a in enumerate(arrays)]
    tins = [None if a is None else to_torch(torch, a, dtype, k in grad)
            for k, a in enumerate(arrays)]
    out, tout = mt_fn(*mins), torch_fn(*tins)
    assert tuple(out.shape) == tuple(tout.shape)
    assert out.dtype.name == str(tout.dtype).split(".")[1]
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), **tol)
    if not grad or not tout.requires_grad:
        return mins, out
    w = np.random.default_rng(seed).standard_normal(tuple(tout.shape)).astype(dtype)
    (out * mt.tensor(w, device=device)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for k in grad:
        tg = tins[k].grad
        mg = mins[k].grad
        if tg is None:
            assert mg is None or not np.any(mg.cpu().numpy())
            continue
        assert mg is not None, f"no gradient for input {k}"
        np.testing.assert_allclose(mg.cpu().numpy(), tg.numpy(), **tol,
                                   err_msg=f"gradient of input {k}")
    return mins, out


def float64_pair(torch, name: str, *args, device: str = "cpu", seed: int = 0, **kwargs):
    """``torch.nn.<name>(*args, **kwargs)`` built after ``torch.manual_seed(seed)`` and the
    microtorch module of that name on ``device`` with its weights, both float64."""
    torch.manual_seed(seed)
    tmod = getattr(torch.nn, name)(*args, **kwargs, dtype=torch.float64)
    mod = getattr(mt.nn, name)(*args, **kwargs, dtype=mt.float64).to(device)
    copy_weights(tmod, mod, device)
    return tmod, mod


def assert_init_equal(torch, mod, tmod, dtype: str) -> None:
    """Same repr, parameter names and state dict (bitwise, in ``dtype``) after the same seed,
    and the two random streams still in step."""
    assert repr(mod) == repr(tmod)
    assert [n for n, _ in mod.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    sd, tsd = mod.state_dict(), tmod.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        assert sd[k].dtype == getattr(mt, dtype)
        np.testing.assert_array_equal(sd[k].numpy(), tsd[k].numpy(), err_msg=k)
    assert mt.rand(3).tolist() == torch.rand(3).tolist()


def same_error(fn, tfn, exc) -> None:
    """Both calls raise ``exc`` with the same message (microtorch's names read as torch's)."""
    with pytest.raises(exc) as got:
        fn()
    with pytest.raises(exc) as want:
        tfn()
    assert str(got.value).replace("microtorch", "torch") == str(want.value)
