"""The structured transforms, ``biject_to``/``transform_to`` and the multivariate, relaxed and
mixture distributions against torch.distributions: values, Jacobians, shapes, inverses,
gradients, validation errors, expand, and samples after the same seed (CPU)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
from microtorch.distributions import constraint_registry as creg
from microtorch.distributions import (
    constraints,
    logistic_normal,
    matrix_distributions,
    mixture,
    relaxed,
)
from microtorch.distributions import structured_transforms as tx

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _pytorch_validates_by_default(monkeypatch):
    # torch.compile's setup (tests/test_namespaces.py calls it) turns PyTorch's default
    # validation off for the rest of the process: compare with it on, as by default.
    monkeypatch.setattr(torch.distributions.Distribution, "_validate_args", True)
TD = torch.distributions

TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-11, atol=1e-12)}
ULP = {"float32": dict(rtol=2e-6, atol=1e-6), "float64": dict(rtol=1e-14, atol=1e-14)}
RNG = np.random.default_rng(7)


def _np(t):
    return t.detach().cpu().numpy()


def _close(a, b, dtype="float64", what=""):
    assert tuple(a.shape) == tuple(b.shape), what
    np.testing.assert_allclose(_np(a), b.detach().numpy(), **TOL[dtype], err_msg=what)


def _spd(n, batch=()):
    m = RNG.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _simplex(*shape):
    p = RNG.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def _corr(n, batch=()):
    c = _spd(n, batch)
    d = np.sqrt(np.diagonal(c, axis1=-2, axis2=-1))
    return c / d[..., :, None] / d[..., None, :]


def _pair(name, *args, **kwargs):
    """The transform ``name`` in both libraries (arguments built per library by callables)."""
    mine = getattr(tx, name)(*[a(mt) if callable(a) else a for a in args], **kwargs)
    theirs = getattr(TD.transforms, name)(*[a(torch) if callable(a) else a for a in args],
                                          **kwargs)
    return mine, theirs


def _lib_transform(name, *args):
    def build(lib):
        mod = tx if lib is mt else TD.transforms
        if not hasattr(mod, name):
            mod = mt.distributions.transforms if lib is mt else TD.transforms
        return getattr(mod, name)(*[a(lib) if callable(a) else a for a in args])
    return build


def _normal(lib):
    return lib.distributions.Normal(lib.tensor(0.5, dtype=lib.float64),
                                    lib.tensor(2.0, dtype=lib.float64))


# name, args, input x (domain points), whether a bijection with a log-det Jacobian
TRANSFORMS = [
    ("AbsTransform", (), RNG.standard_normal((3, 4)), False),
    ("SoftplusTransform", (), RNG.standard_normal((3, 4)) * 3, True),
    ("SoftmaxTransform", (), RNG.standard_normal((3, 4)), False),
    ("StickBreakingTransform", (), RNG.standard_normal((3, 4)), True),
    ("LowerCholeskyTransform", (), RNG.standard_normal((2, 3, 3)), False),
    ("PositiveDefiniteTransform", (), RNG.standard_normal((2, 3, 3)), False),
    ("CorrCholeskyTransform", (), RNG.standard_normal((2, 6)), True),
    ("CorrCholeskyTransform", (), RNG.standard_normal(10), True),
    ("ReshapeTransform", ((2, 3), (3, 2)), RNG.standard_normal((4, 2, 3)), True),
    ("ReshapeTransform", ((6,), (2, 3)), RNG.standard_normal((6,)), True),
    ("IndependentTransform", (_lib_transform("ExpTransform"), 1),
     RNG.standard_normal((3, 4)), True),
    ("IndependentTransform", (_lib_transform("StickBreakingTransform"), 2),
     RNG.standard_normal((2, 3, 4)), True),
    ("CumulativeDistributionTransform", (_normal,), RNG.standard_normal((3, 4)), True),
]


def _build_x(x, lib, dtype):
    return lib.tensor(x.astype(dtype), requires_grad=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", TRANSFORMS, ids=[f"{c[0]}{i}" for i, c in enumerate(TRANSFORMS)])
def test_transform_values_jacobians_and_shapes_match_torch(case, dtype):
    name, args, x, has_ladj = case
    if name == "CumulativeDistributionTransform" and dtype == "float32":
        pytest.skip("the distribution is float64")
    t, tt = _pair(name, *args)
    xs, txs = _build_x(x, mt, dtype), _build_x(x, torch, dtype)
    y, ty = t(xs), tt(txs)
    _close(y, ty, dtype, f"{name} forward")
    _close(t.inv(y), tt.inv(ty), dtype, f"{name} inverse")
    assert tuple(t.forward_shape(mt.Size(x.shape))) == tuple(tt.forward_shape(x.shape))
    assert tuple(t.inverse_shape(mt.Size(ty.shape))) == tuple(tt.inverse_shape(ty.shape))
    assert repr(t.domain) == repr(tt.domain)
    assert repr(t.codomain) == repr(tt.codomain)
    assert t.bijective == tt.bijective
    assert t.domain.event_dim == tt.domain.event_dim
    assert t.codomain.event_dim == tt.codomain.event_dim
    assert repr(t) == repr(tt)
    assert bool(t.codomain.check(y.detach()).all())
    w = RNG.standard_normal(tuple(ty.shape)).astype(dtype)
    total, ttotal = (y * mt.tensor(w)).sum(), (ty * torch.tensor(w)).sum()
    if has_ladj:
        lad, tlad = t.log_abs_det_jacobian(xs, y), tt.log_abs_det_jacobian(txs, ty)
        _close(lad, tlad, dtype, f"{name} log_abs_det_jacobian")
        total, ttotal = total + lad.sum(), ttotal + tlad.sum()
    total.backward()
    ttotal.backward()
    _close(xs.grad, txs.grad, dtype, f"{name} gradient")
    # inverse of a fresh (uncached) value round-trips
    back = t.inv(mt.tensor(_np(y)))
    if t.bijective:
        np.testing.assert_allclose(_np(back), x.astype(dtype), **{
            "float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-9, atol=1e-9)}[dtype])


def test_lower_cholesky_and_positive_definite_inverses_round_trip():
    x = RNG.standard_normal((2, 3, 3))
    for name in ("LowerCholeskyTransform", "PositiveDefiniteTransform"):
        t, tt = _pair(name)
        y = t(mt.tensor(x))
        np.testing.assert_allclose(_np(t.inv(mt.tensor(_np(y)))), np.tril(x), rtol=1e-10,
                                   atol=1e-12)
        _close(t.inv(mt.tensor(_np(y))), tt.inv(torch.tensor(_np(y))))


def test_signs_equality_caching_and_inverse_objects():
    assert tx.SoftplusTransform().sign == TD.SoftplusTransform().sign == 1
    assert tx.CumulativeDistributionTransform(_normal(mt)).sign == 1
    ind = tx.IndependentTransform(mt.distributions.ExpTransform(), 1)
    assert ind.sign == 1 and ind.bijective
    for name in ("AbsTransform", "SoftplusTransform", "SoftmaxTransform",
                 "StickBreakingTransform", "LowerCholeskyTransform",
                 "PositiveDefiniteTransform"):
        cls = getattr(tx, name)
        assert cls() == cls() and not (cls() != cls())
        assert cls().inv == cls().inv and cls().inv.inv == cls()
        if name != "SoftplusTransform":
            with pytest.raises(NotImplementedError):
                cls().sign  # noqa: B018
    a = tx.CorrCholeskyTransform()
    assert a == a and a != tx.CorrCholeskyTransform()  # identity equality, as in PyTorch
    assert tx.identity_transform is mt.distributions.transforms.identity_transform
    for t in (tx.ReshapeTransform((2,), (2, 1)), ind, tx.CatTransform([a]),
              tx.StackTransform([a]), tx.CumulativeDistributionTransform(_normal(mt)),
              tx.SoftplusTransform()):
        cached = t.with_cache(1)
        assert cached._cache_size == 1 and t.with_cache(0) is t
        assert type(cached) is type(t)
    t = tx.SoftplusTransform(cache_size=1)
    x = mt.tensor([0.3, -1.0])
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        tx.SoftplusTransform(cache_size=2)
    with pytest.raises(ValueError, match="in_shape, out_shape have different numbers"):
        tx.ReshapeTransform((2,), (3,))
    with pytest.raises(ValueError, match="Shape mismatch"):
        tx.ReshapeTransform((2,), (2, 1)).forward_shape((3,))
    with pytest.raises(ValueError, match="Input is not a flattened lower-diagonal number"):
        tx.CorrCholeskyTransform().forward_shape((4,))
    with pytest.raises(ValueError, match="Input is not square"):
        tx.CorrCholeskyTransform().inverse_shape((3, 2))
    with pytest.raises(ValueError, match="Too few dimensions on input"):
        tx.StickBreakingTransform().forward_shape(())
    with pytest.raises(ValueError, match="Too few dimensions on input"):
        tx.IndependentTransform(tx.SoftplusTransform(), 2)(mt.tensor([1.0]))


def test_cat_and_stack_transforms_match_torch():
    D = mt.distributions

    def make(lib, kind):
        T = TD.transforms if lib is torch else tx
        B = TD.transforms if lib is torch else D.transforms
        parts = [B.ExpTransform(), B.AffineTransform(1.0, 2.0), T.SoftplusTransform()]
        if kind == "cat":
            return T.CatTransform(parts, dim=1, lengths=[1, 2, 3])
        return T.StackTransform(parts, dim=1)

    for kind, x in (("cat", RNG.standard_normal((4, 6))), ("stack", RNG.standard_normal((4, 3)))):
        t, tt = make(mt, kind), make(torch, kind)
        xs, txs = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, ty = t(xs), tt(txs)
        _close(y, ty)
        _close(t.inv(y), tt.inv(ty))
        lad, tlad = t.log_abs_det_jacobian(xs, y), tt.log_abs_det_jacobian(txs, ty)
        _close(lad, tlad)
        (y.sum() + lad.sum()).backward()
        (ty.sum() + tlad.sum()).backward()
        _close(xs.grad, txs.grad)
        assert t.bijective == tt.bijective
        assert t.domain.event_dim == tt.domain.event_dim
        assert bool(t.codomain.check(y.detach()).all())
    t, tt = make(mt, "cat"), make(torch, "cat")
    assert t.event_dim == tt.event_dim and t.length == tt.length == 6
    bad = RNG.standard_normal((4, 5))
    for tr, lib in ((t, mt), (tt, torch)):
        with pytest.raises(AssertionError, match=r"x.size\(1\) = 5 must equal length 6"):
            tr(lib.tensor(bad))
    with pytest.raises(AssertionError, match="dim 1 out of range for tensor with 1"):
        t(mt.tensor([1.0]))
    with pytest.raises(AssertionError, match=r"x.size\(1\) = 6 must equal len\(transforms\) 3"):
        make(mt, "stack")(mt.tensor(RNG.standard_normal((4, 6))))
    with pytest.raises(AssertionError, match="must be Transform instances"):
        tx.CatTransform([1])
    with pytest.raises(AssertionError, match=r"lengths \(1\) must match transforms \(2\)"):
        tx.CatTransform([tx.AbsTransform(), tx.AbsTransform()], lengths=[2])


def _constraint_cases(lib):
    C = lib.distributions.constraints
    return [
        C.real, C.positive, C.nonnegative, C.greater_than(1.5), C.greater_than_eq(-2.0),
        C.less_than(3.0), C.unit_interval, C.interval(-1.0, 2.0), C.half_open_interval(0.0, 4.0),
        C.simplex, C.real_vector, C.independent(C.positive, 1), C.lower_cholesky,
        C.positive_definite, C.positive_semidefinite, C.corr_cholesky,
        C.cat([C.positive, C.real, C.unit_interval], 1, [2, 1, 3]),
        C.stack([C.positive, C.interval(0.0, 1.0)], 1),
    ]


def _unconstrained_input(transform):
    if isinstance(transform, tx.CorrCholeskyTransform):
        return RNG.standard_normal((4, 6))
    if isinstance(transform, tx.StackTransform):
        return RNG.standard_normal((4, 2))
    if transform.domain.event_dim == 2:
        return RNG.standard_normal((4, 3, 3))
    return RNG.standard_normal(tuple(transform.inverse_shape((4, 6))))


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registry_matches_torch(registry):
    mine, theirs = getattr(creg, registry), getattr(TD, registry)
    for c, tc in zip(_constraint_cases(mt), _constraint_cases(torch)):
        try:
            tt = theirs(tc)
        except NotImplementedError as err:
            with pytest.raises(NotImplementedError, match=str(err)):
                mine(c)
            continue
        t = mine(c)
        assert type(t).__name__ == type(tt).__name__, repr(tc)
        assert repr(t) == repr(tt), repr(tc)
        assert t.bijective == tt.bijective, repr(tc)
        x = _unconstrained_input(t)
        xs, txs = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, ty = t(xs), tt(txs)
        _close(y, ty, what=repr(tc))
        assert bool(c.check(y.detach()).all()), repr(tc)
        if t.bijective:
            _close(t.inv(mt.tensor(_np(y))), tt.inv(torch.tensor(_np(ty))), what=repr(tc))
            lad, tlad = t.log_abs_det_jacobian(xs, y), tt.log_abs_det_jacobian(txs, ty)
            _close(lad, tlad, what=repr(tc))
    assert mine(constraints.real) is tx.identity_transform
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        mine(constraints.boolean)


def test_constraint_registry_register():
    reg = creg.ConstraintRegistry()

    @reg.register(constraints.positive)
    def _factory(constraint):
        return tx.SoftplusTransform()

    assert isinstance(reg(constraints.greater_than(3.0)), tx.SoftplusTransform)
    with pytest.raises(TypeError, match="Expected constraint to be either a Constraint"):
        reg.register(3, _factory)


def test_tril_vec_helpers_match_torch():
    from torch.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
    m = RNG.standard_normal((2, 4, 4))
    for diag in (-2, -1, 0, 1):
        v = tx.tril_matrix_to_vec(mt.tensor(m), diag)
        tv = tril_matrix_to_vec(torch.tensor(m), diag)
        _close(v, tv)
        _close(tx.vec_to_tril_matrix(v, diag), vec_to_tril_matrix(tv, diag))
    with pytest.raises(ValueError, match="cannot be expressed as the lower triangular"):
        tx.vec_to_tril_matrix(mt.zeros(5))


# ---------------------------------------------------------------------------- distributions

def _lib_dist(lib, name):
    mods = (relaxed, logistic_normal, mixture, matrix_distributions)
    if lib is torch:
        for mod in (TD, TD.relaxed_bernoulli, TD.relaxed_categorical):
            if hasattr(mod, name):
                return getattr(mod, name)
    for mod in mods:
        if hasattr(mod, name):
            return getattr(mod, name)
    return getattr(mt.distributions, name)


def _t(lib, v, dtype, grad=False):
    return lib.tensor(np.asarray(v).astype(dtype), requires_grad=grad)


def _mixture(lib, dtype, logits, loc, scale_tril):
    cat = lib.distributions.Categorical(logits=logits)
    comp = lib.distributions.MultivariateNormal(loc, scale_tril=scale_tril)
    return _lib_dist(lib, "MixtureSameFamily")(cat, comp)


def _mixture_normal(lib, dtype, probs, loc, scale):
    cat = lib.distributions.Categorical(probs=probs)
    comp = lib.distributions.Independent(lib.distributions.Normal(loc, scale), 1)
    return _lib_dist(lib, "MixtureSameFamily")(cat, comp)


_L3 = np.linalg.cholesky(_spd(3))

# name or builder, parameters (differentiated), constants, value, methods
DISTS = [
    ("LogitRelaxedBernoulli", dict(probs=RNG.uniform(0.1, 0.9, 4)), dict(temperature=0.7),
     RNG.standard_normal((2, 4)), "log_prob"),
    ("RelaxedBernoulli", dict(logits=RNG.standard_normal(4)), dict(temperature=0.5),
     RNG.uniform(0.05, 0.95, (2, 4)), "log_prob"),
    ("ExpRelaxedCategorical", dict(logits=RNG.standard_normal((2, 3))),
     dict(temperature=0.8), np.log(_simplex(5, 2, 3)), "log_prob"),
    ("RelaxedOneHotCategorical", dict(probs=_simplex(2, 3)), dict(temperature=0.6),
     _simplex(5, 2, 3), "log_prob"),
    ("OneHotCategoricalStraightThrough", dict(probs=_simplex(2, 3)), {},
     np.eye(3)[RNG.integers(0, 3, (4, 2))], "log_prob entropy mean variance mode"),
    ("LogisticNormal", dict(loc=RNG.standard_normal((2, 3)), scale=RNG.uniform(0.5, 2, (2, 3))),
     {}, _simplex(5, 2, 4), "log_prob"),
    ("LowRankMultivariateNormal", dict(loc=RNG.standard_normal((2, 3)),
                                       cov_factor=RNG.standard_normal((3, 2)),
                                       cov_diag=RNG.uniform(0.5, 2, 3)), {},
     RNG.standard_normal((4, 2, 3)),
     "log_prob entropy mean mode variance scale_tril covariance_matrix precision_matrix"),
    ("Wishart", dict(covariance_matrix=_spd(3, (2,))), dict(df=np.array([5.5, 3.0])),
     _spd(3, (4, 2)),
     "log_prob entropy mean mode variance precision_matrix scale_tril"),
    ("Wishart", dict(df=np.array([3.5, 6.0]), scale_tril=_L3), {}, _spd(3, (4, 2)),
     "log_prob entropy mean mode variance covariance_matrix"),
    ("Wishart", dict(precision_matrix=_spd(2)), dict(df=1.5), _spd(2, (3,)),
     "log_prob entropy mean mode variance"),
    ("LKJCholesky", dict(concentration=RNG.uniform(0.5, 3, 2)), dict(dim=3),
     np.linalg.cholesky(_corr(3, (4, 2))), "log_prob"),
    ("LKJCholesky", {}, dict(dim=4, concentration=1.0), np.linalg.cholesky(_corr(4, (3,))),
     "log_prob"),
    (_mixture, dict(logits=RNG.standard_normal((2, 3)), loc=RNG.standard_normal((2, 3, 2)),
                    scale_tril=np.linalg.cholesky(_spd(2, (3,)))), {},
     RNG.standard_normal((4, 2, 2)), "log_prob mean variance"),
    (_mixture_normal, dict(probs=_simplex(3), loc=RNG.standard_normal((2, 3, 2)),
                           scale=RNG.uniform(0.5, 2, (2, 3, 2))), {},
     RNG.standard_normal((4, 2, 2)), "log_prob mean variance"),
]


def _make(lib, case, dtype):
    builder, params, consts, _, _ = case
    ps = {k: _t(lib, v, dtype, grad=True) for k, v in params.items()}
    cs = {k: (_t(lib, v, dtype) if isinstance(v, np.ndarray) or k == "temperature" else v)
          for k, v in consts.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if callable(builder):
            return builder(lib, dtype, **ps, **cs), ps
        return _lib_dist(lib, builder)(**cs, **ps), ps


def _case_id(case):
    name = case[0] if isinstance(case[0], str) else case[0].__name__
    return name + "-" + "-".join(case[1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", DISTS, ids=[_case_id(c) for c in DISTS])
def test_distribution_values_and_gradients_match_torch(case, dtype):
    value = case[3]
    for method in case[4].split():
        d, ps = _make(mt, case, dtype)
        td, tps = _make(torch, case, dtype)
        if method == "log_prob":
            out, tout = d.log_prob(_t(mt, value, dtype)), td.log_prob(_t(torch, value, dtype))
        elif method == "entropy":
            out, tout = d.entropy(), td.entropy()
        else:
            out, tout = getattr(d, method), getattr(td, method)
        what = f"{_case_id(case)}.{method}"
        assert str(out.dtype).split(".")[1] == str(tout.dtype).split(".")[1], what
        _close(out, tout, dtype, what)
        if not tout.requires_grad:
            continue
        w = np.where(np.isfinite(tout.detach().numpy()),
                     RNG.standard_normal(tuple(tout.shape)), 0).astype(dtype)
        try:
            (tout * torch.tensor(w)).sum().backward()
        except RuntimeError:  # Wishart.mode writes NaNs into a tensor autograd saved
            continue
        (out * mt.tensor(w)).sum().backward()
        for k, tp in tps.items():
            if tp.grad is None:
                assert ps[k].grad is None or not np.any(_np(ps[k].grad)), what
                continue
            np.testing.assert_allclose(_np(ps[k].grad), tp.grad.numpy(), **TOL[dtype],
                                       err_msg=f"{what} d/d{k}")


@pytest.mark.parametrize("case", DISTS, ids=[_case_id(c) for c in DISTS])
def test_distribution_shapes_support_and_expand_match_torch(case):
    d, _ = _make(mt, case, "float64")
    td, _ = _make(torch, case, "float64")
    assert tuple(d.batch_shape) == tuple(td.batch_shape)
    assert tuple(d.event_shape) == tuple(td.event_shape)
    assert repr(d.support) == repr(td.support)
    assert d.has_rsample == td.has_rsample
    assert sorted(d.arg_constraints) == sorted(td.arg_constraints)
    assert repr(d).replace("microtorch.", "") == repr(td).replace("torch.", "")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sample_shape in [(), (2,), (3, 1)]:
            try:
                ts = td.sample(sample_shape)
            except RuntimeError as err:  # a mixture with fewer batch dims than its components
                with pytest.raises(RuntimeError, match=str(err)):
                    d.sample(sample_shape)
                break
            s = d.sample(sample_shape)
            assert tuple(s.shape) == tuple(ts.shape)
            assert bool(d.support.check(s).all())
        big = (5,) + tuple(td.batch_shape)
        ex, tex = d.expand(big), td.expand(big)
        assert type(ex) is type(d)
        assert tuple(ex.batch_shape) == tuple(tex.batch_shape) == big
        assert tuple(ex.event_shape) == tuple(tex.event_shape)
        if td.batch_shape == tex.batch_shape[1:] and "mixture_normal" not in _case_id(case):
            assert tuple(ex.sample().shape) == tuple(tex.sample().shape)
    v = case[3]
    while v.ndim > len(td.batch_shape) + len(td.event_shape):
        v = v[0]
    _close(ex.log_prob(mt.tensor(v)), tex.log_prob(torch.tensor(v)))


# Samples: after the same seed, the draws (rand, randn, gamma, beta, multinomial) are PyTorch's.
# Bit for bit where only arithmetic follows; to a few ulps where a transcendental function
# (log, log1p, exp, sqrt of a sum) or a BLAS product comes after the draws.
_BITWISE = {"OneHotCategoricalStraightThrough"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", DISTS, ids=[_case_id(c) for c in DISTS])
def test_samples_follow_torch_after_same_seed(case, dtype):
    d, _ = _make(mt, case, dtype)
    td, _ = _make(torch, case, dtype)
    name = _case_id(case).split("-")[0]
    # only plain-number parameters: PyTorch's default dtype, float32
    real_dtype = dtype if case[1] else "float32"
    tol = dict(rtol=0, atol=0) if name in _BITWISE else ULP[real_dtype]
    if name == "Wishart":
        tol = {"float32": dict(rtol=1e-5, atol=1e-5),
               "float64": dict(rtol=1e-13, atol=1e-13)}[real_dtype]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sample_shape in [(), (3,), (4, 2)]:
            mt.manual_seed(5)
            torch.manual_seed(5)
            try:
                ts = td.sample(sample_shape)
            except RuntimeError as err:  # a mixture with fewer batch dims than its components
                with pytest.raises(RuntimeError, match=str(err)):
                    d.sample(sample_shape)
                return
            s = d.sample(sample_shape)
            np.testing.assert_allclose(_np(s), ts.numpy(), **tol, err_msg=str(sample_shape))
            if td.has_rsample:
                s, ts = d.rsample(sample_shape), td.rsample(sample_shape)
                np.testing.assert_allclose(_np(s), ts.detach().numpy(), **tol)
            assert mt.rand(1).item() == torch.rand(1).item()  # still in step


RSAMPLED = [c for c in DISTS if isinstance(c[0], str) and c[0] in {
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "ExpRelaxedCategorical", "LogisticNormal",
    "LowRankMultivariateNormal", "Wishart", "OneHotCategoricalStraightThrough"}]


@pytest.mark.parametrize("case", RSAMPLED, ids=[_case_id(c) for c in RSAMPLED])
def test_rsample_gradients_match_torch(case):
    d, ps = _make(mt, case, "float64")
    td, tps = _make(torch, case, "float64")
    mt.manual_seed(9)
    torch.manual_seed(9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x, tx_ = d.rsample((3,)), td.rsample((3,))
    w = RNG.standard_normal(tuple(tx_.shape))
    (x * mt.tensor(w)).sum().backward()
    try:
        (tx_ * torch.tensor(w)).sum().backward()
    except RuntimeError:
        # PyTorch's Wishart.rsample redraws in place and then cannot backpropagate; here the
        # gradient exists (through the chi-squared diagonal and the scale factor).
        assert case[0] == "Wishart"
        assert all(p.grad is not None and np.isfinite(_np(p.grad)).all() for p in ps.values())
        return
    for k, tp in tps.items():
        if tp.grad is None:
            assert ps[k].grad is None
            continue
        # Wishart's chi-squared diagonal uses implicit gamma gradients (see gamma.py)
        tol = dict(rtol=1e-6, atol=1e-8) if case[0] == "Wishart" else dict(rtol=1e-10,
                                                                           atol=1e-12)
        np.testing.assert_allclose(_np(ps[k].grad), tp.grad.numpy(), **tol, err_msg=k)


def _errors(lib):
    D = lib.distributions
    f64 = lib.float64

    def t(v):
        return lib.tensor(v, dtype=f64)

    rel = (relaxed if lib is mt else TD)
    md = (matrix_distributions if lib is mt else TD)
    mix = (mixture if lib is mt else TD)
    ln = (logistic_normal if lib is mt else TD)
    return [
        lambda: rel.RelaxedBernoulli(t(0.5), probs=t([0.2, 1.5]), validate_args=True),
        lambda: rel.RelaxedBernoulli(t(0.5)),
        lambda: rel.RelaxedBernoulli(t(0.5), probs=t([0.2]), logits=t([0.1])),
        lambda: rel.RelaxedOneHotCategorical(t(0.5), probs=t([0.2, -0.5]), validate_args=True),
        lambda: rel.RelaxedBernoulli(t(0.5), probs=t([0.2]), validate_args=True).log_prob(
            t([1.5])),
        lambda: rel.RelaxedOneHotCategorical(t(0.5), probs=t([0.2, 0.8]),
                                             validate_args=True).log_prob(t([0.5, 0.6])),
        lambda: ln.LogisticNormal(t([0.0]), t([-1.0]), validate_args=True),
        lambda: md.LowRankMultivariateNormal(t(0.0), t([[1.0]]), t([1.0])),
        lambda: md.LowRankMultivariateNormal(t([0.0]), t([1.0]), t([1.0])),
        lambda: md.LowRankMultivariateNormal(t([0.0, 1]), t([[1.0]]), t([1.0, 1])),
        lambda: md.LowRankMultivariateNormal(t([0.0]), t([[1.0]]), t([1.0, 2])),
        lambda: md.LowRankMultivariateNormal(t([float("nan")]), t([[1.0]]), t([1.0]),
                                             validate_args=True),
        lambda: md.Wishart(2.0, covariance_matrix=t([[1.0, 0], [0, 1]]),
                           scale_tril=t([[1.0, 0], [0, 1]])),
        lambda: md.Wishart(2.0, covariance_matrix=t([1.0])),
        lambda: md.Wishart(0.5, covariance_matrix=t([[1.0, 0], [0, 1]])),
        lambda: md.Wishart(3.0, covariance_matrix=t([[1.0, 2], [2, 1]]), validate_args=True),
        lambda: md.Wishart(3.0, covariance_matrix=t([[1.0, 0], [0, 1]]),
                           validate_args=True).log_prob(t([[1.0, 2], [0, 1]])),
        lambda: md.LKJCholesky(1),
        lambda: md.LKJCholesky(3, t(-1.0), validate_args=True),
        lambda: md.LKJCholesky(2, validate_args=True).log_prob(t([[1.0, 0], [0.5, 1]])),
        lambda: mix.MixtureSameFamily(D.Normal(t(0.0), t(1.0)), D.Normal(t(0.0), t(1.0))),
        lambda: mix.MixtureSameFamily(D.Categorical(t([0.5, 0.5])), 3),
        lambda: mix.MixtureSameFamily(D.Categorical(t([[0.5, 0.5]] * 2)),
                                      D.Normal(t([[0.0, 1]] * 3), t(1.0))),
        lambda: mix.MixtureSameFamily(D.Categorical(t([0.5, 0.5])),
                                      D.Normal(t([0.0, 1, 2]), t(1.0))),
        lambda: mix.MixtureSameFamily(D.Categorical(t([0.5, 0.5])),
                                      D.Gamma(t([1.0, 1]), t(1.0)),
                                      validate_args=True).log_prob(t(-1.0)),
    ]


@pytest.mark.parametrize("index", range(len(_errors(mt))))
def test_validation_errors_match_torch(index):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _errors(torch)[index]()
        except (ValueError, AssertionError) as err:
            expected, msg = type(err), str(err)
        else:  # pragma: no cover
            pytest.fail("torch raised nothing")
        with pytest.raises(expected) as info:
            _errors(mt)[index]()
    assert str(info.value).replace("microtorch.", "").replace("torch.", "") == \
        msg.replace("torch.", "")


def test_wishart_warnings_match_torch():
    cov = np.eye(2)
    with pytest.warns(UserWarning, match="Low df values detected"):
        matrix_distributions.Wishart(1.5, covariance_matrix=mt.tensor(cov))
    w = matrix_distributions.Wishart(4.0, covariance_matrix=mt.tensor(cov))
    with pytest.warns(UserWarning, match="Singular sample detected"):
        w.sample()  # PyTorch's check flags (and redraws) every passing sample


def test_mixture_cdf_and_constraint():
    probs, loc = _simplex(3), RNG.standard_normal(3)
    x = RNG.standard_normal(4)
    d = mixture.MixtureSameFamily(mt.distributions.Categorical(mt.tensor(probs)),
                                  mt.distributions.Normal(mt.tensor(loc), mt.tensor(1.0)))
    td = TD.MixtureSameFamily(TD.Categorical(torch.tensor(probs)),
                              TD.Normal(torch.tensor(loc), torch.tensor(1.0)))
    _close(d.cdf(mt.tensor(x)), td.cdf(torch.tensor(x)))
    c = mixture.MixtureSameFamilyConstraint(constraints.positive)
    tc = TD.constraints.MixtureSameFamilyConstraint(TD.constraints.positive)
    v = np.array([[1.0, -1], [2, 3]])
    np.testing.assert_array_equal(_np(c.check(mt.tensor(v))), tc.check(torch.tensor(v)).numpy())
    assert repr(c) == repr(tc)
    assert d.mixture_distribution is d._mixture_distribution
    assert not d.has_rsample


def test_straight_through_gradient_is_probs_gradient():
    p = mt.tensor(_simplex(2, 3), requires_grad=True)
    tp = torch.tensor(_np(p), requires_grad=True)
    mt.manual_seed(1)
    torch.manual_seed(1)
    s = mt.distributions.OneHotCategoricalStraightThrough(probs=p).rsample((4,))
    ts = TD.OneHotCategoricalStraightThrough(probs=tp).rsample((4,))
    np.testing.assert_array_equal(_np(s), ts.detach().numpy())
    w = RNG.standard_normal(tuple(ts.shape))
    (s * mt.tensor(w)).sum().backward()
    (ts * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(_np(p.grad), tp.grad.numpy(), rtol=1e-12)
    assert isinstance(mt.distributions.OneHotCategoricalStraightThrough(probs=p),
                      mt.distributions.OneHotCategorical)


def test_lkj_samples_are_correlation_factors():
    mt.manual_seed(0)
    s = matrix_distributions.LKJCholesky(4, mt.tensor([0.5, 2.0])).sample((50,))
    corr = _np(s @ s.mT)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, rtol=1e-6)
    assert bool(constraints.corr_cholesky.check(s).all())
