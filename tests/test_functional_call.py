"""``func.functional_call`` and ``func.stack_module_state`` against PyTorch's: parameters and
buffers swapped in for one call (dicts, tuples of dicts, strict, tied weights), the module left
as it was also when the call raises, and the model-ensembling recipe (stacked states, vmap)."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
import microtorch.func as mf

torch = pytest.importorskip("torch")
import torch.func as tf  # noqa: E402

TOL = dict(rtol=1e-12, atol=1e-12)


def _np(t):
    return t.detach().cpu().numpy()


def _models(lib):
    class Counter(lib.nn.Module):  # does self.foo = self.foo + 1
        def __init__(self):
            super().__init__()
            self.register_buffer("foo", lib.zeros(()))

        def forward(self, x):
            self.foo = self.foo + 1
            return x + self.foo

    class Tied(lib.nn.Module):  # self.foo and self.foo_tied are one tensor
        def __init__(self):
            super().__init__()
            self.foo = lib.nn.Parameter(lib.ones(()))
            self.foo_tied = self.foo

        def forward(self, x):
            return x + self.foo + self.foo_tied

    return Counter, Tied


def _doc_examples(lib, func):
    counter_cls, tied_cls = _models(lib)
    out = []
    a = {"foo": lib.zeros(())}
    mod = counter_cls()
    out.append(func.functional_call(mod, a, lib.ones(())))
    out += [mod.foo, a["foo"]]
    a = {"foo": lib.zeros(())}
    mod = tied_cls()
    out.append(mod(lib.zeros(())))
    out.append(func.functional_call(mod, a, lib.zeros(())))
    out.append(func.functional_call(mod, a, lib.zeros(()), tie_weights=False))
    z = lib.zeros(())  # (one tensor for both names: two tensors raise, as PyTorch's does)
    out.append(func.functional_call(mod, {"foo": z, "foo_tied": z}, lib.zeros(())))
    out.append(func.functional_call(mod, ({"foo": lib.full((), 2.0)},), (lib.zeros(()),)))
    out.append(mod.foo)
    return [float(t) for t in out]


def test_pytorchs_documented_cases():
    assert _doc_examples(mt, mf) == _doc_examples(torch, tf)


def test_parameters_and_buffers_of_a_real_module(device):
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                 torch.nn.ReLU()).double().eval()
    mt.manual_seed(0)
    model = mt.nn.Sequential(mt.nn.Linear(3, 4), mt.nn.BatchNorm1d(4),
                             mt.nn.ReLU()).double().eval().to(device)
    rng = np.random.default_rng(0)
    new = {k: rng.standard_normal(tuple(v.shape)) for k, v in tmodel.state_dict().items()
           if v.dtype == torch.float64}
    new["1.running_var"] = np.abs(new["1.running_var"]) + 0.5
    x = rng.standard_normal((5, 3))
    params = {k: mt.tensor(v, device=device) for k, v in new.items() if "running" not in k}
    buffers = {k: mt.tensor(v, device=device) for k, v in new.items() if "running" in k}
    tparams = {k: torch.tensor(v) for k, v in new.items() if "running" not in k}
    tbuffers = {k: torch.tensor(v) for k, v in new.items() if "running" in k}
    before = {k: _np(v).copy() for k, v in model.state_dict().items()}
    ours = mf.functional_call(model, (params, buffers), (mt.tensor(x, device=device),))
    theirs = tf.functional_call(tmodel, (tparams, tbuffers), (torch.tensor(x),))
    np.testing.assert_allclose(_np(ours), theirs.numpy(), **TOL)
    for k, v in model.state_dict().items():  # the module's own state is back
        np.testing.assert_array_equal(_np(v), before[k])
    assert isinstance(model[0].weight, mt.nn.Parameter)


def test_the_module_is_restored_when_the_call_raises():
    model = mt.nn.Linear(3, 2)
    weight = model.weight
    with pytest.raises(RuntimeError):
        mf.functional_call(model, {"weight": mt.ones(5, 5)}, (mt.ones(1, 3),))
    assert model.weight is weight and isinstance(model.weight, mt.nn.Parameter)


CALL_ERRORS = [
    (lambda T, F: F.functional_call(T.nn.Linear(2, 2), {"weight": T.ones(2, 2)}, T.ones(2),
                                    strict=True), RuntimeError),
    (lambda T, F: F.functional_call(T.nn.Linear(2, 2), {"weight": T.ones(2, 2), "bias":
                                                        T.ones(2), "extra": T.ones(1)},
                                    T.ones(2), strict=True), RuntimeError),
    (lambda T, F: F.functional_call(T.nn.Linear(2, 2), ({"bias": T.ones(2)}, {"bias": T.ones(
        2)}), T.ones(2)), ValueError),
    (lambda T, F: F.functional_call(T.nn.Linear(2, 2), ({"bias": T.ones(2)}, 3), T.ones(2)),
     ValueError),
    (lambda T, F: F.functional_call(T.nn.Linear(2, 2), 3, T.ones(2)), ValueError),
    (lambda T, F: F.functional_call(_models(T)[1](), {"foo": T.zeros(()), "foo_tied": T.ones(
        ())}, T.zeros(())), ValueError),
    (lambda T, F: F.stack_module_state([]), RuntimeError),
    (lambda T, F: F.stack_module_state([T.nn.Linear(2, 2), T.nn.Linear(2, 2).eval()]),
     RuntimeError),
    (lambda T, F: F.stack_module_state([T.nn.Linear(2, 2), T.nn.Conv1d(2, 2, 1)]),
     RuntimeError),
]


@pytest.mark.parametrize("k", range(len(CALL_ERRORS)))
def test_errors_are_pytorchs(k):
    make, exc = CALL_ERRORS[k]
    with pytest.raises(exc) as got:
        make(mt, mf)
    with pytest.raises(exc) as want:
        make(torch, tf)
    assert str(got.value).replace("microtorch", "torch") == str(want.value)


def test_gradients_through_functional_call_do_not_track_the_module():
    def run(lib, func):
        lib.manual_seed(0)
        model = lib.nn.Linear(3, 2)
        x, t = lib.randn(4, 3), lib.randn(4, 2)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def compute_loss(p, x, t):
            return lib.nn.functional.mse_loss(func.functional_call(model, p, (x,)), t)

        grads = func.grad(compute_loss)(params, x, t)
        assert grads["weight"].grad_fn is None
        return [grads[k].numpy() for k in sorted(grads)]

    for o, t in zip(run(mt, mf), run(torch, tf)):
        np.testing.assert_allclose(o, t, rtol=1e-6, atol=1e-7)  # float32, the same products


def _ensemble(lib, func):
    """PyTorch's model-ensembling tutorial: stacked states, one vmap over the models."""
    lib.manual_seed(0)
    models = [lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(16, 8), lib.nn.ReLU(),
                                lib.nn.Linear(8, 3)) for _ in range(4)]
    data = lib.randn(5, 4, 4)
    minibatches = data.unsqueeze(0).expand(4, 5, 4, 4) * lib.arange(1, 5).reshape(4, 1, 1, 1)
    params, buffers = func.stack_module_state(models)
    base = models[0]

    def fmodel(params, buffers, x):
        return func.functional_call(base, (params, buffers), (x,))

    same = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data)
    different = func.vmap(fmodel)(params, buffers, minibatches)
    loop = lib.stack([m(x) for m, x in zip(models, minibatches)])
    return same, different, loop, params


def test_model_ensembling_with_stacked_states(device):
    same, different, loop, params = _ensemble(mt, mf)
    tsame, tdifferent, _, tparams = _ensemble(torch, tf)
    assert list(params) == list(tparams)
    assert all(v.requires_grad and v.grad_fn is None for v in params.values())
    for o, t in ((same, tsame), (different, tdifferent)):
        np.testing.assert_allclose(_np(o), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(different), _np(loop), rtol=1e-6, atol=1e-6)
