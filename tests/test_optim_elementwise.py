"""Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD (and SparseAdam's error) against torch.optim.

Each configuration runs 24 steps with two parameter groups and a gradient plan that mixes
random, zero and None gradients, in float32 and float64, on every device and gradient storage.

Tolerances against PyTorch (the update order is PyTorch's; its CPU kernels fuse some multiply-
adds, NumPy rounds twice): float32 rtol 1e-6, float64 rtol 1e-14, each with an absolute term of
the same size times the largest magnitude of the tensor. Many configurations come out bit-exact;
the tolerance covers the ulp differences of the fused ones; the gradients are given, not
computed, so no step amplifies another's rounding and no reduction depends on the CPU. The one
trained model (``test_small_model_matches_torch``: its gradients come from a forward and a
backward) is compared against PyTorch's own spread instead (``_torch_spread``). Among
microtorch's own runs (gradient storages, resume from a state dict) the results are compared
bit for bit.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from _torch_spread import FLOAT32_EPS, assert_within_spread, torch_elsewhere
from test_optim import PLAN, SHAPES, set_grads, to_numpy

import microtorch
from microtorch import optim

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

RTOL = {"float32": 1e-6, "float64": 1e-14}
# The parameter SHAPES and their gradient PLAN are test_optim's.
GROUP_OF = [0, 0, 1, 1, 1]  # two param groups; the second overrides the lr
STEPS = 24
SCALAR_STATE = {"step", "mu_product", "eta", "mu"}

CONFIGS = {
    "Adadelta": [dict(), dict(lr=0.5, rho=0.8, eps=1e-5), dict(weight_decay=0.1),
                 dict(maximize=True, weight_decay=0.05), dict(rho=1.0, lr=0.1)],
    "Adamax": [dict(), dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6), dict(weight_decay=0.1),
               dict(maximize=True, weight_decay=0.05)],
    "NAdam": [dict(), dict(lr=0.01, betas=(0.8, 0.9), momentum_decay=0.01),
              dict(weight_decay=0.1), dict(weight_decay=0.1, decoupled_weight_decay=True),
              dict(maximize=True, weight_decay=0.05)],
    "RAdam": [dict(), dict(lr=0.01, betas=(0.8, 0.9)), dict(weight_decay=0.1),
              dict(weight_decay=0.1, decoupled_weight_decay=True),
              dict(maximize=True, betas=(0.5, 0.6))],
    "Rprop": [dict(), dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08)),
              dict(maximize=True)],
    "ASGD": [dict(), dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5), dict(t0=0, weight_decay=0.1),
             dict(maximize=True, t0=3)],
}
CASES = [(name, kw) for name, kws in CONFIGS.items() for kw in kws]
CASE_IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}"
            for name, kw in CASES]
STORAGES = {"default": {}, "foreach": dict(foreach=True), "flat": dict(flat_grads=True)}


def assert_close_to_scale(actual, expected, dtype: str) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    rtol = RTOL[dtype]
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def initial_arrays(dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def grad_arrays(step: int, dtype: str) -> list[np.ndarray | None]:
    rng = np.random.default_rng([1, step])
    out = []
    for shape, plan in zip(SHAPES, PLAN):
        kind = plan[step % len(plan)]
        g = rng.standard_normal(shape).astype(dtype)
        out.append(None if kind == "n" else np.zeros_like(g) if kind == "z" else g)
    return out


def build(lib, name: str, params, kwargs: dict, **extra):
    """The optimizer over two groups of ``params`` (``GROUP_OF``), the second at half the lr."""
    cls = getattr(lib.optim, name)
    lr = kwargs.get("lr", cls.__init__.__defaults__[0])
    first = [p for p, g in zip(params, GROUP_OF) if g == 0]
    second = [p for p, g in zip(params, GROUP_OF) if g == 1]
    return cls([{"params": first}, {"params": second, "lr": lr * 0.5}], **kwargs, **extra)


def mt_params(device: str, dtype: str, arrays=None) -> list[microtorch.Tensor]:
    arrays = initial_arrays(dtype) if arrays is None else arrays
    return [microtorch.tensor(a, requires_grad=True, device=device) for a in arrays]


def torch_params(dtype: str, arrays=None) -> list:
    arrays = initial_arrays(dtype) if arrays is None else arrays
    return [torch.tensor(a, requires_grad=True) for a in arrays]


def mt_to_torch_state(sd: dict) -> dict:
    """A microtorch state dict as PyTorch tensors, converted tensor by tensor."""
    def convert(v):
        return torch.tensor(to_numpy(v)) if isinstance(v, microtorch.Tensor) else v
    return {"state": {i: {k: convert(v) for k, v in s.items()} for i, s in sd["state"].items()},
            "param_groups": copy.deepcopy(sd["param_groups"])}


def torch_to_mt_state(sd: dict, device: str = "cpu") -> dict:
    """A PyTorch state dict as microtorch tensors, converted tensor by tensor."""
    def convert(v):
        return microtorch.tensor(v.numpy(), device=device) if isinstance(v, torch.Tensor) else v
    return {"state": {i: {k: convert(v) for k, v in s.items()} for i, s in sd["state"].items()},
            "param_groups": copy.deepcopy(sd["param_groups"])}


def assert_state_dicts_close(ours: dict, theirs: dict, dtype: str) -> None:
    assert ours["param_groups"] == theirs["param_groups"]
    assert set(ours["state"]) == set(theirs["state"])
    for index, state in theirs["state"].items():
        assert list(ours["state"][index]) == list(state), index  # same keys, same order
        for key, value in state.items():
            mine = ours["state"][index][key]
            if key in SCALAR_STATE:  # float32 0-d tensors in both, whatever the dtype
                assert mine.dtype == microtorch.float32 and mine.shape == ()
                assert value.dtype == torch.float32
                assert float(mine) == pytest.approx(float(value), rel=1e-6)
            else:
                assert_close_to_scale(to_numpy(mine), to_numpy(value), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("storage", list(STORAGES))
@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=CASE_IDS)
def test_matches_torch(device, name, kwargs, storage, dtype) -> None:
    ours = mt_params(device, dtype)
    theirs = torch_params(dtype)
    opt = build(microtorch, name, ours, kwargs, **STORAGES[storage])
    # (foreach=True, and None on CUDA, follows PyTorch's multi-tensor formula: ASGD, NAdam
    # and RAdam round it differently, ASGD's float32 eta by a float32 ulp)
    ref = build(torch, name, theirs, kwargs, foreach=storage == "foreach" or device == "cuda")
    for step in range(STEPS):
        grads = grad_arrays(step, dtype)
        set_grads(ours, grads, device)
        set_grads(theirs, grads, None)
        opt.step()
        ref.step()
        for p, q in zip(ours, theirs):
            assert p.dtype == getattr(microtorch, dtype)
            assert_close_to_scale(to_numpy(p), to_numpy(q), dtype)
    # the parameter that never had a gradient: untouched and without state
    np.testing.assert_array_equal(to_numpy(ours[3]), initial_arrays(dtype)[3])
    assert ours[3] not in opt.state
    ref_sd = ref.state_dict()
    for group in ref_sd["param_groups"]:
        group["foreach"] = STORAGES[storage].get("foreach")
    assert_state_dicts_close(opt.state_dict(), ref_sd, dtype)
    for state in opt.state.values():
        for key, value in state.items():
            if key not in SCALAR_STATE:
                assert value.dtype == getattr(microtorch, dtype), key


def train_model(lib, name: str, kwargs: dict, dtype: str, steps: int = 20, device=None,
                **extra):
    """A small MLP trained on a fixed regression batch; returns the parameters per step."""
    rng = np.random.default_rng(3)
    weights = [rng.standard_normal(s).astype(dtype) * 0.5 for s in [(8, 4), (8,), (2, 8), (2,)]]
    x = rng.standard_normal((16, 4)).astype(dtype)
    y = rng.standard_normal((16, 2)).astype(dtype)
    kw = {} if device is None else {"device": device}
    w1, b1, w2, b2 = [lib.tensor(w, requires_grad=True, **kw) for w in weights]
    xt, yt = lib.tensor(x, **kw), lib.tensor(y, **kw)
    opt = getattr(lib.optim, name)([{"params": [w1, b1]}, {"params": [w2, b2]}], **kwargs,
                                   **extra)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        hidden = lib.tanh(xt @ w1.T + b1)
        loss = ((hidden @ w2.T + b2 - yt) ** 2).mean()
        loss.backward()
        opt.step()
        history.append([to_numpy(p) for p in (w1, b1, w2, b2)])
    return history


@pytest.fixture(scope="module")
def torch_float32_elsewhere(tmp_path_factory) -> dict[str, list]:
    """PyTorch's float32 runs of ``train_model`` for every case, in its other thread counts
    and SIMD levels (``_torch_spread``)."""
    return torch_elsewhere(tmp_path_factory, "test_optim_elementwise:train_model",
                           [dict(name=name, kwargs=kwargs, dtype="float32", foreach=False)
                            for name, kwargs in CASES])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=CASE_IDS)
def test_small_model_matches_torch(request, name, kwargs, dtype) -> None:
    """20 steps of a two-layer MLP (forward, backward, step) against PyTorch, every step.

    float64: 1e-12 of each tensor's scale (float64 ulps that 20 steps amplify stay far below).
    float32, spread-derived (``_torch_spread``): per value, max(2 x PyTorch's spread over its
    thread counts and SIMD levels, floor), with floor = (step + 1) float32 ulps of the tensor's
    scale: each step rounds every parameter once more (``param - update``); the forward and
    backward's own rounding differences are relative to the update, which is small next to the
    parameter. What the trajectory amplifies beyond that, PyTorch's spread shows."""
    ours = train_model(microtorch, name, kwargs, dtype)
    theirs = train_model(torch, name, kwargs, dtype, foreach=False)
    if dtype == "float64":
        for step, (a, b) in enumerate(zip(ours, theirs)):
            for x, y in zip(a, b):
                scale = float(np.max(np.abs(y)))
                np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12 * scale,
                                           err_msg=f"step {step}")
        return
    case = CASES.index((name, kwargs))
    elsewhere = [runs[case] for runs in request.getfixturevalue("torch_float32_elsewhere")
                 .values()]
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for k, (x, y) in enumerate(zip(a, b)):
            floor = (step + 1) * FLOAT32_EPS * float(np.max(np.abs(y)))
            assert_within_spread(x, y, [run[step][k] for run in elsewhere], floor,
                                 err_msg=f"step {step}, parameter {k}")


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=CASE_IDS)
def test_storages_train_bit_identically(device, name, kwargs) -> None:
    # foreach=True also chooses PyTorch's multi-tensor formula (another rounding for ASGD,
    # NAdam and RAdam: test_fused_rounding compares it with PyTorch's), so each formula's
    # storages are compared among themselves
    for storages in ([{}, dict(flat_grads=True)],
                     [dict(foreach=True), dict(foreach=True, flat_grads=True)]):
        runs = [train_model(microtorch, name, kwargs, "float32", steps=8, device=device,
                            **extra) for extra in storages]
        for a, b in zip(*runs):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=CASE_IDS)
def test_resume_from_state_dict_is_bit_exact(device, name, kwargs) -> None:
    """Save after 12 steps, rebuild, load, continue: identical to never stopping."""
    straight = mt_params(device, "float32")
    opt = build(microtorch, name, straight, kwargs)
    for step in range(STEPS):
        set_grads(straight, grad_arrays(step, "float32"), device)
        opt.step()

    first = mt_params(device, "float32")
    opt1 = build(microtorch, name, first, kwargs)
    for step in range(12):
        set_grads(first, grad_arrays(step, "float32"), device)
        opt1.step()
    saved = copy.deepcopy(opt1.state_dict())
    snapshot = copy.deepcopy(saved)
    resumed = mt_params(device, "float32", [to_numpy(p) for p in first])
    opt2 = build(microtorch, name, resumed, kwargs)
    opt2.load_state_dict(saved)
    for step in range(12, STEPS):
        set_grads(resumed, grad_arrays(step, "float32"), device)
        opt2.step()
    for p, q in zip(resumed, straight):
        np.testing.assert_array_equal(to_numpy(p), to_numpy(q))
    for index, state in saved["state"].items():  # loading copied: the dict is unchanged
        for key, value in state.items():
            np.testing.assert_array_equal(to_numpy(value),
                                          to_numpy(snapshot["state"][index][key]))


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=CASE_IDS)
def test_state_dict_moves_between_frameworks(name, kwargs) -> None:
    """Torch -> microtorch and microtorch -> torch mid-run, tensor by tensor; both continue
    as the run that never moved."""
    dtype = "float32"
    theirs = torch_params(dtype)
    ref = build(torch, name, theirs, kwargs, foreach=False)
    ours = mt_params("cpu", dtype)
    opt = build(microtorch, name, ours, kwargs)
    for step in range(10):
        grads = grad_arrays(step, dtype)
        set_grads(theirs, grads, None)
        set_grads(ours, grads, "cpu")
        ref.step()
        opt.step()
    # torch's state into a fresh microtorch optimizer over torch's parameters
    moved_in = mt_params("cpu", dtype, [to_numpy(q) for q in theirs])
    opt_in = build(microtorch, name, moved_in, kwargs)
    opt_in.load_state_dict(torch_to_mt_state(ref.state_dict()))
    # microtorch's state into a fresh torch optimizer over microtorch's parameters
    moved_out = torch_params(dtype, [to_numpy(p) for p in ours])
    ref_out = build(torch, name, moved_out, kwargs, foreach=False)
    ref_out.load_state_dict(mt_to_torch_state(opt.state_dict()))
    for step in range(10, STEPS):
        grads = grad_arrays(step, dtype)
        for params, device in ((theirs, None), (moved_in, "cpu"), (moved_out, None)):
            set_grads(params, grads, device)
        ref.step()
        opt_in.step()
        ref_out.step()
    for p, q, r in zip(moved_in, theirs, moved_out):
        assert_close_to_scale(to_numpy(p), to_numpy(q), dtype)
        assert_close_to_scale(to_numpy(r), to_numpy(q), dtype)
    for state in ref_out.state.values():
        assert state["step"].dtype == torch.float32


@pytest.mark.parametrize("name", list(CONFIGS))
def test_add_param_group_mid_run(name) -> None:
    dtype = "float32"
    ours, theirs = mt_params("cpu", dtype), torch_params(dtype)
    opt = getattr(optim, name)(ours[:2])
    ref = getattr(torch.optim, name)(theirs[:2], foreach=False)
    for step in range(STEPS):
        if step == 5:
            opt.add_param_group({"params": ours[2:], "lr": 0.003})
            ref.add_param_group({"params": theirs[2:], "lr": 0.003})
        n = 2 if step < 5 else 5
        grads = grad_arrays(step, dtype)[:n]
        set_grads(ours[:n], grads, "cpu")
        set_grads(theirs[:n], grads, None)
        opt.step()
        ref.step()
    for p, q in zip(ours, theirs):
        assert_close_to_scale(to_numpy(p), to_numpy(q), dtype)
    ref_sd = ref.state_dict()
    for group in ref_sd["param_groups"]:
        group["foreach"] = None
    assert_state_dicts_close(opt.state_dict(), ref_sd, dtype)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_none_grad_skipped_and_zero_grad_is_a_step(name) -> None:
    p = microtorch.tensor([1.0, -2.0], requires_grad=True)
    q = microtorch.tensor([3.0], requires_grad=True)
    opt = getattr(optim, name)([p, q], weight_decay=0.1) if name not in ("Rprop",) else \
        getattr(optim, name)([p, q])
    p.grad = microtorch.zeros(2)
    opt.step()
    assert q not in opt.state  # None: no state, no step count
    assert float(opt.state[p]["step"]) == 1.0
    opt.step()
    assert float(opt.state[p]["step"]) == 2.0
    # the same in PyTorch: the zero gradient is a real step
    tp = torch.tensor([1.0, -2.0], requires_grad=True)
    tq = torch.tensor([3.0], requires_grad=True)
    ref = getattr(torch.optim, name)([tp, tq], weight_decay=0.1) if name != "Rprop" else \
        getattr(torch.optim, name)([tp, tq])
    tp.grad = torch.zeros(2)
    ref.step()
    ref.step()
    np.testing.assert_allclose(to_numpy(p), to_numpy(tp), rtol=1e-6)
    assert tq not in ref.state


BAD = [
    ("Adadelta", dict(lr=-1.0)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(eps=-1.0)),
    ("Adadelta", dict(weight_decay=-1.0)),
    ("Adamax", dict(lr=-1.0)), ("Adamax", dict(betas=(1.0, 0.9))), ("Adamax", dict(eps=-1.0)),
    ("Adamax", dict(betas=(0.9, -0.1))), ("Adamax", dict(weight_decay=-1.0)),
    ("NAdam", dict(momentum_decay=-1.0)), ("NAdam", dict(betas=(0.9, 1.0))),
    ("RAdam", dict(lr=-0.1)), ("RAdam", dict(weight_decay=-0.1)),
    ("Rprop", dict(lr=-1.0)), ("Rprop", dict(etas=(1.5, 2.0))), ("Rprop", dict(etas=(0.5, 0.9))),
    ("ASGD", dict(lr=-1.0)), ("ASGD", dict(weight_decay=-1.0)),
    ("SparseAdam", dict(lr=0.0)), ("SparseAdam", dict(eps=0.0)),
    ("SparseAdam", dict(betas=(0.9, 1.0))),
]


@pytest.mark.parametrize(("name", "kwargs"), BAD)
def test_bad_hyperparameters_raise_torchs_message(name, kwargs) -> None:
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        getattr(optim, name)([microtorch.zeros(1, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_flags_accepted_as_in_torch(name) -> None:
    """``capturable`` and ``foreach`` are stored as given; ``differentiable=True`` raises."""
    opt = getattr(optim, name)([microtorch.zeros(2, requires_grad=True)], capturable=True,
                               foreach=True)
    ref = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], capturable=True,
                                     foreach=True)
    assert opt.param_groups[0].keys() - {"params"} == ref.param_groups[0].keys() - {"params"}
    assert opt.param_groups[0]["capturable"] is True
    with pytest.raises(ValueError, match="differentiable"):
        getattr(optim, name)([microtorch.zeros(2, requires_grad=True)], differentiable=True)
    assert "capturable" in getattr(optim, name).__doc__


def test_sparse_adam_refuses_dense_gradients_like_torch() -> None:
    p = microtorch.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SparseAdam([p], lr=0.1)
    ref = torch.optim.SparseAdam([torch.tensor([1.0, 2.0], requires_grad=True)], lr=0.1)
    assert opt.state_dict()["param_groups"] == ref.state_dict()["param_groups"]
    opt.step()  # no gradient: nothing to do
    p.grad = microtorch.ones(2)
    ref.param_groups[0]["params"][0].grad = torch.ones(2)
    with pytest.raises(RuntimeError, match="does not support dense gradients") as ours:
        opt.step()
    with pytest.raises(RuntimeError, match="does not support dense gradients") as theirs:
        ref.step()
    assert str(ours.value) == str(theirs.value)
    np.testing.assert_array_equal(to_numpy(p), [1.0, 2.0])
    assert len(opt.state) == 0


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", *CONFIGS])
def test_bad_gradient_fails_before_any_write(name) -> None:
    """A gradient that does not fit its parameter (here the parameter's ``.data`` was replaced
    after backward) raises naming the parameter and both shapes; nothing changes."""
    good = [microtorch.tensor([1.0, 2.0], requires_grad=True),
            microtorch.tensor([3.0], requires_grad=True)]
    bad = microtorch.zeros(3, requires_grad=True)
    opt = getattr(optim, name)([{"params": good}, {"params": [bad]}], lr=0.1)
    for p in (*good, bad):
        p.grad = microtorch.ones(p.shape)
    opt.step()
    before = copy.deepcopy(opt.state_dict())
    values = [to_numpy(p) for p in good]
    for p in (*good, bad):
        p.grad = microtorch.ones(p.shape)
    bad.data = microtorch.zeros(2, 2)
    with pytest.raises(RuntimeError, match=r"parameter 2 \(in param_groups\[1\]\).*"
                                           r"gradient \[3\].*parameter \[2, 2\]"):
        opt.step()
    for p, v in zip(good, values):
        np.testing.assert_array_equal(to_numpy(p), v)
    after = opt.state_dict()
    for index, state in before["state"].items():
        for key, value in state.items():
            np.testing.assert_array_equal(to_numpy(after["state"][index][key]),
                                          to_numpy(value))


def test_bad_gradient_dtype_fails_before_any_write() -> None:
    """A gradient of another kind (integer for a float parameter) cannot be applied."""
    p = microtorch.tensor([1.0, 2.0], requires_grad=True)
    q = microtorch.tensor([1.0], requires_grad=True)
    opt = optim.NAdam([p, q])
    p.grad = microtorch.ones(2)
    q.grad = microtorch.ones(1)
    q.data = microtorch.tensor([1], dtype=microtorch.int64)
    with pytest.raises(RuntimeError, match=r"parameter 1 .*float32.*int64"):
        opt.step()
    np.testing.assert_array_equal(to_numpy(p), [1.0, 2.0])
    assert len(opt.state) == 0


def test_wider_gradient_is_applied_in_the_parameters_dtype() -> None:
    """A float64 gradient of a float32 parameter (a dtype leak upstream) warns and is applied
    rounded to float32, as PyTorch would have stored it: state and parameter stay float32."""
    p = microtorch.tensor([1.0, 2.0], dtype=microtorch.float64, requires_grad=True)
    p.grad = microtorch.tensor([0.1, -0.3], dtype=microtorch.float64)
    p.data = microtorch.tensor([1.0, 2.0])
    opt = optim.Adam([p], lr=0.1)
    with pytest.warns(UserWarning, match="parameter 0 is microtorch.float64"):
        opt.step()
    ref_p = torch.tensor([1.0, 2.0], requires_grad=True)
    ref_p.grad = torch.tensor([0.1, -0.3])
    ref = torch.optim.Adam([ref_p], lr=0.1)
    ref.step()
    assert p.dtype == microtorch.float32
    assert opt.state[p]["exp_avg"].dtype == microtorch.float32
    np.testing.assert_allclose(to_numpy(p), to_numpy(ref_p), rtol=1e-6)
