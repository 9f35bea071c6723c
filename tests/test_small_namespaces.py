"""PyTorch's small namespaces against PyTorch: ``nn.utils.fusion`` (fused weights bit for bit,
fused modules' outputs, the eval and shape errors), ``nn.utils.stateless`` (the deprecation
warning, the call), ``nn.utils.init.skip_init``, ``nn.utils.memory_format`` (the strides the
conversion leaves), ``functional`` (PyTorch's ``__all__`` less ``chain_matmul``), ``types``,
``utils.hooks`` and ``utils.deterministic`` (``empty`` filled as PyTorch fills it)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
import microtorch.functional as mt_functional
import microtorch.nn.utils.fusion as fusion
import microtorch.nn.utils.init as nn_init
import microtorch.nn.utils.memory_format as memory_format
import microtorch.nn.utils.stateless as stateless
import microtorch.types as mt_types
import microtorch.utils.deterministic as deterministic
import microtorch.utils.hooks as hooks

torch = pytest.importorskip("torch")
import torch.nn.utils.fusion as torch_fusion  # noqa: E402
import torch.nn.utils.memory_format as torch_memory_format  # noqa: E402
import torch.nn.utils.stateless as torch_stateless  # noqa: E402
import torch.utils.deterministic as torch_deterministic  # noqa: E402
from _torch_compare import copy_weights, same_error  # noqa: E402

pytestmark = pytest.mark.torch


def _np(t):
    return t.detach().cpu().numpy()


def _same_bits(a, b) -> None:
    """Equal shapes, dtypes and bytes (NaNs and signed zeros included)."""
    a, b = _np(a), _np(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes()


def _randomize_bn(tbn, seed: int) -> None:
    """Running stats and affine parameters away from their initial values."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        tbn.running_mean.copy_(torch.randn(tbn.num_features, generator=g))
        tbn.running_var.copy_(torch.rand(tbn.num_features, generator=g) + 0.5)
        if tbn.affine:
            tbn.weight.copy_(torch.randn(tbn.num_features, generator=g))
            tbn.bias.copy_(torch.randn(tbn.num_features, generator=g))


# -- fusion -------------------------------------------------------------------------------

CONVS = [("Conv1d", "BatchNorm1d", 1, False), ("Conv2d", "BatchNorm2d", 2, False),
         ("Conv3d", "BatchNorm3d", 3, False), ("ConvTranspose1d", "BatchNorm1d", 1, True),
         ("ConvTranspose2d", "BatchNorm2d", 2, True), ("ConvTranspose3d", "BatchNorm3d", 3, True)]


def _conv_pair(conv, bn, bias, affine, dtype, seed=0):
    torch.manual_seed(seed)
    tconv = getattr(torch.nn, conv)(3, 4, 2, bias=bias).to(getattr(torch, dtype)).eval()
    tbn = getattr(torch.nn, bn)(4, affine=affine).to(getattr(torch, dtype)).eval()
    _randomize_bn(tbn, seed)
    mconv = getattr(mt.nn, conv)(3, 4, 2, bias=bias).to(getattr(mt, dtype)).eval()
    mbn = getattr(mt.nn, bn)(4, affine=affine).to(getattr(mt, dtype)).eval()
    copy_weights(tconv, mconv)
    copy_weights(tbn, mbn)
    return tconv, tbn, mconv, mbn


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias,affine", [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize("conv,bn,dims,transpose", CONVS)
def test_fuse_conv_bn_eval_matches_torch_bit_for_bit(conv, bn, dims, transpose, bias, affine,
                                                      dtype):
    tconv, tbn, mconv, mbn = _conv_pair(conv, bn, bias, affine, dtype)
    tfused = torch_fusion.fuse_conv_bn_eval(tconv, tbn, transpose=transpose)
    mfused = fusion.fuse_conv_bn_eval(mconv, mbn, transpose=transpose)
    assert type(mfused) is type(mconv) and mfused is not mconv
    _same_bits(mfused.weight, tfused.weight)
    _same_bits(mfused.bias, tfused.bias)
    assert isinstance(mfused.weight, mt.nn.Parameter) and isinstance(mfused.bias, mt.nn.Parameter)
    assert mfused.weight.requires_grad == tfused.weight.requires_grad
    assert mfused.bias.requires_grad == tfused.bias.requires_grad  # (False when made of zeros)
    assert (mconv.bias is None) == (not bias)  # the original is left alone
    x = np.random.default_rng(1).standard_normal((2, 3) + (5,) * dims).astype(dtype)
    out, tout = mfused(mt.tensor(x)), tfused(torch.tensor(x))
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(_np(out), _np(tout), rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(out), _np(mbn(mconv(mt.tensor(x)))), rtol=tol, atol=tol)


def test_fuse_conv_bn_eval_errors():
    tconv, tbn, mconv, mbn = _conv_pair("Conv2d", "BatchNorm2d", True, True, "float32")
    for train_conv in (True, False):
        mconv.train(train_conv), tconv.train(train_conv)
        mbn.train(not train_conv), tbn.train(not train_conv)
        same_error(lambda: fusion.fuse_conv_bn_eval(mconv, mbn),
                   lambda: torch_fusion.fuse_conv_bn_eval(tconv, tbn), AssertionError)
    mconv.eval(), tconv.eval()
    mbn = mt.nn.BatchNorm2d(4, track_running_stats=False).eval()
    tbn = torch.nn.BatchNorm2d(4, track_running_stats=False).eval()
    same_error(lambda: fusion.fuse_conv_bn_eval(mconv, mbn),
               lambda: torch_fusion.fuse_conv_bn_eval(tconv, tbn), AssertionError)


def test_fuse_conv_bn_weights_mixed_dtypes_and_grad_flags():
    rng = np.random.default_rng(3)
    b = rng.standard_normal(4)  # float64 bias: keeps its dtype
    rm, rv = rng.standard_normal(4), rng.random(4) + 0.5  # float64 stats
    bw, bb = rng.standard_normal(4), rng.standard_normal(4)
    for transpose in (False, True):
        w = rng.standard_normal((3, 4, 2, 2) if transpose else (4, 3, 2, 2)).astype(np.float32)
        margs = [mt.tensor(w, requires_grad=True), mt.tensor(b), mt.tensor(rm), mt.tensor(rv),
                 1e-3, mt.tensor(bw), mt.tensor(bb)]
        targs = [torch.tensor(w, requires_grad=True), torch.tensor(b), torch.tensor(rm),
                 torch.tensor(rv), 1e-3, torch.tensor(bw), torch.tensor(bb)]
        got = fusion.fuse_conv_bn_weights(*margs, transpose=transpose)
        want = torch_fusion.fuse_conv_bn_weights(*targs, transpose=transpose)
        for g, t in zip(got, want):
            _same_bits(g, t)
            assert g.requires_grad == t.requires_grad
    # None for the conv bias and the BatchNorm's affine parameters (the transposed weight)
    got = fusion.fuse_conv_bn_weights(margs[0], None, *margs[2:5], None, None, True)
    want = torch_fusion.fuse_conv_bn_weights(targs[0], None, *targs[2:5], None, None, True)
    for g, t in zip(got, want):
        _same_bits(g, t)
        assert g.requires_grad == t.requires_grad


def _linear_pair(out_features, num_features, bias, dtype="float32", seed=0):
    torch.manual_seed(seed)
    tlin = torch.nn.Linear(5, out_features, bias=bias).to(getattr(torch, dtype)).eval()
    tbn = torch.nn.BatchNorm1d(num_features).to(getattr(torch, dtype)).eval()
    _randomize_bn(tbn, seed)
    mlin = mt.nn.Linear(5, out_features, bias=bias).to(getattr(mt, dtype)).eval()
    mbn = mt.nn.BatchNorm1d(num_features).to(getattr(mt, dtype)).eval()
    copy_weights(tlin, mlin)
    copy_weights(tbn, mbn)
    return tlin, tbn, mlin, mbn


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("out_features,num_features,bias",
                         [(4, 4, True), (4, 4, False), (4, 1, True)])
def test_fuse_linear_bn_eval_matches_torch_bit_for_bit(out_features, num_features, bias, dtype):
    tlin, tbn, mlin, mbn = _linear_pair(out_features, num_features, bias, dtype)
    tfused = torch_fusion.fuse_linear_bn_eval(tlin, tbn)
    mfused = fusion.fuse_linear_bn_eval(mlin, mbn)
    assert type(mfused) is mt.nn.Linear and mfused is not mlin
    _same_bits(mfused.weight, tfused.weight)
    _same_bits(mfused.bias, tfused.bias)
    assert mfused.weight.requires_grad == tfused.weight.requires_grad
    assert mfused.bias.requires_grad == tfused.bias.requires_grad
    x = np.random.default_rng(2).standard_normal((3, 5)).astype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(_np(mfused(mt.tensor(x))), _np(tfused(torch.tensor(x))),
                               rtol=tol, atol=tol)


def test_fuse_linear_bn_eval_errors():
    tlin, tbn, mlin, mbn = _linear_pair(4, 3, True)
    same_error(lambda: fusion.fuse_linear_bn_eval(mlin, mbn),
               lambda: torch_fusion.fuse_linear_bn_eval(tlin, tbn), AssertionError)
    mlin.train(), tlin.train()
    same_error(lambda: fusion.fuse_linear_bn_eval(mlin, mbn),
               lambda: torch_fusion.fuse_linear_bn_eval(tlin, tbn), AssertionError)


# -- stateless ------------------------------------------------------------------------------

def test_stateless_functional_call_warns_and_calls():
    x = np.random.default_rng(0).standard_normal((2, 3))
    torch.manual_seed(0)
    tlin = torch.nn.Linear(3, 2)
    mlin = mt.nn.Linear(3, 2)
    copy_weights(tlin, mlin)
    w = np.ones((2, 3))
    with pytest.warns(FutureWarning) as got:
        out = stateless.functional_call(mlin, {"weight": mt.tensor(w, dtype=mt.float32)},
                                        (mt.tensor(x, dtype=mt.float32),))
    with pytest.warns(FutureWarning) as want:
        tout = torch_stateless.functional_call(tlin, {"weight": torch.ones(2, 3)},
                                               torch.tensor(x, dtype=torch.float32))
    assert [str(r.message) for r in got] == [str(r.message) for r in want]
    assert got[0].filename == __file__  # (stacklevel: the caller's line)
    np.testing.assert_allclose(_np(out), _np(tout), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(_np(mlin.weight), _np(tlin.weight))  # put back


def test_stateless_functional_call_strict_and_reassigned_buffers():
    class Counter(mt.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("foo", mt.zeros(()))

        def forward(self, x):
            self.foo = self.foo + 1
            return x + self.foo

    given = {"foo": mt.zeros(())}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert stateless.functional_call(Counter(), given, mt.ones(())).item() == 2.0
        with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'bar'"):
            stateless.functional_call(Counter(), {"foo": mt.zeros(()), "bar": mt.zeros(())},
                                      mt.ones(()), strict=True)
    assert given["foo"].item() == 1.0  # the value the call reassigned


def test_reparametrize_module():
    lin = mt.nn.Linear(2, 2)
    lin.tied = lin.weight
    own = lin.weight
    new = {"weight": mt.zeros(2, 2)}
    with stateless._reparametrize_module(lin, new, tie_weights=True):
        assert lin.weight is new["weight"] and lin.tied is new["weight"]
        assert lin(mt.ones(1, 2)).sum().item() == pytest.approx(lin.bias.sum().item())
    assert lin.weight is own and lin.tied is own
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        with stateless._reparametrize_module(lin, new, strict=True):
            pass


# -- skip_init ------------------------------------------------------------------------------

@pytest.mark.parametrize("cls,args,kwargs", [
    ("Linear", (5, 3), {}), ("Linear", (), {"in_features": 6, "out_features": 1}),
    ("Conv2d", (2, 4, 3), {"bias": False}), ("BatchNorm1d", (3,), {"dtype": "float64"}),
    ("Embedding", (7, 2), {})])
def test_skip_init_shapes_dtypes_and_rng(cls, args, kwargs):
    tkwargs = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
    mkwargs = {k: getattr(mt, v) if k == "dtype" else v for k, v in kwargs.items()}
    torch.manual_seed(0)
    tmod = torch.nn.utils.skip_init(getattr(torch.nn, cls), *args, **tkwargs)
    tnext = torch.randn(3)
    mt.manual_seed(0)
    mmod = nn_init.skip_init(getattr(mt.nn, cls), *args, **mkwargs)
    mnext = mt.randn(3)
    mt.manual_seed(0)
    torch.manual_seed(0)
    np.testing.assert_array_equal(_np(mnext), _np(mt.randn(3)))  # the generator is untouched
    np.testing.assert_array_equal(_np(tnext), _np(torch.randn(3)))  # (as in PyTorch)
    assert type(mmod) is getattr(mt.nn, cls)
    tstate, mstate = dict(tmod.named_parameters()), dict(mmod.named_parameters())
    assert list(mstate) == list(tstate)
    for name, t in tstate.items():
        m = mstate[name]
        assert isinstance(m, mt.nn.Parameter) and m.requires_grad == t.requires_grad
        assert tuple(m.shape) == tuple(t.shape) and str(m.dtype)[len("micro"):] == str(t.dtype)
        assert m.device.type == "cpu"
    tbufs, mbufs = dict(tmod.named_buffers()), dict(mmod.named_buffers())
    assert list(mbufs) == list(tbufs)
    for name, t in tbufs.items():
        assert tuple(mbufs[name].shape) == tuple(t.shape)
        assert str(mbufs[name].dtype)[len("micro"):] == str(t.dtype)


def test_skip_init_is_uninitialized_memory():
    """Filled by ``empty``: NaN under deterministic algorithms, as PyTorch's to_empty."""
    mt.use_deterministic_algorithms(True)
    try:
        lin = nn_init.skip_init(mt.nn.Linear, 4, 2, device="cpu")
    finally:
        mt.use_deterministic_algorithms(False)
    assert np.isnan(_np(lin.weight)).all() and np.isnan(_np(lin.bias)).all()


def test_skip_init_errors():
    class NoDevice(mt.nn.Module):
        def __init__(self, n):
            super().__init__()

    class TorchNoDevice(torch.nn.Module):
        def __init__(self, n):
            super().__init__()

    same_error(lambda: nn_init.skip_init(NoDevice, 2),
               lambda: torch.nn.utils.skip_init(TorchNoDevice, 2), RuntimeError)
    same_error(lambda: nn_init.skip_init(int), lambda: torch.nn.utils.skip_init(int),
               RuntimeError)


# -- memory_format --------------------------------------------------------------------------

def _model(lib):
    return lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.ReLU(),
                             lib.nn.Sequential(lib.nn.ConvTranspose2d(4, 2, 2)),
                             lib.nn.Conv3d(2, 2, 1), lib.nn.Linear(2, 2))


@pytest.mark.parametrize("fmt", ["channels_last", "contiguous_format"])
def test_convert_conv2d_weight_memory_format_strides(fmt):
    tmodel, mmodel = _model(torch), _model(mt)
    before = [id(p) for p in mmodel.parameters()]
    if fmt == "contiguous_format":  # start from channels_last to see it go back
        memory_format.convert_conv2d_weight_memory_format(mmodel, mt.channels_last)
        torch_memory_format.convert_conv2d_weight_memory_format(tmodel, torch.channels_last)
    out = memory_format.convert_conv2d_weight_memory_format(mmodel, getattr(mt, fmt))
    torch_memory_format.convert_conv2d_weight_memory_format(tmodel, getattr(torch, fmt))
    assert out is mmodel and [id(p) for p in mmodel.parameters()] == before
    assert [p.stride() for p in mmodel.parameters()] == \
        [p.stride() for p in tmodel.parameters()]
    assert mmodel[0].weight.is_contiguous(memory_format=getattr(mt, fmt))


def test_convert_conv3d_weight_memory_format_strides_and_error():
    tmodel, mmodel = _model(torch), _model(mt)
    copy_weights(tmodel, mmodel)
    memory_format.convert_conv3d_weight_memory_format(mmodel, mt.channels_last_3d)
    torch_memory_format.convert_conv3d_weight_memory_format(tmodel, torch.channels_last_3d)
    assert [p.stride() for p in mmodel.parameters()] == \
        [p.stride() for p in tmodel.parameters()]
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(_np(mmodel[3](mt.tensor(x))), _np(tmodel[3](torch.tensor(x))),
                               rtol=1e-6, atol=1e-6)
    same_error(lambda: memory_format.convert_conv3d_weight_memory_format(mmodel,
                                                                         mt.channels_last),
               lambda: torch_memory_format.convert_conv3d_weight_memory_format(
                   tmodel, torch.channels_last), RuntimeError)


# -- functional, types, hooks ---------------------------------------------------------------

def test_functional_names():
    missing = {"chain_matmul"}  # not in microtorch
    assert sorted(mt_functional.__all__) == sorted(set(torch.functional.__all__) - missing)
    for name in mt_functional.__all__:
        assert getattr(mt_functional, name) is getattr(mt, name), name
    from microtorch.functional import einsum, unravel_index

    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(_np(einsum("ij->ji", mt.tensor(a))),
                                  _np(torch.functional.einsum("ij->ji", torch.tensor(a))))
    assert [_np(t).tolist() for t in unravel_index(mt.tensor(4), (2, 3))] == \
        [_np(t).tolist() for t in torch.functional.unravel_index(torch.tensor(4), (2, 3))]
    with pytest.raises(AttributeError):
        mt_functional.chain_matmul  # noqa: B018


def test_types_names():
    import torch.types as torch_types

    assert mt_types.__all__ == torch_types.__all__
    for name in ["Number", "Device", "FileLike", "Storage", "_dtype", "_device", "_size",
                 "_layout", "_int", "_float", "_bool", "_complex", "_str", "_bytes", "_Number",
                 "_TensorOrTensors", "_TensorOrOptionalTensors", "_TensorOrTensorsOrGradEdge",
                 "IntLikeType", "FloatLikeType", "BoolLikeType", "py_sym_types", "Size", "Tensor",
                 "_symsize", "_dispatchkey"]:
        assert hasattr(mt_types, name) and hasattr(torch_types, name), name
    assert mt_types._dtype is mt.dtype and mt_types._device is mt.device
    assert mt_types._layout is mt.layout and mt_types.Tensor is mt.Tensor
    assert mt_types._float is float and mt_types._Number == torch_types._Number
    assert isinstance(mt.device("cpu"), mt_types.Device) and isinstance("cuda:0", mt_types.Device)
    assert not isinstance(3, mt_types.py_sym_types)
    with pytest.raises(NotImplementedError):
        mt_types.Storage().nbytes()


def test_hooks_names_and_warning():
    from microtorch._hooks import RemovableHandle

    assert hooks.RemovableHandle is RemovableHandle
    assert sorted(hooks.__all__) == sorted(torch.utils.hooks.__all__)
    assert hooks.BackwardHook is mt.nn.modules.hooks.BackwardHook

    def hook(grad):
        return grad

    for lib, mod in ((mt, hooks), (torch, torch.utils.hooks)):
        leaf = lib.ones(2, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mod.warn_if_has_hooks(leaf)  # no hooks: no warning
        handle = leaf.register_hook(hook)
        assert isinstance(handle, mod.RemovableHandle)
        with pytest.warns(UserWarning) as rec:
            mod.warn_if_has_hooks(leaf)
        assert len(rec) == 1
        assert str(rec[0].message).startswith(f"backward hook {hook!r} on tensor will not be "
                                              "serialized.  If this is expected, you can "
                                              "decorate the function with "
                                              "@torch.utils.hooks.unserializable_hook")
        nonleaf = leaf * 2
        nonleaf.register_hook(hook)
        with pytest.warns(UserWarning):
            mod.warn_if_has_hooks(nonleaf)
        assert mod.unserializable_hook(hook) is hook and hook.__torch_unserializable__
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mod.warn_if_has_hooks(leaf)
            mod.warn_if_has_hooks(nonleaf)
        del hook.__torch_unserializable__
        handle.remove()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mod.warn_if_has_hooks(leaf)


# -- deterministic --------------------------------------------------------------------------

def test_fill_uninitialized_memory_flag():
    assert deterministic.fill_uninitialized_memory is True
    assert torch_deterministic.fill_uninitialized_memory is True
    assert type(deterministic).__name__ == type(torch_deterministic).__name__
    for bad in ("x", 1, None):
        same_error(lambda: setattr(deterministic, "fill_uninitialized_memory", bad),  # noqa: B023
                   lambda: setattr(torch_deterministic, "fill_uninitialized_memory",
                                   bad), RuntimeError)  # noqa: B023
    deterministic.fill_uninitialized_memory = False
    try:
        assert deterministic.fill_uninitialized_memory is False
    finally:
        deterministic.fill_uninitialized_memory = True


DTYPES = ["float32", "float64", "float16", "bfloat16", "complex64", "int8", "uint8", "int16",
          "int32", "int64", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_filled_under_deterministic_algorithms(dtype, device):
    if device == "cuda" and dtype == "bfloat16":
        pytest.skip("CuPy has no bfloat16 dtype")
    mdt, tdt = getattr(mt, dtype), getattr(torch, dtype)
    makers = [
        (lambda lib, dt, dev: lib.empty(2, 3, dtype=dt, device=dev)),
        (lambda lib, dt, dev: lib.empty_like(lib.zeros(2, 3, dtype=dt, device=dev))),
        (lambda lib, dt, dev: lib.zeros(1, dtype=dt, device=dev).new_empty((2, 3))),
        (lambda lib, dt, dev: lib.empty_strided((2, 3), (1, 2), dtype=dt, device=dev)),
        (lambda lib, dt, dev: lib.empty_permuted((2, 3), (1, 0), dtype=dt, device=dev)),
        (lambda lib, dt, dev: lib.empty(1, 2, 2, 2, dtype=dt, device=dev,
                                        memory_format=lib.channels_last)),
    ]
    mt.use_deterministic_algorithms(True)
    torch.use_deterministic_algorithms(True)
    try:
        for make in makers:
            got, want = make(mt, mdt, device), make(torch, tdt, "cpu")
            if dtype == "bfloat16":  # (compare bits: NumPy has no bfloat16)
                got, want = got.view(mt.int16), want.view(torch.int16)
            _same_bits(got, want)
    finally:
        mt.use_deterministic_algorithms(False)
        torch.use_deterministic_algorithms(False)
