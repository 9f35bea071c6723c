"""LBFGS against torch.optim.LBFGS: iterates, losses, evaluation and iteration counts, the
closure protocol, tolerances, history, strong-Wolfe line search, state dicts.

Tolerances: float64 rtol 1e-10 (the dot products sum in a different order than PyTorch's, and
the line search amplifies ulps a little); float32 rtol 1e-5 over the first three steps (early
steps, before the line search works at the tolerances, where an ulp decides when to stop and
rounding gets amplified) on configurations whose branch decisions are not decided by an ulp (a
float32 line search near convergence can take a different branch than PyTorch's, which the
float64 runs cover). Counts must be equal.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from test_optim import to_numpy

import microtorch
from microtorch import optim

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

CONFIGS = [
    dict(),
    dict(line_search_fn="strong_wolfe"),
    dict(history_size=3, max_iter=7, lr=0.5),
    dict(line_search_fn="strong_wolfe", history_size=2, max_eval=9),
    dict(max_iter=4, tolerance_change=1e-4),
    dict(tolerance_grad=1e-2, line_search_fn="strong_wolfe"),
    dict(max_iter=3, max_eval=2),
]
IDS = ["-".join(f"{k}={v}" for k, v in kw.items()) or "defaults" for kw in CONFIGS]
FLOAT32_CONFIGS = [0, 1, 2]  # indices of CONFIGS that float32 follows to 1e-5


def problem(lib, dtype: str, device: str | None = None):
    """A small non-quadratic regression: parameters, and a closure factory."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((10, 5)).astype(dtype)
    b = rng.standard_normal(10).astype(dtype)
    kw = {} if device is None else {"device": device}
    w = lib.tensor((rng.standard_normal(5) * 0.1).astype(dtype), requires_grad=True, **kw)
    c = lib.tensor(np.zeros(1, dtype), requires_grad=True, **kw)
    at, bt = lib.tensor(a, **kw), lib.tensor(b, **kw)

    def make_closure(opt, counter=None):
        def closure():
            if counter is not None:
                counter.append(lib.is_grad_enabled())
            opt.zero_grad()
            r = at @ w + c - bt
            loss = (r * r).mean() + (w ** 4).sum() * 0.1
            loss.backward()
            return loss
        return closure
    return [w, c], make_closure


def run(lib, dtype: str, kwargs: dict, steps: int = 6, device=None, **extra):
    params, make_closure = problem(lib, dtype, device)
    opt = lib.optim.LBFGS(params, **kwargs, **extra)
    closure = make_closure(opt)
    trace = []
    for _ in range(steps):
        loss = opt.step(closure)
        state = opt.state[params[0]]
        trace.append((float(loss.detach()), [to_numpy(p) for p in params],
                      state["func_evals"], state["n_iter"]))
    return trace, opt, params, closure


def assert_traces_match(ours, theirs, rtol: float) -> None:
    for step, ((l1, p1, e1, n1), (l2, p2, e2, n2)) in enumerate(zip(ours, theirs)):
        assert (e1, n1) == (e2, n2), f"step {step}: func_evals, n_iter"
        assert l1 == pytest.approx(l2, rel=rtol, abs=1e-300)
        scale = max(float(np.max(np.abs(b))) for b in p2)  # of all parameters together
        for a, b in zip(p1, p2):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("kwargs", CONFIGS, ids=IDS)
def test_matches_torch_float64(device, kwargs) -> None:
    ours, *_ = run(microtorch, "float64", kwargs, device=device)
    theirs, *_ = run(torch, "float64", kwargs)
    assert_traces_match(ours, theirs, 1e-10)


@pytest.mark.parametrize("index", FLOAT32_CONFIGS)
def test_matches_torch_float32(index) -> None:
    # three steps: later ones reach the tolerances, where an ulp decides when to stop
    ours, opt, params, _ = run(microtorch, "float32", CONFIGS[index], steps=3)
    theirs, *_ = run(torch, "float32", CONFIGS[index], steps=3)
    assert_traces_match(ours, theirs, 1e-5)
    state = opt.state[params[0]]
    assert state["d"].dtype == microtorch.float32
    assert all(r.dtype == microtorch.float32 for r in state["ro"])


@pytest.mark.parametrize("kwargs", CONFIGS[:4], ids=IDS[:4])
def test_state_dict_keys_and_resume_bit_exact(device, kwargs) -> None:
    straight, *_ = run(microtorch, "float64", kwargs, steps=5, device=device)
    _, opt1, params1, _ = run(microtorch, "float64", kwargs, steps=2, device=device)
    saved = copy.deepcopy(opt1.state_dict())
    _, ref, *_ = run(torch, "float64", kwargs, steps=2)
    ref_sd = ref.state_dict()
    assert list(saved["state"][0]) == list(ref_sd["state"][0])
    assert saved["param_groups"] == ref_sd["param_groups"]

    params, make_closure = problem(microtorch, "float64", device)
    for p, q in zip(params, params1):
        p.data = q.detach().clone()
    opt2 = optim.LBFGS(params, **kwargs)
    opt2.load_state_dict(saved)
    closure = make_closure(opt2)
    for step in range(2, 5):
        opt2.step(closure)
        for p, a in zip(params, straight[step][1]):
            np.testing.assert_array_equal(to_numpy(p), a)


def _convert(value, make):
    if isinstance(value, list):
        return [_convert(v, make) for v in value]
    if isinstance(value, (microtorch.Tensor, torch.Tensor)):
        return make(to_numpy(value))
    return value


@pytest.mark.parametrize("kwargs", CONFIGS[:4], ids=IDS[:4])
def test_state_dict_moves_between_frameworks(kwargs) -> None:
    straight, *_ = run(torch, "float64", kwargs, steps=5)
    for src_lib, dst_lib, make in ((torch, microtorch, microtorch.tensor),
                                   (microtorch, torch, torch.tensor)):
        _, src, src_params, _ = run(src_lib, "float64", kwargs, steps=2)
        sd = src.state_dict()
        moved = {"state": {i: {k: _convert(v, make) for k, v in s.items()}
                           for i, s in sd["state"].items()},
                 "param_groups": copy.deepcopy(sd["param_groups"])}
        params, make_closure = problem(dst_lib, "float64")
        with dst_lib.no_grad():
            for p, q in zip(params, src_params):
                p.copy_(dst_lib.tensor(to_numpy(q)))
        dst = dst_lib.optim.LBFGS(params, **kwargs)
        dst.load_state_dict(moved)
        closure = make_closure(dst)
        for step in range(2, 5):
            dst.step(closure)
            for p, a in zip(params, straight[step][1]):
                np.testing.assert_allclose(to_numpy(p), a, rtol=1e-10, atol=1e-12)


def test_closure_protocol() -> None:
    params, make_closure = problem(microtorch, "float64")
    opt = optim.LBFGS(params, max_iter=3)
    grad_modes: list[bool] = []
    closure = make_closure(opt, grad_modes)
    first = closure().item()
    with microtorch.no_grad():
        loss = opt.step(closure)  # the closure still runs with gradients enabled
    assert loss.item() == pytest.approx(first)  # the loss of the first evaluation
    assert grad_modes and all(grad_modes)
    assert opt.state[params[0]]["func_evals"] == len(grad_modes) - 1
    with pytest.raises(RuntimeError, match="requires a closure"):
        opt.step(None)


def test_optimal_start_returns_after_one_evaluation() -> None:
    w = microtorch.tensor([0.0, 0.0], requires_grad=True)
    opt = optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    opt.step(closure)
    state = opt.state[w]
    assert state["func_evals"] == 1 and state["n_iter"] == 0 and "d" not in state
    tw = torch.tensor([0.0, 0.0], requires_grad=True)
    ref = torch.optim.LBFGS([tw])

    def tclosure():
        ref.zero_grad()
        loss = (tw * tw).sum()
        loss.backward()
        return loss
    ref.step(tclosure)
    assert set(ref.state[tw]) == set(state)


def test_parameter_without_gradient_is_left_alone() -> None:
    params, make_closure = problem(microtorch, "float64")
    unused = microtorch.tensor([5.0, 6.0], dtype=microtorch.float64, requires_grad=True)
    opt = optim.LBFGS([*params, unused], line_search_fn="strong_wolfe")
    closure = make_closure(opt)
    opt.step(closure)
    np.testing.assert_array_equal(to_numpy(unused), [5.0, 6.0])
    assert opt.state[params[0]]["d"].shape == (8,)


def test_flat_grads_is_bit_identical() -> None:
    a, *_ = run(microtorch, "float32", CONFIGS[1], steps=3)
    b, *_ = run(microtorch, "float32", CONFIGS[1], steps=3, flat_grads=True)
    for (_, pa, *_), (_, pb, *_) in zip(a, b):
        for x, y in zip(pa, pb):
            np.testing.assert_array_equal(x, y)


def test_errors() -> None:
    p = microtorch.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [p]}, {"params": [microtorch.tensor([1.0],
                                                                     requires_grad=True)]}])
    opt = optim.LBFGS([p])
    with pytest.raises(ValueError, match="parameter groups"):
        opt.add_param_group({"params": [microtorch.tensor([2.0], requires_grad=True)]})
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.LBFGS([p], lr=-1.0)
    bad = optim.LBFGS([p], line_search_fn="armijo")
    p.grad = microtorch.ones(1)
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        bad.step(lambda: (p * p).sum())
    assert len(bad.state) == 0 and p.item() == 1.0
    with pytest.raises(ValueError, match="has shape"):
        opt.load_state_dict({"state": {0: {"d": microtorch.zeros(3), "func_evals": 1}},
                             "param_groups": opt.state_dict()["param_groups"]})
