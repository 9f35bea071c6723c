"""Recurrent layers (RNN, LSTM, GRU and their cells) against PyTorch: default init after the
same seed (bitwise), forward and backward with copied weights, dropout between layers (same
masks as PyTorch), double backward, errors; and finite differences, independent of PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from _torch_compare import assert_init_equal, copy_weights, float64_pair
from _torch_spread import FLOAT32_EPS, assert_within_spread, torch_elsewhere

import microtorch as mt
import microtorch.nn as nn
from microtorch.ops import rnn as rnn_ops

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.torch,
              pytest.mark.filterwarnings("ignore:LSTM with projections is not supported")]

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-10)}


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _assert_close(a, b, dtype: str, what: str) -> None:
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().numpy(), **TOL[dtype],
                               err_msg=what)


# -- default initialisation ----------------------------------------------------------------------
INIT_CASES = [
    ("RNN", (4, 5), {}),
    ("RNN", (4, 5, 2), {"nonlinearity": "relu", "bidirectional": True}),
    ("RNN", (3, 2, 3), {"bias": False, "batch_first": True}),
    ("LSTM", (4, 5), {}),
    ("LSTM", (4, 5, 3), {"bias": False}),
    ("LSTM", (3, 6, 2), {"bidirectional": True, "proj_size": 2}),
    ("LSTM", (7, 16, 2), {"bidirectional": True, "dropout": 0.2}),
    ("GRU", (4, 5), {}),
    ("GRU", (4, 5, 2), {"bidirectional": True}),
    ("GRU", (1, 3, 3), {"bias": False, "batch_first": True}),
    ("RNNCell", (4, 5), {}),
    ("RNNCell", (4, 5), {"bias": False, "nonlinearity": "relu"}),
    ("LSTMCell", (3, 7), {}),
    ("LSTMCell", (3, 7), {"bias": False}),
    ("GRUCell", (3, 7), {}),
    ("GRUCell", (2, 4), {"bias": False}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", INIT_CASES, ids=lambda c: f"{c[0]}{c[1]}{c[2]}")
def test_default_init_matches_torch_bitwise(case, dtype):
    name, args, kwargs = case
    for seed in (0, 123):
        mt.manual_seed(seed)
        torch.manual_seed(seed)
        mod = getattr(nn, name)(*args, **kwargs, dtype=getattr(mt, dtype))
        tmod = getattr(torch.nn, name)(*args, **kwargs, dtype=getattr(torch, dtype))
        assert_init_equal(torch, mod, tmod, dtype)  # (the stream stays in step, too)


def test_reset_parameters_redraws_in_torchs_order():
    mod, tmod = nn.GRU(3, 4, 2, bidirectional=True), torch.nn.GRU(3, 4, 2, bidirectional=True)
    mt.manual_seed(7)
    torch.manual_seed(7)
    mod.reset_parameters()
    tmod.reset_parameters()
    for (k, p), (_, tp) in zip(mod.named_parameters(), tmod.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), tp.detach().numpy(), err_msg=k)


def test_weight_lists_and_state_dict_round_trip_into_torch():
    mod = nn.LSTM(3, 5, 2, bidirectional=True, proj_size=2)
    tmod = torch.nn.LSTM(3, 5, 2, bidirectional=True, proj_size=2)
    assert mod._flat_weights_names == tmod._flat_weights_names
    assert [[tuple(p.shape) for p in ws] for ws in mod.all_weights] == \
        [[tuple(p.shape) for p in ws] for ws in tmod.all_weights]
    tmod.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mod.state_dict().items()})
    for (k, p), (_, tp) in zip(mod.named_parameters(), tmod.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), tp.detach().numpy(), err_msg=k)
    mod.flatten_parameters()  # a no-op, for scripts that call it


# -- forward and backward against PyTorch ----------------------------------------------------
# (module, constructor args, constructor kwargs, input shape, pass initial states)
LAYERS = [
    ("RNN", (4, 6), {}, (5, 3, 4), True),
    ("RNN", (4, 6, 2), {"nonlinearity": "relu", "bidirectional": True, "batch_first": True},
     (3, 5, 4), True),
    ("RNN", (4, 6, 2), {}, (5, 4), False),
    ("GRU", (4, 6), {}, (5, 3, 4), True),
    ("GRU", (4, 6, 2), {"bidirectional": True, "batch_first": True}, (3, 5, 4), False),
    ("GRU", (4, 6, 2), {"bidirectional": True, "bias": False}, (5, 4), True),
    ("LSTM", (4, 6), {}, (5, 3, 4), True),
    ("LSTM", (4, 6, 2), {"bidirectional": True, "batch_first": True}, (3, 5, 4), True),
    ("LSTM", (4, 6, 2), {}, (5, 4), False),
    ("LSTM", (4, 6, 2), {"bidirectional": True, "proj_size": 3}, (5, 3, 4), True),
    ("LSTM", (4, 6), {"bias": False, "batch_first": True}, (5, 4), True),
]


def _states(name: str, tmod, shape: tuple, rng) -> list[np.ndarray]:
    """Random initial states shaped as the module expects (h0, and c0 for the LSTM)."""
    layers = tmod.num_layers * (2 if tmod.bidirectional else 1)
    batch = () if len(shape) == 2 else ((shape[0] if tmod.batch_first else shape[1]),)
    h_size = getattr(tmod, "proj_size", 0) or tmod.hidden_size
    sizes = [(layers, *batch, h_size)]
    if name == "LSTM":
        sizes.append((layers, *batch, tmod.hidden_size))
    return [rng.standard_normal(s) for s in sizes]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layer", LAYERS, ids=lambda c: f"{c[0]}{c[1]}{c[2]}{c[3]}h0={c[4]}")
def test_layer_forward_backward_matches_torch(device, dtype, layer):
    name, args, kwargs, shape, with_states = layer
    torch.manual_seed(1)
    tmod = getattr(torch.nn, name)(*args, **kwargs).to(getattr(torch, dtype))
    mod = getattr(nn, name)(*args, **kwargs).to(device, getattr(mt, dtype))  # other weights
    copy_weights(tmod, mod, device)
    rng = _rng(2)
    arrays = [rng.standard_normal(shape)]
    if with_states:
        arrays += _states(name, tmod, shape, rng)
    arrays = [a.astype(dtype) for a in arrays]
    tins = [torch.tensor(a, requires_grad=True) for a in arrays]
    mins = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]

    def call(module, ins):
        if not with_states:
            return module(ins[0])
        return module(ins[0], tuple(ins[1:]) if name == "LSTM" else ins[1])

    tout, tstate = call(tmod, tins)
    out, state = call(mod, mins)
    touts = [tout, *(tstate if name == "LSTM" else (tstate,))]
    outs = [out, *(state if name == "LSTM" else (state,))]
    for o, to, what in zip(outs, touts, ["output", "h_n", "c_n"]):
        assert tuple(o.shape) == tuple(to.shape), what
        assert o.device.type == device and o.dtype == getattr(mt, dtype)
        _assert_close(o, to, dtype, what)
    # Backward from all outputs at once, each weighted at random.
    weights = [rng.standard_normal(tuple(t.shape)).astype(dtype) for t in touts]
    sum((o * mt.tensor(w, device=device)).sum() for o, w in zip(outs, weights)).backward()
    sum((t * torch.tensor(w)).sum() for t, w in zip(touts, weights)).backward()
    for m_in, t_in, what in zip(mins, tins, ["input", "h0", "c0"]):
        _assert_close(m_in.grad, t_in.grad, dtype, f"grad of {what}")
    for (n, p), (_, tp) in zip(mod.named_parameters(), tmod.named_parameters()):
        assert p.grad.dtype == p.dtype
        _assert_close(p.grad, tp.grad, dtype, f"grad of {n}")


# (cell, constructor args and kwargs, input shape, pass a state)
CELLS = [
    ("RNNCell", (4, 5), {}, (3, 4), True),
    ("RNNCell", (4, 5), {"nonlinearity": "relu", "bias": False}, (4,), True),
    ("RNNCell", (4, 5), {}, (3, 4), False),
    ("LSTMCell", (4, 5), {}, (3, 4), True),
    ("LSTMCell", (4, 5), {"bias": False}, (4,), True),
    ("LSTMCell", (4, 5), {}, (4,), False),
    ("GRUCell", (4, 5), {}, (3, 4), True),
    ("GRUCell", (4, 5), {"bias": False}, (4,), True),
    ("GRUCell", (4, 5), {}, (3, 4), False),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cell", CELLS, ids=lambda c: f"{c[0]}{c[2]}{c[3]}state={c[4]}")
def test_cell_forward_backward_matches_torch(device, dtype, cell):
    name, args, kwargs, shape, with_state = cell
    tmod = getattr(torch.nn, name)(*args, **kwargs).to(getattr(torch, dtype))
    mod = getattr(nn, name)(*args, **kwargs).to(device, getattr(mt, dtype))
    copy_weights(tmod, mod, device)
    rng = _rng(3)
    arrays = [rng.standard_normal(shape)]
    state_shape = shape[:-1] + (args[1],)
    if with_state:
        arrays += [rng.standard_normal(state_shape)] * (2 if name == "LSTMCell" else 1)
    arrays = [a.astype(dtype) for a in arrays]
    tins = [torch.tensor(a, requires_grad=True) for a in arrays]
    mins = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]
    if with_state:
        touts = tmod(tins[0], tuple(tins[1:]) if name == "LSTMCell" else tins[1])
        outs = mod(mins[0], tuple(mins[1:]) if name == "LSTMCell" else mins[1])
    else:
        touts, outs = tmod(tins[0]), mod(mins[0])
    touts = list(touts) if name == "LSTMCell" else [touts]
    outs = list(outs) if name == "LSTMCell" else [outs]
    for o, to in zip(outs, touts):
        assert tuple(o.shape) == tuple(to.shape)
        _assert_close(o, to, dtype, "output")
    weights = [rng.standard_normal(tuple(t.shape)).astype(dtype) for t in touts]
    sum((o * mt.tensor(w, device=device)).sum() for o, w in zip(outs, weights)).backward()
    sum((t * torch.tensor(w)).sum() for t, w in zip(touts, weights)).backward()
    for m_in, t_in in zip(mins, tins):
        _assert_close(m_in.grad, t_in.grad, dtype, "input/state grad")
    for (n, p), (_, tp) in zip(mod.named_parameters(), tmod.named_parameters()):
        _assert_close(p.grad, tp.grad, dtype, f"grad of {n}")


def test_cell_unrolled_equals_layer():
    """An LSTMCell stepped by hand gives nn.LSTM's outputs (same weights)."""
    lstm, cell = nn.LSTM(3, 4, dtype=mt.float64), nn.LSTMCell(3, 4, dtype=mt.float64)
    cell.load_state_dict({k.removesuffix("_l0"): v for k, v in lstm.state_dict().items()})
    x = mt.tensor(_rng(4).standard_normal((6, 2, 3)))
    out, (h_n, c_n) = lstm(x)
    h = c = mt.zeros(2, 4, dtype=mt.float64)
    for t in range(6):
        h, c = cell(x[t], (h, c))
        np.testing.assert_allclose(out[t].detach().numpy(), h.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(c_n[0].detach().numpy(), c.detach().numpy(), rtol=1e-12)


# -- dropout between layers ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,bidirectional", [("LSTM", False), ("LSTM", True), ("GRU", True),
                                                ("RNN", False)])
def test_dropout_masks_match_torch(name, bidirectional, dtype):
    """Train mode draws PyTorch's masks (F.dropout on each layer's time-major output, in
    PyTorch's order), so outputs and gradients agree and the stream stays in step."""
    kwargs = dict(num_layers=3, dropout=0.4, bidirectional=bidirectional, batch_first=True)
    torch.manual_seed(5)
    mt.manual_seed(5)
    tmod = getattr(torch.nn, name)(4, 6, **kwargs).to(getattr(torch, dtype))
    mod = getattr(nn, name)(4, 6, **kwargs).to(getattr(mt, dtype))
    x = _rng(6).standard_normal((3, 5, 4)).astype(dtype)
    xt, xm = torch.tensor(x, requires_grad=True), mt.tensor(x, requires_grad=True)
    tout, _ = tmod(xt)
    out, _ = mod(xm)
    _assert_close(out, tout, dtype, "output")
    assert mt.rand(3).tolist() == torch.rand(3).tolist()
    (tout * tout).sum().backward()
    (out * out).sum().backward()
    _assert_close(xm.grad, xt.grad, dtype, "input grad")
    for (n, p), (_, tp) in zip(mod.named_parameters(), tmod.named_parameters()):
        _assert_close(p.grad, tp.grad, dtype, n)


def test_dropout_is_identity_in_eval_mode_and_draws_nothing():
    mt.manual_seed(0)
    mod = nn.LSTM(3, 5, num_layers=2, dropout=0.5)
    plain = nn.LSTM(3, 5, num_layers=2)
    plain.load_state_dict(mod.state_dict())
    x = mt.randn(4, 2, 3)
    mod.eval()
    state = mt.get_rng_state()
    out, (h, c) = mod(x)
    assert np.array_equal(mt.get_rng_state().numpy(), state.numpy())
    ref, (rh, rc) = plain(x)
    for a, b in ((out, ref), (h, rh), (c, rc)):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    mod.train()
    train_out, _ = mod(x)
    assert not np.array_equal(train_out.detach().numpy(), ref.detach().numpy())


def test_dropout_arguments_as_torch():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(2, 3, dropout=0.2)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(2, 3, 2, dropout=1.5)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(2, 3, 2, dropout=True)


# -- higher-order gradients and the two implementations --------------------------------------
@pytest.mark.parametrize("name,kwargs", [("LSTM", {"proj_size": 2}), ("GRU", {}),
                                         ("RNN", {"nonlinearity": "relu"})])
def test_double_backward_matches_torch(name, kwargs):
    """create_graph through the fused node replays the composed steps: exact second order."""
    tmod, mod = float64_pair(torch, name, 3, 4, **kwargs, num_layers=2, bidirectional=True)
    x = _rng(7).standard_normal((4, 2, 3))
    results = []
    for lib, module in ((torch, tmod), (mt, mod)):
        xx = lib.tensor(x, requires_grad=True)
        out, _ = module(xx)
        params = list(module.parameters())
        grads = lib.autograd.grad((out * out).sum(), params + [xx], create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        results.append([p.grad.detach().numpy() for p in params] + [xx.grad.numpy()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("mode,proj", [("LSTM", False), ("LSTM", True), ("GRU", False),
                                       ("RNN_TANH", False), ("RNN_RELU", False)])
@pytest.mark.parametrize("reverse", [False, True])
def test_fused_recurrence_equals_composed_steps(device, mode, reverse, proj):
    rng = _rng(8)
    steps, n, hid, p = 5, 3, 4, 2 if proj else 4
    g = rnn_ops.GATES[mode] * hid
    arrays = {"x": (steps, n, 3), "w_ih": (g, 3), "b_ih": (g,), "h0": (n, p), "w_hh": (g, p),
              "b_hh": (g,)}
    if mode == "LSTM":
        arrays["c0"] = (n, hid)
    if proj:
        arrays["w_hr"] = (p, hid)
    values = {k: rng.standard_normal(s) for k, s in arrays.items()}
    results = []
    for fused in (True, False):
        ins = {k: mt.tensor(v, device=device, requires_grad=True) for k, v in values.items()}
        out, h_n, c_n = rnn_ops.recurrence(mode, ins["x"], ins["w_ih"], ins["b_ih"], ins["h0"],
                                           ins.get("c0"), ins["w_hh"], ins["b_hh"],
                                           ins.get("w_hr"), reverse=reverse, fused=fused)
        total = (out * out).sum() + (h_n * 3).sum() + (0 if c_n is None else (c_n * c_n).sum())
        total.backward()
        results.append([out, h_n] + [ins[k].grad for k in sorted(ins)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(),
                                   rtol=1e-12, atol=1e-12)


# -- finite differences ------------------------------------------------------------------------
@pytest.mark.parametrize("mode,reverse,proj", [("LSTM", False, False), ("LSTM", True, True),
                                               ("GRU", False, False), ("GRU", True, False)])
def test_recurrence_gradients_by_finite_differences(device, mode, reverse, proj):
    """Every input of a layer (x, h0, c0, weights, biases) through the fused node."""
    rng = _rng(9)
    steps, n, nin, hid = 4, 2, 3, 3
    p = 2 if proj else hid
    g = rnn_ops.GATES[mode] * hid
    shapes = [(steps, n, nin), (n, p), (g, nin), (g, p), (g,), (g,)]
    if mode == "LSTM":
        shapes.append((n, hid))
    if proj:
        shapes.append((p, hid))

    def fn(x, h0, w_ih, w_hh, b_ih, b_hh, *rest):
        c0 = rest[0] if mode == "LSTM" else None
        w_hr = rest[1] if proj else None
        out, h_n, c_n = rnn_ops.recurrence(mode, x, w_ih, b_ih, h0, c0, w_hh, b_hh, w_hr,
                                           reverse=reverse)
        parts = [out.reshape(-1), h_n.reshape(-1)] + ([c_n.reshape(-1)] if c_n is not None
                                                      else [])
        return mt.cat(parts)

    arrays = [rng.uniform(-1, 1, s) for s in shapes]
    finite_difference_check(fn, arrays, device, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_module_gradients_by_finite_differences(device, name):
    """Input and initial states through a two-layer bidirectional batch_first module."""
    mt.manual_seed(3)
    mod = getattr(nn, name)(3, 3, num_layers=2, bidirectional=True, batch_first=True,
                            dtype=mt.float64).to(device)
    rng = _rng(10)
    arrays = [rng.uniform(-1, 1, (2, 4, 3)), rng.uniform(-1, 1, (4, 2, 3))]
    if name == "LSTM":
        arrays.append(rng.uniform(-1, 1, (4, 2, 3)))

    def fn(x, h0, c0=None):
        out, state = mod(x, (h0, c0) if name == "LSTM" else h0)
        h_n = state[0] if name == "LSTM" else state
        return mt.cat([out.reshape(-1), h_n.reshape(-1)])

    finite_difference_check(fn, arrays, device, rtol=1e-6, atol=1e-8)


# -- errors --------------------------------------------------------------------------------------
# (module, constructor args, call arguments built with the library ``L``)
CALL_ERRORS = [
    ("LSTM", (4, 3, 2), lambda L: (L.randn(5, 2, 3),)),
    ("GRU", (4, 3), lambda L: (L.randn(5, 4, 1),)),
    ("LSTM", (4, 3, 2), lambda L: (L.randn(5, 2, 4, 1),)),
    ("RNN", (4, 3), lambda L: (L.randn(4),)),
    ("LSTM", (4, 3, 2), lambda L: (L.randn(5, 2, 4), (L.randn(1, 2, 3), L.randn(2, 2, 3)))),
    ("LSTM", (4, 3, 2), lambda L: (L.randn(5, 2, 4), (L.randn(2, 2, 3), L.randn(2, 1, 3)))),
    ("LSTM", (4, 3, 1, True, False, 0.0, True), lambda L: (L.randn(5, 2, 4),
                                                           (L.randn(2, 2, 3), L.randn(2, 2, 2)))),
    ("LSTM", (4, 3), lambda L: (L.randn(5, 2, 4), (L.randn(2, 3), L.randn(2, 3)))),
    ("LSTM", (4, 3), lambda L: (L.randn(5, 4), (L.randn(1, 2, 3), L.randn(1, 2, 3)))),
    ("GRU", (4, 3), lambda L: (L.randn(5, 2, 4), L.randn(2, 2, 3))),
    ("GRU", (4, 3, 1, True, True), lambda L: (L.randn(5, 2, 4), L.randn(1, 2, 3))),
    ("GRU", (4, 3), lambda L: (L.randn(5, 2, 4), L.randn(1, 2))),
    ("RNN", (4, 3), lambda L: (L.randn(5, 4), L.randn(1, 2, 3))),
    ("RNN", (4, 3), lambda L: (L.randn(5, 4), L.randn(1, 2))),
    ("RNN", (4, 3), lambda L: (L.randn(0, 2, 4),)),
    ("RNN", (4, 3), lambda L: (L.randn(5, 2, 4, dtype=L.float64),)),
    ("LSTMCell", (4, 3), lambda L: (L.randn(2, 5),)),
    ("LSTMCell", (4, 3), lambda L: (L.randn(2, 4), (L.randn(2, 2), L.randn(2, 3)))),
    ("LSTMCell", (4, 3), lambda L: (L.randn(2, 4), (L.randn(2, 3), L.randn(2, 2)))),
    ("GRUCell", (4, 3), lambda L: (L.randn(2, 4), L.randn(3, 3))),
    ("GRUCell", (4, 3), lambda L: (L.randn(2, 4), L.randn(2, 3, 1))),
    ("RNNCell", (4, 3), lambda L: (L.randn(2, 4, 1),)),
    ("RNNCell", (4, 3), lambda L: (L.randn(2, 4), L.randn(3))),
    ("RNNCell", (4, 3), lambda L: (L.randn(4), L.randn(2, 3))),
]


@pytest.mark.parametrize("case", CALL_ERRORS, ids=lambda c: f"{c[0]}{c[1]}")
def test_call_errors_match_torch(case):
    name, args, make = case
    with pytest.raises(Exception) as tinfo:
        getattr(torch.nn, name)(*args)(*make(torch))
    with pytest.raises(Exception) as info:
        getattr(nn, name)(*args)(*make(mt))
    assert type(info.value) is type(tinfo.value)
    assert str(info.value).replace("microtorch", "torch") == str(tinfo.value)


CONSTRUCTOR_ERRORS = [
    ("RNN", (4, 3), {"nonlinearity": "sigmoid"}),
    ("GRU", (4, 3), {"proj_size": 1}),
    ("RNN", (4, 3), {"proj_size": 0}),
    ("LSTM", (4, 3), {"proj_size": 3}),
    ("LSTM", (4, 3), {"proj_size": -1}),
    ("LSTM", (4, 0), {}),
    ("GRU", (0, 3), {}),
    ("GRU", (4, 3, 0), {}),
    ("RNN", (4, 3), {"bias": "yes"}),
    ("LSTM", (4.0, 3), {}),
]


@pytest.mark.parametrize("case", CONSTRUCTOR_ERRORS, ids=lambda c: f"{c[0]}{c[1]}{c[2]}")
def test_constructor_errors_match_torch(case):
    name, args, kwargs = case
    with pytest.raises(Exception) as tinfo:
        getattr(torch.nn, name)(*args, **kwargs)
    with pytest.raises(Exception) as info:
        getattr(nn, name)(*args, **kwargs)
    assert type(info.value) is type(tinfo.value)
    assert str(info.value) == str(tinfo.value)


def test_backward_after_weights_change_in_place_raises():
    mod = nn.GRU(2, 3)
    out, _ = mod(mt.randn(4, 1, 2))
    with mt.no_grad():
        mod.weight_hh_l0.mul_(2)  # e.g. an optimizer step between forward and backward
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# -- inference, empty batches, training --------------------------------------------------------
def test_no_grad_and_frozen_modules_record_nothing(device):
    mod = nn.LSTM(3, 4, 2, bidirectional=True).to(device)
    x = mt.randn(5, 2, 3, device=device)
    with mt.no_grad():
        out, (h, c) = mod(x)
    assert out.grad_fn is None and h.grad_fn is None and not c.requires_grad
    mod.requires_grad_(False)
    out, _ = mod(x)
    assert not out.requires_grad


def test_empty_batch_as_torch():
    tmod, mod = torch.nn.LSTM(4, 3, 2, bidirectional=True), nn.LSTM(4, 3, 2, bidirectional=True)
    x = mt.randn(5, 0, 4, requires_grad=True)
    out, (h, c) = mod(x)
    tout, (th, tc) = tmod(torch.randn(5, 0, 4))
    assert (out.shape, h.shape, c.shape) == (tout.shape, th.shape, tc.shape)
    out.sum().backward()
    assert x.grad.shape == (5, 0, 4)


def _train_bit_counter(lib, steps: int) -> np.ndarray:
    """A tiny LSTM + Linear learning the number of ones in a binary sequence (Adam, MSE)."""
    lib.manual_seed(0)
    lstm, head = lib.nn.LSTM(1, 16, batch_first=True), lib.nn.Linear(16, 1)
    opt = lib.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=0.05)
    rng = _rng(11)
    losses = []
    for _ in range(steps):
        bits = rng.integers(0, 2, (32, 6)).astype(np.float32)
        out, _ = lstm(lib.tensor(bits[:, :, None]))
        loss = lib.nn.functional.mse_loss(head(out[:, -1]).squeeze(-1), lib.tensor(bits.sum(1)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def test_lstm_learns_to_count_bits_like_torch(tmp_path_factory):
    """The first 20 losses as PyTorch's, spread-derived (``_torch_spread``): per step,
    max(2 x PyTorch's spread over its thread counts and SIMD levels, floor), with floor =
    31 float32 ulps of the loss: the loss is a mean of 32 squared errors, and a float32 sum of
    n terms of one sign taken in another order may move by (n - 1) eps of it (the standard
    bound). What 20 Adam steps amplify beyond that, PyTorch's spread shows."""
    losses, tlosses = _train_bit_counter(mt, 150), _train_bit_counter(torch, 20)
    elsewhere = torch_elsewhere(tmp_path_factory, "test_rnn:_train_bit_counter",
                                [dict(steps=20)])
    assert_within_spread(losses[:20], tlosses, [runs[0] for runs in elsewhere.values()],
                         31 * FLOAT32_EPS * np.abs(tlosses), err_msg="losses")
    assert losses[-10:].mean() < 0.05 < 10 < losses[0]  # from ~13 to near zero


@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
def test_in_place_ops_on_outputs_leave_backward_intact(name):
    tmod, mod = float64_pair(torch, name, 3, 4)
    x = _rng(12).standard_normal((5, 2, 3))
    grads = []
    for lib, module in ((torch, tmod), (mt, mod)):
        xx = lib.tensor(x, requires_grad=True)
        out, state = module(xx)
        h_n = state[0] if name == "LSTM" else state
        out.mul_(3.0)
        h_n.add_(1.0)
        ((out * out).sum() + (h_n * h_n).sum()).backward()
        grads.append([xx.grad.numpy()] + [p.grad.numpy() for p in module.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("num_layers", [1, 2])
def test_lstm_state_gradients_are_contiguous(num_layers):
    """The LSTM runs its loops feature-major; the gradients it hands back (input, h0, c0,
    weights) are C-contiguous, as PyTorch's are, so views of them work."""
    mt.manual_seed(0)
    lstm = mt.nn.LSTM(4, 6, num_layers=num_layers)
    x = mt.randn(5, 3, 4, requires_grad=True)
    h0 = mt.randn(num_layers, 3, 6, requires_grad=True)
    c0 = mt.randn(num_layers, 3, 6, requires_grad=True)
    out, (h, c) = lstm(x, (h0, c0))
    (out.sum() + h.sum() + c.sum()).backward()
    for t in (x, h0, c0, *lstm.parameters()):
        assert t.grad.is_contiguous()
        assert t.grad.view(-1).numel() == t.numel()


def test_lstm_bias_gradients_are_separate_arrays():
    """The fused LSTM sums its pre-activations' gradients once for both biases (the same
    values, as PyTorch's): each bias still gets its own gradient array."""
    lstm = nn.LSTM(3, 4)
    out, _ = lstm(mt.randn(5, 2, 3))
    out.sum().backward()
    np.testing.assert_array_equal(lstm.bias_ih_l0.grad.numpy(), lstm.bias_hh_l0.grad.numpy())
    lstm.bias_ih_l0.grad.zero_()
    assert lstm.bias_hh_l0.grad.abs().sum().item() > 0


def test_recurrence_state_gradients_are_contiguous():
    """The fused node's own gradients of h0 and c0 (leaves here, no slicing in between)."""
    rng = _rng(3)
    steps, n, hid = 4, 3, 5
    x = mt.tensor(rng.standard_normal((steps, n, 2)), requires_grad=True)
    w_ih = mt.tensor(rng.standard_normal((4 * hid, 2)), requires_grad=True)
    h0 = mt.tensor(rng.standard_normal((n, hid)), requires_grad=True)
    c0 = mt.tensor(rng.standard_normal((n, hid)), requires_grad=True)
    w_hh = mt.tensor(rng.standard_normal((4 * hid, hid)), requires_grad=True)
    out, h_n, c_n = rnn_ops.recurrence("LSTM", x, w_ih, None, h0, c0, w_hh, None)
    (out.sum() + c_n.sum()).backward()
    for t in (x, w_ih, h0, c0, w_hh):
        assert t.grad.is_contiguous() and t.grad.view(-1).numel() == t.numel()


@pytest.mark.parametrize("name,kwargs", [("LSTM", {"num_layers": 2}), ("LSTM", {"proj_size": 2}),
                                         ("GRU", {}), ("RNN", {})])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_gradients_keep_their_dtype(name, kwargs, dtype):
    """Every parameter's and the input's gradient in the layer's dtype, as PyTorch's (NumPy's
    bfloat16 products come back in float32: the fused node rounds them)."""
    dt = getattr(mt, dtype)
    module = getattr(nn, name)(3, 4, **kwargs).to(dt)
    x = mt.randn(5, 2, 3).to(dt).requires_grad_()
    out, _ = module(x)
    out.float().sum().backward()
    assert x.grad.dtype == dt
    assert [p.grad.dtype for p in module.parameters()] == [dt] * len(list(module.parameters()))
