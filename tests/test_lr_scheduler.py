"""Learning-rate schedulers: the same lrs (and momenta) as torch.optim.lr_scheduler, step by
step, and state_dict resume."""

from __future__ import annotations

import copy
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


# -- every scheduler against PyTorch, exactly ----------------------------------------------------
# Each entry builds a scheduler from a library's lr_scheduler module and an optimizer, so the
# same line runs in both frameworks.
class _Halving:
    """A callable object: its state is saved in scheduler state dicts (functions are not)."""

    def __init__(self) -> None:
        self.factor = 0.5

    def __call__(self, epoch):
        return self.factor ** (epoch // 4)


def _scale(x):
    return 1.0 / (1.0 + 0.1 * x)


FACTORIES = {
    "StepLR": lambda L, o: L.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda L, o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda L, o: L.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda L, o: L.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "LinearLR": lambda L, o: L.LinearLR(o, start_factor=0.5, end_factor=0.1, total_iters=8),
    "LambdaLR": lambda L, o: L.LambdaLR(o, lr_lambda=_lambda),
    "LambdaLR-object": lambda L, o: L.LambdaLR(o, lr_lambda=[_Halving(), _lambda]),
    "MultiplicativeLR": lambda L, o: L.MultiplicativeLR(o, lr_lambda=lambda e: 0.97),
    "ConstantLR": lambda L, o: L.ConstantLR(o),
    "ConstantLR-half": lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=7),
    "PolynomialLR": lambda L, o: L.PolynomialLR(o),
    "PolynomialLR-square": lambda L, o: L.PolynomialLR(o, total_iters=20, power=2.0),
    "CosineAnnealingWarmRestarts": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=5),
    "CosineAnnealingWarmRestarts-mult": lambda L, o: L.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.01),
    "CyclicLR": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-triangular2": lambda L, o: L.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1,
                                                    step_size_up=3, step_size_down=5,
                                                    mode="triangular2"),
    "CyclicLR-exp_range": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                                  mode="exp_range", gamma=0.97,
                                                  base_momentum=0.7, max_momentum=0.95),
    "CyclicLR-scale_fn": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5,
                                                 scale_fn=_scale, scale_mode="iterations"),
    "CyclicLR-no-momentum": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                    step_size_up=2, cycle_momentum=False),
    "OneCycleLR": lambda L, o: L.OneCycleLR(o, max_lr=1.0, total_steps=61),
    "OneCycleLR-three-phase": lambda L, o: L.OneCycleLR(o, max_lr=[0.5, 2.0], total_steps=61,
                                                        three_phase=True,
                                                        anneal_strategy="linear"),
    "SequentialLR": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=5), L.ExponentialLR(o, gamma=0.9),
            L.CosineAnnealingLR(o, T_max=10)], milestones=[5, 20]),
    "ChainedScheduler": lambda L, o: L.ChainedScheduler(
        [L.ConstantLR(o, factor=0.5, total_iters=4), L.ExponentialLR(o, gamma=0.95),
         L.StepLR(o, step_size=7, gamma=0.5)]),
    "ChainedScheduler-optimizer": lambda L, o: L.ChainedScheduler(
        [L.LinearLR(o, total_iters=6), L.MultiStepLR(o, milestones=[10, 30])], optimizer=o),
}
NAMES = list(FACTORIES)
STEPS = 60


def build_with(lib, opt_name: str, factory):
    make = torch.tensor if lib is torch else microtorch.tensor
    params = [make([1.0, 2.0], requires_grad=True), make([3.0], requires_grad=True)]
    extra = dict(momentum=0.9) if opt_name == "SGD" else {}
    opt = getattr(lib.optim, opt_name)([{"params": params[:1]},
                                        {"params": params[1:], "lr": 0.2}], lr=0.1, **extra)
    return opt, factory(lib.optim.lr_scheduler, opt)


def plain_state(state: dict) -> dict:
    """A scheduler state dict without entries that are functions or optimizers."""
    out = {}
    for key, value in state.items():
        if key == "_schedulers":
            out[key] = [plain_state(s) for s in value]
        elif not callable(value):
            out[key] = value
    return out


@pytest.mark.parametrize("opt_name", OPTIMIZERS)
@pytest.mark.parametrize("name", NAMES)
def test_every_scheduler_equals_torch_exactly(name, opt_name) -> None:
    """The lrs (and cycled momenta) are the same Python floats as PyTorch's at every step,
    and the state dicts have the same entries."""
    ours_opt, ours = build_with(microtorch, opt_name, FACTORIES[name])
    ref_opt, ref = build_with(torch, opt_name, FACTORIES[name])
    assert ours.get_last_lr() == ref.get_last_lr()
    for _ in range(STEPS):
        ours_opt.step()
        ref_opt.step()
        ours.step()
        ref.step()
        assert ours.get_last_lr() == ref.get_last_lr()
        assert [g["lr"] for g in ours_opt.param_groups] == \
            [g["lr"] for g in ref_opt.param_groups]
        assert momenta(ours_opt) == momenta(ref_opt)
    assert plain_state(ours.state_dict()) == plain_state(ref.state_dict())


@pytest.mark.parametrize("name", NAMES)
def test_every_scheduler_resumes_from_its_state_dict(name) -> None:
    """Save scheduler and optimizer mid-run, rebuild, load: the same lrs as never stopping,
    also when the saved state comes from PyTorch's scheduler."""
    opt, sched = build_with(microtorch, "SGD", FACTORIES[name])
    ref_opt, ref = build_with(torch, "SGD", FACTORIES[name])
    for _ in range(STEPS // 2):
        for o, s in ((opt, sched), (ref_opt, ref)):
            o.step()
            s.step()
    saved = copy.deepcopy((sched.state_dict(), opt.state_dict()))
    from_torch = copy.deepcopy(ref.state_dict())
    expected = []
    for _ in range(STEPS // 2):
        opt.step()
        sched.step()
        expected.append(sched.get_last_lr())
    for sched_state in (saved[0], from_torch):
        opt2, sched2 = build_with(microtorch, "SGD", FACTORIES[name])
        opt2.load_state_dict(copy.deepcopy(saved[1]))
        sched2.load_state_dict(copy.deepcopy(sched_state))
        for lrs in expected:
            opt2.step()
            sched2.step()
            assert sched2.get_last_lr() == lrs


def _warnings_of(lib, name: str, action) -> list[str]:
    """The warnings ``action(optimizer, scheduler)`` emits, as short labels."""
    opt, sched = build_with(lib, "SGD", FACTORIES[name])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action(opt, sched)
    labels = []
    for w in caught:
        text = str(w.message)
        if "before `optimizer.step()`" in text:
            labels.append("order")
        elif "has been overridden" in text:
            labels.append("overridden")
        elif "get_last_lr()" in text:
            labels.append("get_lr")
        else:
            labels.append(text[:40])
    return labels


@pytest.mark.parametrize("name", NAMES)
def test_warnings_match_torch(name) -> None:
    """The step-order warning (scheduler stepped before the optimizer) and the warning of a
    direct ``get_lr()`` call come where PyTorch's come, and nowhere else."""
    def step_first(opt, sched):
        sched.step()
        opt.step()
        sched.step()

    def in_order(opt, sched):
        for _ in range(3):
            opt.step()
            sched.step()

    def direct_get_lr(opt, sched):
        if hasattr(sched, "get_lr") and not hasattr(sched, "_schedulers"):
            sched.get_lr()

    def overridden(opt, sched):
        original = opt.step
        opt.step = lambda *args, **kwargs: original(*args, **kwargs)
        opt.step()
        sched.step()

    for action in (step_first, in_order, direct_get_lr, overridden):
        assert _warnings_of(microtorch, name, action) == _warnings_of(torch, name, action), \
            action.__name__
    assert _warnings_of(microtorch, name, in_order) == []


PLATEAUS = [
    dict(),
    dict(mode="max", patience=2),
    dict(mode="min", threshold_mode="abs", threshold=0.05, patience=1, cooldown=2),
    dict(mode="max", threshold_mode="abs", threshold=0.01, factor=0.5, patience=0),
    dict(patience=1, cooldown=3, factor=0.3, min_lr=[0.005, 0.05]),
    dict(patience=0, factor=0.5, min_lr=0.02, eps=1e-3),
    dict(patience=0, factor=0.9999, eps=0.5),  # every reduction is below eps: none happens
]


@pytest.mark.parametrize("kwargs", PLATEAUS, ids=lambda kw: "-".join(map(str, kw.values())))
def test_reduce_lr_on_plateau_equals_torch(kwargs) -> None:
    rng = __import__("random").Random(5)
    metrics = [1.0 / (1 + i) + rng.uniform(-0.05, 0.05) if i < 20 else 0.05 + 0.01 * (i % 3)
               for i in range(60)]
    factory = lambda L, o: L.ReduceLROnPlateau(o, **kwargs)  # noqa: E731
    ours_opt, ours = build_with(microtorch, "Adam", factory)
    ref_opt, ref = build_with(torch, "Adam", factory)
    for step, metric in enumerate(metrics):
        ours_opt.step()
        ref_opt.step()
        ours.step(metric)
        ref.step(metric)
        assert ours.get_last_lr() == ref.get_last_lr(), step
        assert (ours.best, ours.num_bad_epochs, ours.cooldown_counter, ours.last_epoch) == \
            (ref.best, ref.num_bad_epochs, ref.cooldown_counter, ref.last_epoch)
        if step == 30:  # resume from PyTorch's state dict half way
            state = copy.deepcopy(ref.state_dict())
            ours = lr_scheduler.ReduceLROnPlateau(ours_opt)
            ours.load_state_dict(state)
    assert plain_state(ours.state_dict()) == plain_state(ref.state_dict())


def test_cosine_warm_restarts_with_fractional_epochs() -> None:
    for kwargs in (dict(T_0=4), dict(T_0=2, T_mult=3, eta_min=0.01)):
        factory = lambda L, o: L.CosineAnnealingWarmRestarts(o, **kwargs)  # noqa: B023, E731
        ours_opt, ours = build_with(microtorch, "SGD", factory)
        ref_opt, ref = build_with(torch, "SGD", factory)
        for epoch in range(12):
            for batch in range(5):
                for o, s in ((ours_opt, ours), (ref_opt, ref)):
                    o.step()
                    s.step(epoch + batch / 5)
                assert ours.get_last_lr() == ref.get_last_lr()
                assert (ours.T_cur, ours.T_i, ours.last_epoch) == (ref.T_cur, ref.T_i,
                                                                   ref.last_epoch)
        with pytest.raises(ValueError, match="non-negative epoch"):
            ours.step(-1)


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "LinearLR",
                                  "ConstantLR", "PolynomialLR", "CosineAnnealingLR"])
def test_epoch_argument_uses_the_closed_form_as_torch(name) -> None:
    ours_opt, ours = build_with(microtorch, "SGD", FACTORIES[name])
    ref_opt, ref = build_with(torch, "SGD", FACTORIES[name])
    for epoch in (3, 7, 2, 12, 12, 30):
        for o, s in ((ours_opt, ours), (ref_opt, ref)):
            o.step()
            with pytest.warns(UserWarning, match="epoch parameter"):
                s.step(epoch)
        assert ours.get_last_lr() == ref.get_last_lr()


def _two_optimizers(lib):
    make = torch.tensor if lib is torch else microtorch.tensor
    return [lib.optim.SGD([make([1.0], requires_grad=True)], lr=0.1) for _ in range(2)]


NEW_BAD = [
    lambda L, o, p: L.ConstantLR(o, factor=1.5),
    lambda L, o, p: L.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda L, o, p: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda L, o, p: L.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="0"),
    lambda L, o, p: L.CyclicLR(o, base_lr=0.1, max_lr=1.0, mode="sawtooth"),
    lambda L, o, p: L.CyclicLR(o, base_lr=[0.1, 0.2], max_lr=1.0),
    lambda L, o, p: L.CyclicLR(p.Adadelta([o.param_groups[0]["params"][0]]), 0.1, 1.0),
    lambda L, o, p: L.ReduceLROnPlateau(o, factor=1.0),
    lambda L, o, p: L.ReduceLROnPlateau(o, mode="median"),
    lambda L, o, p: L.ReduceLROnPlateau(o, threshold_mode="ratio"),
    lambda L, o, p: L.ReduceLROnPlateau(o, min_lr=[0.1, 0.2]),
    lambda L, o, p: L.MultiplicativeLR(o, lr_lambda=0.5),
    lambda L, o, p: L.SequentialLR(o, [L.StepLR(o, 2), L.StepLR(o, 3)], milestones=[]),
    lambda L, o, p: L.SequentialLR(o, [], milestones=[]),
    lambda L, o, p: L.SequentialLR(o, [L.ReduceLROnPlateau(o)], milestones=[]),
    lambda L, o, p: L.ChainedScheduler([]),
    lambda L, o, p: L.ChainedScheduler([L.StepLR(o, 2), L.ReduceLROnPlateau(o)]),
    lambda L, o, p: L.ReduceLROnPlateau(object()),
]


@pytest.mark.parametrize("make", NEW_BAD)
def test_bad_arguments_raise_torchs_error(make) -> None:
    errors = []
    for lib in (microtorch, torch):
        opt = _two_optimizers(lib)[0]
        with pytest.raises(Exception) as info:
            make(lib.optim.lr_scheduler, opt, lib.optim)
        errors.append(info)
    assert errors[0].type is errors[1].type
    assert str(errors[0].value).split(",")[0] == str(errors[1].value).split(",")[0]


def test_composites_reject_another_optimizers_scheduler() -> None:
    for lib in (microtorch, torch):
        first, second = _two_optimizers(lib)
        L = lib.optim.lr_scheduler
        with pytest.raises(ValueError, match="belong to the same optimizer"):
            L.SequentialLR(first, [L.StepLR(first, 2), L.StepLR(second, 2)], milestones=[3])
        with pytest.raises(ValueError, match="belong to the same optimizer"):
            L.ChainedScheduler([L.StepLR(first, 2), L.StepLR(second, 2)])


def test_plateau_with_an_added_param_group() -> None:
    p = microtorch.tensor([1.0], requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0.1])
    opt.add_param_group({"params": [microtorch.tensor([2.0], requires_grad=True)]})
    sched.step(1.0)
    with pytest.raises(RuntimeError, match="number of param groups"):
        sched.step(2.0)
