"""optim.Muon against torch.optim.Muon (PyTorch 2.13): parameters and momentum buffers over
several steps for both Nesterov settings, both learning-rate adjustments, tall/wide/square
matrices, float32/float64; the state dict format; the errors; on the CPU and the CUDA
stand-in."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
from _torch_compare import same_error  # noqa: E402

pytestmark = pytest.mark.torch

SETTINGS = [
    {},
    {"nesterov": False, "adjust_lr_fn": "match_rms_adamw", "lr": 0.02, "weight_decay": 0.01},
    {"momentum": 0.5, "ns_steps": 3, "adjust_lr_fn": "original", "lr": 0.1},
    {"ns_coefficients": (2.0, -1.5, 0.5), "eps": 1e-3, "weight_decay": 0.0},
]


def _run(shape, dtype, kwargs, device, steps=5, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(dtype)
    tp = torch.nn.Parameter(torch.tensor(w))
    mp = mt.nn.Parameter(mt.tensor(w, device=device))
    topt, mopt = torch.optim.Muon([tp], **kwargs), mt.optim.Muon([mp], **kwargs)
    for _ in range(steps):
        g = rng.standard_normal(shape).astype(dtype)
        tp.grad, mp.grad = torch.tensor(g), mt.tensor(g, device=device)
        topt.step()
        mopt.step()
    return tp, mp, topt, mopt


@pytest.mark.parametrize("shape", [(8, 12), (12, 8), (16, 16), (1, 5)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", SETTINGS)
def test_muon_matches_pytorch(shape, dtype, kwargs, device):
    tp, mp, topt, mopt = _run(shape, dtype, kwargs, device)
    got, want = mp.detach().cpu().numpy(), tp.detach().numpy()
    # The Newton-Schulz products are rounded to bfloat16 after a float32 accumulation whose
    # order is the BLAS's (OpenBLAS here, oneDNN in PyTorch): an element whose float32 sum
    # lands next to a bfloat16 rounding boundary may round the other way, a change of one
    # bfloat16 ulp (2**-8 relative) of one update element, times the adjusted learning rate.
    # Everything else (lerp, decay, the fused update) is PyTorch's arithmetic: most elements
    # agree bit for bit.
    lr = kwargs.get("lr", 1e-3) * max(1.0, 0.2 * max(shape), (shape[0] / shape[1]) ** 0.5)
    np.testing.assert_allclose(got, want, rtol=0, atol=5 * lr * 2.0 ** -7)
    assert (got == want).mean() > 0.5
    np.testing.assert_array_equal(mopt.state[mp]["momentum_buffer"].cpu().numpy(),
                                  topt.state[tp]["momentum_buffer"].numpy())
    assert mp._version == tp._version == 10


def test_muon_bit_exact_on_small_matrices(device):
    for shape in ((4, 6), (6, 4), (3, 3)):
        tp, mp, _, _ = _run(shape, "float32", {"lr": 0.05}, device, steps=4, seed=1)
        np.testing.assert_array_equal(mp.detach().cpu().numpy(), tp.detach().numpy())


def test_state_dict_roundtrip_and_format(device):
    tp, mp, topt, mopt = _run((5, 3), "float32", {}, device, steps=2)
    sd, tsd = mopt.state_dict(), topt.state_dict()
    assert list(sd["state"][0]) == list(tsd["state"][0]) == ["momentum_buffer"]
    assert sd["param_groups"] == tsd["param_groups"]
    fresh = mt.optim.Muon([mp])
    fresh.load_state_dict({"state": {0: {"momentum_buffer": tsd["state"][0][
        "momentum_buffer"]}}, "param_groups": tsd["param_groups"]})
    g = np.random.default_rng(5).standard_normal((5, 3)).astype("float32")
    tp.grad, mp.grad = torch.tensor(g), mt.tensor(g, device=device)
    topt.step()
    fresh.step()
    np.testing.assert_allclose(mp.detach().cpu().numpy(), tp.detach().numpy(), atol=1e-7)


def test_muon_errors():
    p, tp = mt.nn.Parameter(mt.ones(2, 3)), torch.nn.Parameter(torch.ones(2, 3))
    cases = [
        ({"lr": -1.0}, ValueError), ({"momentum": -0.5}, ValueError),
        ({"weight_decay": -0.1}, ValueError), ({"adjust_lr_fn": "other"}, ValueError),
    ]
    for kwargs, exc in cases:
        same_error(lambda: mt.optim.Muon([p], **kwargs),  # noqa: B023
                   lambda: torch.optim.Muon([tp], **kwargs), exc)  # noqa: B023
    same_error(lambda: mt.optim.Muon([mt.nn.Parameter(mt.ones(3))]),
               lambda: torch.optim.Muon([torch.nn.Parameter(torch.ones(3))]), ValueError)
    same_error(lambda: mt.optim.Muon([p], lr=mt.ones(2)),
               lambda: torch.optim.Muon([tp], lr=torch.ones(2)), ValueError)
    for kwargs in ({"ns_steps": 100}, {"ns_coefficients": (1.0, 2.0)}):
        m, t = mt.optim.Muon([p], **kwargs), torch.optim.Muon([tp], **kwargs)
        p.grad, tp.grad = mt.ones(2, 3), torch.ones(2, 3)
        same_error(m.step, t.step, ValueError)
    c, tc = (mt.nn.Parameter(mt.ones(2, 2, dtype=mt.complex64)),
             torch.nn.Parameter(torch.ones(2, 2, dtype=torch.complex64)))
    m, t = mt.optim.Muon([c]), torch.optim.Muon([tc])
    c.grad, tc.grad = mt.ones(2, 2, dtype=mt.complex64), torch.ones(2, 2, dtype=torch.complex64)
    same_error(m.step, t.step, RuntimeError)


def test_muon_without_grad_and_closure():
    p = mt.nn.Parameter(mt.ones(2, 3))
    opt = mt.optim.Muon([p])
    opt.step()  # no gradient: nothing happens, no state
    assert len(opt.state) == 0 and p.tolist() == [[1.0] * 3] * 2
    p.grad = mt.ones(2, 3)
    assert opt.step(lambda: 3.0) == 3.0
    assert "momentum_buffer" in opt.state[p]
