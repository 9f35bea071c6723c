"""Memory formats against PyTorch: the format objects, ``contiguous``/``clone``/``to``/
``*_like``/``Module.to`` with ``memory_format``, ``is_contiguous(memory_format=...)`` and
``stride()`` on the layouts they make, PyTorch's preserve_format rule, the layout elementwise
ops keep, values and gradients through channels-last tensors, on the CPU and the CUDA
stand-in. (Documented divergence: ops other than elementwise ones give C-order results.)"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
from _torch_compare import same_error  # noqa: E402

pytestmark = pytest.mark.torch

FORMATS = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]


def test_format_objects():
    for name in FORMATS:
        fmt = getattr(mt, name)
        assert isinstance(fmt, mt.memory_format)
        assert repr(fmt).replace("microtorch", "torch") == repr(getattr(torch, name))
        assert pickle.loads(pickle.dumps(fmt)) is fmt
    assert isinstance(mt.strided, mt.layout) and repr(mt.strided) == "microtorch.strided"
    assert mt.ones(2).layout is mt.strided
    assert repr(type(mt.channels_last)) == "<class 'microtorch.memory_format'>"


def _pair(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape)
    return mt.tensor(x), torch.tensor(x)


def _same_layout(a, b):
    assert a.stride() == b.stride(), (a.stride(), b.stride())
    for name in ("contiguous_format", "channels_last", "channels_last_3d"):
        assert a.is_contiguous(memory_format=getattr(mt, name)) == \
            b.is_contiguous(memory_format=getattr(torch, name)), name
    assert a.is_contiguous() == b.is_contiguous()
    np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().numpy())


CASES = {
    "contiguous_cl": lambda m, x: x.contiguous(memory_format=m.channels_last),
    "cl_twice": lambda m, x: x.contiguous(memory_format=m.channels_last)
    .contiguous(memory_format=m.channels_last),
    "back_to_contiguous": lambda m, x: x.contiguous(memory_format=m.channels_last).contiguous(),
    "clone_preserves": lambda m, x: x.contiguous(memory_format=m.channels_last).clone(),
    "clone_contiguous": lambda m, x: x.contiguous(memory_format=m.channels_last)
    .clone(memory_format=m.contiguous_format),
    "clone_cl": lambda m, x: x.clone(memory_format=m.channels_last),
    "clone_sliced_cl": lambda m, x: x.contiguous(memory_format=m.channels_last)[:, :, ::2]
    .clone(),
    "clone_permuted": lambda m, x: x.permute(0, 2, 3, 1).clone(),
    "clone_transposed": lambda m, x: x.transpose(2, 3).clone(),
    "empty_like_cl": lambda m, x: m.empty_like(x.contiguous(memory_format=m.channels_last))
    .fill_(1.0),
    "zeros_like_fmt": lambda m, x: m.zeros_like(x, memory_format=m.channels_last),
    "ones_like_sliced": lambda m, x: m.ones_like(x.contiguous(memory_format=m.channels_last)
                                                 [:, :, ::2]),
    "full_like": lambda m, x: m.full_like(x.contiguous(memory_format=m.channels_last), 2.0),
    "to_cl": lambda m, x: x.to(memory_format=m.channels_last),
    "to_dtype_cl": lambda m, x: x.to(m.float32, memory_format=m.channels_last),
    "to_dtype_preserves": lambda m, x: x.contiguous(memory_format=m.channels_last).to(m.float32),
    "to_contiguous": lambda m, x: x.contiguous(memory_format=m.channels_last)
    .to(memory_format=m.contiguous_format),
    "elementwise_keeps": lambda m, x: (x.contiguous(memory_format=m.channels_last) * 2).abs(),
    "relu_keeps": lambda m, x: m.nn.functional.relu(x.contiguous(memory_format=m.channels_last)),
    "reshape_of_cl": lambda m, x: x.contiguous(memory_format=m.channels_last).reshape(2, -1),
    "n111": lambda m, x: x[:, :1, :1, :1].contiguous(memory_format=m.channels_last),
    "1c11": lambda m, x: x[:1, :, :1, :1].contiguous(memory_format=m.channels_last),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_layouts_match_pytorch(name, device):
    x, tx = _pair((2, 3, 4, 5))
    got, want = CASES[name](mt, x.to(device)), CASES[name](torch, tx)
    assert got.dtype.name == str(want.dtype).split(".")[1]
    _same_layout(got, want)


def test_3d_formats(device):
    x, tx = _pair((2, 3, 4, 5, 6))
    for fn in (lambda m, x: x.contiguous(memory_format=m.channels_last_3d),
               lambda m, x: x.contiguous(memory_format=m.channels_last_3d).clone(),
               lambda m, x: x.to(memory_format=m.channels_last_3d) + 1):
        _same_layout(fn(mt, x.to(device)), fn(torch, tx))


def test_aliasing_of_to_and_contiguous():
    x = mt.randn(2, 3, 4, 5)
    y = x.contiguous(memory_format=mt.channels_last)
    assert y.contiguous(memory_format=mt.channels_last) is y
    assert y.to(memory_format=mt.preserve_format) is y
    assert y.to(memory_format=mt.channels_last) is y
    p = x.permute(0, 2, 3, 1)  # its strides suggest contiguous_format: to() aliases, as PyTorch
    assert p.to(memory_format=mt.contiguous_format) is p
    assert torch.randn(2, 3, 4, 5).permute(0, 2, 3, 1).to(
        memory_format=torch.contiguous_format).is_contiguous() is False
    assert x.contiguous(memory_format=mt.preserve_format) is x


def test_errors():
    cases = [
        (lambda m: m.randn(2, 3, 4).contiguous(memory_format=m.channels_last), RuntimeError),
        (lambda m: m.randn(2, 3, 4).to(memory_format=m.channels_last), RuntimeError),
        (lambda m: m.randn(2, 3).clone(memory_format=m.channels_last), RuntimeError),
        (lambda m: m.randn(2, 3, 4, 5).contiguous(memory_format=m.channels_last_3d),
         RuntimeError),
        (lambda m: m.empty_like(m.randn(2, 3), memory_format=m.channels_last), RuntimeError),
        (lambda m: m.randn(2, 3, 4, 5).contiguous(memory_format=42), TypeError),
    ]
    for fn, exc in cases:
        same_error(lambda: fn(mt), lambda: fn(torch), exc)  # noqa: B023
    assert mt.randn(2, 3, 4).is_contiguous(memory_format=mt.channels_last) is False


def test_module_to_memory_format(device):
    torch.manual_seed(0)
    tconv = torch.nn.Conv2d(3, 4, 3)
    mt.manual_seed(0)
    conv = mt.nn.Conv2d(3, 4, 3).to(device)
    assert conv.to(memory_format=mt.channels_last) is conv
    tconv.to(memory_format=torch.channels_last)
    assert conv.weight.stride() == tconv.weight.stride() and conv.bias.stride() == (1,)
    assert isinstance(conv.weight, mt.nn.Parameter)
    lin = mt.nn.Linear(2, 3).to(memory_format=mt.channels_last)
    assert lin.weight.is_contiguous()
    with pytest.raises(RuntimeError, match="required rank 4"):
        mt.nn.Conv3d(2, 3, 2).to(memory_format=mt.channels_last)
    c3 = mt.nn.Conv3d(2, 3, 2).to(memory_format=mt.channels_last_3d)
    assert c3.weight.stride() == torch.nn.Conv3d(2, 3, 2).to(
        memory_format=torch.channels_last_3d).weight.stride()


def test_training_through_channels_last_matches_contiguous(device):
    """Values and gradients do not depend on the layout: a conv net step in channels_last
    gives the contiguous run's numbers exactly."""
    results = []
    for fmt in (mt.contiguous_format, mt.channels_last):
        mt.manual_seed(0)
        net = mt.nn.Sequential(mt.nn.Conv2d(3, 4, 3, padding=1), mt.nn.BatchNorm2d(4),
                               mt.nn.ReLU(), mt.nn.MaxPool2d(2), mt.nn.Conv2d(4, 2, 1))
        net.to(device).to(memory_format=fmt)
        x = mt.randn(2, 3, 6, 6, device=device).contiguous(memory_format=fmt)
        opt = mt.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        for _ in range(2):
            opt.zero_grad()
            net(x).square().mean().backward()
            opt.step()
        results.append([p.detach().cpu().numpy() for p in net.parameters()])
        if fmt is mt.channels_last:
            assert net[0].weight.is_contiguous(memory_format=mt.channels_last)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_serialization_keeps_channels_last(tmp_path):
    y = mt.randn(2, 3, 4, 5).contiguous(memory_format=mt.channels_last)
    mt.save(y, tmp_path / "t.pt")
    t = torch.load(tmp_path / "t.pt")
    assert t.stride() == y.stride()
    np.testing.assert_array_equal(t.numpy(), y.numpy())
    torch.save(t, tmp_path / "u.pt")
    back = mt.load(tmp_path / "u.pt")
    assert back.stride() == t.stride()
