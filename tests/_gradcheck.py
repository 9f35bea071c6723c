"""Finite-difference gradient checking shared by the test modules (float64, central
differences: (f(x + h) - f(x - h)) / 2h, independent of PyTorch)."""

from __future__ import annotations

import numpy as np

import microtorch as mt


def finite_difference_check(fn, arrays, device, eps=1e-6, rtol=1e-5, atol=1e-7, seed=1):
    """Compare autograd's gradients of sum(fn(*x) * w), w random, with central differences."""
    arrays = [np.asarray(a, np.float64) for a in arrays]
    inputs = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]
    out = fn(*inputs)
    w = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    (out * mt.tensor(w, device=device)).sum().backward()
    for k, a in enumerate(arrays):
        numeric = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            values = []
            for step in (eps, -eps):
                moved = a.copy()
                moved[idx] += step
                args = [mt.tensor(moved if j == k else b, device=device)
                        for j, b in enumerate(arrays)]
                values.append(float((fn(*args).detach().cpu().numpy() * w).sum()))
            numeric[idx] = (values[0] - values[1]) / (2 * eps)
        np.testing.assert_allclose(inputs[k].grad.cpu().numpy(), numeric, rtol=rtol, atol=atol)
