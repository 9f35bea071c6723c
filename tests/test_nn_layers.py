"""ParameterList/ParameterDict, RMSNorm, EmbeddingBag, Bilinear, Fold/Unfold, ChannelShuffle,
Upsample's modes, grid_sample (2-D and 3-D) and affine_grid against PyTorch: values, gradients,
init after the same seed, state-dict keys, repr and errors; finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from _torch_compare import compare

import microtorch as mt
import microtorch.nn as nn
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

rng = np.random.default_rng(9)
DTYPES = ["float32", "float64"]
F32 = {"rtol": 2e-5, "atol": 2e-5}


def tol(dtype):
    return F32 if dtype == "float32" else None


def _same_module(make, *inputs):
    """Same seed, same init, same state-dict keys, same repr, same forward."""
    mt.manual_seed(3)
    torch.manual_seed(3)
    ours, theirs = make(mt), make(torch)
    assert repr(ours).replace("microtorch.", "torch.") == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[k].numpy(), v.numpy())
    if inputs:
        a = ours(*[mt.tensor(x) for x in inputs])
        b = theirs(*[torch.tensor(x) for x in inputs])
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=2e-5,
                                   atol=2e-5)


# -- containers ----------------------------------------------------------------------------------
def test_parameter_list():
    for lib in (mt, torch):
        pl = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2, 3)), lib.zeros(3), "tag"])
        pl.append(lib.ones(1))
        pl += [lib.ones(2)]
        assert [type(p).__name__ for p in pl] == ["Parameter", "Parameter", "str", "Parameter",
                                                  "Parameter"]
        assert list(pl.state_dict()) == ["0", "1", "3", "4"]
        assert len(pl) == 5 and len(list(pl.parameters())) == 4
        assert isinstance(pl[1:3], lib.nn.ParameterList) and len(pl[1:3]) == 2
        pl[0] = lib.zeros(4)
        assert tuple(pl[0].shape) == (4,) and pl[0].requires_grad
        with pytest.raises(IndexError):
            pl[7]
    ours = nn.ParameterList([mt.ones(2, 3), mt.zeros(3, dtype=mt.float64)])
    theirs = torch.nn.ParameterList([torch.ones(2, 3), torch.zeros(3, dtype=torch.float64)])
    assert repr(ours).replace("microtorch", "torch") == repr(theirs)


def test_parameter_dict():
    for lib in (mt, torch):
        pd = lib.nn.ParameterDict({"b": lib.ones(2), "a": lib.nn.Parameter(lib.zeros(1))})
        pd["c"] = lib.ones(3)
        pd.update([("d", lib.ones(1))])
        assert list(pd.keys()) == ["a", "b", "c", "d"]  # a plain dict is sorted first
        assert list(pd.state_dict()) == ["a", "b", "c", "d"]
        assert tuple(pd.pop("b").shape) == (2,) and "b" not in pd and len(pd) == 3
        assert pd.get("zz") is None and pd.setdefault("e", lib.ones(2)) is pd["e"]
        assert pd.popitem()[0] == "e"
        assert list(pd.copy().keys()) == ["a", "c", "d"]
        with pytest.raises(TypeError, match="cannot be used as a key as it is not a string"):
            pd[1] = lib.ones(1)
        with pytest.raises(ValueError, match="has length 3; 2 is required"):
            pd.update([("x", 1, 2)])
    ours = nn.ParameterDict({"w": mt.ones(2, 3)})
    theirs = torch.nn.ParameterDict({"w": torch.ones(2, 3)})
    assert repr(ours).replace("microtorch", "torch") == repr(theirs)


def test_containers_in_a_model_train_like_torch():
    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.ws = lib.nn.ParameterList([lib.nn.Parameter(lib.randn(3, 3))
                                                for _ in range(2)])
                self.bs = lib.nn.ParameterDict({"b0": lib.nn.Parameter(lib.randn(3))})

            def forward(self, x):
                for w in self.ws:
                    x = (x @ w).tanh()
                return x + self.bs["b0"]
        return M()
    _same_module(build, rng.standard_normal((2, 3)).astype(np.float32))


# -- normalization, bilinear, embedding bag -----------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,norm,eps", [((2, 5), (5,), None), ((2, 3, 4), (3, 4), 1e-3),
                                            ((4,), (4,), 1e-6)])
def test_rms_norm(device, dtype, shape, norm, eps):
    x = rng.standard_normal(shape)
    w = rng.standard_normal(norm)
    compare(torch, lambda a, b: F.rms_norm(a, norm, b, eps),
            lambda a, b: TF.rms_norm(a, norm, b, eps), [x, w], dtype, device, grad=(0, 1),
            tol=tol(dtype))
    compare(torch, lambda a: F.rms_norm(a, norm, eps=eps), lambda a: TF.rms_norm(a, norm, eps=eps),
            [x], dtype, device, tol=tol(dtype))


def test_rms_norm_module_and_error():
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        F.rms_norm(mt.ones(2, 3), 3)
    _same_module(lambda lib: lib.nn.RMSNorm([2, 3], eps=1e-3),
                 rng.standard_normal((4, 2, 3)).astype(np.float32))
    _same_module(lambda lib: lib.nn.RMSNorm(3, elementwise_affine=False))
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*2, 4\], but got "
                                           r"input of size\[2, 3\]"):
        F.rms_norm(mt.ones(2, 3), (2, 4))


@pytest.mark.parametrize("dtype", DTYPES)
def test_bilinear(device, dtype):
    x1, x2 = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 5))
    w, b = rng.standard_normal((6, 3, 5)), rng.standard_normal(6)
    compare(torch, F.bilinear, TF.bilinear, [x1, x2, w, b], dtype, device, grad=(0, 1, 2, 3),
            tol=tol(dtype))


def test_bilinear_module_and_errors():
    _same_module(lambda lib: lib.nn.Bilinear(3, 4, 2), rng.standard_normal((5, 3), np.float32),
                 rng.standard_normal((5, 4), np.float32))
    _same_module(lambda lib: lib.nn.Bilinear(3, 4, 2, bias=False))
    for args in [((2, 3), (2, 5), (5, 3, 4), None), ((2, 4), (2, 4), (5, 3, 4), None),
                 ((2, 3), (3, 4), (5, 3, 4), None), ((2, 3), (2, 4), (5, 3, 4), (4,))]:
        msgs = []
        for lib in (torch, mt):
            with pytest.raises(RuntimeError) as err:
                lib.nn.functional.bilinear(lib.ones(*args[0]), lib.ones(*args[1]),
                                           lib.ones(*args[2]),
                                           None if args[3] is None else lib.ones(*args[3]))
            msgs.append(str(err.value))
        assert msgs[0] == msgs[1]


BAGS = [
    dict(input=[1, 2, 4, 5, 4, 3, 2, 9], offsets=[0, 4], mode="sum"),
    dict(input=[1, 2, 4, 5, 4, 3, 2, 9], offsets=[0, 2, 2, 5], mode="mean"),
    dict(input=[1, 2, 4, 5, 4, 3, 2, 9], offsets=[0, 2, 2, 5], mode="max"),
    dict(input=[[1, 2, 4], [5, 4, 3]], mode="max", padding_idx=4),
    dict(input=[[1, 2, 4], [5, 4, 3]], mode="mean", padding_idx=-6),
    dict(input=[1, 2, 4, 5, 4, 3, 2, 9], offsets=[0, 2, 5, 8], mode="sum",
         include_last_offset=True, per_sample_weights=True),
    dict(input=[[1, 2], [4, 4]], mode="sum", per_sample_weights=True, padding_idx=4),
    dict(input=[2, 2, 3], offsets=[0, 2, 2], mode="max", padding_idx=2),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", BAGS)
def test_embedding_bag(device, dtype, case):
    case = dict(case)
    idx = np.array(case.pop("input"))
    offsets = case.pop("offsets", None)
    psw = case.pop("per_sample_weights", False)
    arrays = [rng.standard_normal((10, 3))] + ([rng.standard_normal(idx.shape)] if psw else [])

    def ours(w, p=None):
        return F.embedding_bag(mt.tensor(idx, device=device), w,
                               None if offsets is None else mt.tensor(offsets, device=device),
                               per_sample_weights=p, **case)

    def theirs(w, p=None):
        return TF.embedding_bag(torch.tensor(idx), w,
                                None if offsets is None else torch.tensor(offsets),
                                per_sample_weights=p, **case)
    compare(torch, ours, theirs, arrays, dtype, device, grad=tuple(range(len(arrays))),
            tol=tol(dtype))


def test_embedding_bag_module_and_errors():
    _same_module(lambda lib: lib.nn.EmbeddingBag(10, 3, mode="max", padding_idx=2))
    mt.manual_seed(0)
    torch.manual_seed(0)
    ours, theirs = nn.EmbeddingBag(10, 3, mode="sum"), torch.nn.EmbeddingBag(10, 3, mode="sum")
    np.testing.assert_allclose(
        ours(mt.tensor([1, 2, 3, 4]), mt.tensor([0, 1])).detach().numpy(),
        theirs(torch.tensor([1, 2, 3, 4]), torch.tensor([0, 1])).detach().numpy(), rtol=1e-6)
    w = mt.ones(5, 2)
    cases = [
        (ValueError, lambda lib, w: lib.nn.functional.embedding_bag(lib.tensor([1, 2]), w)),
        (ValueError, lambda lib, w: lib.nn.functional.embedding_bag(
            lib.tensor([[1, 2]]), w, lib.tensor([0]))),
        (RuntimeError, lambda lib, w: lib.nn.functional.embedding_bag(
            lib.tensor([1, 2]), w, lib.tensor([1]))),
        (NotImplementedError, lambda lib, w: lib.nn.functional.embedding_bag(
            lib.tensor([1, 2]), w, lib.tensor([0]), per_sample_weights=lib.ones(2))),
        (ValueError, lambda lib, w: lib.nn.functional.embedding_bag(
            lib.tensor([1, 2]), w, lib.tensor([0]), mode="median")),
    ]
    for kind, call in cases:
        with pytest.raises(kind) as theirs_err:
            call(torch, torch.ones(5, 2))
        with pytest.raises(kind) as ours_err:
            call(mt, w)
        # (PyTorch appends the offending 0-d tensor's repr to the offsets message)
        assert str(ours_err.value).replace("microtorch._tensor", "torch") == \
            str(theirs_err.value).split("\n")[0]


# -- fold / unfold / channel shuffle ------------------------------------------------------------
GEOMS = [dict(kernel_size=3), dict(kernel_size=(2, 3), stride=2, padding=1, dilation=(1, 2)),
         dict(kernel_size=2, stride=(1, 2))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", GEOMS)
def test_unfold_and_fold(device, dtype, kw):
    x = rng.standard_normal((2, 3, 6, 7))
    compare(torch, lambda a: F.unfold(a, **kw), lambda a: TF.unfold(a, **kw), [x], dtype, device)
    blocks = TF.unfold(torch.tensor(x), **kw).shape
    cols = rng.standard_normal(tuple(blocks))
    compare(torch, lambda a: F.fold(a, (6, 7), **kw), lambda a: TF.fold(a, (6, 7), **kw), [cols],
            dtype, device)
    compare(torch, lambda a: F.unfold(a, **kw), lambda a: TF.unfold(a, **kw), [x[0]], dtype,
            device)


def test_fold_unfold_modules_errors_and_double_backward():
    _same_module(lambda lib: lib.nn.Unfold(3, padding=1), rng.standard_normal((1, 2, 4, 4)))
    _same_module(lambda lib: lib.nn.Fold((4, 5), 2, stride=2))
    cases = [lambda lib: lib.nn.functional.fold(lib.ones(1, 5, 4), (3, 3), 2),
             lambda lib: lib.nn.functional.fold(lib.ones(1, 8, 5), (3, 3), 2),
             lambda lib: lib.nn.functional.unfold(lib.ones(1, 1, 3, 3, 3), 2),
             lambda lib: lib.nn.functional.unfold(lib.ones(1, 2, 3, 3), 4),
             lambda lib: lib.nn.functional.fold(lib.ones(1, 8, 4), (3, 3), 2, stride=0)]
    for call in cases:
        with pytest.raises(RuntimeError) as theirs:
            call(torch)
        with pytest.raises(RuntimeError) as ours:
            call(mt)
        assert str(ours.value) == str(theirs.value)
    x = mt.tensor(rng.standard_normal((1, 2, 4, 4)), requires_grad=True)
    assert mt.autograd.gradgradcheck(lambda a: F.fold(F.unfold(a, 2) ** 2, (4, 4), 2), (x,))


@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 3), 3), ((2, 4, 5), 2), ((1, 8, 2, 2, 2), 4)])
def test_channel_shuffle(device, shape, groups):
    compare(torch, lambda a: F.channel_shuffle(a, groups), lambda a: TF.channel_shuffle(a, groups),
            [rng.standard_normal(shape)], "float64", device)
    _same_module(lambda lib: lib.nn.ChannelShuffle(groups))
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got "
                                           "5 channels and 2 groups."):
        F.channel_shuffle(mt.ones(2, 5, 3), 2)


def test_identity():
    _same_module(lambda lib: lib.nn.Identity(3, unused=True), rng.standard_normal((2, 3)))


# -- upsampling modes ---------------------------------------------------------------------------
UPSAMPLE = [("nearest", (2, 3, 5, 6), {"scale_factor": 2}),
            ("nearest-exact", (2, 3, 5, 6), {"size": (7, 4)}),
            ("linear", (2, 3, 5), {"scale_factor": 1.5}),
            ("bilinear", (2, 3, 5, 6), {"size": (8, 3)}),
            ("bicubic", (2, 3, 5, 6), {"size": (9, 4)}),
            ("bicubic", (2, 3, 5, 6), {"scale_factor": (0.5, 1.7)}),
            ("trilinear", (2, 3, 4, 5, 3), {"size": (7, 3, 4)}),
            ("trilinear", (1, 2, 3, 4, 3), {"scale_factor": 1.5}),
            ("nearest", (1, 2, 3, 4, 3), {"scale_factor": 2})]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,shape,kw", UPSAMPLE)
@pytest.mark.parametrize("align", [False, True])
def test_upsample_modes(device, dtype, mode, shape, kw, align):
    if align and "nearest" in mode:
        pytest.skip("align_corners applies to the interpolating modes only")
    extra = {"align_corners": align} if "nearest" not in mode else {}

    def make(lib):
        return lib.nn.Upsample(mode=mode, **kw, **extra)
    assert repr(make(mt)) == repr(make(torch))
    compare(torch, make(mt), make(torch), [rng.standard_normal(shape)], dtype, device,
            tol=tol(dtype))


def test_upsample_mode_errors():
    with pytest.raises(NotImplementedError, match="bicubic mode needs 4D input"):
        F.interpolate(mt.ones(1, 1, 3), scale_factor=2, mode="bicubic")
    with pytest.raises(NotImplementedError, match="trilinear mode needs 5D input"):
        F.interpolate(mt.ones(1, 1, 3, 3), scale_factor=2, mode="trilinear")


# -- grid_sample / affine_grid ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,nd", [("bilinear", 2), ("nearest", 2), ("bicubic", 2),
                                     ("bilinear", 3), ("nearest", 3)])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample(device, dtype, mode, nd, padding_mode, align):
    # Data of its own (not the module's shared stream, which depends on test order).
    r = np.random.default_rng(7)
    x = r.standard_normal((2, 3, 5, 6) if nd == 2 else (2, 3, 4, 5, 6))
    grid = r.uniform(-1.4, 1.4, (2, 4, 7, 2) if nd == 2 else (2, 3, 4, 5, 3))
    outs = []
    for lib, fn in ((mt, F.grid_sample), (torch, TF.grid_sample)):
        a = (mt.tensor(x.astype(dtype), device=device, requires_grad=True) if lib is mt
             else torch.tensor(x.astype(dtype), requires_grad=True))
        g = (mt.tensor(grid.astype(dtype), device=device, requires_grad=True) if lib is mt
             else torch.tensor(grid.astype(dtype), requires_grad=True))
        out = fn(a, g, mode, padding_mode, align)
        w = np.random.default_rng(0).standard_normal(tuple(out.shape)).astype(dtype)
        (out * lib.tensor(w, device=device) if lib is mt else out * torch.tensor(w)).sum() \
            .backward()
        outs.append([out.detach().cpu().numpy(), a.grad.cpu().numpy(),
                     None if g.grad is None else g.grad.cpu().numpy()])
    t = tol(dtype) or {"rtol": 1e-10, "atol": 1e-10}

    def close(u, v):  # absolute error relative to the array's scale: sums of terms cancel
        np.testing.assert_allclose(u, v, rtol=t["rtol"],
                                   atol=t["atol"] * max(1.0, float(np.abs(v).max())))

    for u, v in zip(outs[0], outs[1]):  # (nearest: the grid's gradient is zeros in both)
        close(u, v)


def test_grid_sample_finite_differences_and_errors():
    x = rng.standard_normal((1, 2, 4, 5))
    grid = rng.uniform(-1.2, 1.2, (1, 3, 3, 2))
    for pm in ["zeros", "border", "reflection"]:
        for mode in ["bilinear", "bicubic"]:
            finite_difference_check(lambda a, g, pm=pm, mode=mode: F.grid_sample(
                a, g, mode, pm, False), [x, grid], "cpu")
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(mt.ones(1, 1, 2, 2, 2), mt.zeros(1, 1, 1, 1, 3), "bicubic",
                      align_corners=False)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(mt.tensor(x), mt.tensor(grid))
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or "
                                         "'bicubic', but got: 'cubic'"):
        F.grid_sample(mt.tensor(x), mt.tensor(grid), mode="cubic", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or "
                                         "'reflection', but got: 'wrap'"):
        F.grid_sample(mt.tensor(x), mt.tensor(grid), padding_mode="wrap", align_corners=False)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 4, 2), (2, 3, 1, 5)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid(device, dtype, size, align):
    theta = rng.standard_normal((2, 2, 3) if len(size) == 4 else (2, 3, 4))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit-size grids with align_corners warn (both sides)
        compare(torch, lambda t: F.affine_grid(t, size, align),
                lambda t: TF.affine_grid(t, size, align), [theta], dtype, device,
                tol=tol(dtype))


def test_affine_grid_errors():
    for call in [lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 3, 3), (2, 3, 4, 5), False),
                 lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3), (2, 3, 0, 5), False),
                 lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3, dtype=lib.int64),
                                                           (2, 3, 4, 5), False)]:
        with pytest.raises(ValueError) as theirs:
            call(torch)
        with pytest.raises(ValueError) as ours:
            call(mt)
        assert str(ours.value).replace("microtorch", "torch") == str(theirs.value)


@pytest.mark.parametrize("values,classes", [([0, 3], 2), ([0, -1], 3), ([2, 0, 1], -1),
                                            ([[1, 0], [0, 2]], 4)])
def test_one_hot(values, classes):
    try:
        expected = TF.one_hot(torch.tensor(values), classes).numpy()
    except RuntimeError as theirs:
        with pytest.raises(RuntimeError) as ours:
            F.one_hot(mt.tensor(values), classes)
        assert str(ours.value) == str(theirs)
        return
    out = F.one_hot(mt.tensor(values), classes)
    np.testing.assert_array_equal(out.numpy(), expected)
    assert out.dtype == mt.int64
