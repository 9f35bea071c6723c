"""Gradient accumulation over micro-batches equals one full batch (DESIGN.md §3)."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
from microtorch import nn

STORAGES = [{}, {"foreach": True}, {"flat_grads": True}]


def make_model(device):
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(device).double()


def params_of(model):
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


def train(device, batches, windows, storage, set_to_none):
    """One optimizer step per window of micro-batches, each loss scaled by 1/len(window)."""
    model = make_model(device)
    opt = mt.optim.Adam(model.parameters(), lr=1e-2, **storage)
    for window in windows:
        opt.zero_grad(set_to_none=set_to_none)
        for i in window:
            x, y = batches[i]
            loss = nn.functional.mse_loss(model(x), y) / len(window)
            loss.backward()
        opt.step()
    return params_of(model)


def split(x, y, sizes):
    out, start = [], 0
    for s in sizes:
        out.append((x[start:start + s], y[start:start + s]))
        start += s
    return out


@pytest.mark.parametrize("storage", STORAGES, ids=["default", "foreach", "flat"])
@pytest.mark.parametrize("set_to_none", [True, False])
def test_k_micro_batches_equal_the_full_batch(device, storage, set_to_none):
    mt.manual_seed(1)
    x = mt.randn(48, 6, dtype=mt.float64, device=device)
    y = mt.randn(48, 3, dtype=mt.float64, device=device)
    full = split(x, y, [12] * 4)  # 4 optimizer steps of 12 samples
    micro = split(x, y, [3] * 16)  # the same data as 4 windows of 4 micro-batches of 3
    expected = train(device, full, [[0], [1], [2], [3]], storage, set_to_none)
    got = train(device, micro, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]],
                storage, set_to_none)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-13)


def test_uneven_last_window_is_scaled_by_its_own_size(device):
    mt.manual_seed(2)
    x = mt.randn(30, 6, dtype=mt.float64, device=device)
    y = mt.randn(30, 3, dtype=mt.float64, device=device)
    # 30 samples, micro-batches of 6, accumulation 2: windows of 12, 12 and a last one of 6.
    full = split(x, y, [12, 12, 6])
    micro = split(x, y, [6] * 5)
    expected = train(device, full, [[0], [1], [2]], {}, True)
    got = train(device, micro, [[0, 1], [2, 3], [4]], {}, True)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-13)


def token_loss_sum(model, x, y, mask):
    """Summed squared error over the masked-in tokens, and how many tokens there were."""
    err = ((model(x) - y) ** 2).sum(-1) * mask
    return err.sum(), mask.sum()


def test_variable_sized_micro_batches_need_sum_then_divide(device):
    """The 2024 gradient-accumulation bug: a mean of per-batch means is not the window mean."""
    mt.manual_seed(3)
    x = mt.randn(2, 5, 6, dtype=mt.float64, device=device)  # 2 micro-batches of 5 tokens
    y = mt.randn(2, 5, 3, dtype=mt.float64, device=device)
    mask = mt.tensor([[1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=mt.float64, device=device)

    reference = make_model(device)
    total, count = token_loss_sum(reference, x.reshape(10, 6), y.reshape(10, 3),
                                  mask.reshape(10))
    (total / count).backward()
    expected = [p.grad.cpu().numpy() for p in reference.parameters()]

    correct = make_model(device)
    window_tokens = mask.sum()  # known before the window's backward passes
    for i in range(2):
        part, _ = token_loss_sum(correct, x[i], y[i], mask[i])
        (part / window_tokens).backward()
    for e, p in zip(expected, correct.parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), e, rtol=1e-12, atol=1e-14)

    buggy = make_model(device)
    for i in range(2):
        part, n = token_loss_sum(buggy, x[i], y[i], mask[i])
        (part / n / 2).backward()  # mean of per-batch means
    assert not np.allclose(next(iter(buggy.parameters())).grad.cpu().numpy(), expected[0])
