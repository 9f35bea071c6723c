"""``nn.utils.parametrize`` and the weight / spectral normalizations (parametrization and hook
forms) against PyTorch after the same seed: state-dict keys, values, gradients, power-iteration
buffers, the random stream, repr, removal, caching, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn as nn
from microtorch.nn.utils import parametrize

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

TOL = {"rtol": 2e-5, "atol": 2e-6}  # float32 norms and power iterations in another order

LAYERS = [lambda lib: lib.nn.Linear(5, 3), lambda lib: lib.nn.Conv2d(2, 4, 3),
          lambda lib: lib.nn.ConvTranspose2d(3, 2, 2), lambda lib: lib.nn.Conv1d(2, 3, 2)]
INPUTS = [(2, 5), (1, 2, 5, 5), (1, 3, 4, 4), (2, 2, 6)]


def _run(lib, make, apply, shape, steps=2):
    """Seeded layer, normalization applied, a few train-mode forwards/backwards, then eval."""
    lib.manual_seed(0)
    m = make(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the deprecated hook forms
        apply(lib, m)
    x = lib.tensor(np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape))
    outs = []
    for _ in range(steps):
        y = m(x)
        y.square().sum().backward()
        outs.append(y.detach().numpy())
    m.eval()
    outs.append(m(x).detach().numpy())
    state = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    grads = {n: p.grad.numpy() for n, p in m.named_parameters()}
    return m, outs, state, grads, lib.rand(3).numpy()


APPLY = {
    "weight_norm": lambda lib, m: lib.nn.utils.parametrizations.weight_norm(m),
    "weight_norm_dim_none": lambda lib, m: lib.nn.utils.parametrizations.weight_norm(m, dim=None),
    "weight_norm_dim_1": lambda lib, m: lib.nn.utils.parametrizations.weight_norm(m, dim=1),
    "spectral_norm": lambda lib, m: lib.nn.utils.parametrizations.spectral_norm(m),
    "spectral_norm_3_iters": lambda lib, m: lib.nn.utils.parametrizations.spectral_norm(
        m, n_power_iterations=3),
    "old_weight_norm": lambda lib, m: lib.nn.utils.weight_norm(m),
    "old_spectral_norm": lambda lib, m: lib.nn.utils.spectral_norm(m),
}


@pytest.mark.parametrize("how", list(APPLY))
@pytest.mark.parametrize("layer", range(len(LAYERS)))
def test_normalizations_match_torch(how, layer):
    ours = _run(mt, LAYERS[layer], APPLY[how], INPUTS[layer])
    theirs = _run(torch, LAYERS[layer], APPLY[how], INPUTS[layer])
    assert type(ours[0]).__name__ == type(theirs[0]).__name__
    assert repr(ours[0]) == repr(theirs[0])
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, **TOL)
    assert list(ours[2]) == list(theirs[2])
    for k in theirs[2]:
        np.testing.assert_allclose(ours[2][k], theirs[2][k], **TOL, err_msg=k)
    assert list(ours[3]) == list(theirs[3])
    for k in theirs[3]:
        np.testing.assert_allclose(ours[3][k], theirs[3][k], rtol=1e-4, atol=1e-5, err_msg=k)
    np.testing.assert_array_equal(ours[4], theirs[4])  # the random stream consumed alike


def test_remove_parametrizations_and_old_hooks():
    for lib in (mt, torch):
        lib.manual_seed(1)
        m = lib.nn.Linear(3, 2)
        before = m.weight.detach().clone()
        lib.nn.utils.parametrizations.weight_norm(m)
        assert parametrize.is_parametrized(m) if lib is mt else \
            torch.nn.utils.parametrize.is_parametrized(m)
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
        assert type(m).__name__ == "Linear" and list(m.state_dict()) == ["bias", "weight"]
        np.testing.assert_allclose(m.weight.detach().numpy(), before.numpy(), rtol=1e-6)
        with pytest.raises(ValueError, match="does not have a parametrization on weight"):
            lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            lib.nn.utils.weight_norm(m)
            with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
                lib.nn.utils.weight_norm(m)
        lib.nn.utils.remove_weight_norm(m)
        with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
            lib.nn.utils.remove_weight_norm(m)
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        nn.utils.weight_norm(nn.Linear(2, 2))


def test_old_weight_norm_state_dict_loads_into_parametrization():
    for lib in (mt, torch):
        old = lib.nn.Linear(3, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            lib.nn.utils.weight_norm(old)
        new = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2))
        new.load_state_dict(old.state_dict())
        np.testing.assert_allclose(new.weight.detach().numpy(), old.weight.detach().numpy(),
                                   rtol=1e-6)


class _Symmetric:
    @staticmethod
    def make(lib):
        class Symmetric(lib.nn.Module):
            def forward(self, x):
                return x.triu() + x.triu(1).transpose(0, 1)

            def right_inverse(self, a):
                return a.triu()
        return Symmetric()


def test_register_custom_parametrization_chain_cache_and_setter():
    results = []
    for lib in (mt, torch):
        lib.manual_seed(2)
        m = lib.nn.Linear(3, 3)
        P = lib.nn.utils.parametrize
        P.register_parametrization(m, "weight", _Symmetric.make(lib))

        class Double(lib.nn.Module):
            def forward(self, x):
                return x * 2
        P.register_parametrization(m, "weight", Double())
        w = m.weight
        assert bool((w == w.T).all())
        with P.cached():
            assert m.weight is m.weight
        assert m.weight is not m.weight
        value = lib.tensor(np.arange(9, dtype=np.float32).reshape(3, 3))
        with pytest.raises(RuntimeError, match="parametrization Double does not implement "
                                               "right_inverse"):
            m.weight = value
        results.append((list(m.state_dict()), repr(m), m.weight.detach().numpy()))
        with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                             "parametrized element with name 'nope'"):
            P.register_parametrization(m, "nope", Double())

        class Shrink(lib.nn.Module):
            def forward(self, x):
                return x[:1]
        with pytest.raises(ValueError, match="may not change the shape"):
            P.register_parametrization(lib.nn.Linear(2, 2), "weight", Shrink())
    assert results[0][0] == results[1][0]
    assert results[0][1].replace("microtorch", "torch") == results[1][1]
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-6)


def test_setter_through_right_inverse_and_buffers():
    for lib in (mt, torch):
        m = lib.nn.Linear(3, 3)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", _Symmetric.make(lib))
        a = lib.tensor(np.arange(9, dtype=np.float32).reshape(3, 3))
        m.weight = a
        np.testing.assert_array_equal(m.parametrizations.weight.original.detach().numpy(),
                                      np.triu(np.arange(9, dtype=np.float32).reshape(3, 3)))
        bn = lib.nn.BatchNorm1d(3)
        lib.nn.utils.parametrize.register_parametrization(bn, "running_mean", lib.nn.Identity())
        assert "parametrizations.running_mean.original" in bn.state_dict()


def test_spectral_norm_errors():
    for lib in (mt, torch):
        with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
            lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2),
                                                        n_power_iterations=0)
        with pytest.raises(IndexError, match="Dimension out of range"):
            lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2), dim=2)
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'w'"):
            lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2), name="w")


def test_parametrized_modules_copy_but_do_not_pickle():
    import copy
    import pickle

    for lib in (mt, torch):
        m = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2))
        clone = copy.deepcopy(m)
        assert type(clone).__name__ == "ParametrizedLinear"
        np.testing.assert_array_equal(clone.weight.detach().numpy(), m.weight.detach().numpy())
        assert clone.parametrizations.weight.original1 is not m.parametrizations.weight.original1
        with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only "
                                               "supported through state_dict()"):
            pickle.dumps(m)
