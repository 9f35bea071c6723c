"""``nn.utils.prune`` against PyTorch on the same weights and seeds: the masks of every method
(ties included), containers from repeated pruning, global pruning with importance scores,
state-dict keys and order, removal, errors (types and messages), gradients through a pruned
layer, and the module operations a pruned model must survive (to, deepcopy, save/load)."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest

import microtorch as mt
from microtorch.nn.utils import prune

torch = pytest.importorskip("torch")
import torch.nn.utils.prune as tprune  # noqa: E402

pytestmark = pytest.mark.torch

LIBS = (mt, torch)


def _prune_mod(lib):
    return prune if lib is mt else tprune


def _make(lib, kind: str, ties: bool = False):
    """A layer or small model with weights drawn from NumPy (rounded to one decimal when
    ``ties``, so magnitudes repeat and topk's order among equal values matters)."""
    if kind == "linear":
        m = lib.nn.Linear(6, 5)
    elif kind == "conv":
        m = lib.nn.Conv2d(3, 4, 3)
    else:
        m = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 2), lib.nn.ReLU(), lib.nn.Flatten(),
                              lib.nn.Linear(12, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    rng = np.random.default_rng(7)
    with lib.no_grad():
        for p in m.parameters():
            arr = rng.standard_normal(tuple(p.shape)).astype(np.float32)
            if ties:
                arr = np.round(arr, 1)
            p.copy_(lib.tensor(arr))
    return m


def _input(lib, kind: str):
    shape = {"linear": (3, 6), "conv": (2, 3, 5, 5), "seq": (2, 2, 3, 3)}[kind]
    return lib.tensor(np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape))


def _snapshot(m):
    """Everything a pruned module exposes: state dict (keys in order, values), parameter and
    buffer names in order, the pruned attributes, the hooks' class names."""
    state = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    pruned = {}
    for name, sub in m.named_modules():
        for hook in sub._forward_pre_hooks.values():
            tname = hook._tensor_name
            kinds = [type(h).__name__ for h in hook] if hasattr(hook, "_pruning_methods") \
                else type(hook).__name__
            pruned[f"{name}.{tname}"] = (getattr(sub, tname).detach().numpy().copy(), kinds)
    return (state, [n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()],
            pruned)


def _assert_same(a, b):
    assert list(a[0]) == list(b[0])
    for k in b[0]:
        np.testing.assert_array_equal(a[0][k], b[0][k], err_msg=k)
    assert a[1] == b[1] and a[2] == b[2]
    assert list(a[3]) == list(b[3])
    for k in b[3]:
        np.testing.assert_array_equal(a[3][k][0], b[3][k][0], err_msg=k)
        assert a[3][k][1] == b[3][k][1], k


def _run_both(kind, steps, seed=3, ties=False):
    """Apply ``steps(lib, P, module)`` after ``manual_seed(seed)`` in both libraries; compare
    the pruned modules, a forward pass and the random stream left over."""
    out = []
    for lib in LIBS:
        m = _make(lib, kind, ties)
        lib.manual_seed(seed)
        steps(lib, _prune_mod(lib), m)
        snap = _snapshot(m)
        y = m(_input(lib, kind)).detach().numpy()
        out.append((snap, y, lib.rand(4).numpy(), m))
    _assert_same(out[0][0], out[1][0])
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[0][2], out[1][2])  # the same draws consumed
    return out[0][3], out[1][3]


def _scores(lib, shape, seed=11, ties=True):
    arr = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return lib.tensor(np.round(arr, 1) if ties else arr)


METHODS = {
    "identity": lambda lib, P, m: P.identity(m, "weight"),
    "random_unstructured_frac": lambda lib, P, m: P.random_unstructured(m, "weight", 0.3),
    "random_unstructured_int": lambda lib, P, m: P.random_unstructured(m, "weight", 5),
    "random_unstructured_zero": lambda lib, P, m: P.random_unstructured(m, "weight", 0),
    "random_unstructured_bias": lambda lib, P, m: P.random_unstructured(m, "bias", 0.5),
    "l1_frac": lambda lib, P, m: P.l1_unstructured(m, "weight", 0.45),
    "l1_int": lambda lib, P, m: P.l1_unstructured(m, "weight", 7),
    "l1_all": lambda lib, P, m: P.l1_unstructured(m, "weight", 1.0),
    "l1_scores": lambda lib, P, m: P.l1_unstructured(
        m, "weight", 0.5, importance_scores=_scores(lib, tuple(m.weight.shape))),
    "random_structured_0": lambda lib, P, m: P.random_structured(m, "weight", 0.5, dim=0),
    "random_structured_1": lambda lib, P, m: P.random_structured(m, "weight", 2, dim=1),
    "random_structured_neg": lambda lib, P, m: P.random_structured(m, "weight", 0.4, dim=-1),
    "ln_2_dim0": lambda lib, P, m: P.ln_structured(m, "weight", 0.5, n=2, dim=0),
    "ln_1_dim1": lambda lib, P, m: P.ln_structured(m, "weight", 2, n=1, dim=1),
    "ln_inf_neg": lambda lib, P, m: P.ln_structured(m, "weight", 0.34, n=float("inf"), dim=-1),
    "ln_ninf": lambda lib, P, m: P.ln_structured(m, "weight", 1, n=float("-inf"), dim=0),
    "ln_fro": lambda lib, P, m: P.ln_structured(m, "weight", 0.5, n="fro", dim=0),
    "ln_fro_dim1": lambda lib, P, m: P.ln_structured(m, "weight", 1, n="fro", dim=1),
    "ln_3_zero": lambda lib, P, m: P.ln_structured(m, "weight", 0, n=3, dim=0),
    "ln_scores": lambda lib, P, m: P.ln_structured(
        m, "weight", 2, n=1, dim=0, importance_scores=_scores(lib, tuple(m.weight.shape))),
    "custom": lambda lib, P, m: P.custom_from_mask(
        m, "weight", (_scores(lib, tuple(m.weight.shape)) > 0).to(lib.float32)),
    "custom_bool_bias": lambda lib, P, m: P.custom_from_mask(
        m, "bias", _scores(lib, tuple(m.bias.shape)) > 0),
    "classmethod": lambda lib, P, m: P.L1Unstructured.apply(m, "weight", amount=3),
}


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("kind", ["linear", "conv"])
@pytest.mark.parametrize("method", list(METHODS))
def test_each_method_matches_torch(method, kind, ties):
    if method.startswith("ln_fro") and kind == "conv":
        # torch.norm(p="fro") over three dims raises in PyTorch; microtorch.norm computes it
        pytest.skip("microtorch.norm accepts 'fro' over more than two dims")
    ours, theirs = _run_both(kind, METHODS[method], ties=ties)
    assert prune.is_pruned(ours) and tprune.is_pruned(theirs)
    name = "bias" if "bias" in method else "weight"
    assert f"{name}_orig" in dict(ours.named_parameters())
    assert f"{name}_mask" in dict(ours.named_buffers())
    assert type(getattr(ours, name)) is mt.Tensor  # a plain attribute, not a Parameter
    assert name not in ours._parameters


def _sequence(lib, P, m):
    """Repeated pruning of one tensor, structured and unstructured mixed."""
    P.l1_unstructured(m, "weight", 0.3)
    P.random_structured(m, "weight", 1, dim=0)
    P.ln_structured(m, "weight", 0.5, n=2, dim=1)
    P.random_unstructured(m, "weight", 3)
    P.custom_from_mask(m, "weight", (_scores(lib, tuple(m.weight.shape)) > -0.5).float())
    P.ln_structured(m, "weight", 1, n=1, dim=0)
    P.identity(m, "weight")
    P.l1_unstructured(m, "bias", 2)
    P.random_unstructured(m, "bias", 0.5)


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_containers_from_repeated_pruning(kind, ties):
    ours, _ = _run_both(kind, _sequence, ties=ties)
    hook = next(h for h in ours._forward_pre_hooks.values() if h._tensor_name == "weight")
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 7
    assert [type(h).__name__ for h in hook][:2] == ["L1Unstructured", "RandomStructured"]
    assert hook[0]._tensor_name == "weight" and len(ours._forward_pre_hooks) == 2


@pytest.mark.parametrize("steps", range(1, 6))
def test_container_step_by_step(steps):
    """After each re-pruning, the same mask (structured pruning skips dead channels)."""
    calls = [lambda lib, P, m: P.random_structured(m, "weight", 0.5, dim=0),
             lambda lib, P, m: P.random_structured(m, "weight", 1, dim=0),
             lambda lib, P, m: P.l1_unstructured(m, "weight", 0.5),
             lambda lib, P, m: P.ln_structured(m, "weight", 0.5, n=2, dim=-1),
             lambda lib, P, m: P.random_unstructured(m, "weight", 1.0)]
    _run_both("conv", lambda lib, P, m: [c(lib, P, m) for c in calls[:steps]], seed=steps)


def _global(lib, P, m, method, scores, pre, **kwargs):
    params = [(m[0], "weight"), (m[3], "weight"), (m[5], "weight"), (m[3], "bias")]
    if pre:  # masks already in force are respected
        P.l1_unstructured(m[3], "weight", 0.25)
        P.random_structured(m[0], "weight", 1, dim=0)
    imp = {}
    if scores:
        imp = {(m[3], "weight"): _scores(lib, (4, 12)), (m[5], "weight"): _scores(lib, (2, 4), 5)}
    cls = getattr(P, method)
    P.global_unstructured(params, pruning_method=cls, importance_scores=imp, **kwargs)


@pytest.mark.parametrize("pre", [False, True], ids=["fresh", "prepruned"])
@pytest.mark.parametrize("scores", [False, True], ids=["weights", "scores"])
@pytest.mark.parametrize("method,amount", [("L1Unstructured", 0.4), ("L1Unstructured", 20),
                                           ("RandomUnstructured", 0.6),
                                           ("RandomUnstructured", 9)])
def test_global_unstructured(method, amount, scores, pre):
    ours, _ = _run_both("seq", lambda lib, P, m: _global(lib, P, m, method, scores, pre,
                                                         amount=amount), ties=True)
    kinds = {h._tensor_name: type(h).__name__ for h in ours[3]._forward_pre_hooks.values()}
    assert kinds == {"weight": "PruningContainer" if pre else "CustomFromMask",
                     "bias": "CustomFromMask"}


def test_global_unstructured_identity_and_total_count():
    for lib in LIBS:
        m = _make(lib, "seq")
        P = _prune_mod(lib)
        P.global_unstructured([(m[3], "weight"), (m[5], "weight")], P.L1Unstructured, amount=17)
        assert int((m[3].weight == 0).sum() + (m[5].weight == 0).sum()) == 17


def test_remove_and_is_pruned():
    snaps = []
    for lib in LIBS:
        m = _make(lib, "seq")
        P = _prune_mod(lib)
        assert not P.is_pruned(m)
        w = m[3].weight
        P.l1_unstructured(m[3], "weight", 0.5)
        P.random_unstructured(m[3], "weight", 0.5)
        P.ln_structured(m[0], "weight", 1, n=2, dim=0)
        assert P.is_pruned(m) and P.is_pruned(m[3]) and not P.is_pruned(m[5])
        assert m[3].weight_orig is w
        P.remove(m[3], "weight")
        assert m[3].weight is w and isinstance(w, lib.nn.Parameter)  # the same object again
        assert P.is_pruned(m)
        P.remove(m[0], "weight")
        assert not P.is_pruned(m)
        assert list(m[3]._forward_pre_hooks) == []
        with pytest.raises(ValueError) as err:
            P.remove(m[3], "weight")
        snaps.append((_snapshot(m), str(err.value)))
    _assert_same(snaps[0][0], snaps[1][0])
    assert snaps[0][1] == snaps[1][1]
    assert snaps[0][1].startswith("Parameter 'weight' of module Linear(in_features=12, ")
    assert list(snaps[0][0][0]) == ["0.bias", "0.weight", "3.bias", "3.weight", "5.weight",
                                    "5.bias"]  # the re-registered weight goes last


def test_state_dict_keys_and_order():
    for lib in LIBS:
        m = lib.nn.Linear(3, 2)
        _prune_mod(lib).l1_unstructured(m, "weight", 1)
        assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
        assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
        assert [n for n, _ in m.named_buffers()] == ["weight_mask"]


def _err(fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e).replace("microtorch.", "torch.")
    return None


ERRORS = {
    "amount_type": lambda lib, P, m: P.random_unstructured(m, "weight", "0.5"),
    "amount_tensor": lambda lib, P, m: P.L1Unstructured(lib.tensor(0.5)),
    "amount_negative_int": lambda lib, P, m: P.l1_unstructured(m, "weight", -1),
    "amount_float_above": lambda lib, P, m: P.l1_unstructured(m, "weight", 1.5),
    "amount_float_below": lambda lib, P, m: P.RandomStructured(-0.1, dim=0),
    "amount_too_many": lambda lib, P, m: P.l1_unstructured(m, "weight", 31),
    "amount_too_many_channels": lambda lib, P, m: P.ln_structured(m, "weight", 6, n=2, dim=0),
    "structured_1d": lambda lib, P, m: P.random_structured(m, "bias", 1, dim=0),
    "ln_structured_1d": lambda lib, P, m: P.ln_structured(m, "bias", 1, n=1, dim=-1),
    "bad_dim": lambda lib, P, m: P.ln_structured(m, "weight", 1, n=2, dim=2),
    "bad_dim_random": lambda lib, P, m: P.random_structured(m, "weight", 1, dim=5),
    "scores_shape": lambda lib, P, m: P.l1_unstructured(m, "weight", 1,
                                                        importance_scores=lib.ones(6, 5)),
    "custom_shape": lambda lib, P, m: P.custom_from_mask(m, "weight", lib.ones(5)),
    "no_such_tensor": lambda lib, P, m: P.identity(m, "nope"),
    "remove_unpruned": lambda lib, P, m: P.remove(m, "weight"),
    "global_not_iterable": lambda lib, P, m: P.global_unstructured(3, P.L1Unstructured,
                                                                   amount=1),
    "global_scores_list": lambda lib, P, m: P.global_unstructured(
        [(m, "weight")], P.L1Unstructured, importance_scores=[], amount=1),
    "global_structured": lambda lib, P, m: P.global_unstructured(
        [(m, "weight")], P.RandomStructured, amount=1),
    "global_too_many": lambda lib, P, m: P.global_unstructured(
        [(m, "weight"), (m, "bias")], P.L1Unstructured, amount=36),
    "container_type": lambda lib, P, m: P.PruningContainer(P.Identity()),
    "container_add": lambda lib, P, m: P.PruningContainer().add_pruning_method(3),
    "apply_mask_unapplied": lambda lib, P, m: P.Identity().apply_mask(m),
    "prune_scores_shape": lambda lib, P, m: P.L1Unstructured(2).prune(
        lib.ones(3, 3), importance_scores=lib.ones(9)),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case):
    results, after = [], []
    for lib in LIBS:
        m = _make(lib, "linear")
        results.append(_err(ERRORS[case], lib, _prune_mod(lib), m))
        # a failed pruning rolls back to the plain parameter (now registered last)
        after.append(_snapshot(m))
        assert not _prune_mod(lib).is_pruned(m)
    assert results[0] is not None
    assert results[0] == results[1]
    _assert_same(after[0], after[1])


def test_container_error_messages():
    for lib in LIBS:
        P = _prune_mod(lib)
        a, b = P.L1Unstructured(1), P.Identity()
        a._tensor_name, b._tensor_name = "weight", "bias"
        c = P.PruningContainer(a)
        with pytest.raises(TypeError, match="<class 'int'> is not a BasePruningMethod subclass"):
            c.add_pruning_method(1)
        with pytest.raises(ValueError, match="Can only add pruning methods acting on the "
                                             "parameter named 'weight' to PruningContainer"):
            c.add_pruning_method(b)
        with pytest.raises(AttributeError):  # several methods: no name to check against
            P.PruningContainer(a, b)

        class Odd(P.BasePruningMethod):
            PRUNING_TYPE = "other"

            def compute_mask(self, t, default_mask):
                return default_mask
        m = lib.nn.Linear(2, 2)
        P.identity(m, "weight")
        with pytest.raises(ValueError, match="Unrecognized PRUNING_TYPE other"):
            Odd.apply(m, "weight")

        class NoDim(Odd):
            PRUNING_TYPE = "structured"
        m = lib.nn.Linear(2, 2)
        P.identity(m, "weight")
        with pytest.raises(AttributeError, match="need to have the attribute `dim` defined"):
            NoDim.apply(m, "weight")
        with pytest.raises(TypeError):  # abstract
            P.BasePruningMethod()


def test_prune_method_on_a_tensor():
    out = []
    for lib in LIBS:
        P = _prune_mod(lib)
        t = _scores(lib, (4, 5))
        lib.manual_seed(0)
        out.append([P.L1Unstructured(0.5).prune(t).numpy(),
                    P.LnStructured(2, n=1, dim=1).prune(t, importance_scores=t.flip(0)).numpy(),
                    P.RandomStructured(0.5, dim=0).prune(t, default_mask=(t > 0).float())
                    .numpy(),
                    P.RandomUnstructured(3).prune(t).numpy()])
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_training_step_gradients_match():
    results = []
    for lib in LIBS:
        m = _make(lib, "seq")
        P = _prune_mod(lib)
        lib.manual_seed(5)
        P.l1_unstructured(m[3], "weight", 0.5)
        P.ln_structured(m[0], "weight", 1, n=1, dim=0)
        P.random_unstructured(m[0], "weight", 0.2)
        P.global_unstructured([(m[5], "weight"), (m[5], "bias")], P.RandomUnstructured,
                              amount=0.3)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        x = _input(lib, "seq")
        loss = m(x).square().sum()
        loss.backward()
        grads = {n: p.grad.numpy().copy() for n, p in m.named_parameters()}
        for i in (0, 3):  # weight_orig.grad = mask * the gradient of the pruned weight
            g = grads[f"{i}.weight_orig"]
            assert np.all(g[m[i].weight_mask.numpy() == 0] == 0)
        opt.step()
        y = m(x).detach().numpy()
        results.append((grads, y, _snapshot(m)))
    assert list(results[0][0]) == list(results[1][0])
    for k in results[1][0]:
        np.testing.assert_allclose(results[0][0][k], results[1][0][k], rtol=1e-5, atol=1e-6,
                                   err_msg=k)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)
    assert list(results[0][2][0]) == list(results[1][2][0])


def test_to_deepcopy_save_load_and_repruning():
    m = _make(mt, "seq")
    mt.manual_seed(1)
    prune.l1_unstructured(m[3], "weight", 0.5)
    prune.random_structured(m[0], "weight", 1, dim=0)
    x = _input(mt, "seq")
    y = m(x).detach().numpy()

    with pytest.raises(RuntimeError, match="graph leaves"):  # as in PyTorch: `weight` is
        copy.deepcopy(m)                                     # a non-leaf until a no_grad call
    with mt.no_grad():
        m(x)
    clone = copy.deepcopy(m)
    assert clone[3].weight_orig is not m[3].weight_orig and prune.is_pruned(clone)
    np.testing.assert_array_equal(clone(x).detach().numpy(), y)
    prune.ln_structured(clone[3], "weight", 1, n=2, dim=0)  # re-pruning the copy only
    assert isinstance(list(clone[3]._forward_pre_hooks.values())[0], prune.PruningContainer)
    assert isinstance(list(m[3]._forward_pre_hooks.values())[0], prune.L1Unstructured)

    m64 = copy.deepcopy(m).to(mt.float64)
    assert m64[3].weight_orig.dtype == mt.float64 and m64[3].weight_mask.dtype == mt.float64
    out64 = m64(x.double())
    assert m64[3].weight.dtype == mt.float64  # the hook recomputed it from the cast tensors
    np.testing.assert_allclose(out64.detach().numpy(), y, rtol=1e-5, atol=1e-6)

    buf = io.BytesIO()
    mt.save(m.state_dict(), buf)
    buf.seek(0)
    fresh = _make(mt, "seq")
    prune.identity(fresh[3], "weight")
    prune.identity(fresh[0], "weight")
    fresh.load_state_dict(mt.load(buf))
    np.testing.assert_array_equal(fresh(x).detach().numpy(), y)

    whole = io.BytesIO()
    mt.save(m, whole)
    whole.seek(0)
    loaded = mt.load(whole, weights_only=False)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), y)
    prune.remove(loaded[3], "weight")
    assert "3.weight" in dict(loaded.named_parameters())


def test_torch_state_dict_loads_into_our_pruned_model():
    ours, theirs = _make(mt, "seq"), _make(torch, "seq")
    torch.manual_seed(4)
    tprune.global_unstructured([(theirs[3], "weight"), (theirs[5], "weight")],
                                             tprune.L1Unstructured, amount=0.5)
    for i in (3, 5):
        prune.identity(ours[i], "weight")
    ours.load_state_dict({k: mt.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    np.testing.assert_allclose(ours(_input(mt, "seq")).detach().numpy(),
                               theirs(_input(torch, "seq")).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_importable_from_nn_utils():
    import microtorch.nn.utils.prune as by_path

    assert by_path is prune
    assert {"l1_unstructured", "global_unstructured", "PruningContainer"} <= set(prune.__all__)


def _big(lib):
    """Linear(64, 32) of integers: many equal magnitudes, and k * 64 <= size for small k (the
    partial-sort path of PyTorch's topk)."""
    m = lib.nn.Linear(64, 32)
    arr = np.round(np.random.default_rng(0).standard_normal((32, 64))).astype(np.float32)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(arr))
        m.bias.fill_(1.0)
    return m


BIG = {
    "l1_few": lambda lib, P, m: P.l1_unstructured(m, "weight", 10),
    "l1_equal_bias": lambda lib, P, m: P.l1_unstructured(m, "bias", 0.5),
    "ln_equal_rows": lambda lib, P, m: (m.weight.data.fill_(1.0),
                                        P.ln_structured(m, "weight", 10, n=1, dim=0),
                                        P.ln_structured(m, "weight", 0.5, n=2, dim=0),
                                        P.l1_unstructured(m, "weight", 100)),
    "structured_after_unstructured_1d": lambda lib, P, m: (
        P.l1_unstructured(m, "bias", 3), P.random_structured(m, "bias", 1, dim=0)),
    "float64": lambda lib, P, m: (m.double(), P.random_unstructured(m, "weight", 0.3),
                                  P.random_structured(m, "weight", 0.3, dim=1)),
    "global_random": lambda lib, P, m: P.global_unstructured(
        [(m, "weight"), (m, "bias")], P.RandomUnstructured, amount=0.7),
    "global_l1_ties": lambda lib, P, m: P.global_unstructured(
        [(m, "weight"), (m, "bias")], P.L1Unstructured, amount=1000),
    "numpy_amounts": lambda lib, P, m: (P.l1_unstructured(m, "weight", np.float32(0.25)),
                                        P.random_unstructured(m, "weight", np.int64(5))),
    "global_generator": lambda lib, P, m: P.global_unstructured(  # iterated twice: fails
        ((m, n) for n in ("weight", "bias")), P.L1Unstructured, amount=3),
    "negative_dim_out_of_range": lambda lib, P, m: P.random_structured(m, "weight", 1, dim=-3),
}


@pytest.mark.parametrize("case", list(BIG))
def test_large_tied_and_edge_cases(case):
    out = []
    for lib in LIBS:
        m = _big(lib)
        lib.manual_seed(0)
        err = _err(BIG[case], lib, _prune_mod(lib), m)
        state = {k: v.detach().numpy() for k, v in m.state_dict().items()}
        out.append((err, state, lib.rand(2).numpy()))
    assert out[0][0] == out[1][0]
    assert list(out[0][1]) == list(out[1][1])
    for k in out[1][1]:
        np.testing.assert_array_equal(out[0][1][k], out[1][1][k], err_msg=k)
    np.testing.assert_array_equal(out[0][2], out[1][2])


def test_pruning_on_a_device_and_moving_there(device):
    """Pruned on ``device``, or pruned on the CPU then moved: the CPU masks, values and
    gradients (random_structured draws from the CPU generator whatever the device)."""
    def run(dev, move_after):
        m = _make(mt, "seq")
        if not move_after:
            m.to(dev)
        mt.manual_seed(2)
        prune.l1_unstructured(m[3], "weight", 0.5)
        prune.random_structured(m[0], "weight", 1, dim=0)
        prune.ln_structured(m[0], "weight", 1, n=2, dim=1)
        prune.global_unstructured([(m[3], "weight"), (m[5], "weight")], prune.L1Unstructured,
                                  amount=0.2)
        if move_after:
            m.to(dev)
        assert m[0].weight_mask.device.type == mt.device(dev).type
        y = m(_input(mt, "seq").to(dev))
        y.square().sum().backward()
        return ({k: v.detach().cpu().numpy() for k, v in m.state_dict().items()},
                {n: p.grad.cpu().numpy() for n, p in m.named_parameters()},
                y.detach().cpu().numpy())

    ref = run("cpu", False)
    for move_after in (False, True):
        got = run(device, move_after)
        for a, b in zip(got[:2], ref[:2]):
            assert list(a) == list(b)
            for k in b:
                np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6, err_msg=k)
        np.testing.assert_allclose(got[2], ref[2], rtol=1e-5, atol=1e-6)
