"""Optimizers against torch.optim: every option over several steps, None and zero gradients,
state dicts (format, save/resume bit for bit, validation), hyperparameter errors.

Tolerance against PyTorch: rtol 1e-6 with an absolute term of the same size times the largest
magnitude. PyTorch's CPU kernels use FMA (``grad.add(param, alpha=wd)``, ``lerp_``,
``addcmul_`` are one rounding in PyTorch, two in NumPy), so single elements differ by an ulp;
elements that come out of cancellation carry that error at the scale of the tensor. The
gradients are given (fixed arrays), not computed, so no step amplifies another's rounding and no
reduction sums in a CPU-dependent order: each step adds only the ulps of its own elementwise
formulas, which this covers on any CPU (no spread to measure).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import microtorch
from microtorch import optim

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

RTOL = 1e-6
SHAPES = [(3, 4), (5,), (2, 3), (4,), ()]
# Per parameter: what its gradient is at each step ("r" random, "z" zeros, "n" None).
PLAN = ["rrrrrrrr", "nrrnrrnr", "rzrzzrrz", "nnnnnnnn", "zrrrnrrr"]

CONFIGS = {
    "SGD": [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, dampening=0.3),
            dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
            dict(lr=0.05, weight_decay=0.1, maximize=True),
            dict(lr=0.05, momentum=0.5, weight_decay=0.1, maximize=True)],
    "Adam": [dict(), dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6), dict(lr=0.01, weight_decay=0.1),
             dict(lr=0.01, amsgrad=True), dict(lr=0.01, maximize=True, weight_decay=0.05),
             dict(lr=0.01, betas=(0.3, 0.5))],
    "AdamW": [dict(), dict(lr=0.01, weight_decay=0.1), dict(lr=0.01, amsgrad=True),
              dict(lr=0.01, maximize=True, weight_decay=0.0)],
    "RMSprop": [dict(), dict(alpha=0.9, eps=1e-6), dict(momentum=0.9), dict(centered=True),
                dict(centered=True, momentum=0.5, weight_decay=0.1),
                dict(maximize=True, weight_decay=0.01)],
    "Adagrad": [dict(), dict(lr=0.1, lr_decay=0.01), dict(weight_decay=0.1),
                dict(initial_accumulator_value=0.5, eps=1e-6), dict(maximize=True)],
}
CASES = [(name, kw) for name, kws in CONFIGS.items() for kw in kws]
CASE_IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}"
            for name, kw in CASES]


def assert_close_to_scale(actual, expected, rtol: float = RTOL) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def to_numpy(t) -> np.ndarray:
    if isinstance(t, microtorch.Tensor):
        return np.array(t.detach().cpu().numpy())
    return t.detach().numpy().copy()


def initial_arrays(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


def grad_arrays(step: int, seed: int = 1) -> list[np.ndarray | None]:
    rng = np.random.default_rng([seed, step])
    out = []
    for shape, plan in zip(SHAPES, PLAN):
        kind = plan[step % len(plan)]
        g = rng.standard_normal(shape).astype(np.float32)
        out.append(None if kind == "n" else np.zeros_like(g) if kind == "z" else g)
    return out


def mt_params(device: str, arrays=None) -> list[microtorch.Tensor]:
    arrays = initial_arrays() if arrays is None else arrays
    return [microtorch.tensor(a, requires_grad=True, device=device) for a in arrays]


def set_grads(params, grads, device: str | None) -> None:
    for p, g in zip(params, grads):
        if g is None:
            p.grad = None
        elif device is None:
            p.grad = torch.tensor(g)
        else:
            p.grad = microtorch.tensor(g, device=device)


def assert_state_dicts_close(ours: dict, theirs: dict) -> None:
    assert ours["param_groups"] == theirs["param_groups"]
    assert set(ours["state"]) == set(theirs["state"])
    for index, state in theirs["state"].items():
        assert set(ours["state"][index]) == set(state), index
        for key, value in state.items():
            mine = ours["state"][index][key]
            if key == "step":
                assert mine.dtype == microtorch.float32 and mine.shape == ()
                assert float(mine) == float(value)
            else:
                assert_close_to_scale(to_numpy(mine), to_numpy(value))


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=CASE_IDS)
@pytest.mark.parametrize("storage", ["default", "foreach", "flat"])
def test_matches_torch(device, name, kwargs, storage) -> None:
    extra = {"foreach": dict(foreach=True), "flat": dict(flat_grads=True)}.get(storage, {})
    ours = mt_params(device)
    theirs = [torch.tensor(a, requires_grad=True) for a in initial_arrays()]
    opt = getattr(optim, name)(ours, **kwargs, **extra)
    ref = getattr(torch.optim, name)(theirs, **kwargs, foreach=storage == "foreach")
    for step in range(8):
        grads = grad_arrays(step)
        set_grads(ours, grads, device)
        set_grads(theirs, grads, None)
        opt.step()
        ref.step()
        for p, q in zip(ours, theirs):
            assert p.dtype == microtorch.float32
            assert_close_to_scale(to_numpy(p), to_numpy(q))
    # the parameter that never had a gradient: untouched, and no state unless PyTorch has one
    np.testing.assert_array_equal(to_numpy(ours[3]), initial_arrays()[3])
    ref_sd = ref.state_dict()
    ours_sd = opt.state_dict()
    for group in ref_sd["param_groups"]:
        group["foreach"] = extra.get("foreach")
    assert_state_dicts_close(ours_sd, ref_sd)
    for state in opt.state.values():
        for value in state.values():
            if isinstance(value, microtorch.Tensor):
                assert value.dtype == microtorch.float32


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=CASE_IDS)
def test_resume_from_state_dict_is_bit_exact(device, name, kwargs) -> None:
    """Save after 4 steps, rebuild everything, load, continue: identical to never stopping."""
    straight = mt_params(device)
    opt = getattr(optim, name)(straight, **kwargs)
    for step in range(8):
        set_grads(straight, grad_arrays(step), device)
        opt.step()

    first = mt_params(device)
    opt1 = getattr(optim, name)(first, **kwargs)
    for step in range(4):
        set_grads(first, grad_arrays(step), device)
        opt1.step()
    saved = copy.deepcopy(opt1.state_dict())
    resumed = mt_params(device, [to_numpy(p) for p in first])
    opt2 = getattr(optim, name)(resumed, **kwargs)
    opt2.load_state_dict(saved)
    snapshot = copy.deepcopy(saved)
    for step in range(4, 8):
        set_grads(resumed, grad_arrays(step), device)
        opt2.step()
    for p, q in zip(resumed, straight):
        np.testing.assert_array_equal(to_numpy(p), to_numpy(q))
    # the loaded dict was copied: stepping did not write into it
    for index, state in saved["state"].items():
        for key, value in state.items():
            if isinstance(value, microtorch.Tensor):
                np.testing.assert_array_equal(to_numpy(value),
                                              to_numpy(snapshot["state"][index][key]))


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_loads_a_torch_state_dict(name) -> None:
    """PyTorch's state dict format loads as is (tensors converted) and training continues."""
    kwargs = dict(lr=0.01, momentum=0.9) if name in ("SGD", "RMSprop") else dict(lr=0.01)
    theirs = [torch.tensor(a, requires_grad=True) for a in initial_arrays()]
    ref = getattr(torch.optim, name)(theirs, **kwargs)
    for step in range(3):
        set_grads(theirs, grad_arrays(step), None)
        ref.step()
    ours = mt_params("cpu", [to_numpy(q) for q in theirs])
    opt = getattr(optim, name)(ours, **kwargs)
    opt.load_state_dict(ref.state_dict())
    for step in range(3, 6):
        grads = grad_arrays(step)
        set_grads(theirs, grads, None)
        set_grads(ours, grads, "cpu")
        ref.step()
        opt.step()
    for p, q in zip(ours, theirs):
        assert_close_to_scale(to_numpy(p), to_numpy(q))


def test_zero_grad_is_a_real_step_and_none_is_skipped() -> None:
    p = microtorch.tensor([1.0, -2.0], requires_grad=True)
    q = microtorch.tensor([3.0], requires_grad=True)
    opt = optim.SGD([p, q], lr=0.1, momentum=0.9, weight_decay=0.5)
    p.grad = microtorch.zeros(2)
    opt.step()
    assert to_numpy(p).tolist() == pytest.approx([0.95, -1.9])  # weight decay still shrinks
    assert q not in opt.state and to_numpy(q).tolist() == [3.0]
    opt.step()  # momentum keeps it moving with a zero gradient
    assert to_numpy(p)[0] < 0.95 * 0.95


def test_adam_step_counts_only_real_steps() -> None:
    p = microtorch.tensor([1.0], requires_grad=True)
    q = microtorch.tensor([1.0], requires_grad=True)
    opt = optim.Adam([p, q])
    for i in range(3):
        p.grad = microtorch.tensor([0.0])
        q.grad = microtorch.tensor([1.0]) if i == 1 else None
        opt.step()
    assert float(opt.state[p]["step"]) == 3.0
    assert float(opt.state[q]["step"]) == 1.0


def test_closure_runs_with_grad_enabled_and_returns_loss() -> None:
    p = microtorch.tensor([2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with microtorch.no_grad():
        loss = opt.step(closure)
    assert float(loss) == 4.0
    assert to_numpy(p).tolist() == pytest.approx([1.6])


def test_updates_in_place_without_replacing_the_array() -> None:
    p = microtorch.tensor([1.0, 2.0], requires_grad=True)
    arr = p._data
    view = p.detach()
    opt = optim.Adam([p], lr=0.1)
    p.grad = microtorch.tensor([1.0, 1.0])
    opt.step()
    assert p._data is arr
    np.testing.assert_array_equal(to_numpy(view), to_numpy(p))


def test_float32_stays_float32() -> None:
    """Parameters and every state tensor stay float32 under every optimizer and option."""
    created = []
    for name, kwargs in CASES:
        params = mt_params("cpu")
        opt = getattr(optim, name)(params, **kwargs)
        for step in range(2):
            set_grads(params, grad_arrays(step), "cpu")
            opt.step()
        for p in params:
            assert p._data.dtype == np.float32
        for state in opt.state.values():
            for value in state.values():
                if isinstance(value, microtorch.Tensor):
                    created.append(value._data.dtype)
    assert set(created) == {np.dtype(np.float32)}


# --------------------------------------------------------------------------- param groups


def test_param_groups_and_defaults() -> None:
    a = microtorch.tensor([1.0], requires_grad=True)
    b = microtorch.tensor([1.0], requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["params"] == [b] and opt.param_groups[1]["momentum"] == 0.9
    assert opt.defaults["lr"] == 0.1
    c = microtorch.tensor([1.0], requires_grad=True)
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert len(opt.param_groups) == 3 and opt.param_groups[2]["lr"] == 0.1
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1], [2]]


@pytest.mark.parametrize("make", [
    lambda p: optim.SGD([], lr=0.1),
    lambda p: optim.Adam([]),
])
def test_empty_parameter_list(make) -> None:
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        make(None)


def test_parameter_in_two_groups() -> None:
    a = microtorch.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        optim.SGD([{"params": [a]}, {"params": [a], "lr": 1.0}], lr=0.1)
    opt = optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": a})
    assert len(opt.param_groups) == 1


def test_bad_params() -> None:
    a = microtorch.tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(a, lr=0.1)
    with pytest.raises(TypeError, match="only optimize Tensors"):
        optim.SGD([a, 1.0], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([a * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {a}}], lr=0.1)


BAD_HYPERPARAMETERS = [
    ("SGD", dict(lr=-0.1)), ("SGD", dict(lr=0.1, momentum=-1)),
    ("SGD", dict(lr=0.1, weight_decay=-1)), ("SGD", dict(lr=0.1, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)),
    ("Adam", dict(lr=-1)), ("Adam", dict(eps=-1)), ("Adam", dict(betas=(1.0, 0.9))),
    ("Adam", dict(betas=(0.9, -0.1))), ("Adam", dict(weight_decay=-1)),
    ("AdamW", dict(lr=-1)), ("AdamW", dict(betas=(0.9, 1.0))),
    ("RMSprop", dict(lr=-1)), ("RMSprop", dict(eps=-1)), ("RMSprop", dict(momentum=-1)),
    ("RMSprop", dict(weight_decay=-1)), ("RMSprop", dict(alpha=-1)),
    ("Adagrad", dict(lr=-1)), ("Adagrad", dict(lr_decay=-1)), ("Adagrad", dict(weight_decay=-1)),
    ("Adagrad", dict(initial_accumulator_value=-1)), ("Adagrad", dict(eps=-1)),
]


@pytest.mark.parametrize(("name", "kwargs"), BAD_HYPERPARAMETERS)
def test_bad_hyperparameters_raise_torchs_message(name, kwargs) -> None:
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        getattr(optim, name)([microtorch.zeros(1, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError) as in_group:  # per-group overrides are checked too
        getattr(optim, name)([{"params": [microtorch.zeros(1, requires_grad=True)], **kwargs}],
                             **({"lr": 0.1} if name == "SGD" else {}))
    assert str(in_group.value) == str(theirs.value)


# --------------------------------------------------------------------------- bad state dicts


def trained_adam(amsgrad: bool = False):
    params = mt_params("cpu")
    opt = optim.Adam([{"params": params[:2]}, {"params": params[2:], "lr": 0.01}],
                     amsgrad=amsgrad)
    for step in range(3):
        set_grads(params, grad_arrays(step), "cpu")
        opt.step()
    return params, opt


def snapshot(opt) -> dict:
    sd = opt.state_dict()
    return {"groups": copy.deepcopy(sd["param_groups"]),
            "state": {i: {k: to_numpy(v) for k, v in s.items()} for i, s in sd["state"].items()},
            "objects": {id(v) for s in opt.state.values() for v in s.values()}}


def assert_unchanged(opt, before: dict) -> None:
    after = snapshot(opt)
    assert after["groups"] == before["groups"]
    assert after["objects"] == before["objects"]
    assert after["state"].keys() == before["state"].keys()
    for i, state in before["state"].items():
        for k, v in state.items():
            np.testing.assert_array_equal(after["state"][i][k], v)


def _drop_group(sd):
    sd["param_groups"].pop()


def _extra_param(sd):
    sd["param_groups"][0]["params"].append(99)


def _wrong_shape(sd):
    sd["state"][0]["exp_avg"] = microtorch.zeros(7)


def _missing_state_key(sd):
    del sd["state"][1]["exp_avg_sq"]


def _missing_hyperparameter(sd):
    del sd["param_groups"][1]["betas"]


def _bad_hyperparameter(sd):
    sd["param_groups"][1]["lr"] = -1.0


def _unknown_index(sd):
    sd["state"][42] = sd["state"][0]


def _bad_step(sd):
    sd["state"][0]["step"] = microtorch.zeros(2)


def _missing_state(sd):
    del sd["state"]


def _amsgrad_without_max(sd):
    sd["param_groups"][0]["amsgrad"] = True


@pytest.mark.parametrize(("corrupt", "message"), [
    (_drop_group, "different number of parameter groups"),
    (_extra_param, "doesn't match the size of optimizer's group"),
    (_wrong_shape, "'exp_avg' of parameter 0 has shape \\[7\\]"),
    (_missing_state_key, "parameter 1 is missing 'exp_avg_sq'"),
    (_missing_hyperparameter, "group 1 of the loaded state dict is missing 'betas'"),
    (_bad_hyperparameter, "Invalid learning rate: -1.0"),
    (_unknown_index, "parameter 42"),
    (_bad_step, "'step' of parameter 0 must be a scalar"),
    (_missing_state, "missing the 'state' key"),
    (_amsgrad_without_max, "missing 'max_exp_avg_sq'"),
])
def test_bad_state_dict_raises_and_changes_nothing(corrupt, message) -> None:
    _, opt = trained_adam()
    before = snapshot(opt)
    sd = copy.deepcopy(opt.state_dict())
    corrupt(sd)
    with pytest.raises(ValueError, match=message):
        opt.load_state_dict(sd)
    assert_unchanged(opt, before)


def test_state_dict_load_casts_and_copies() -> None:
    params, opt = trained_adam()
    sd = copy.deepcopy(opt.state_dict())
    opt.load_state_dict(sd)
    for i, p in enumerate(params[:3]):
        loaded = opt.state[p]["exp_avg"]
        assert loaded is not sd["state"][i]["exp_avg"]
        assert loaded._data is not sd["state"][i]["exp_avg"]._data
    sd["state"][0]["exp_avg"] = sd["state"][0]["exp_avg"].double()  # cast to the param's dtype
    opt.load_state_dict(sd)
    assert opt.state[params[0]]["exp_avg"].dtype == microtorch.float32
