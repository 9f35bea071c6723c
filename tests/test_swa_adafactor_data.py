"""swa_utils (AveragedModel, the averaging functions, update_bn, SWALR), Adafactor,
ChainDataset/StackDataset/DistributedSampler and the deprecated nn.init names, against
PyTorch on the same values.

The averaged models are fed the same parameter values in both libraries (set from NumPy),
so only the averaging is compared: bit for bit. Adafactor takes fixed gradients; its 2-norms
follow PyTorch's kernels closely but not always to the last bit (see ``optim.adafactor``), so
the general comparison allows a few ulps and one measured configuration is checked bitwise.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
from microtorch.optim import swa_utils

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


# -- AveragedModel --------------------------------------------------------------------------------

def _net(lib):
    return lib.nn.Sequential(lib.nn.Linear(5, 8), lib.nn.BatchNorm1d(8), lib.nn.Linear(8, 3))


def _averaged_state(lib, kind: str, use_buffers: bool, dtype) -> dict[str, np.ndarray]:
    su = lib.optim.swa_utils
    model = _net(lib)
    if dtype == np.float64:
        model = model.double()
    kwargs = {"swa": {}, "ema": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9)},
              "ema_single": {"avg_fn": su.get_ema_avg_fn(0.9)},
              "swa_single": {"avg_fn": su.get_swa_avg_fn()},
              "swa_multi": {"multi_avg_fn": su.get_swa_multi_avg_fn()}}[kind]
    averaged = su.AveragedModel(model, use_buffers=use_buffers, **kwargs)
    rng = np.random.default_rng(3)
    for _ in range(7):
        with lib.no_grad():
            for t in list(model.parameters()) + list(model.buffers()):
                if t.is_floating_point():
                    t.copy_(lib.tensor(rng.standard_normal(tuple(t.shape)).astype(dtype)))
                else:
                    t.add_(3)
        averaged.update_parameters(model)
    return {k: v.detach().numpy() for k, v in averaged.state_dict().items()}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("use_buffers", [False, True])
@pytest.mark.parametrize("kind", ["swa", "ema", "ema_single", "swa_single", "swa_multi"])
def test_averaged_model_bitwise(kind, use_buffers, dtype):
    if kind == "swa_multi" and use_buffers:  # integer buffers: PyTorch's addcdiv_ refuses
        with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
            _averaged_state(mt, kind, use_buffers, dtype)
        return
    ours = _averaged_state(mt, kind, use_buffers, dtype)
    theirs = _averaged_state(torch, kind, use_buffers, dtype)
    assert list(ours) == list(theirs)
    assert list(ours)[0] == "n_averaged" and int(ours["n_averaged"]) == 7
    for key in theirs:
        assert ours[key].dtype == theirs[key].dtype, key
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)


def test_averaged_model_basics():
    model = mt.nn.Linear(3, 2)
    averaged = swa_utils.AveragedModel(model)
    assert averaged.module is not model
    assert averaged.n_averaged.dtype == mt.int64
    with pytest.raises(AssertionError, match="Only one of"):
        swa_utils.AveragedModel(model, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match="Invalid decay value"):
        swa_utils.get_ema_avg_fn(1.5)
    with pytest.raises(ValueError, match="Invalid decay value"):
        swa_utils.get_ema_multi_avg_fn(-0.1)
    x = mt.randn(4, 3)
    averaged.update_parameters(model)
    np.testing.assert_array_equal(averaged(x).detach().numpy(), model(x).detach().numpy())
    restored = swa_utils.AveragedModel(mt.nn.Linear(3, 2))
    restored.load_state_dict(averaged.state_dict())
    assert int(restored.n_averaged) == 1
    np.testing.assert_array_equal(restored.module.weight.detach().numpy(),
                                  model.weight.detach().numpy())


def test_update_bn_matches_torch():
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((6, 4)).astype(np.float32) for _ in range(5)]
    results = []
    for lib in (mt, torch):
        model = lib.nn.Sequential(lib.nn.Linear(4, 4), lib.nn.BatchNorm1d(4, momentum=0.3))
        with lib.no_grad():
            model[0].weight.copy_(lib.tensor(np.eye(4, dtype=np.float32)))
            model[0].bias.zero_()
        model.eval()
        loader = [(lib.tensor(b), lib.zeros(6)) for b in batches]
        lib.optim.swa_utils.update_bn(loader, model)
        bn = model[1]
        assert not model.training and bn.momentum == 0.3
        results.append([bn.running_mean.numpy(), bn.running_var.numpy(),
                        int(bn.num_batches_tracked)])
    ours, theirs = results
    assert ours[2] == theirs[2] == 5
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, atol=1e-7)
    swa_utils.update_bn([mt.randn(2, 3)], mt.nn.Linear(3, 3))  # no BatchNorm: nothing to do


# -- SWALR --------------------------------------------------------------------------------

def _swalr_lrs(lib, steps: int, **kwargs) -> list[list[float]]:
    w1, w2 = lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)
    opt = lib.optim.SGD([{"params": [w1]}, {"params": [w2], "lr": 0.5}], lr=1.0)
    sched = lib.optim.swa_utils.SWALR(opt, **kwargs)
    lrs = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs


@pytest.mark.parametrize("kwargs", [
    {"swa_lr": 0.05}, {"swa_lr": [0.05, 0.01], "anneal_epochs": 3},
    {"swa_lr": 0.1, "anneal_epochs": 4, "anneal_strategy": "linear"},
    {"swa_lr": 0.2, "anneal_epochs": 0}, {"swa_lr": 0.2, "anneal_epochs": 1}])
def test_swalr_lrs_match_torch(kwargs):
    assert _swalr_lrs(mt, 14, **kwargs) == _swalr_lrs(torch, 14, **kwargs)


def test_swalr_errors_warnings_state():
    opt = mt.optim.SGD([mt.zeros(2, requires_grad=True)], lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=2.0)
    with pytest.raises(ValueError, match="swa_lr must have the same length"):
        swa_utils.SWALR(opt, swa_lr=[0.1, 0.2])
    sched = swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=5, anneal_strategy="linear")
    assert opt.param_groups[0]["swa_lr"] == 0.1
    with pytest.warns(UserWarning, match="optimizer.step"):
        sched.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()
    state = sched.state_dict()
    assert "anneal_func" not in state and "optimizer" not in state
    assert state["_anneal_strategy"] == "linear"
    other = swa_utils.SWALR(mt.optim.SGD([mt.zeros(1, requires_grad=True)], lr=1.0),
                            swa_lr=0.3)
    other.load_state_dict(state)
    assert other.anneal_func(0.25) == 0.25 and other.anneal_epochs == 5


# -- Adafactor ----------------------------------------------------------------------------------

SHAPES = [(7,), (5, 9), (33, 70), (3, 17, 40), (130,), (2, 3, 4, 21)]


def _adafactor(lib, steps: int, dtype, shapes=SHAPES, state=None, **kwargs):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(steps)]
    params = [lib.tensor(a.copy(), requires_grad=True) for a in init]
    opt = lib.optim.Adafactor(params, **kwargs)
    for k in range(steps):
        for p, g in zip(params, grads[k]):
            p.grad = lib.tensor(g.copy())
        opt.step()
    return [p.detach().numpy() for p in params], opt, params


CONFIGS = [{}, {"weight_decay": 0.1}, {"maximize": True}, {"lr": 0.5, "d": 1.5},
           {"eps": (1e-30, 1e-3)}, {"beta2_decay": -0.5}, {"foreach": True},
           {"foreach": True, "weight_decay": 0.05, "maximize": True}]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", CONFIGS)
def test_adafactor_matches_torch(kwargs, dtype):
    ours, opt, _ = _adafactor(mt, 5, dtype, **kwargs)
    theirs, topt, _ = _adafactor(torch, 5, dtype, **kwargs)
    rtol = 4 * np.finfo(dtype).eps
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.abs(b).max())
    for i, shape in enumerate(SHAPES):
        mine, ref = opt.state_dict()["state"][i], topt.state_dict()["state"][i]
        assert sorted(mine) == sorted(ref)
        assert float(mine["step"]) == float(ref["step"]) == 5
        for key in mine:
            assert tuple(mine[key].shape) == tuple(ref[key].shape), (shape, key)


@pytest.mark.parametrize("foreach", [False, True])
def test_adafactor_bitwise_measured(foreach):
    shapes = [(7,), (130,), (64,)]
    ours, _, _ = _adafactor(mt, 5, np.float32, shapes, foreach=foreach)
    theirs, _, _ = _adafactor(torch, 5, np.float32, shapes, foreach=foreach)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def test_adafactor_foreach_rounds_differently_from_single():
    single, _, _ = _adafactor(mt, 4, np.float32, [(300,)])
    multi, _, _ = _adafactor(mt, 4, np.float32, [(300,)], foreach=True)
    np.testing.assert_allclose(single[0], multi[0], rtol=1e-6, atol=1e-7)


def _to_torch(obj):
    if isinstance(obj, mt.Tensor):
        return torch.from_numpy(obj.numpy().copy())
    if isinstance(obj, dict):
        return {k: _to_torch(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_torch(v) for v in obj]
    return obj


def test_adafactor_state_dict_round_trip_with_torch():
    shapes = [(7,), (5, 9), (3, 4, 6)]
    _, topt, _ = _adafactor(torch, 3, np.float32, shapes, weight_decay=0.01)
    ours, opt, params = _adafactor(mt, 0, np.float32, shapes, weight_decay=0.01)
    opt.load_state_dict(topt.state_dict())
    loaded = opt.state_dict()
    assert float(loaded["state"][1]["step"]) == 3
    assert loaded["state"][1]["row_var"].shape == (5, 1)
    assert loaded["state"][2]["col_var"].shape == (3, 1, 6)
    assert loaded["param_groups"][0]["eps"] == (None, 1e-3)
    back = torch.optim.Adafactor([torch.zeros(s, requires_grad=True) for s in shapes],
                                 weight_decay=0.01)
    back.load_state_dict(_to_torch(loaded))
    for i in range(3):
        for key, value in back.state_dict()["state"][i].items():
            np.testing.assert_array_equal(value.numpy(),
                                          topt.state_dict()["state"][i][key].numpy())
    bad = topt.state_dict()
    bad["state"][1]["row_var"] = torch.zeros(5, 9)
    with pytest.raises(ValueError, match="row_var"):
        opt.load_state_dict(bad)


def test_adafactor_errors():
    p = mt.zeros(3, requires_grad=True)
    cases = [({"lr": -1.0}, "Learning rate"), ({"beta2_decay": 0.1}, "beta2_decay"),
             ({"eps": (-1.0, 1e-3)}, "epsilon1"), ({"eps": (None, -1.0)}, "epsilon2"),
             ({"d": 0.5}, "Clipping threshold"), ({"weight_decay": -1.0}, "weight_decay")]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            mt.optim.Adafactor([p], **kwargs)
    c = mt.zeros(3, dtype=mt.complex64, requires_grad=True)
    c.grad = mt.ones(3, dtype=mt.complex64)
    with pytest.raises(RuntimeError, match="complex"):
        mt.optim.Adafactor([c]).step()


# -- data ---------------------------------------------------------------------------------

class _Stream(mt.utils.data.IterableDataset):
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


def test_chain_dataset():
    from microtorch.utils.data import ChainDataset, TensorDataset

    chain = ChainDataset([_Stream([1, 2]), _Stream([3])])
    assert list(chain) == [1, 2, 3] and len(chain) == 3
    assert list(_Stream([1]) + _Stream([2, 3])) == [1, 2, 3]
    bad = ChainDataset([_Stream([1]), TensorDataset(mt.arange(3))])
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        list(bad)
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        len(bad)


def test_stack_dataset():
    from microtorch.utils.data import DataLoader, StackDataset, TensorDataset

    a, b = TensorDataset(mt.arange(4)), list("wxyz")
    tup = StackDataset(a, b)
    assert len(tup) == 4 and int(tup[1][0][0]) == 1 and tup[1][1] == "x"
    named = StackDataset(num=a, char=b)
    assert named[2]["char"] == "y"
    assert [s["char"] for s in named.__getitems__([3, 0])] == ["z", "w"]
    assert [s[1] for s in tup.__getitems__([2, 1])] == ["y", "x"]
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset(a, char=b)
    with pytest.raises(ValueError, match="At least one dataset"):
        StackDataset()
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(a, list("ab"))
    batch = next(iter(DataLoader(StackDataset(x=mt.arange(4.0), y=mt.arange(4)), batch_size=4)))
    assert batch["x"].tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("n,replicas", [(10, 3), (11, 2), (4, 4), (2, 5), (17, 4)])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_matches_torch(n, replicas, shuffle, drop_last):
    from microtorch.utils.data import DistributedSampler

    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=5,
                                  drop_last=drop_last)
        theirs = torch.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=shuffle,
                                                     seed=5, drop_last=drop_last)
        for epoch in range(3):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_errors():
    from microtorch.utils.data import DistributedSampler

    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(range(4), 2, 2)
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(range(4), 2, -1)
    with pytest.raises((RuntimeError, ValueError)):
        DistributedSampler(range(4))  # no process group


# -- nn.init deprecated names ------------------------------------------------------------------

ALIASES = [("uniform", ()), ("normal", ()), ("constant", (0.5,)), ("eye", ()),
           ("xavier_uniform", ()), ("xavier_normal", ()), ("kaiming_uniform", ()),
           ("kaiming_normal", ()), ("sparse", (0.5,))]


@pytest.mark.parametrize("name,args", ALIASES)
def test_init_aliases_warn_and_fill(name, args):
    values = []
    for lib in (mt, torch):
        lib.manual_seed(7)
        t = lib.empty(6, 5)
        with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor "
                                               f"of `nn.init.{name}_`"):
            out = getattr(lib.nn.init, name)(t, *args)
        assert out is t
        values.append(t.numpy().copy())
    np.testing.assert_array_equal(values[0], values[1])


def test_init_alias_set_matches_torch():
    names = ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
             "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]
    for name in names:
        assert callable(getattr(mt.nn.init, name)) and callable(getattr(torch.nn.init, name))
        assert getattr(mt.nn.init, name).__name__ == name
    assert not hasattr(mt.nn.init, "trunc_normal") and not hasattr(torch.nn.init, "trunc_normal")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mt.nn.init.dirac_(mt.empty(2, 2, 3))  # the new names do not warn
    with pytest.warns(FutureWarning):
        mt.nn.init.dirac(mt.empty(2, 2, 3))
    with pytest.warns(FutureWarning):
        t = mt.nn.init.orthogonal(mt.empty(4, 4))
    np.testing.assert_allclose((t @ t.T).numpy(), np.eye(4), atol=1e-5)
