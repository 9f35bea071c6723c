"""microtorch.masked against torch.masked.

PyTorch's OpInfo samples of every ``masked.*`` entry run in the op_db tier (through its
gradcheck wrappers, which zero the fully masked-out outputs first); here the gradients are
taken raw, on a hand-made input with a zero, a tie, a fully masked-out slab and a fully
masked-out row, for masks of every broadcast form, plus the identity each reduction gives a
fully masked-out slice, integer inputs, the helpers PyTorch's tests call
(``_input_mask``/``_output_mask``) and PyTorch's errors. float64 agrees to 1e-12; float32 to
the rounding of the exp/log kernels (NumPy's and PyTorch's SIMD ones differ by an ulp).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
# (NumPy's warnings about the inf and nan of fully masked-out slices, which PyTorch makes
# silently)
pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5))
X[0, 1, 2] = 0.0
X[1, 2, 3] = X[1, 2, 1]  # a tie
MASK = RNG.random((3, 4, 5)) > 0.4
MASK[1] = False  # a fully masked-out slab
MASK[2, 3] = False  # a fully masked-out row
MASK[:, 0, 0] = False
MASKS = [None, MASK, MASK[:, :, :1], MASK[0], np.array(True), MASK.astype(np.int64)]
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}
INF = float("inf")


def _cases():
    for name in ("sum", "prod", "amax", "amin", "mean", "logsumexp"):
        for dim, keep in [(None, False), (1, False), ((0, 2), True), (-1, True), ([2, 0], False)]:
            yield name, (dim,), {"keepdim": keep}
    for name in ("argmax", "argmin"):
        yield name, (None,), {}
        yield name, (-1,), {"keepdim": True}
    for dim in (0, -1):
        yield "median", (dim,), {"keepdim": dim == 0}
        for name in ("cumsum", "cumprod", "softmax", "log_softmax", "softmin"):
            yield name, (dim,), {}
    for ord in (2.0, 1, INF, -INF, 0, 3.5):
        yield "norm", (ord, (0, 2)), {"keepdim": ord == 1}
        yield "normalize", (ord, 1), {}
    for name in ("var", "std"):
        yield name, (None,), {}
        yield name, (1,), {"keepdim": True}
        yield name, ((0, 2), None), {"correction": 0}
        yield name, (-1, False), {}
    yield "sum", (1,), {"dtype": "float64"}
    yield "softmax", (2,), {"dtype": "float64"}
    yield "amax", (1,), {"dtype": "float64"}


CASES = list(_cases())


def _call(lib, name, args, kwargs, x, mask, device):
    kwargs = {k: (getattr(lib, v) if k == "dtype" else v) for k, v in kwargs.items()}
    if mask is not None:
        kwargs["mask"] = (mt.tensor(mask, device=device) if lib is mt
                          else torch.tensor(mask))
    return getattr(lib.masked, name)(x, *args, **kwargs)


def _run(lib, case, dtype, mask, device):
    """The output and the raw gradient of sum(w * output) with respect to the input."""
    name, args, kwargs = case
    if lib is mt:
        x = mt.tensor(X.astype(dtype), device=device, requires_grad=True)
    else:
        x = torch.tensor(X.astype(dtype), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _call(lib, name, args, kwargs, x, mask, device)
        o = out.detach().cpu().numpy()
        if not out.requires_grad:
            return o, str(out.dtype).split(".")[-1], None
        w = np.random.default_rng(1).standard_normal(o.shape).astype(o.dtype)
        wt = mt.tensor(w, device=device) if lib is mt else torch.tensor(w)
        # (ord=0 norms: the graph does not reach the input, in PyTorch as here)
        (g,) = lib.autograd.grad((out * wt).sum(), x, allow_unused=True)
    return o, str(out.dtype).split(".")[-1], None if g is None else g.cpu().numpy()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}{c[1]}{c[2]}" for c in CASES])
def test_values_and_gradients_match_torch(case, dtype, device):
    for mask in MASKS:
        where = f"mask {None if mask is None else mask.shape}"
        got, got_dtype, got_grad = _run(mt, case, dtype, mask, device)
        want, want_dtype, want_grad = _run(torch, case, dtype, mask, "cpu")
        assert got_dtype == want_dtype and got.shape == want.shape, where
        np.testing.assert_allclose(got, want, **TOL[dtype], err_msg=where)
        if want_grad is None:
            assert got_grad is None or not got_grad.any(), where
        else:
            assert got_grad is not None, where
            np.testing.assert_allclose(got_grad, want_grad, **TOL[dtype], err_msg=where)


def test_logaddexp_matches_torch(device):
    a, b = X[0], X[2]
    ma, mb = MASK[0], MASK[2]
    for im, om in [(None, None), (ma, mb), (ma[:1], None), (None, mb[0])]:
        res = []
        for lib in (torch, mt):
            dev = {"device": device} if lib is mt else {}
            xa = lib.tensor(a, requires_grad=True, **dev)
            xb = lib.tensor(b, requires_grad=True, **dev)
            kw = {}
            if im is not None:
                kw["input_mask"] = lib.tensor(im, **dev)
            if om is not None:
                kw["other_mask"] = lib.tensor(om, **dev)
            out = lib.masked.logaddexp(xa, xb, **kw)
            w = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), **dev)
            grads = lib.autograd.grad((out * w).sum(), (xa, xb))
            res.append([t.detach().cpu().numpy() for t in (out, *grads)])
        for got, want in zip(res[1], res[0]):
            np.testing.assert_allclose(got, want, **TOL["float64"])


def test_fully_masked_slices_give_the_identity(device):
    x = mt.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, 6.0]], device=device, requires_grad=True)
    m = mt.tensor([[True, False, True], [False, False, False]], device=device)

    def row(t):
        return t.detach().cpu().numpy()

    M = mt.masked
    assert row(M.sum(x, 1, mask=m)).tolist() == [4.0, 0.0]
    assert row(M.prod(x, 1, mask=m)).tolist() == [3.0, 1.0]
    assert row(M.amax(x, 1, mask=m)).tolist() == [3.0, -INF]
    assert row(M.amin(x, 1, mask=m)).tolist() == [1.0, INF]
    assert row(M.logsumexp(x, 1, mask=m))[1] == -INF
    assert row(M.norm(x, 2.0, 1, mask=m))[1] == 0.0
    assert row(M.norm(x, -INF, 1, mask=m)).tolist() == [1.0, INF]
    for fn in (M.mean, M.var, M.std, M.median):
        assert np.isnan(row(fn(x, 1, mask=m))[1]), fn.__name__
    sm = row(M.softmax(x, 1, mask=m))
    assert sm[0, 1] == 0.0 and np.isnan(sm[1]).all()
    assert row(M.log_softmax(x, 1, mask=m))[0, 1] == -INF
    assert row(M.cumsum(x, 1, mask=m)).tolist() == [[1.0, 1.0, 4.0], [0.0, 0.0, 0.0]]
    assert row(M.normalize(x, 2.0, 1, mask=m))[:, 1].tolist() == [0.0, 0.0]
    ints = mt.tensor([[1, 2], [3, 4]], dtype=mt.int8, device=device)
    im = mt.tensor([[True, True], [False, False]], device=device)
    assert row(M.amax(ints, 1, mask=im)).tolist() == [2, -128]
    assert row(M.amin(ints, 1, mask=im)).tolist() == [1, 127]
    # and no gradient reaches a masked-out element
    M.amax(x, 1, mask=m).where(mt.tensor([True, False], device=device),
                               mt.tensor(0.0, device=device)).sum().backward()
    assert row(x.grad).tolist() == [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "bool"])
def test_integer_inputs_match_torch(dtype, device):
    x = RNG.integers(0, 2 if dtype == "bool" else 6, (3, 4)).astype(dtype)
    mask = MASK[0, :3, :4].copy()
    mask[1] = False
    calls = [("sum", (1,), {}), ("prod", (None,), {}), ("prod", (1,), {"keepdim": True}),
             ("amax", (1,), {}), ("amin", (0,), {}), ("argmax", (1,), {}),
             ("argmin", (None,), {}), ("median", (1,), {}), ("median", (0,), {}),
             ("var", (1,), {}), ("std", (None,), {}), ("logsumexp", (1,), {}),
             ("cumsum", (1,), {}), ("cumprod", (0,), {}), ("mean", (1,), {}),
             ("mean", (1,), {"dtype": "float64"}), ("sum", (1,), {"dtype": "int16"}),
             ("amax", (1,), {"dtype": "float32"})]
    for name, args, kwargs in calls:
        for m in (None, mask):
            outs = []
            for lib in (torch, mt):
                dev = device if lib is mt else "cpu"
                x_lib = mt.tensor(x, device=device) if lib is mt else torch.tensor(x)
                try:
                    out = _call(lib, name, args, kwargs, x_lib, m, dev)
                except Exception as e:  # noqa: BLE001 - the exception class is compared
                    outs.append(type(e))
                else:
                    outs.append((out.cpu().numpy(), str(out.dtype).split(".")[-1]))
            want, got = outs
            where = f"{name}{args}{kwargs} mask={m is not None}"
            if isinstance(want, type):
                assert got is want, where
            else:
                assert not isinstance(got, type), f"{where}: {got}"
                assert got[1] == want[1], where
                np.testing.assert_allclose(got[0], want[0], rtol=1e-6, err_msg=where)


def test_helpers_match_torch(device):
    t = torch.tensor(X)
    x = mt.tensor(X, device=device)
    for mask in MASKS[1:]:
        tm, mm = torch.tensor(mask), mt.tensor(mask, device=device)
        got = mt.masked._input_mask(x, mask=mm)
        assert got.dtype == mt.bool
        np.testing.assert_array_equal(got.cpu().numpy(), torch.masked._input_mask(t, mask=tm))
        for name, args, kw in [("sum", (1,), {"keepdim": True}), ("amax", ((0, 2),), {}),
                               ("norm", (2.0, None), {}), ("softmax", (1,), {})]:
            want = torch.masked._output_mask(getattr(torch.masked, name), t, *args, mask=tm,
                                             **kw)
            got = mt.masked._output_mask(getattr(mt.masked, name), x, *args, mask=mm, **kw)
            np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


ERRORS = [  # (call, PyTorch's exception class, message)
    (lambda L: L.masked.sum(L.ones(3, 4), 1, mask=L.ones(3, dtype=L.bool)), RuntimeError,
     "The expanded size of the tensor"),
    (lambda L: L.masked.sum(L.ones(3, 4), 1, mask=L.ones(1, 3, 4, dtype=L.bool)), IndexError,
     "got mask dimensionality higher than of the input"),
    (lambda L: L.masked.amax(L.ones(3, 4), (1, 1)), RuntimeError,
     "dim=1 appears multiple times in the list of dims"),
    (lambda L: L.masked.mean(L.ones(3, 4), 2), IndexError, "Dimension out of range"),
    (lambda L: L.masked.softmax(L.ones(3, 4), -3), IndexError, "Dimension out of range"),
    (lambda L: L.masked.var(L.ones(3, 4), 1, True, correction=1), AssertionError,
     "Only one of unbiased and correction may be given"),
    (lambda L: L.masked.mean(L.ones(3, dtype=L.int64)), ValueError,
     "mean\\(\\): Could not infer output dtype. Input dtype must be either a floating point"),
    (lambda L: L.masked.mean(L.ones(3), dtype=L.int32), ValueError,
     "Optional dtype must be either a floating point"),
    (lambda L: L.masked.median(L.ones(2, 2, dtype=L.int64), 1,
                               mask=L.tensor([[True, False], [False, False]])), ValueError,
     "masked median expects no fully masked out rows if dtype is not floating point"),
    (lambda L: L.masked.amax(L.ones(3, dtype=L.bool), mask=L.ones(3, dtype=L.bool)),
     NotImplementedError, "identity of amax on .*bool input"),
    (lambda L: L.masked.norm(L.ones(3, dtype=L.int64), -INF, mask=L.ones(3, dtype=L.bool)),
     AssertionError, "input must be floating point"),
    (lambda L: L.masked.argmax(L.ones(3, dtype=L.bool)), RuntimeError,
     "argmax\\(\\): does not support bool input"),
    (lambda L: L.masked.cumsum(L.ones(3, dtype=L.bool), 0), NotImplementedError,
     "not implemented for 'Bool'"),
    (lambda L: L.masked._input_mask(L.ones(3)), ValueError, "_input_mask requires explicit mask"),
    (lambda L: L.masked._output_mask(L.masked.logaddexp, L.ones(3), mask=L.ones(3) > 0),
     ValueError, "_output_mask expected masked operation"),
]


@pytest.mark.parametrize("call, cls, msg", ERRORS)
def test_errors_match_torch(call, cls, msg):
    with pytest.raises(cls, match=msg):
        call(torch)
    with pytest.raises(cls, match=msg):
        call(mt)


def test_sparse_inputs_are_refused_clearly():
    # PyTorch reduces sparse COO/CSR inputs; microtorch's masked ops are dense-only and say so.
    x = mt.ones(3, 4).to_sparse()
    with pytest.raises(NotImplementedError, match="strided \\(dense\\) tensors only"):
        mt.masked.sum(x, 1)
    with pytest.raises(NotImplementedError, match="strided \\(dense\\) tensors only"):
        mt.masked.amax(mt.ones(3, 4), 1, mask=(mt.ones(3, 4) > 0).to_sparse())


@pytest.mark.parametrize("name", [n for n in mt.masked.__all__])
def test_signature_is_torch(name):
    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert params(getattr(mt.masked, name)) == params(getattr(torch.masked, name))
