"""Gradient storage strategies (per-parameter, foreach, flat): identical training, DESIGN.md
section 3 zero_grad semantics in each, flat buffer behaviour, and StaleGradWarning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch
from microtorch import optim
from microtorch.optim import StaleGradWarning

STORAGES = {"default": {}, "foreach": {"foreach": True}, "flat": {"flat_grads": True}}
OPTIMIZERS = [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, nesterov=True, momentum=0.5)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=0.1)),
]
SHAPES = [(4, 3), (3,), (3, 2), (2,)]


def to_numpy(t) -> np.ndarray:
    return np.array(t.detach().cpu().numpy())


def make_params(device: str) -> list[microtorch.Tensor]:
    rng = np.random.default_rng(0)
    return [microtorch.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True,
                              device=device) for s in SHAPES]


def loss_of(params, step: int, device: str):
    """A small two-layer computation; the last parameter is used only on even steps."""
    rng = np.random.default_rng([7, step])
    x = microtorch.tensor(rng.standard_normal((5, 4)).astype(np.float32), device=device)
    w1, b1, w2, b2 = params
    h = (x.matmul(w1) + b1).tanh()
    out = h.matmul(w2)
    if step % 2 == 0:
        out = out + b2
    return (out * out).sum()


def train(device: str, name: str, kwargs: dict, storage: dict, steps: int = 6,
          set_to_none: bool = True, accumulate: int = 1) -> list[np.ndarray]:
    params = make_params(device)
    opt = getattr(optim, name)(params, **kwargs, **storage)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleGradWarning)
        for step in range(steps):
            opt.zero_grad(set_to_none=set_to_none)
            for micro in range(accumulate):
                loss_of(params, step * accumulate + micro, device).backward()
            opt.step()
    return [to_numpy(p) for p in params] + [
        to_numpy(v) for s in opt.state.values() for v in s.values()]


@pytest.mark.parametrize(("name", "kwargs"), OPTIMIZERS)
@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("accumulate", [1, 3])
def test_storage_strategies_train_bit_identically(device, name, kwargs, set_to_none,
                                                  accumulate) -> None:
    results = {key: train(device, name, kwargs, storage, set_to_none=set_to_none,
                          accumulate=accumulate)
               for key, storage in STORAGES.items()}
    for key in ("foreach", "flat"):
        assert len(results[key]) == len(results["default"])
        for a, b in zip(results[key], results["default"]):
            np.testing.assert_array_equal(a, b, err_msg=key)


# --------------------------------------------------------------------------- zero_grad


def backward_some(params, device: str) -> None:
    """A backward that reaches every parameter except the last."""
    loss_of(params, 1, device).backward()


@pytest.mark.parametrize("storage", STORAGES)
def test_zero_grad_set_to_none(device, storage) -> None:
    params = make_params(device)
    opt = optim.SGD(params, lr=0.1, **STORAGES[storage])
    backward_some(params, device)
    assert params[3].grad is None
    opt.zero_grad()
    assert all(p.grad is None for p in params)
    backward_some(params, device)  # the next backward assigns fresh gradients
    assert params[0].grad is not None and params[3].grad is None


@pytest.mark.parametrize("storage", STORAGES)
def test_zero_grad_in_place_keeps_references_and_none(device, storage) -> None:
    params = make_params(device)
    opt = optim.Adam(params, **STORAGES[storage])
    backward_some(params, device)
    held = [p.grad for p in params[:3]]
    opt.zero_grad(set_to_none=False)
    assert params[3].grad is None  # None stays None
    for p, g in zip(params[:3], held):
        assert p.grad is g
        assert not to_numpy(g).any()
        assert g.grad_fn is None and not g.requires_grad
    backward_some(params, device)  # accumulates into the zeroed buffers: equals a fresh grad
    fresh = make_params(device)
    backward_some(fresh, device)
    for p, q, g in zip(params[:3], fresh, held):
        assert p.grad is g
        np.testing.assert_array_equal(to_numpy(p.grad), to_numpy(q.grad))


@pytest.mark.parametrize("storage", STORAGES)
def test_zero_grad_detaches_a_grad_with_grad_fn(device, storage) -> None:
    params = make_params(device)
    opt = optim.SGD(params, lr=0.1, **STORAGES[storage])
    loss_of(params, 1, device).backward(create_graph=True)
    g = params[0].grad
    assert g.grad_fn is not None and g.requires_grad
    opt.zero_grad(set_to_none=False)
    assert params[0].grad is g
    assert g.grad_fn is None and not g.requires_grad
    assert not to_numpy(g).any()


@pytest.mark.parametrize("storage", STORAGES)
def test_grads_never_alias(device, storage) -> None:
    a = microtorch.tensor([1.0, 2.0], requires_grad=True, device=device)
    b = microtorch.tensor([3.0, 4.0], requires_grad=True, device=device)
    opt = optim.SGD([a, b], lr=0.1, **STORAGES[storage])
    for _ in range(2):
        (a + b).sum().backward()  # the same incoming gradient reaches both leaves
        assert a.grad is not b.grad
        a.grad.mul_(10)
        assert to_numpy(b.grad).tolist() == [1.0, 1.0]
        opt.zero_grad(set_to_none=False)


# --------------------------------------------------------------------------- flat buffers


def flat_buffer_of(opt):
    (flat,) = opt._flat_buffers
    return flat.buffer._data


def test_flat_grads_are_views_of_one_buffer(device) -> None:
    params = make_params(device)
    opt = optim.SGD(params, lr=0.1, flat_grads=True)
    buf = flat_buffer_of(opt)
    assert buf.size == sum(p.numel() for p in params)
    backward_some(params, device)
    for p in params[:3]:
        assert p.grad._data.base is buf
    opt.zero_grad()  # set_to_none: gradients go, the buffer stays and is written again
    assert all(p.grad is None for p in params)
    assert flat_buffer_of(opt) is buf
    backward_some(params, device)
    assert all(p.grad._data.base is buf for p in params[:3])


def test_flat_zero_with_some_grads_none_only_zeroes_existing(device) -> None:
    params = make_params(device)
    opt = optim.SGD(params, lr=0.1, flat_grads=True)
    backward_some(params, device)
    params[1].grad = None
    opt.zero_grad(set_to_none=False)
    assert params[1].grad is None and params[3].grad is None
    assert not to_numpy(params[0].grad).any()


def test_flat_adopts_existing_grads(device) -> None:
    params = make_params(device)
    backward_some(params, device)
    before = [to_numpy(p.grad) for p in params[:3]]
    opt = optim.SGD(params, lr=0.1, flat_grads=True)
    buf = flat_buffer_of(opt)
    for p, g in zip(params[:3], before):
        assert p.grad._data.base is buf
        np.testing.assert_array_equal(to_numpy(p.grad), g)
    assert params[3].grad is None


def test_flat_works_with_a_foreign_grad(device) -> None:
    params = make_params(device)
    opt = optim.SGD(params, lr=1.0, flat_grads=True)
    backward_some(params, device)
    foreign = microtorch.ones(3, device=device)
    params[1].grad = foreign
    start = to_numpy(params[1])
    opt.step()
    np.testing.assert_allclose(to_numpy(params[1]), start - 1.0)
    opt.zero_grad(set_to_none=False)
    assert params[1].grad is foreign and not to_numpy(foreign).any()
    assert not to_numpy(params[0].grad).any()


def test_flat_fast_path_notices_a_grad_rebound_after_validation(device) -> None:
    """The one-fill path is taken only while no leaf's grad was rebound since it checked."""
    params = make_params(device)
    opt = optim.SGD(params, lr=1.0, flat_grads=True)
    for p in params:
        p.grad = microtorch.ones(p.shape, device=device)  # moved into slots on the next zero
    opt.zero_grad(set_to_none=False)  # validates: every grad is its slot view
    opt.zero_grad(set_to_none=False)  # fast path
    foreign = microtorch.ones(params[2].shape, device=device)
    params[2].grad = foreign
    opt.zero_grad(set_to_none=False)
    assert params[2].grad is foreign and not to_numpy(foreign).any()
    params[0].grad.data = microtorch.ones(params[0].shape, device=device)
    opt.zero_grad(set_to_none=False)
    assert not to_numpy(params[0].grad).any()


def _one_fill_ready(opt) -> bool:
    """Whether the next zero_grad(False) of a flat optimizer is the one fill (no walk)."""
    from microtorch._tensor import grad_epoch

    (flat,) = opt._flat_buffers
    return flat._checked_epoch == grad_epoch.value and flat.count.all_slots()


@pytest.mark.parametrize("refresh", ["optimizer", "module", "grad_none"])
def test_flat_one_fill_survives_refreshed_gradients(device, refresh) -> None:
    """zero_grad(True), Module.zero_grad() or p.grad = None, then a backward reaching every
    parameter: the gradients are slot views again and the buffer knows it without a walk."""
    params = [microtorch.nn.Parameter(p.detach()) for p in make_params(device)]
    module = microtorch.nn.Module()
    for i, p in enumerate(params):
        module.register_parameter(f"p{i}", p)
    opt = optim.SGD(params, lr=0.1, flat_grads=True)
    loss_of(params, 0, device).backward()
    opt.zero_grad(set_to_none=False)  # the check: every gradient is its slot view
    assert _one_fill_ready(opt)
    for _ in range(2):
        if refresh == "optimizer":
            opt.zero_grad(set_to_none=True)
        elif refresh == "module":
            module.zero_grad()
        else:
            for p in params:
                p.grad = None
        assert not _one_fill_ready(opt)  # gradients are None: no one fill for them
        loss_of(params, 0, device).backward()
        assert _one_fill_ready(opt)
        opt.zero_grad(set_to_none=False)
        assert all(p.grad._data.base is flat_buffer_of(opt) for p in params)
        assert not any(to_numpy(p.grad).any() for p in params)


def test_flat_refresh_with_an_unused_parameter_keeps_none(device) -> None:
    """After zero_grad(True), a backward that misses a parameter leaves its grad None, and a
    reference to its old gradient is not zeroed by zero_grad(False)."""
    params = make_params(device)
    opt = optim.SGD(params, lr=0.1, flat_grads=True)
    loss_of(params, 0, device).backward()
    old_b2 = params[3].grad
    kept = to_numpy(old_b2)
    assert kept.any()
    opt.zero_grad(set_to_none=True)
    loss_of(params, 1, device).backward()  # odd step: b2 unused
    assert not _one_fill_ready(opt)
    opt.zero_grad(set_to_none=False)
    assert params[3].grad is None
    np.testing.assert_array_equal(to_numpy(old_b2), kept)
    assert not any(to_numpy(p.grad).any() for p in params[:3])


def test_flat_count_after_a_foreign_grad_is_dropped(device) -> None:
    params = make_params(device)
    opt = optim.SGD(params, lr=0.1, flat_grads=True)
    loss_of(params, 0, device).backward()
    opt.zero_grad(set_to_none=False)
    params[0].grad = microtorch.ones(params[0].shape, device=device)  # foreign
    params[0].grad = None  # dropped again: still missing until a backward fills its slot
    assert not _one_fill_ready(opt)
    opt.zero_grad(set_to_none=False)
    assert params[0].grad is None
    loss_of(params, 0, device).backward()
    assert _one_fill_ready(opt)
    opt.zero_grad(set_to_none=False)
    assert not any(to_numpy(p.grad).any() for p in params)


def test_flat_buffers_of_two_optimizers_sharing_parameters(device) -> None:
    """A parameter claimed by two flat optimizers: the second owns its slot; zero_grad(True)
    on either leaves the other one zeroing correctly."""
    params = make_params(device)
    first = optim.SGD(params, lr=0.1, flat_grads=True)
    second = optim.SGD(params[:2], lr=0.1, flat_grads=True)
    for opt, other in ((first, second), (second, first)):
        loss_of(params, 0, device).backward()
        other.zero_grad(set_to_none=False)
        opt.zero_grad(set_to_none=True)
        assert all(p.grad is None for p in opt.param_groups[0]["params"])
        loss_of(params, 0, device).backward()
        for o in (first, second):
            o.zero_grad(set_to_none=False)
            assert not any(to_numpy(p.grad).any() for p in o.param_groups[0]["params"])
        first.zero_grad(set_to_none=True)
        second.zero_grad(set_to_none=True)


def test_flat_buffer_per_dtype() -> None:
    a = microtorch.zeros(3, requires_grad=True)
    b = microtorch.zeros(2, dtype=microtorch.float64, requires_grad=True)
    c = microtorch.zeros(4, requires_grad=True)
    opt = optim.SGD([a, b, c], lr=0.1, flat_grads=True)
    sizes = sorted((f.buffer._data.dtype.name, f.buffer._data.size) for f in opt._flat_buffers)
    assert sizes == [("float32", 7), ("float64", 2)]


# --------------------------------------------------------------------------- stale gradients


def run_loop(device, storage, *, zero, steps=3, accumulate=1, opt_cls=optim.SGD):
    params = make_params(device)
    opt = opt_cls(params, lr=0.01, **STORAGES[storage])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(steps):
            zero(opt, params)
            for micro in range(accumulate):
                loss_of(params, step * accumulate + micro, device).backward()
            opt.step()
    return [w for w in caught if issubclass(w.category, StaleGradWarning)]


def _no_zero(opt, params):
    pass


def _opt_zero_none(opt, params):
    opt.zero_grad()


def _opt_zero_inplace(opt, params):
    opt.zero_grad(set_to_none=False)


def _manual_zero_(opt, params):
    for p in params:
        if p.grad is not None:
            p.grad.zero_()


def _manual_data_zero_(opt, params):
    for p in params:
        if p.grad is not None:
            p.grad.data.zero_()


def _manual_fill_0(opt, params):
    for p in params:
        if p.grad is not None:
            p.grad.fill_(0)


def _manual_none(opt, params):
    for p in params:
        p.grad = None


def _manual_mul_0(opt, params):
    for p in params:
        if p.grad is not None:
            p.grad.mul_(0)


def _manual_setitem_0(opt, params):
    for p in params:
        if p.grad is not None:
            p.grad[:] = 0


def _manual_copy_zeros(opt, params):
    for p in params:
        if p.grad is not None:
            p.grad.copy_(microtorch.zeros_like(p.grad))


def _no_zero_but_clip(opt, params):
    """Clipping rescales gradients in place but does not reset them."""
    if params[0].grad is not None:
        nn = pytest.importorskip("microtorch.nn")
        nn.utils.clip_grad_norm_(params, 0.5)
        nn.utils.clip_grad_value_(params, 0.1)


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("zero", [_no_zero, _no_zero_but_clip])
def test_stale_grad_warns_once_without_zero_grad(device, storage, zero) -> None:
    caught = run_loop(device, storage, zero=zero, steps=4)
    assert len(caught) == 1
    assert "zero_grad" in str(caught[0].message)
    assert caught[0].filename == __file__  # points at the user's step() call


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("zero", [_opt_zero_none, _opt_zero_inplace, _manual_zero_,
                                  _manual_data_zero_, _manual_fill_0, _manual_none,
                                  _manual_mul_0, _manual_setitem_0, _manual_copy_zeros])
@pytest.mark.parametrize("accumulate", [1, 3])
def test_no_stale_warning_when_gradients_are_reset(device, storage, zero, accumulate) -> None:
    assert run_loop(device, storage, zero=zero, accumulate=accumulate, steps=4) == []


@pytest.mark.parametrize("storage", STORAGES)
def test_no_stale_warning_for_steps_without_backward(device, storage) -> None:
    params = make_params(device)
    opt = optim.SGD(params, lr=0.01, **STORAGES[storage])
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleGradWarning)
        loss_of(params, 0, device).backward()
        opt.step()
        opt.step()  # the same, untouched gradient again: not an accumulation


@pytest.mark.parametrize("set_to_none", [True, False])
def test_no_stale_warning_with_module_zero_grad(set_to_none) -> None:
    nn = pytest.importorskip("microtorch.nn")
    microtorch.manual_seed(0)
    model = nn.Linear(5, 1)
    opt = optim.SGD(model.parameters(), lr=0.01)
    x, y = microtorch.randn(3, 5), microtorch.randn(3, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleGradWarning)
        for _ in range(3):
            model.zero_grad(set_to_none=set_to_none)
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()


def test_seed_example_without_zero_grad_warns() -> None:
    """shared/seeds/001: the training loop that forgets zero_grad."""
    nn = pytest.importorskip("microtorch.nn")
    microtorch.manual_seed(0)
    model = nn.Linear(5, 1)
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    x, y = microtorch.randn(3, 5), microtorch.randn(3, 1)
    with pytest.warns(StaleGradWarning):
        for _ in range(2):
            pred = model(x)
            loss = ((pred - y) ** 2).mean()
            loss.backward()
            optimizer.step()


def test_closure_with_zero_grad_does_not_warn() -> None:
    params = make_params("cpu")
    opt = optim.SGD(params, lr=0.01)

    def closure():
        opt.zero_grad()
        loss = loss_of(params, 0, "cpu")
        loss.backward()
        return loss

    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleGradWarning)
        for _ in range(3):
            opt.step(closure)
