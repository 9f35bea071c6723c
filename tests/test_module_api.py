# ruff: noqa: B023  (the hooks run inside the loop iteration that defines them)
"""``Module``'s API against PyTorch's: non-persistent buffers, get_submodule/get_parameter/
get_buffer, named_modules/named_parameters with duplicates, casting, forward (pre-)hooks with
kwargs / prepend / always_call, full backward (pre-)hooks, state-dict hooks, load results,
pickling, and the errors PyTorch raises."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn as nn

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def _both(build):
    """The same model built with each library (weights copied from PyTorch's)."""
    theirs = build(torch)
    ours = build(mt)
    ours.load_state_dict({k: mt.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return ours, theirs


class _Net:
    @staticmethod
    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(3, 4)
                self.act = lib.nn.ReLU()
                self.head = lib.nn.Sequential(lib.nn.Linear(4, 2), lib.nn.Tanh())
                self.register_buffer("scale", lib.ones(2))
                self.register_buffer("scratch", lib.zeros(2), persistent=False)

            def forward(self, x, shift=0.0):
                return self.head(self.act(self.fc(x))) * self.scale + shift
        return Net()


def test_non_persistent_buffer_and_lookups():
    ours, theirs = _both(_Net.build)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "scratch" not in ours.state_dict()
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert ours.get_submodule("head.0") is ours.head[0]
    assert ours.get_parameter("head.0.bias") is ours.head[0].bias
    assert ours.get_buffer("scratch") is ours.scratch
    for method, target in [("get_submodule", "head.5"), ("get_submodule", "fc.weight"),
                           ("get_parameter", "fc.nope"), ("get_parameter", "scale"),
                           ("get_buffer", "fc.weight"), ("get_buffer", "head.1.x")]:
        with pytest.raises(AttributeError) as t_err:
            getattr(theirs, method)(target)
        with pytest.raises(AttributeError) as m_err:
            getattr(ours, method)(target)
        assert str(m_err.value) == str(t_err.value)


def test_named_modules_and_parameters_with_duplicates():
    def build(lib):
        shared = lib.nn.Linear(2, 2)
        return lib.nn.Sequential(shared, lib.nn.ReLU(), shared)

    ours, theirs = _both(build)
    for kwargs in [{}, {"remove_duplicate": False}, {"prefix": "m"}]:
        assert [n for n, _ in ours.named_modules(**kwargs)] == \
            [n for n, _ in theirs.named_modules(**kwargs)]
    for kwargs in [{}, {"remove_duplicate": False}, {"prefix": "p"}, {"recurse": False}]:
        assert [n for n, _ in ours.named_parameters(**kwargs)] == \
            [n for n, _ in theirs.named_parameters(**kwargs)]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    seen = []
    assert ours.apply(lambda m: seen.append(type(m).__name__)) is ours
    assert seen == ["Linear", "ReLU", "Sequential"]


def test_casts_and_modes():
    ours, theirs = _both(_Net.build)
    ours.register_buffer("steps", mt.tensor([1, 2]))
    theirs.register_buffer("steps", torch.tensor([1, 2]))
    for cast in ["double", "half", "float", "bfloat16"]:
        assert getattr(ours, cast)() is ours
        getattr(theirs, cast)()
        for (n, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
            assert str(a.dtype) == str(b.dtype).replace("torch.", "microtorch."), n
    ours.type(mt.float64)
    theirs.type(torch.float64)
    assert str(ours.steps.dtype) == "microtorch.float64" and theirs.steps.dtype == torch.float64
    ours.to("cpu", mt.float32)
    assert ours.fc.weight.dtype == mt.float32 and ours.steps.dtype == mt.float32
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        ours.to(mt.int64)
    assert ours.train() is ours and ours.eval() is ours and not ours.head[0].training
    assert ours.requires_grad_(False) is ours
    assert not any(p.requires_grad for p in ours.parameters())


def test_forward_hooks_kwargs_prepend_and_always_call():
    ours, theirs = _both(_Net.build)
    logs = {id(ours): [], id(theirs): []}
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    outs = []
    for model, lib in [(ours, mt), (theirs, torch)]:
        log = logs[id(model)]
        model.register_forward_pre_hook(lambda m, a: log.append("pre"))
        model.register_forward_pre_hook(lambda m, a: log.append("first"), prepend=True)
        model.register_forward_pre_hook(lambda m, a, k: (a, {**k, "shift": 1.0}),
                                        with_kwargs=True)
        model.register_forward_hook(lambda m, a, k, out: out * 2, with_kwargs=True)
        model.register_forward_hook(lambda m, a, out: log.append(tuple(out.shape)))
        outs.append(model(lib.tensor(x)).detach().numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6, atol=1e-6)
    assert logs[id(ours)] == logs[id(theirs)] == ["first", "pre", (2, 2)]

    for lib in (mt, torch):
        m = lib.nn.Linear(2, 2)
        m.register_forward_pre_hook(lambda mod, a, k: 5, with_kwargs=True)
        with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
            m(lib.ones(1, 2))

    for lib in (mt, torch):
        m = lib.nn.Linear(2, 2)
        calls = []
        h = m.register_forward_hook(lambda mod, a, out: calls.append(out), always_call=True)
        m.register_forward_hook(lambda mod, a, out: calls.append("plain"))
        with pytest.raises(RuntimeError):
            m(lib.ones(1, 3))
        assert calls == [None]
        h.remove()
        assert h.id not in m._forward_hooks_always_called


def test_full_backward_hooks_match_torch():
    records = {}
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for lib in (torch, mt):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1))
        if lib is mt:
            model.load_state_dict({k: mt.tensor(v.detach().numpy())
                                   for k, v in records["torch_sd"].items()})
        else:
            records["torch_sd"] = model.state_dict()
        rec = records[lib.__name__] = []
        model[1].register_full_backward_pre_hook(
            lambda m, go: rec.append(("pre", go[0].detach().numpy().copy())))
        model[1].register_full_backward_hook(
            lambda m, gi, go: (rec.append(("full", gi[0].detach().numpy().copy(),
                                           go[0].detach().numpy().copy())), (gi[0] * 3,))[1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the first layer's "no input requires grad"
            model[0].register_full_backward_hook(
                lambda m, gi, go: rec.append(("first", gi, go[0].detach().numpy().copy())))
        inp = lib.tensor(x)
        model(inp).sum().backward()
        rec.append(("grad", model[0].weight.grad.numpy().copy()))
    ours, theirs = records["microtorch"], records["torch"]
    assert [r[0] for r in ours] == [r[0] for r in theirs] == ["pre", "full", "first", "grad"]
    for a, b in zip(ours, theirs):
        for u, v in zip(a[1:], b[1:]):
            if isinstance(v, tuple):
                assert u == v  # (None,): the input does not require grad
            else:
                np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_full_backward_hook_errors():
    for lib in (mt, torch):
        m = lib.nn.Linear(2, 2)
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        x = lib.ones(1, 2, requires_grad=True)
        with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                               "grad_input, got 2, but expected 1"):
            m(x).sum().backward()
        m = lib.nn.Linear(2, 2)
        m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
        with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number"):
            m(x).sum().backward()


def test_state_dict_hooks():
    for lib in (mt, torch):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2))
        log = []
        m[0].register_state_dict_pre_hook(lambda mod, prefix, keep: log.append(prefix))

        def post(mod, sd, prefix, meta):
            sd[prefix + "extra"] = lib.zeros(1)
            log.append(meta["version"] if "version" in meta else None)
        m[0].register_state_dict_post_hook(post)
        sd = m.state_dict()
        assert list(sd) == ["0.weight", "0.bias", "0.extra"]
        assert log == ["0.", 1]
        assert sd._metadata["0"] == {"version": 1}
        m[0].register_state_dict_post_hook(lambda mod, sd, prefix, meta: {})
        with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
            m.state_dict()

        m = lib.nn.Linear(2, 2)
        m._register_state_dict_hook(lambda mod, sd, prefix, meta: {"only": 1})
        assert m.state_dict() == {"only": 1}


def test_load_state_dict_hooks_and_results():
    for lib in (mt, torch):
        m = lib.nn.Linear(2, 2)
        src = {"w": lib.ones(2, 2), "bias": lib.zeros(2), "junk": lib.zeros(1)}

        def rename(mod, sd, prefix, meta, strict, missing, unexpected, errors):
            sd[prefix + "weight"] = sd.pop(prefix + "w")
        m.register_load_state_dict_pre_hook(rename)
        result = m.load_state_dict(src, strict=False)
        assert result.missing_keys == [] and result.unexpected_keys == ["junk"]
        assert "w" in src  # the caller's dict is untouched
        assert float(m.weight.detach().sum()) == 4.0

        def forgive(mod, keys):
            keys.unexpected_keys.clear()
        m.register_load_state_dict_post_hook(forgive)
        assert repr(m.load_state_dict(src)) == "<All keys matched successfully>"

        m2 = lib.nn.Linear(2, 2)
        r = m2.load_state_dict({"weight": lib.ones(2, 2)}, strict=False)
        assert r.missing_keys == ["bias"] and r.unexpected_keys == []
        with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "bias"'):
            m2.load_state_dict({"weight": lib.ones(2, 2)})
        before = m2.weight.detach().clone()
        p = lib.nn.Parameter(lib.full((2, 2), 7.0))
        m2.load_state_dict({"weight": p, "bias": lib.zeros(2)}, assign=True)
        assert m2.weight is p and not bool((m2.weight == before).all())


def test_copied_and_old_state_restores_registries():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    m.register_buffer("tmp", mt.zeros(1), persistent=False)
    clone = copy.deepcopy(m)
    np.testing.assert_array_equal(clone[0].weight.detach().numpy(), m[0].weight.detach().numpy())
    assert "tmp" not in clone.state_dict()
    loaded = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(loaded[0].weight.detach().numpy(),
                                  m[0].weight.detach().numpy())
    assert "tmp" in loaded._non_persistent_buffers_set and "tmp" not in loaded.state_dict()
    # a module pickled before the hook registries existed loads with empty ones
    old = copy.copy(m[0].__dict__)
    for key in ["_backward_hooks", "_state_dict_pre_hooks", "_forward_hooks_with_kwargs",
                "_load_state_dict_post_hooks"]:
        old.pop(key)
    fresh = nn.Linear.__new__(nn.Linear)
    fresh.__setstate__(old)
    out = fresh(mt.ones(1, 2))
    assert tuple(out.shape) == (1, 3) and fresh.state_dict().keys() == m[0].state_dict().keys()
    deep = copy.deepcopy(m)
    assert deep[0].weight is not m[0].weight


def test_zero_grad_children_add_module_and_repr():
    ours, theirs = _both(_Net.build)
    ours(mt.ones(1, 3)).sum().backward()
    ours.zero_grad()
    assert all(p.grad is None for p in ours.parameters())
    ours.add_module("extra", nn.Identity())
    theirs.add_module("extra", torch.nn.Identity())
    ours.register_module("more", nn.Linear(1, 1, bias=False))
    theirs.register_module("more", torch.nn.Linear(1, 1, bias=False))
    assert repr(ours) == repr(theirs)
    assert [type(c).__name__ for c in ours.children()] == \
        [type(c).__name__ for c in theirs.children()]


@pytest.mark.parametrize("call", [
    lambda lib, m: m.add_module("a.b", lib.nn.ReLU()),
    lambda lib, m: m.add_module("", lib.nn.ReLU()),
    lambda lib, m: m.add_module("weight", lib.nn.ReLU()),
    lambda lib, m: m.register_parameter("a.b", None),
    lambda lib, m: m.register_buffer("a.b", None),
])
def test_registration_errors_match_torch(call):
    with pytest.raises(KeyError) as theirs:
        call(torch, torch.nn.Linear(1, 1))
    with pytest.raises(KeyError) as ours:
        call(mt, nn.Linear(1, 1))
    assert str(ours.value) == str(theirs.value)


def test_global_forward_hooks_run_before_each_modules_own():
    """``nn.modules.module.register_module_forward_(pre_)hook``: on every module, before its
    own hooks, with_kwargs and always_call as PyTorch's; removing them leaves nothing."""
    logs = []
    for lib in (torch, mt):
        log = []
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
        model[0].register_forward_pre_hook(lambda m, a: log.append(("own pre", type(m).__name__)))
        model[0].register_forward_hook(lambda m, a, o: log.append(("own", type(m).__name__)))
        hooks = lib.nn.modules.module
        handles = [
            hooks.register_module_forward_pre_hook(
                lambda m, a: log.append(("pre", type(m).__name__))),
            hooks.register_module_forward_hook(
                lambda m, a, k, o: log.append(("kw", type(m).__name__, sorted(k))),
                with_kwargs=True),
            hooks.register_module_forward_hook(
                lambda m, a, o: log.append(("always", type(m).__name__)), always_call=True),
        ]
        model(lib.ones(1, 2))
        bad = lib.nn.Linear(3, 2)
        with pytest.raises(RuntimeError):
            bad(lib.ones(1, 2))
        for h in handles:
            h.remove()
        model(lib.ones(1, 2))
        logs.append(log)
    assert logs[0] == logs[1]
    assert ("always", "Linear") in logs[1]
