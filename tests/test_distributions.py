"""microtorch.distributions against torch.distributions: values and parameter gradients of
log_prob, entropy, moments, cdf/icdf; shapes, expand, validation errors; samples equal to
PyTorch's after the same seed (CPU)."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")

TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-10, atol=1e-12)}
RNG = np.random.default_rng(0)


def _pos(*shape, lo=0.5, hi=3.0):
    return RNG.uniform(lo, hi, shape)


def _spd(n, batch=()):
    m = RNG.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _tril(n, batch=()):
    low = np.tril(RNG.standard_normal(batch + (n, n)), -1)
    return low + np.eye(n) * RNG.uniform(0.5, 2.0, batch + (n, 1))


def _simplex(*shape):
    p = RNG.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


# name, constructor kwargs (arrays are parameters, differentiated), value, methods
CASES = [
    ("Normal", dict(loc=RNG.standard_normal((3, 2)), scale=_pos(3, 2)),
     RNG.standard_normal((4, 3, 2)), "log_prob entropy mean variance stddev mode cdf icdf"),
    ("LogNormal", dict(loc=RNG.standard_normal(3), scale=_pos(3)), _pos(2, 3),
     "log_prob entropy mean variance mode cdf icdf"),
    ("Uniform", dict(low=-_pos(3), high=_pos(3)), RNG.uniform(-0.4, 0.4, (2, 3)),
     "log_prob entropy mean variance stddev cdf icdf"),
    ("Laplace", dict(loc=RNG.standard_normal(3), scale=_pos(3)), RNG.standard_normal((2, 3)),
     "log_prob entropy mean variance stddev cdf icdf"),
    ("Exponential", dict(rate=_pos(4)), _pos(2, 4), "log_prob entropy mean variance cdf icdf"),
    ("Gamma", dict(concentration=_pos(4), rate=_pos(4)), _pos(2, 4),
     "log_prob entropy mean variance mode cdf"),
    ("Beta", dict(concentration1=_pos(4), concentration0=_pos(4)),
     RNG.uniform(0.05, 0.95, (2, 4)), "log_prob entropy mean variance mode"),
    ("Dirichlet", dict(concentration=_pos(2, 3)), _simplex(4, 2, 3),
     "log_prob entropy mean variance mode"),
    ("Bernoulli", dict(probs=RNG.uniform(0.1, 0.9, 5)), RNG.integers(0, 2, (2, 5)),
     "log_prob entropy mean variance"),
    ("Bernoulli", dict(logits=RNG.standard_normal(5)), RNG.integers(0, 2, (2, 5)),
     "log_prob entropy mean variance"),
    ("Categorical", dict(probs=RNG.uniform(0.1, 1.0, (3, 4))), RNG.integers(0, 4, (2, 3)),
     "log_prob entropy mode"),
    ("Categorical", dict(logits=RNG.standard_normal((3, 4))), RNG.integers(0, 4, (5, 3)),
     "log_prob entropy"),
    ("OneHotCategorical", dict(probs=RNG.uniform(0.1, 1.0, (3, 4))),
     np.eye(4)[RNG.integers(0, 4, (2, 3))], "log_prob entropy mean variance mode"),
    ("Poisson", dict(rate=_pos(4)), RNG.integers(0, 6, (2, 4)), "log_prob mean variance mode"),
    ("Binomial", dict(total_count=np.array([5.0, 7, 10]), probs=RNG.uniform(0.1, 0.9, 3)),
     np.array([[0.0, 3, 10], [5, 7, 2]]), "log_prob mean variance mode"),
    ("Binomial", dict(total_count=6, logits=RNG.standard_normal(3)),
     np.array([[0.0, 3, 6], [5, 1, 2]]), "log_prob entropy mean variance"),
    ("MultivariateNormal", dict(loc=RNG.standard_normal((2, 3)), covariance_matrix=_spd(3)),
     RNG.standard_normal((4, 2, 3)), "log_prob entropy mean variance"),
    ("MultivariateNormal", dict(loc=RNG.standard_normal(3), scale_tril=_tril(3, (2,))),
     RNG.standard_normal((4, 2, 3)), "log_prob entropy variance"),
    ("MultivariateNormal", dict(loc=RNG.standard_normal(3), precision_matrix=_spd(3)),
     RNG.standard_normal((4, 3)), "log_prob entropy variance"),
]

_NO_GRAD = {"total_count"}


def _build(lib, name, kwargs, dtype, device=None):
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            grad = k not in _NO_GRAD
            if lib is mt:
                out[k] = mt.tensor(v.astype(dtype), device=device, requires_grad=grad)
            else:
                out[k] = torch.tensor(v.astype(dtype), requires_grad=grad)
        else:
            out[k] = v
    return getattr(lib.distributions, name)(**out), out


def _value(lib, v, dtype, device=None):
    arr = np.asarray(v).astype(dtype)
    return mt.tensor(arr, device=device) if lib is mt else torch.tensor(arr)


def _result(dist, method, value):
    if method in ("log_prob", "cdf"):
        return getattr(dist, method)(value)
    if method == "icdf":
        return dist.icdf(dist.cdf(value))
    if method == "entropy":
        return dist.entropy()
    return getattr(dist, method)


def _check(out, tout, dtype, what):
    assert tuple(out.shape) == tuple(tout.shape), what
    assert out.dtype.name == str(tout.dtype).split(".")[1], what
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(),
                               **TOL[dtype], err_msg=what)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{'-'.join(c[1])}" for c in CASES])
def test_values_and_gradients_match_torch(case, dtype, device):
    name, kwargs, value, methods = case
    for method in methods.split():
        dist, params = _build(mt, name, kwargs, dtype, device)
        tdist, tparams = _build(torch, name, kwargs, dtype)
        out = _result(dist, method, _value(mt, value, dtype, device))
        tout = _result(tdist, method, _value(torch, value, dtype))
        _check(out, tout, dtype, f"{name}.{method}")
        if not tout.requires_grad or tout.dtype in (torch.int64, torch.bool):
            continue
        w = RNG.standard_normal(tuple(tout.shape)).astype(dtype)
        ok = np.isfinite(tout.detach().numpy())
        w = np.where(ok, w, 0).astype(dtype)
        try:
            (tout * torch.tensor(w)).sum().backward()
        except (RuntimeError, NotImplementedError) as err:  # e.g. Gamma.cdf in concentration
            with pytest.raises(type(err), match=str(err)):
                (out * mt.tensor(w, device=device)).sum().backward()
            continue
        (out * mt.tensor(w, device=device)).sum().backward()
        for k, tp in tparams.items():
            if not isinstance(tp, torch.Tensor) or not tp.requires_grad:
                continue
            tg, g = tp.grad, params[k].grad
            if tg is None:
                assert g is None or not np.any(g.cpu().numpy()), f"{name}.{method} d/d{k}"
                continue
            assert g is not None, f"{name}.{method}: no gradient for {k}"
            np.testing.assert_allclose(g.cpu().numpy(), tg.numpy(), **TOL[dtype],
                                       err_msg=f"{name}.{method} d/d{k}")


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{'-'.join(c[1])}" for c in CASES])
def test_shapes_support_and_expand_match_torch(case):
    name, kwargs, _, _ = case
    dist, _ = _build(mt, name, kwargs, "float64")
    tdist, _ = _build(torch, name, kwargs, "float64")
    assert tuple(dist.batch_shape) == tuple(tdist.batch_shape)
    assert tuple(dist.event_shape) == tuple(tdist.event_shape)
    assert repr(dist.support) == repr(tdist.support).replace("torch.", "microtorch.")
    assert dist.has_rsample == tdist.has_rsample
    assert dist.has_enumerate_support == tdist.has_enumerate_support
    assert repr(dist) == repr(tdist).replace("torch.", "microtorch.")
    for sample_shape in [(), (2,), (3, 1)]:
        assert tuple(dist.sample(sample_shape).shape) == tuple(tdist.sample(sample_shape).shape)
        assert dist.sample(sample_shape).dtype.name == str(
            tdist.sample(sample_shape).dtype).split(".")[1]
    big = (5,) + tuple(tdist.batch_shape)
    ex, tex = dist.expand(big), tdist.expand(big)
    assert type(ex) is type(dist)
    assert tuple(ex.batch_shape) == tuple(tex.batch_shape) == big
    assert tuple(ex.sample().shape) == tuple(tex.sample().shape)
    if "log_prob" in case[3]:
        v = case[2].astype("float64")
        while v.ndim > len(tdist.batch_shape) + len(tdist.event_shape):
            v = v[0]
        np.testing.assert_allclose(ex.log_prob(mt.tensor(v)).detach().numpy(),
                                   tex.log_prob(torch.tensor(v)).detach().numpy(), rtol=1e-10)
    if tdist.has_enumerate_support:
        for expand in (True, False):
            try:
                ts = tdist.enumerate_support(expand)
            except NotImplementedError as err:
                with pytest.raises(NotImplementedError, match=str(err)):
                    dist.enumerate_support(expand)
                continue
            np.testing.assert_array_equal(dist.enumerate_support(expand).numpy(), ts.numpy())


SEEDED = [
    ("Normal", dict(loc=np.array([0.0, 1, 2]), scale=np.array([1.0, 0.5, 2]))),
    ("Uniform", dict(low=np.array([0.0, -1, 2]), high=np.array([1.0, 0.5, 3]))),
    ("Laplace", dict(loc=np.array([0.0, 1, 2]), scale=np.array([1.0, 0.5, 2]))),
    ("Exponential", dict(rate=np.array([1.0, 0.5, 2]))),
    ("LogNormal", dict(loc=np.array([0.0, 1, 2]), scale=np.array([1.0, 0.5, 2]))),
    ("Bernoulli", dict(probs=np.array([0.1, 0.5, 0.9]))),
    ("Categorical", dict(probs=np.array([[0.1, 0.5, 0.4], [0.3, 0.3, 0.4]]))),
    ("OneHotCategorical", dict(logits=np.array([[0.1, 0.5, 0.4], [0.3, 0.3, 2.4]]))),
    ("Gamma", dict(concentration=np.array([0.3, 1.0, 5.0]), rate=np.array([1.0, 2.0, 0.5]))),
    ("Beta", dict(concentration1=np.array([0.3, 1.0, 5.0]),
                  concentration0=np.array([2.0, 1.0, 0.5]))),
    ("Dirichlet", dict(concentration=np.array([[0.3, 1.0, 5.0], [2.0, 2.0, 2.0]]))),
    ("Poisson", dict(rate=np.array([0.5, 4.0, 30.0]))),
    ("Binomial", dict(total_count=np.array([3.0, 20, 200]), probs=np.array([0.3, 0.6, 0.1]))),
    ("MultivariateNormal", dict(loc=np.zeros(3), covariance_matrix=_spd(3))),
]


_NOT_BITWISE = {"Laplace", "LogNormal", "MultivariateNormal"}
_ULP = {"float32": 1e-6, "float64": 1e-15}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", SEEDED, ids=[c[0] for c in SEEDED])
def test_samples_equal_torch_after_same_seed(case, dtype):
    name, kwargs = case
    dist, _ = _build(mt, name, kwargs, dtype)
    tdist, _ = _build(torch, name, kwargs, dtype)
    for sample_shape in [(), (7,), (20, 2)]:
        mt.manual_seed(11)
        torch.manual_seed(11)
        s, ts = dist.sample(sample_shape), tdist.sample(sample_shape)
        # bit for bit, except where a transcendental function (log1p, exp: PyTorch's SIMD
        # versions and NumPy's differ in the last bit) or a BLAS product comes after the draws
        tol = dict(rtol=_ULP[dtype], atol=_ULP[dtype]) if name in _NOT_BITWISE else dict(rtol=0)
        np.testing.assert_allclose(s.numpy(), ts.numpy(), **tol, err_msg=f"{name}{sample_shape}")
        if tdist.has_rsample:
            s, ts = dist.rsample(sample_shape), tdist.rsample(sample_shape)
            np.testing.assert_allclose(s.detach().numpy(), ts.detach().numpy(), **tol)
        # the two generators are still in step
        assert mt.rand(1).item() == torch.rand(1).item()


@pytest.mark.parametrize("name,kwargs", [
    ("Normal", dict(loc=np.array([0.0, 1]), scale=np.array([1.0, 2]))),
    ("Uniform", dict(low=np.array([0.0, 1]), high=np.array([1.0, 3]))),
    ("Laplace", dict(loc=np.array([0.0, 1]), scale=np.array([1.0, 2]))),
    ("Exponential", dict(rate=np.array([1.0, 3]))),
    ("LogNormal", dict(loc=np.array([0.0, 1]), scale=np.array([0.3, 0.2]))),
    ("MultivariateNormal", dict(loc=np.array([0.0, 1]), scale_tril=np.array([[1.0, 0],
                                                                            [0.5, 2]]))),
])
def test_rsample_gradients_equal_torch(name, kwargs):
    dist, params = _build(mt, name, kwargs, "float64")
    tdist, tparams = _build(torch, name, kwargs, "float64")
    mt.manual_seed(3)
    torch.manual_seed(3)
    x, tx = dist.rsample((5,)), tdist.rsample((5,))
    (x ** 2).sum().backward()
    (tx ** 2).sum().backward()
    for k in params:
        np.testing.assert_allclose(params[k].grad.numpy(), tparams[k].grad.numpy(), rtol=1e-10)


def test_gamma_rsample_gradient_is_torchs_implicit_gradient():
    # Same samples (replayed stream), so the per-sample implicit gradients are comparable.
    alpha = np.array([0.2, 0.7, 1.0, 3.0, 12.0, 80.0])
    a = mt.tensor(alpha, requires_grad=True)
    ta = torch.tensor(alpha, requires_grad=True)
    mt.manual_seed(4)
    torch.manual_seed(4)
    x = mt.distributions.Gamma(a, 1.0).rsample((50,))
    tx = torch.distributions.Gamma(ta, 1.0).rsample((50,))
    np.testing.assert_array_equal(x.detach().numpy(), tx.detach().numpy())
    x.sum().backward()
    tx.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-4)


def test_beta_and_dirichlet_rsample_gradients_are_unbiased():
    # d E[x] / d concentration estimated from reparameterised samples equals the exact one.
    c = mt.tensor([2.0, 3.0, 5.0], dtype=mt.float64, requires_grad=True)
    mt.manual_seed(0)
    x = mt.distributions.Dirichlet(c).rsample((4000,))
    x[:, 0].mean().backward()
    total = 10.0
    exact = np.array([(total - 2.0) / total ** 2, -2.0 / total ** 2, -2.0 / total ** 2])
    np.testing.assert_allclose(c.grad.numpy(), exact, atol=4e-3)
    a = mt.tensor(2.0, dtype=mt.float64, requires_grad=True)
    b = mt.tensor(3.0, dtype=mt.float64, requires_grad=True)
    mt.distributions.Beta(a, b).rsample((4000,)).mean().backward()
    np.testing.assert_allclose([a.grad.item(), b.grad.item()], [3 / 25, -2 / 25], atol=4e-3)


def test_no_rsample_where_torch_has_none():
    for dist in (mt.distributions.Bernoulli(mt.tensor([0.3])),
                 mt.distributions.Categorical(mt.tensor([0.3, 0.7])),
                 mt.distributions.Poisson(mt.tensor([2.0])),
                 mt.distributions.Binomial(3, mt.tensor([0.3]))):
        assert not dist.has_rsample
        with pytest.raises(NotImplementedError):
            dist.rsample()


def test_reinforce_idiom():
    probs = mt.tensor([0.2, 0.3, 0.5], requires_grad=True)
    tprobs = torch.tensor([0.2, 0.3, 0.5], requires_grad=True)
    mt.manual_seed(5)
    torch.manual_seed(5)
    for _ in range(3):
        m, tm = mt.distributions.Categorical(probs), torch.distributions.Categorical(tprobs)
        a, ta = m.sample(), tm.sample()
        assert a.item() == ta.item()
        (-m.log_prob(a) * 1.5).backward()
        (-tm.log_prob(ta) * 1.5).backward()
    np.testing.assert_allclose(probs.grad.numpy(), tprobs.grad.numpy(), rtol=1e-6)


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value)


@pytest.mark.parametrize("build", [
    lambda D, T: D.Normal(T([0.0, 1.0]), T([1.0, -1.0])),
    lambda D, T: D.Normal(0.0, 0.0),
    lambda D, T: D.Bernoulli(T([0.5, 1.5])),
    lambda D, T: D.Bernoulli(),
    lambda D, T: D.Bernoulli(T([0.5]), logits=T([0.1])),
    lambda D, T: D.Categorical(T([0.5, -0.5])),
    lambda D, T: D.Categorical(T(0.5)),
    lambda D, T: D.Uniform(T([1.0]), T([0.0])),
    lambda D, T: D.Gamma(T([1.0]), T([-2.0])),
    lambda D, T: D.Beta(-1.0, 1.0),
    lambda D, T: D.Dirichlet(T([1.0, -1.0])),
    lambda D, T: D.Exponential(T([-1.0])),
    lambda D, T: D.Poisson(T([-1.0])),
    lambda D, T: D.Binomial(T([2.5]), T([0.5])),
    lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 2.0], [2.0, 1.0]])),
    lambda D, T: D.MultivariateNormal(T([0.0, 0.0])),
    lambda D, T: D.Independent(D.Normal(T([0.0]), T([1.0])), 2),
    lambda D, T: D.Normal(T([0.0]), T([1.0])).log_prob(T([float("nan")])),
    lambda D, T: D.Exponential(T([1.0])).log_prob(T([-1.0])),
    lambda D, T: D.Bernoulli(T([0.3])).log_prob(T([0.5])),
    lambda D, T: D.Categorical(T([0.3, 0.7])).log_prob(T([2.0])),
    lambda D, T: D.Dirichlet(T([1.0, 2.0])).log_prob(T([0.5, 0.6])),
    lambda D, T: D.Normal(T([0.0, 1.0]), T([1.0, 1.0])).log_prob(T([0.0, 1.0, 2.0])),
    lambda D, T: D.Normal(T([0.0]), T([1.0])).log_prob([0.0]),
    lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 0.0], [0.0, 1.0]])).log_prob(
        T([0.0, 0.0, 0.0])),
    lambda D, T: D.Gamma(T([1.0]), T([1.0])).log_prob(T([-1.0])),
], ids=lambda f: "")
def test_validation_errors_match_torch(build, monkeypatch):
    # torch.compile's setup (test_namespaces calls it with bad arguments) turns PyTorch's
    # default validation off for the rest of the process: compare with it on, as by default.
    monkeypatch.setattr(torch.distributions.Distribution, "_validate_args", True)
    mt_type, mt_msg = _error(lambda: build(mt.distributions, mt.tensor))
    t_type, t_msg = _error(lambda: build(torch.distributions, torch.tensor))
    assert mt_type.__name__ == t_type.__name__
    assert mt_msg == t_msg.replace("torch.", "microtorch.")


def test_validate_args_switch():
    try:
        mt.distributions.Distribution.set_default_validate_args(False)
        mt.distributions.Normal(mt.tensor([0.0]), mt.tensor([-1.0]))  # no error
    finally:
        mt.distributions.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        mt.distributions.Normal(mt.tensor([0.0]), mt.tensor([-1.0]))
    mt.distributions.Normal(mt.tensor([0.0]), mt.tensor([-1.0]), validate_args=False)
    with pytest.raises(ValueError):
        mt.distributions.Distribution.set_default_validate_args(2)


KL_PAIRS = [
    ("Normal", dict(loc=RNG.standard_normal(3), scale=_pos(3)),
     dict(loc=RNG.standard_normal(3), scale=_pos(3))),
    ("Bernoulli", dict(probs=RNG.uniform(0.1, 0.9, 3)), dict(logits=RNG.standard_normal(3))),
    ("Categorical", dict(probs=RNG.uniform(0.1, 1, (2, 4))), dict(logits=RNG.standard_normal(4))),
    ("OneHotCategorical", dict(probs=RNG.uniform(0.1, 1, (2, 4))),
     dict(probs=RNG.uniform(0.1, 1, (2, 4)))),
    ("Uniform", dict(low=np.array([0.0, 0.2]), high=np.array([1.0, 0.5])),
     dict(low=np.array([-1.0, 0.3]), high=np.array([2.0, 0.4]))),
    ("Exponential", dict(rate=_pos(3)), dict(rate=_pos(3))),
    ("Beta", dict(concentration1=_pos(3), concentration0=_pos(3)),
     dict(concentration1=_pos(3), concentration0=_pos(3))),
    ("Gamma", dict(concentration=_pos(3), rate=_pos(3)),
     dict(concentration=_pos(3), rate=_pos(3))),
    ("Dirichlet", dict(concentration=_pos(2, 3)), dict(concentration=_pos(2, 3))),
    ("Laplace", dict(loc=RNG.standard_normal(3), scale=_pos(3)),
     dict(loc=RNG.standard_normal(3), scale=_pos(3))),
    ("Poisson", dict(rate=_pos(3)), dict(rate=_pos(3))),
    ("Binomial", dict(total_count=5, probs=RNG.uniform(0.1, 0.9, 3)),
     dict(total_count=5, probs=RNG.uniform(0.1, 0.9, 3))),
    ("MultivariateNormal", dict(loc=RNG.standard_normal((2, 3)), covariance_matrix=_spd(3)),
     dict(loc=RNG.standard_normal(3), scale_tril=_tril(3, (2,)))),
    ("LogNormal", dict(loc=RNG.standard_normal(3), scale=_pos(3)),
     dict(loc=RNG.standard_normal(3), scale=_pos(3))),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pair", KL_PAIRS, ids=[p[0] for p in KL_PAIRS])
def test_kl_divergence_matches_torch(pair, dtype, device):
    name, kp, kq = pair
    p, pp = _build(mt, name, kp, dtype, device)
    q, qp = _build(mt, name, kq, dtype, device)
    tp, tpp = _build(torch, name, kp, dtype)
    tq, tqp = _build(torch, name, kq, dtype)
    kl, tkl = mt.distributions.kl_divergence(p, q), torch.distributions.kl_divergence(tp, tq)
    _check(kl, tkl, dtype, f"KL {name}")
    finite = np.isfinite(tkl.detach().numpy())
    w = np.where(finite, 1.0, 0.0).astype(dtype)
    (kl * mt.tensor(w, device=device)).sum().backward()
    (tkl * torch.tensor(w)).sum().backward()
    for params, tparams in ((pp, tpp), (qp, tqp)):
        for k, t in tparams.items():
            if isinstance(t, torch.Tensor) and t.requires_grad and t.grad is not None:
                np.testing.assert_allclose(params[k].grad.cpu().numpy(), t.grad.numpy(),
                                           **TOL[dtype], err_msg=f"KL {name} d/d{k}")


def test_kl_independent_and_registry():
    D = mt.distributions
    base = D.Normal(mt.zeros(2, 3), mt.ones(2, 3))
    other = D.Normal(mt.ones(2, 3), mt.full((2, 3), 2.0))
    kl = D.kl_divergence(D.Independent(base, 1), D.Independent(other, 1))
    np.testing.assert_allclose(kl.numpy(), D.kl_divergence(base, other).sum(-1).numpy())
    for other, tother in ((D.Poisson(mt.ones(2, 3)), torch.distributions.Poisson(1.0)),
                          (D.Categorical(mt.ones(3)), torch.distributions.Categorical(
                              torch.ones(3)))):
        with pytest.raises(NotImplementedError) as mine:
            D.kl_divergence(base, other)
        with pytest.raises(NotImplementedError) as theirs:
            torch.distributions.kl_divergence(torch.distributions.Normal(0.0, 1.0), tother)
        assert str(mine.value) == str(theirs.value)

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return mt.zeros(p.batch_shape)

    assert D.kl_divergence(MyNormal(mt.zeros(2), mt.ones(2)), D.Normal(mt.ones(2),
                                                                      mt.ones(2))).sum() == 0
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


def test_transforms_match_torch():
    D, TD = mt.distributions, torch.distributions
    x = np.linspace(-2, 2, 7)
    pairs = [(D.ExpTransform(), TD.ExpTransform()),
             (D.AffineTransform(1.5, -2.0), TD.AffineTransform(1.5, -2.0)),
             (D.SigmoidTransform(), TD.SigmoidTransform()),
             (D.TanhTransform(), TD.TanhTransform()),
             (D.ComposeTransform([D.AffineTransform(0.5, 3.0), D.TanhTransform()]),
              TD.ComposeTransform([TD.AffineTransform(0.5, 3.0), TD.TanhTransform()]))]
    for t, tt in pairs:
        xs = mt.tensor(x, requires_grad=True)
        txs = torch.tensor(x, requires_grad=True)
        y, ty = t(xs), tt(txs)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(t.inv(y).detach().numpy(), tt.inv(ty).detach().numpy(),
                                   rtol=1e-10, atol=1e-12)
        lad, tlad = t.log_abs_det_jacobian(xs, y), tt.log_abs_det_jacobian(txs, ty)
        np.testing.assert_allclose(lad.detach().numpy(), tlad.detach().numpy(), rtol=1e-10)
        (y.sum() + lad.sum()).backward()
        (ty.sum() + tlad.sum()).backward()
        np.testing.assert_allclose(xs.grad.numpy(), txs.grad.numpy(), rtol=1e-10)
        assert t.sign == tt.sign
        assert repr(t.domain) == repr(tt.domain)
        assert repr(t.codomain) == repr(tt.codomain)
        assert t.bijective == tt.bijective


def test_transformed_distribution_matches_torch():
    D, TD = mt.distributions, torch.distributions
    loc, scale = np.array([0.0, 1.0]), np.array([1.0, 0.5])
    d = D.TransformedDistribution(D.Normal(mt.tensor(loc), mt.tensor(scale)),
                                  [D.AffineTransform(1.0, 2.0), D.SigmoidTransform()])
    td = TD.TransformedDistribution(TD.Normal(torch.tensor(loc), torch.tensor(scale)),
                                    [TD.AffineTransform(1.0, 2.0), TD.SigmoidTransform()])
    v = np.array([[0.2, 0.9], [0.5, 0.6]])
    np.testing.assert_allclose(d.log_prob(mt.tensor(v)).numpy(),
                               td.log_prob(torch.tensor(v)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(d.cdf(mt.tensor(v)).numpy(), td.cdf(torch.tensor(v)).numpy(),
                               rtol=1e-10)
    assert repr(d.support) == repr(td.support)
    mt.manual_seed(2)
    torch.manual_seed(2)
    np.testing.assert_allclose(d.rsample((3,)).numpy(), td.rsample((3,)).numpy(), rtol=1e-12)
    # a diagonal Normal through Independent: one event of 2
    ind = D.Independent(D.Normal(mt.tensor(loc), mt.tensor(scale)), 1)
    tind = TD.Independent(TD.Normal(torch.tensor(loc), torch.tensor(scale)), 1)
    assert tuple(ind.event_shape) == tuple(tind.event_shape) == (2,)
    assert repr(ind) == repr(tind).replace("torch.", "microtorch.")
    np.testing.assert_allclose(ind.log_prob(mt.tensor(v)).numpy(),
                               tind.log_prob(torch.tensor(v)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ind.entropy().numpy(), tind.entropy().numpy(), rtol=1e-12)


def test_constraints_reprs_and_checks():
    C, TC = mt.distributions.constraints, torch.distributions.constraints
    v = np.array([[-1.0, 0.0, 0.5], [1.0, 2.0, np.nan]])
    for name in ("real", "positive", "nonnegative", "unit_interval", "boolean",
                 "nonnegative_integer", "positive_integer", "simplex", "real_vector"):
        c, tc = getattr(C, name), getattr(TC, name)
        assert repr(c) == repr(tc)
        np.testing.assert_array_equal(c.check(mt.tensor(v)).numpy(),
                                      tc.check(torch.tensor(v)).numpy())
    for c, tc in ((C.interval(0, 1), TC.interval(0, 1)),
                  (C.greater_than(0.5), TC.greater_than(0.5)),
                  (C.integer_interval(0, 3), TC.integer_interval(0, 3)),
                  (C.half_open_interval(0, 1), TC.half_open_interval(0, 1))):
        assert repr(c) == repr(tc)
        np.testing.assert_array_equal(c.check(mt.tensor(v)).numpy(),
                                      tc.check(torch.tensor(v)).numpy())
    m = np.array([[[2.0, 0.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])
    for name in ("lower_cholesky", "lower_triangular", "positive_definite", "symmetric"):
        np.testing.assert_array_equal(getattr(C, name).check(mt.tensor(m)).numpy(),
                                      getattr(TC, name).check(torch.tensor(m)).numpy())


def test_gamma_cdf_gradient_in_rate_and_value():
    conc, rate, v = np.array([0.5, 2.0, 7.0]), np.array([1.0, 0.5, 3.0]), np.array([0.3, 2, 4])
    r, x = mt.tensor(rate, requires_grad=True), mt.tensor(v, requires_grad=True)
    tr, tx = torch.tensor(rate, requires_grad=True), torch.tensor(v, requires_grad=True)
    out = mt.distributions.Gamma(mt.tensor(conc), r).cdf(x)
    tout = torch.distributions.Gamma(torch.tensor(conc), tr).cdf(tx)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(r.grad.numpy(), tr.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("case", SEEDED, ids=[c[0] for c in SEEDED])
def test_sample_moments_on_every_device(case, device):
    # Seeded, wide bounds: on CUDA the draws come from CuPy's generator, not PyTorch's stream.
    name, kwargs = case
    dist, _ = _build(mt, name, kwargs, "float64", device)
    mt.manual_seed(0)
    n = 4000
    s = dist.sample((n,))
    assert s.device.type == device
    assert tuple(s.shape) == (n,) + tuple(dist.batch_shape) + tuple(dist.event_shape)
    values = s.double().cpu().numpy()
    if name == "Categorical":
        counts = np.stack([(s.cpu().numpy() == k).mean(0) for k in range(3)], -1)
        np.testing.assert_allclose(counts, dist.probs.detach().cpu().numpy(), atol=0.05)
        return
    mean = dist.mean.detach().double().cpu().numpy()
    std = dist.stddev.detach().double().cpu().numpy()
    if name == "LogNormal":  # heavy tails: check the normal underneath
        values, mean, std = np.log(values), kwargs["loc"], kwargs["scale"]
    np.testing.assert_allclose(values.mean(0), mean, atol=float(6 * std.max() / np.sqrt(n)))
    np.testing.assert_allclose(values.std(0), std, rtol=0.1, atol=0.02)
    assert bool(dist.support.check(s).all())


@pytest.mark.parametrize("given", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal_derived_matrices_match_torch(given):
    matrix = _tril(3, (2,)) if given == "scale_tril" else _spd(3, (2,))
    loc = RNG.standard_normal(3)
    d = mt.distributions.MultivariateNormal(mt.tensor(loc), **{given: mt.tensor(matrix)})
    td = torch.distributions.MultivariateNormal(torch.tensor(loc),
                                                **{given: torch.tensor(matrix)})
    for name in ("covariance_matrix", "precision_matrix", "scale_tril", "variance", "mean"):
        np.testing.assert_allclose(getattr(d, name).detach().numpy(),
                                   getattr(td, name).detach().numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)


def test_pytorchs_module_paths_import():
    import importlib

    for module, name in [("beta", "Beta"), ("dirichlet", "Dirichlet"), ("laplace", "Laplace"),
                         ("exponential", "Exponential"), ("binomial", "Binomial"),
                         ("one_hot_categorical", "OneHotCategorical"), ("normal", "Normal"),
                         ("independent", "Independent"), ("log_normal", "LogNormal"),
                         ("categorical", "Categorical"), ("gamma", "Gamma"),
                         ("multivariate_normal", "MultivariateNormal"), ("poisson", "Poisson"),
                         ("transformed_distribution", "TransformedDistribution")]:
        mine = importlib.import_module(f"microtorch.distributions.{module}")
        assert hasattr(importlib.import_module(f"torch.distributions.{module}"), name)
        assert getattr(mine, name) is getattr(mt.distributions, name)


EXP_FAMILY = ["Normal", "Gamma", "Beta", "Dirichlet", "Exponential", "Poisson", "Bernoulli"]


@pytest.mark.parametrize("name", EXP_FAMILY)
def test_exponential_family_bregman_entropy_and_kl(name):
    from microtorch.distributions.exp_family import ExponentialFamily, bregman_kl

    pair = next(p for p in KL_PAIRS if p[0] == name)
    p, _ = _build(mt, name, pair[1], "float64")
    q, _ = _build(mt, name, pair[2], "float64")
    tp, _ = _build(torch, name, pair[1], "float64")
    assert isinstance(p, ExponentialFamily)
    assert isinstance(tp, torch.distributions.ExponentialFamily)
    np.testing.assert_allclose(bregman_kl(p, q).detach().numpy(),
                               mt.distributions.kl_divergence(p, q).detach().numpy(),
                               rtol=1e-9, atol=1e-12)
    try:
        expected = torch.distributions.ExponentialFamily.entropy(tp).detach().numpy()
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ExponentialFamily.entropy(p)
        return
    np.testing.assert_allclose(ExponentialFamily.entropy(p).detach().numpy(), expected,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ExponentialFamily.entropy(p).detach().numpy(),
                               p.entropy().detach().numpy(), rtol=1e-9, atol=1e-12)


CROSS = {
    "Normal": dict(loc=np.array([0.3, -1.0]), scale=np.array([1.2, 0.4])),
    "Laplace": dict(loc=np.array([0.3, 0.5]), scale=np.array([1.2, 2.0])),
    "Exponential": dict(rate=np.array([1.5, 0.3])),
    "Gamma": dict(concentration=np.array([2.0, 0.7]), rate=np.array([1.5, 3.0])),
    "Beta": dict(concentration1=np.array([2.0, 0.5]), concentration0=np.array([3.0, 1.5])),
    "Uniform": dict(low=np.array([0.2, -0.5]), high=np.array([0.7, 0.9])),
    "Poisson": dict(rate=np.array([2.0, 0.4])),
    "Bernoulli": dict(probs=np.array([0.3, 0.8])),
    "Binomial": dict(total_count=5, probs=np.array([0.3, 0.6])),
}


@pytest.mark.parametrize("p_name", list(CROSS))
def test_cross_family_kl_matches_torch(p_name):
    for q_name in CROSS:
        if q_name == p_name:
            continue
        p, pp = _build(mt, p_name, CROSS[p_name], "float64")
        q, qp = _build(mt, q_name, CROSS[q_name], "float64")
        tp, tpp = _build(torch, p_name, CROSS[p_name], "float64")
        tq, tqp = _build(torch, q_name, CROSS[q_name], "float64")
        try:
            tkl = torch.distributions.kl_divergence(tp, tq)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                mt.distributions.kl_divergence(p, q)
            continue
        kl = mt.distributions.kl_divergence(p, q)
        np.testing.assert_allclose(kl.detach().numpy(), tkl.detach().numpy(), rtol=1e-10,
                                   err_msg=f"{p_name}-{q_name}")
        finite = np.isfinite(tkl.detach().numpy())
        if not finite.any() or not tkl.requires_grad:
            continue
        w = finite.astype("float64")
        (kl * mt.tensor(w)).sum().backward()
        (tkl * torch.tensor(w)).sum().backward()
        for params, tparams in ((pp, tpp), (qp, tqp)):
            for k, t in tparams.items():
                if isinstance(t, torch.Tensor) and t.grad is not None:
                    np.testing.assert_allclose(params[k].grad.numpy(), t.grad.numpy(),
                                               rtol=1e-9, atol=1e-12,
                                               err_msg=f"{p_name}-{q_name} d/d{k}")
