"""Learning-rate schedulers: the same lrs (and momenta) as torch.optim.lr_scheduler, step by
step, and state_dict resume."""

from __future__ import annotations

import math
import warnings

import pytest

import microtorch
from microtorch import optim
from microtorch.optim import lr_scheduler

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _lambda(epoch):
    return 0.95 ** epoch


SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=7)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
    ("LinearLR", dict()),
    ("LinearLR", dict(start_factor=0.5, end_factor=0.1, total_iters=8)),
    ("LambdaLR", dict(lr_lambda=_lambda)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=25)),
    ("OneCycleLR", dict(max_lr=[0.5, 2.0], total_steps=25, anneal_strategy="linear")),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=25, three_phase=True)),
    ("OneCycleLR", dict(max_lr=1.0, epochs=5, steps_per_epoch=5, cycle_momentum=False)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(SCHEDULERS)]
OPTIMIZERS = ["SGD", "Adam"]


def build(lib, opt_name: str, sched_name: str, kwargs: dict):
    make = torch.tensor if lib is torch else microtorch.tensor
    params = [make([1.0, 2.0], requires_grad=True), make([3.0], requires_grad=True)]
    extra = dict(momentum=0.9) if opt_name == "SGD" else {}
    opt = getattr(lib.optim, opt_name)([{"params": params[:1]},
                                        {"params": params[1:], "lr": 0.2}], lr=0.1, **extra)
    sched = getattr(lib.optim.lr_scheduler, sched_name)(opt, **kwargs)
    return params, opt, sched


def momenta(opt) -> list:
    return [g.get("betas", (g.get("momentum"),))[0] for g in opt.param_groups]


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS, ids=IDS)
@pytest.mark.parametrize("opt_name", OPTIMIZERS)
def test_matches_torch_step_by_step(name, kwargs, opt_name) -> None:
    _, ours_opt, ours = build(microtorch, opt_name, name, kwargs)
    _, ref_opt, ref = build(torch, opt_name, name, kwargs)
    assert ours.get_last_lr() == pytest.approx(ref.get_last_lr(), rel=1e-15)
    steps = 25 if name == "OneCycleLR" else 30
    for _ in range(steps - 1 if name == "OneCycleLR" else steps):
        ours_opt.step()
        ref_opt.step()
        ours.step()
        ref.step()
        assert ours.get_last_lr() == pytest.approx(ref.get_last_lr(), rel=1e-15, abs=1e-18)
        assert [g["lr"] for g in ours_opt.param_groups] == ours.get_last_lr()
        assert momenta(ours_opt) == pytest.approx(momenta(ref_opt), rel=1e-15)
        assert ours.last_epoch == ref.last_epoch
    assert [g["initial_lr"] for g in ours_opt.param_groups] == \
        [g["initial_lr"] for g in ref_opt.param_groups]


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS, ids=IDS)
def test_state_dict_resume(name, kwargs) -> None:
    _, opt, sched = build(microtorch, "SGD", name, kwargs)
    for _ in range(6):
        opt.step()
        sched.step()
    saved_sched, saved_opt = sched.state_dict(), opt.state_dict()
    expected = []
    for _ in range(6):
        opt.step()
        sched.step()
        expected.append(sched.get_last_lr())

    _, opt2, sched2 = build(microtorch, "SGD", name, kwargs)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_sched)
    for lrs in expected:
        opt2.step()
        sched2.step()
        assert sched2.get_last_lr() == lrs


def test_scheduler_drives_the_optimizer_lr() -> None:
    p = microtorch.tensor([1.0], requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for expected in (1.0, 0.5, 0.25):
        p.grad = microtorch.tensor([1.0])
        before = float(p.detach())
        opt.step()
        sched.step()
        assert before - float(p.detach()) == expected


def test_warns_when_stepped_before_the_optimizer() -> None:
    p = microtorch.tensor([1.0], requires_grad=True)
    sched = lr_scheduler.ExponentialLR(optim.SGD([p], lr=1.0), gamma=0.5)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt = optim.SGD([p], lr=1.0)
    sched = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


@pytest.mark.parametrize(("make", "error", "message"), [
    (lambda o: lr_scheduler.LinearLR(o, start_factor=0), ValueError, "Starting multiplicative"),
    (lambda o: lr_scheduler.LinearLR(o, end_factor=2), ValueError, "Ending multiplicative"),
    (lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0), ValueError, "total_steps OR"),
    (lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=2.0),
     ValueError, "pct_start"),
    (lambda o: lr_scheduler.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=10), ValueError,
     "same length"),
    (lambda o: lr_scheduler.LambdaLR(o, [_lambda, _lambda]), ValueError, "Expected 1"),
    (lambda o: lr_scheduler.StepLR(o, 2, last_epoch=3), KeyError, "initial_lr"),
    (lambda o: lr_scheduler.StepLR(object(), 2), TypeError, "is not an Optimizer"),
])
def test_bad_arguments(make, error, message) -> None:
    opt = optim.SGD([microtorch.tensor([1.0], requires_grad=True)], lr=0.1)
    with pytest.raises(error, match=message):
        make(opt)


def test_one_cycle_past_total_steps_raises() -> None:
    opt = optim.SGD([microtorch.tensor([1.0], requires_grad=True)], lr=0.1, momentum=0.9)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    opt.step()
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()


def test_cosine_closed_form_with_epoch_argument() -> None:
    opt = optim.SGD([microtorch.tensor([1.0], requires_grad=True)], lr=1.0)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    opt.step()
    with pytest.warns(UserWarning, match="deprecated"):
        sched.step(5)
    assert sched.get_last_lr() == [pytest.approx((1 + math.cos(math.pi / 2)) / 2)]
