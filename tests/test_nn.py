"""nn.Module machinery and layers against PyTorch: default init after the same seed, forward
and backward with copied weights, state_dict keys and strict loading, zero_grad, repr,
containers, dtype/device moves, nn.init and nn.utils."""

from __future__ import annotations

import math

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn as nn

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}
rng = np.random.default_rng(99)


def copy_weights(src_torch, dst, device="cpu") -> None:
    """Load a PyTorch module's state_dict into a microtorch module (via NumPy)."""
    dst.load_state_dict({k: mt.tensor(v.detach().numpy(), device=device)
                         for k, v in src_torch.state_dict().items()})


def check_module(mod, tmod, x, device, dtype="float32", train=True):
    """Same output and same input/parameter gradients, given the same weights."""
    mod.to(device)
    mod.train(train)
    tmod.train(train)
    xm = mt.tensor(x.astype(dtype) if x.dtype.kind == "f" else x, device=device,
                   requires_grad=x.dtype.kind == "f")
    xt = torch.tensor(x.astype(dtype) if x.dtype.kind == "f" else x,
                      requires_grad=x.dtype.kind == "f")
    out, tout = mod(xm), tmod(xt)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), **TOL[dtype])
    w = rng.standard_normal(tuple(tout.shape)).astype(dtype)
    (out * mt.tensor(w, device=device)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    if xt.requires_grad:
        np.testing.assert_allclose(xm.grad.cpu().numpy(), xt.grad.numpy(), **TOL[dtype])
    names = [n for n, _ in mod.named_parameters()]
    assert names == [n for n, _ in tmod.named_parameters()]
    for (n, p), (_, tp) in zip(mod.named_parameters(), tmod.named_parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), **TOL[dtype],
                                   err_msg=n)
    for (n, b), (_, tb) in zip(mod.named_buffers(), tmod.named_buffers()):
        np.testing.assert_allclose(b.cpu().numpy(), tb.numpy(), **TOL[dtype], err_msg=n)


# -- default initialisation --------------------------------------------------------------------
INIT_CASES = [
    ("Linear", (5, 1)),
    ("Linear", (64, 256)),
    ("Linear", (3, 4), {"bias": False}),
    ("Conv2d", (3, 8, 3)),
    ("Conv2d", (4, 6, (3, 2)), {"groups": 2, "bias": True}),
    ("Embedding", (10, 4)),
    ("Embedding", (10, 20), {"padding_idx": 2}),
    ("LayerNorm", (6,)),
    ("BatchNorm1d", (4,)),
    ("BatchNorm2d", (4,)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", INIT_CASES, ids=lambda c: f"{c[0]}{c[1]}")
def test_default_init_matches_torch(case, dtype):
    name, args = case[0], case[1]
    kwargs = case[2] if len(case) > 2 else {}
    mt.manual_seed(0)
    torch.manual_seed(0)
    mod = getattr(nn, name)(*args, **kwargs, dtype=getattr(mt, dtype))
    tmod = getattr(torch.nn, name)(*args, **kwargs, dtype=getattr(torch, dtype))
    sd, tsd = mod.state_dict(), tmod.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        np.testing.assert_array_equal(sd[k].numpy(), tsd[k].numpy(), err_msg=k)
    # The stream stays in step after initialisation.
    assert mt.rand(3).tolist() == torch.rand(3).tolist()


def test_mlp_init_matches_torch():
    mt.manual_seed(42)
    torch.manual_seed(42)
    mod = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                        nn.Linear(256, 10))
    tmod = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10))
    for p, tp in zip(mod.parameters(), tmod.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), tp.detach().numpy())


# -- layers against PyTorch --------------------------------------------------------------------
LAYERS = [
    ("Linear", (4, 3), {}, (5, 4)),
    ("Linear", (4, 3), {"bias": False}, (2, 5, 4)),
    ("Conv2d", (4, 6, 3), {"stride": 2, "padding": 1}, (2, 4, 7, 7)),
    ("Conv2d", (4, 4, 3), {"groups": 4, "padding": "same", "dilation": 2}, (2, 4, 6, 6)),
    ("Conv2d", (2, 3, (3, 2)), {"padding": "valid", "bias": False}, (1, 2, 5, 6)),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1}, (2, 3, 7, 7)),
    ("AvgPool2d", (2,), {"ceil_mode": True}, (2, 3, 5, 5)),
    ("Flatten", (), {}, (2, 3, 4)),
    ("Unflatten", (1, (2, 6)), {}, (3, 12)),
    ("Dropout", (0.3,), {}, (4, 5)),  # compared in eval mode (identity)
    ("LayerNorm", ((3, 4),), {}, (2, 3, 4)),
    ("LayerNorm", (4,), {"elementwise_affine": False}, (2, 3, 4)),
    ("BatchNorm1d", (3,), {}, (6, 3)),
    ("BatchNorm1d", (3,), {"momentum": None}, (4, 3, 5)),
    ("BatchNorm2d", (3,), {"affine": False}, (4, 3, 2, 2)),
    ("BatchNorm2d", (3,), {"track_running_stats": False}, (4, 3, 2, 2)),
    ("ReLU", (), {}, (3, 4)),
    ("LeakyReLU", (0.1,), {}, (3, 4)),
    ("GELU", (), {}, (3, 4)),
    ("GELU", ("tanh",), {}, (3, 4)),
    ("SiLU", (), {}, (3, 4)),
    ("Sigmoid", (), {}, (3, 4)),
    ("Tanh", (), {}, (3, 4)),
    ("Softmax", (1,), {}, (3, 4)),
    ("LogSoftmax", (-1,), {}, (3, 4)),
    ("Identity", (), {}, (3, 4)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layer", LAYERS, ids=lambda c: f"{c[0]}{c[1]}{c[2]}")
def test_layer_matches_torch(device, dtype, layer):
    name, args, kwargs, shape = layer
    mod, tmod = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(mod) == repr(tmod)
    mod.to(getattr(mt, dtype))
    tmod.to(getattr(torch, dtype))
    with torch.no_grad():  # non-trivial weights so affine terms are tested
        for p in tmod.parameters():
            p.copy_(torch.randn_like(p))
    copy_weights(tmod, mod, device)
    train = name != "Dropout"
    check_module(mod, tmod, rng.standard_normal(shape), device, dtype, train=train)
    if name.startswith("BatchNorm"):  # a second step in eval mode uses the running stats
        for p, tp in zip(mod.parameters(), tmod.parameters()):
            p.grad, tp.grad = None, None
        check_module(mod, tmod, rng.standard_normal(shape), device, dtype, train=False)


def test_embedding_module(device):
    mod, tmod = nn.Embedding(6, 3, padding_idx=1), torch.nn.Embedding(6, 3, padding_idx=1)
    assert repr(mod) == repr(tmod)
    copy_weights(tmod, mod, device)
    check_module(mod, tmod, np.array([[1, 2, 1], [5, 0, 2]]), device)
    assert np.all(mod.weight.grad.cpu().numpy()[1] == 0)


def test_batchnorm_counts_batches_and_momentum_none(device):
    mod, tmod = nn.BatchNorm1d(2, momentum=None), torch.nn.BatchNorm1d(2, momentum=None)
    mod.to(device)
    for _ in range(3):
        x = rng.standard_normal((5, 2)).astype(np.float32)
        mod(mt.tensor(x, device=device))
        tmod(torch.tensor(x))
    assert mod.num_batches_tracked.item() == 3
    assert mod.num_batches_tracked.dtype == mt.int64
    np.testing.assert_allclose(mod.running_var.cpu().numpy(), tmod.running_var.numpy(),
                               rtol=1e-5)


def test_mlp_training_step_matches_torch(device):
    mt.manual_seed(0)
    torch.manual_seed(0)
    mod = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    tmod = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    mod.to(device)
    x = rng.standard_normal((32, 8)).astype(np.float32)
    y = rng.integers(0, 4, 32)
    loss = nn.CrossEntropyLoss()(mod(mt.tensor(x, device=device)), mt.tensor(y, device=device))
    tloss = torch.nn.CrossEntropyLoss()(tmod(torch.tensor(x)), torch.tensor(y))
    loss.backward()
    tloss.backward()
    assert abs(loss.item() - tloss.item()) < 1e-6
    for p, tp in zip(mod.parameters(), tmod.parameters()):
        assert p.grad.dtype == mt.float32
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-6)


# -- Parameter ---------------------------------------------------------------------------------
def test_parameter_basics(device):
    t = mt.randn(2, 3, device=device)
    p = nn.Parameter(t)
    assert isinstance(p, mt.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p._data is t._data  # shares the array
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    tp = torch.nn.Parameter(torch.tensor([[1.0, 2.0]]))
    assert repr(nn.Parameter(mt.tensor([[1.0, 2.0]]))) == repr(tp)
    with pytest.raises(RuntimeError):
        nn.Parameter(mt.tensor([1, 2]))


# -- registration and iteration ----------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.block = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
        self.heads = nn.ModuleList([nn.Linear(4, 2), nn.Linear(4, 2)])
        self.table = nn.ModuleDict({"a": nn.Linear(2, 1)})
        self.scale = nn.Parameter(mt.ones(1))
        self.register_buffer("steps", mt.zeros(1))
        self.register_buffer("scratch", mt.zeros(2), persistent=False)

    def forward(self, x):
        h = self.block(self.fc1(x))
        return self.table["a"](self.heads[0](h) + self.heads[1](h)) * self.scale


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
        self.heads = torch.nn.ModuleList([torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)])
        self.table = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 1)})
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)

    def forward(self, x):
        h = self.block(self.fc1(x))
        return self.table["a"](self.heads[0](h) + self.heads[1](h)) * self.scale


def test_nested_names_match_torch():
    net, tnet = Net(), TorchNet()
    assert list(net.state_dict()) == list(tnet.state_dict())
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in tnet.named_parameters()]
    assert [n for n, _ in net.named_buffers()] == [n for n, _ in tnet.named_buffers()]
    assert [n for n, _ in net.named_modules()] == [n for n, _ in tnet.named_modules()]
    assert [n for n, _ in net.named_children()] == [n for n, _ in tnet.named_children()]
    assert repr(net).replace("TorchNet", "Net") == repr(tnet).replace("TorchNet", "Net")
    assert len(list(net.modules())) == len(list(tnet.modules()))
    assert len(list(net.parameters(recurse=False))) == 1


def test_nested_forward_matches_torch(device):
    net, tnet = Net(), TorchNet()
    copy_weights(tnet, net, device)
    check_module(net, tnet, rng.standard_normal((5, 3)), device)


def test_state_dict_shares_memory_and_is_detached():
    net = Net()
    sd = net.state_dict()
    assert not sd["fc1.weight"].requires_grad
    sd["fc1.weight"][0, 0] = 123.0
    assert net.fc1.weight[0, 0].item() == 123.0
    assert net.state_dict(keep_vars=True)["fc1.weight"] is net.fc1.weight


def test_shared_parameters_are_deduplicated():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    tlin = torch.nn.Linear(2, 2)
    tseq = torch.nn.Sequential(tlin, torch.nn.ReLU(), tlin)
    assert list(seq.state_dict()) == list(tseq.state_dict())


def test_attribute_registration_and_deletion():
    m = nn.Module()
    m.w = nn.Parameter(mt.ones(2))
    m.sub = nn.Linear(1, 1)
    m.register_buffer("buf", mt.zeros(1))
    m.plain = 3
    assert set(dict(m.named_parameters())) == {"w", "sub.weight", "sub.bias"}
    assert "w" in dir(m) and "sub" in dir(m) and "buf" in dir(m)
    with pytest.raises(TypeError):
        m.w = mt.ones(2)  # a plain tensor cannot replace a parameter
    m.w = None
    assert m.w is None and "w" not in dict(m.named_parameters())
    m.buf = mt.ones(1)
    assert m.buf.item() == 1.0 and "buf" in m.state_dict()
    del m.sub
    assert not hasattr(m, "sub")
    del m.plain
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        _ = m.missing
    with pytest.raises(KeyError):
        m.register_buffer("a.b", mt.zeros(1))


def test_train_eval_and_apply():
    net = Net()
    assert net.training and net.block[1].training
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen.count("Linear") == 5


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    out = lin(mt.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), lin.bias.detach().numpy()[None] + 1)
    assert calls == [(1, 2)]
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(lin(mt.ones(1, 2)).detach().numpy(),
                               (lin.weight.sum(1) + lin.bias).detach().numpy()[None], rtol=1e-6)


def test_requires_grad_():
    net = Net().requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


# -- zero_grad ---------------------------------------------------------------------------------
def test_zero_grad_set_to_none(device):
    lin = nn.Linear(3, 2).to(device)
    lin(mt.randn(4, 3, device=device)).sum().backward()
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


def test_zero_grad_in_place(device):
    lin = nn.Linear(3, 2).to(device)
    unused = nn.Linear(1, 1).to(device)
    model = nn.ModuleList([lin, unused])
    lin(mt.randn(4, 3, device=device)).sum().backward()
    ref = lin.weight.grad
    model.zero_grad(set_to_none=False)
    assert lin.weight.grad is ref  # same buffer, zeroed in place
    assert np.all(ref.cpu().numpy() == 0)
    assert unused.weight.grad is None  # None stays None


def test_zero_grad_in_place_detaches_graph_grads(device):
    lin = nn.Linear(2, 1).to(device)
    x = mt.randn(3, 2, device=device)
    lin(x).pow(2).sum().backward(create_graph=True)
    g = lin.weight.grad
    assert g.grad_fn is not None
    lin.zero_grad(set_to_none=False)
    assert g.grad_fn is None and not g.requires_grad and np.all(g.cpu().numpy() == 0)


# -- load_state_dict ---------------------------------------------------------------------------
def test_load_state_dict_roundtrip(device):
    a, b = Net(), Net().to(device)
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for (k, v), (_, w) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_array_equal(v.cpu().numpy(), w.cpu().numpy(), err_msg=k)
        assert w.device.type == device


def test_strict_load_lists_every_problem_and_changes_nothing():
    net = Net()
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    bad = net.state_dict()
    bad = {k: v.clone() + 1 for k, v in bad.items()}
    del bad["fc1.bias"], bad["block.1.running_mean"]
    bad["extra.weight"] = mt.zeros(1)
    bad["heads.0.weight"] = mt.zeros(5, 5)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(bad)
    msg = str(info.value)
    assert msg.startswith("Error(s) in loading state_dict for Net:")
    assert 'Missing key(s) in state_dict: "fc1.bias", "block.1.running_mean".' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight".' in msg
    assert "size mismatch for heads.0.weight" in msg
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k], err_msg=k)


def test_strict_load_message_matches_torch():
    tnet, net = torch.nn.Sequential(torch.nn.Linear(2, 3)), nn.Sequential(nn.Linear(2, 3))
    bad = {"0.weight": np.zeros((4, 2), np.float32), "1.bias": np.zeros(3, np.float32)}
    with pytest.raises(RuntimeError) as tinfo:
        tnet.load_state_dict({k: torch.tensor(v) for k, v in bad.items()})
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict({k: mt.tensor(v) for k, v in bad.items()})
    assert str(info.value).replace("microtorch", "torch") == str(tinfo.value)


def test_non_strict_load_reports_keys_but_still_checks_shapes():
    net = nn.Sequential(nn.Linear(2, 3))
    result = net.load_state_dict({"0.weight": mt.ones(3, 2), "other": mt.ones(1)}, strict=False)
    assert result.missing_keys == ["0.bias"] and result.unexpected_keys == ["other"]
    assert np.all(net[0].weight.detach().numpy() == 1)
    with pytest.raises(RuntimeError, match="size mismatch"):
        net.load_state_dict({"0.weight": mt.ones(2, 2)}, strict=False)


# -- repr --------------------------------------------------------------------------------------
def test_repr_matches_torch():
    pairs = [
        (nn.Sequential(nn.Linear(2, 1)), torch.nn.Sequential(torch.nn.Linear(2, 1))),
        (nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4),
                       nn.ReLU(inplace=True), nn.MaxPool2d(2), nn.Dropout(0.1), nn.Flatten(),
                       nn.Linear(16, 10), nn.LogSoftmax(dim=1)),
         torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1, bias=False),
                             torch.nn.BatchNorm2d(4), torch.nn.ReLU(inplace=True),
                             torch.nn.MaxPool2d(2), torch.nn.Dropout(0.1), torch.nn.Flatten(),
                             torch.nn.Linear(16, 10), torch.nn.LogSoftmax(dim=1))),
        (nn.ModuleList([nn.Linear(2, 2)] * 3 + [nn.GELU("tanh")]),
         torch.nn.ModuleList([torch.nn.Linear(2, 2)] * 3 + [torch.nn.GELU("tanh")])),
        (nn.ModuleDict({"enc": nn.Sequential(nn.Embedding(5, 2), nn.LayerNorm(2))}),
         torch.nn.ModuleDict({"enc": torch.nn.Sequential(torch.nn.Embedding(5, 2),
                                                         torch.nn.LayerNorm(2))})),
        (nn.Conv2d(2, 4, (3, 2), stride=2, padding=(1, 0), dilation=2, groups=2),
         torch.nn.Conv2d(2, 4, (3, 2), stride=2, padding=(1, 0), dilation=2, groups=2)),
        (nn.Sequential(), torch.nn.Sequential()),
        (nn.ModuleList(), torch.nn.ModuleList()),
    ]
    for mod, tmod in pairs:
        assert repr(mod) == repr(tmod)


# -- containers --------------------------------------------------------------------------------
def test_sequential_indexing():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[-1], nn.Linear)
    assert len(seq) == 3
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and len(sub) == 2
    assert list(sub.state_dict()) == ["2.weight", "2.bias"]  # PyTorch keeps the keys
    seq.append(nn.Sigmoid())
    assert len(seq) == 4 and isinstance(seq[3], nn.Sigmoid)
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear", "Sigmoid"]
    seq[1] = nn.Tanh()
    assert isinstance(seq[1], nn.Tanh)
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear", "Sigmoid"]
    with pytest.raises(IndexError):
        seq[5]
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict([("fc", nn.Linear(1, 1)), ("act", nn.ReLU())]))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"]


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    ml += [nn.Sigmoid()]
    assert len(ml) == 4 and isinstance(ml[-1], nn.Sigmoid)
    assert len(ml[1:3]) == 2 and isinstance(ml[1:3], nn.ModuleList)
    assert len(list(ml.parameters())) == 2
    md = nn.ModuleDict({"a": nn.Linear(1, 2)})
    md["b"] = nn.Linear(2, 3)
    assert list(md.keys()) == ["a", "b"] and "b" in md and len(md) == 2
    assert list(md.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]
    md.pop("a")
    assert list(md) == ["b"]


# -- moving and casting ------------------------------------------------------------------------
def test_to_dtype_keeps_parameter_objects_and_moves_grads(device):
    net = Net()
    params = list(net.parameters())
    net(mt.randn(4, 3)).sum().backward()
    net.double()
    assert [id(p) for p in net.parameters()] == [id(p) for p in params]
    assert all(p.dtype == mt.float64 for p in net.parameters())
    assert all(p.grad.dtype == mt.float64 for p in net.parameters() if p.grad is not None)
    assert net.block[1].num_batches_tracked.dtype == mt.int64  # integers are not cast
    assert net.block[1].running_mean.dtype == mt.float64
    net.to(device).float()
    assert all(p.device.type == device and p.dtype == mt.float32 for p in net.parameters())
    assert all(b.device.type == device for b in net.buffers())
    out = net(mt.randn(4, 3, device=device))
    assert out.dtype == mt.float32 and out.device.type == device
    with pytest.raises(TypeError):
        net.to(mt.int64)


# -- nn.init -----------------------------------------------------------------------------------
INITS = [
    ("uniform_", dict(a=-2.0, b=3.0)),
    ("normal_", dict(mean=1.0, std=2.0)),
    ("xavier_uniform_", dict(gain=1.5)),
    ("xavier_normal_", dict()),
    ("kaiming_uniform_", dict(a=math.sqrt(5))),
    ("kaiming_uniform_", dict(mode="fan_out", nonlinearity="relu")),
    ("kaiming_normal_", dict(nonlinearity="relu")),
    ("trunc_normal_", dict(std=0.5, a=-1.0, b=1.0)),
    ("trunc_normal_", dict(mean=0.5, std=2.0, a=0.0, b=0.5)),
    ("constant_", dict(val=0.25)),
    ("ones_", dict()),
    ("zeros_", dict()),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(7, 5), (4, 3, 3, 3), (20, 30)])
@pytest.mark.parametrize("name,kwargs", INITS, ids=[f"{n}{k}" for n, k in INITS])
def test_init_matches_torch(name, kwargs, shape, dtype):
    mt.manual_seed(5)
    torch.manual_seed(5)
    t = mt.empty(shape, dtype=getattr(mt, dtype), requires_grad=True)
    tt = torch.empty(shape, dtype=getattr(torch, dtype), requires_grad=True)
    out = getattr(nn.init, name)(t, **kwargs)
    getattr(torch.nn.init, name)(tt, **kwargs)
    assert out is t and t.is_leaf and t.grad_fn is None
    np.testing.assert_array_equal(t.detach().numpy(), tt.detach().numpy())


def test_calculate_gain():
    for args in [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",),
                 ("leaky_relu",), ("leaky_relu", 0.2), ("selu",)]:
        assert nn.init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)
    with pytest.raises(ValueError):
        nn.init.calculate_gain("nope")


# -- nn.utils ----------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm(device, norm_type, max_norm):
    grads = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(5)
             .astype(np.float32)]
    ps = [mt.zeros(g.shape, device=device, requires_grad=True) for g in grads]
    tps = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    skipped = mt.zeros(2, device=device, requires_grad=True)
    for p, tp, g in zip(ps, tps, grads):
        p.grad = mt.tensor(g, device=device)
        tp.grad = torch.tensor(g)
    ref = ps[0].grad
    total = nn.utils.clip_grad_norm_(ps + [skipped], max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type)
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-5)
    assert total.dtype == mt.float32 and ps[0].grad is ref and skipped.grad is None
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_nonfinite(device):
    p = mt.zeros(2, device=device, requires_grad=True)
    p.grad = mt.tensor([math.inf, 1.0], device=device)
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_clip_grad_value(device):
    p = mt.zeros(3, device=device, requires_grad=True)
    p.grad = mt.tensor([-2.0, 0.5, 3.0], device=device)
    nn.utils.clip_grad_value_([p], 1.0)
    assert p.grad.tolist() == [-1.0, 0.5, 1.0]


def test_parameters_vector_roundtrip(device):
    net = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1)).to(device)
    vec = nn.utils.parameters_to_vector(net.parameters())
    assert vec.shape == (3 * 2 + 2 + 2 + 1,)
    assert vec.grad_fn is not None
    nn.utils.vector_to_parameters(mt.arange(11.0, device=device), net.parameters())
    assert net[0].weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert net[1].bias.tolist() == [10.0]
