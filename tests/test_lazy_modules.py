"""Lazy modules against PyTorch: LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d and
LazyBatchNorm1d/2d/3d start with uninitialized parameters, take their shapes from the first
input, draw their weights from the generator as the eager module's constructor does (equal to
PyTorch's after the same seed) and become the eager class; uninitialized-parameter errors,
state-dict loading, an optimizer built before the first forward; CPU and the CUDA stand-in."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

CASES = [
    ("LazyLinear", (3,), {}, (2, 5)),
    ("LazyLinear", (4,), {"bias": False}, (2, 3, 6)),
    ("LazyConv1d", (4, 3), {"stride": 2}, (2, 3, 9)),
    ("LazyConv2d", (4, 3), {"padding": 1, "groups": 2}, (2, 6, 5, 5)),
    ("LazyConv2d", (2, (2, 3)), {"bias": False}, (3, 6, 7)),
    ("LazyConv3d", (2, 2), {"dilation": 1}, (1, 2, 4, 4, 4)),
    ("LazyConvTranspose1d", (3, 3), {"stride": 2, "output_padding": 1}, (2, 4, 5)),
    ("LazyConvTranspose2d", (4, 3), {"groups": 2}, (2, 6, 4, 4)),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 3, 3, 3, 3)),
    ("LazyBatchNorm1d", (), {}, (4, 3, 5)),
    ("LazyBatchNorm2d", (), {"momentum": None}, (4, 3, 2, 2)),
    ("LazyBatchNorm3d", (), {"affine": False}, (2, 3, 2, 2, 2)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", CASES)
def test_lazy_module_matches_pytorch(name, args, kwargs, shape, device):
    torch.manual_seed(0)
    tmod = getattr(torch.nn, name)(*args, **kwargs)
    mt.manual_seed(0)
    mod = getattr(mt.nn, name)(*args, **kwargs).to(device)
    assert repr(mod) == repr(tmod)
    assert mod.has_uninitialized_params() and tmod.has_uninitialized_params()
    assert isinstance(mod.weight, mt.nn.UninitializedParameter) or mod.weight is None
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    torch.manual_seed(5)
    mt.manual_seed(5)
    tout, out = tmod(torch.tensor(x)), mod(mt.tensor(x, device=device))
    assert type(mod).__name__ == type(tmod).__name__ == name[4:]
    assert repr(mod) == repr(tmod)
    assert [n for n, _ in mod.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    sd, tsd = mod.state_dict(), tmod.state_dict()
    assert list(sd) == list(tsd)
    if device == "cuda":  # (initialised on the device: CuPy's generator, not PyTorch's CPU
        # stream; the shapes, dtypes and forward are still compared, with PyTorch's weights)
        for key in sd:
            assert sd[key].shape == tuple(tsd[key].shape) and sd[key].device.type == "cuda"
        mod.load_state_dict({k: mt.tensor(v.numpy(), device=device) for k, v in tsd.items()})
        out = mod(mt.tensor(x, device=device))
        tout = tmod(torch.tensor(x))
        np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(),
                                   rtol=1e-5, atol=1e-5)
        return
    params = dict(mod.named_parameters())
    for key in sd:
        if key in params:  # the initial draws: bit for bit
            np.testing.assert_array_equal(sd[key].cpu().numpy(), tsd[key].numpy(), err_msg=key)
        else:  # running statistics of a float32 batch: summed in another order
            np.testing.assert_allclose(sd[key].cpu().numpy(), tsd[key].numpy(), rtol=1e-6,
                                       atol=1e-7, err_msg=key)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    assert mt.rand(3).tolist() == torch.rand(3).tolist()  # the streams stay in step


def test_uninitialized_parameters():
    mod = mt.nn.LazyLinear(3, dtype=mt.float64)
    p = mod.weight
    assert repr(p) == "<UninitializedParameter>" and p.requires_grad and p.dtype == mt.float64
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        _ = p.shape
    assert type(mod.state_dict()["weight"]) is mt.nn.UninitializedParameter
    opt = mt.optim.SGD(mod.parameters(), lr=0.1)  # built before the parameters have shapes
    mod(mt.ones(2, 4, dtype=mt.float64)).sum().backward()
    assert type(p) is mt.nn.Parameter and p.shape == (3, 4) and mod.weight is p
    before = p.detach().clone()
    opt.step()
    assert not mt.equal(before, p)
    buf = mt.nn.UninitializedBuffer()
    assert repr(buf) == "<UninitializedBuffer>" and not buf.requires_grad
    buf.materialize((2, 3))
    assert type(buf) is mt.Tensor and buf.shape == (2, 3)


def test_load_state_dict_materializes():
    src = mt.nn.Linear(5, 3)
    mod = mt.nn.LazyLinear(3)
    mod.load_state_dict(src.state_dict())
    assert type(mod) is mt.nn.LazyLinear and mod.weight.shape == (3, 5)
    assert mt.equal(mod.weight, src.weight) and not mod.has_uninitialized_params()
    out = mod(mt.ones(1, 5))
    assert type(mod) is mt.nn.Linear and mt.allclose(out, src(mt.ones(1, 5)))
    bn = mt.nn.LazyBatchNorm1d()
    bn.load_state_dict(mt.nn.BatchNorm1d(4).state_dict())
    assert bn.running_mean.shape == (4,)


def test_lazy_conv_errors():
    for lib in (mt, torch):
        with pytest.raises(RuntimeError, match="Expected 3D"):
            lib.nn.LazyConv2d(4, 3)(lib.ones(2, 3))
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            lib.nn.LazyConv2d(4, 3, groups=2)(lib.ones(1, 3, 5, 5))
