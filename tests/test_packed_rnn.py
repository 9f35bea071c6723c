"""``nn.utils.rnn`` (padding and packing) and RNN/LSTM/GRU on PackedSequence input, against
PyTorch (values, batch sizes, permutations, gradients, errors), against each sequence run
alone unpacked (independent of PyTorch), and the fused recurrence against the composed
steps with per-step batch sizes."""

from __future__ import annotations

import numpy as np
import pytest
from _torch_compare import copy_weights, float64_pair

import microtorch as mt
import microtorch.nn as nn
from microtorch.nn.utils import rnn as R
from microtorch.ops import rnn as rnn_ops

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn

pytestmark = [pytest.mark.torch,
              pytest.mark.filterwarnings("ignore:LSTM with projections is not supported")]

TOL = dict(rtol=1e-10, atol=1e-10)
LENGTHS = {"sorted": [5, 4, 4, 2, 1], "unsorted": [2, 5, 1, 4, 4], "ties": [3, 3, 1, 3, 2, 2]}


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy()


def _seqs(lengths, rng, feat=(3,)) -> list[np.ndarray]:
    return [rng.standard_normal((n, *feat)) for n in lengths]


def _assert_packed_equal(mp, tp) -> None:
    assert mp.batch_sizes.dtype == mt.int64 and mp.batch_sizes.device.type == "cpu"
    np.testing.assert_array_equal(_np(mp.batch_sizes), tp.batch_sizes.numpy())
    for a, b in ((mp.sorted_indices, tp.sorted_indices),
                 (mp.unsorted_indices, tp.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.dtype == mt.int64
            np.testing.assert_array_equal(_np(a), b.numpy())
    np.testing.assert_allclose(_np(mp.data), _np(tp.data), **TOL)


# -- pad_sequence ------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch_and_is_differentiable(device, batch_first, padding_side):
    rng = np.random.default_rng(0)
    arrays = _seqs([3, 1, 4], rng, (2, 2))
    ms = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = R.pad_sequence(ms, batch_first=batch_first, padding_value=-1.5,
                         padding_side=padding_side)
    tout = TR.pad_sequence(ts, batch_first=batch_first, padding_value=-1.5,
                           padding_side=padding_side)
    assert tuple(out.shape) == tuple(tout.shape) and out.device.type == device
    np.testing.assert_array_equal(_np(out), _np(tout))
    w = rng.standard_normal(tuple(tout.shape))
    (out * mt.tensor(w, device=device)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for m, t in zip(ms, ts):
        np.testing.assert_array_equal(_np(m.grad), t.grad.numpy())


def test_pad_sequence_keeps_dtype_and_accepts_a_tensor():
    seqs = [mt.tensor([1, 2, 3]), mt.tensor([4])]
    out = R.pad_sequence(seqs, batch_first=True, padding_value=7)
    assert out.dtype == mt.int64 and out.tolist() == [[1, 2, 3], [4, 7, 7]]
    stacked = mt.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(_np(R.pad_sequence(stacked)),
                                  TR.pad_sequence(torch.arange(6.0).reshape(2, 3)).numpy())


# -- packing and unpacking ---------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths", ["sorted", "unsorted", "ties"])
@pytest.mark.parametrize("lengths_as", ["list", "tensor"])
def test_pack_pad_round_trip_matches_torch(device, batch_first, lengths, lengths_as):
    lens = LENGTHS[lengths]
    enforce_sorted = lengths == "sorted"
    rng = np.random.default_rng(1)
    padded = TR.pad_sequence([torch.tensor(a) for a in _seqs(lens, rng, (2,))],
                             batch_first=batch_first).numpy()
    tin = torch.tensor(padded, requires_grad=True)
    min_ = mt.tensor(padded, device=device, requires_grad=True)
    mlens = lens if lengths_as == "list" else mt.tensor(lens)
    tp = TR.pack_padded_sequence(tin, lens, batch_first=batch_first,
                                 enforce_sorted=enforce_sorted)
    mp = R.pack_padded_sequence(min_, mlens, batch_first=batch_first,
                                enforce_sorted=enforce_sorted)
    assert isinstance(mp, R.PackedSequence) and isinstance(mp, tuple) and len(mp) == 4
    assert mp.data.device.type == device
    _assert_packed_equal(mp, tp)
    for total_length in (None, 7):
        out, out_lens = R.pad_packed_sequence(mp, batch_first=batch_first, padding_value=0.5,
                                              total_length=total_length)
        tout, tout_lens = TR.pad_packed_sequence(tp, batch_first=batch_first,
                                                 padding_value=0.5, total_length=total_length)
        assert tuple(out.shape) == tuple(tout.shape)
        np.testing.assert_array_equal(_np(out), _np(tout))
        assert out_lens.dtype == mt.int64 and out_lens.tolist() == tout_lens.tolist()
    # Gradients flow from the padded result back through both conversions.
    w = rng.standard_normal(tuple(tout.shape))
    (out * mt.tensor(w, device=device)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(_np(min_.grad), tin.grad.numpy())


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_sequence_and_unpack_match_torch(device, enforce_sorted):
    lens = LENGTHS["sorted" if enforce_sorted else "unsorted"]
    arrays = _seqs(lens, np.random.default_rng(2), (3,))
    ms = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]
    mp = R.pack_sequence(ms, enforce_sorted=enforce_sorted)
    tp = TR.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted=enforce_sorted)
    _assert_packed_equal(mp, tp)
    back = R.unpack_sequence(mp)
    assert [tuple(s.shape) for s in back] == [a.shape for a in arrays]
    for s, a in zip(back, arrays):
        np.testing.assert_array_equal(_np(s), a)
    sum((s * s).sum() for s in back).backward()
    for m, a in zip(ms, arrays):
        np.testing.assert_allclose(_np(m.grad), 2 * a, **TOL)
    padded, lengths = R.pad_packed_sequence(mp)
    pieces = R.unpad_sequence(padded, lengths)
    for s, a in zip(pieces, arrays):
        np.testing.assert_array_equal(_np(s), a)


def test_packed_sequence_tuple_and_conversions():
    mp = R.pack_sequence([mt.tensor([[1.0], [2.0]]), mt.tensor([[3.0]])])
    data, batch_sizes, sorted_indices, unsorted_indices = mp
    assert batch_sizes.tolist() == [2, 1] and sorted_indices is None
    assert unsorted_indices is None and data.tolist() == [[1.0], [3.0], [2.0]]
    assert mp.double().data.dtype == mt.float64 and mp.double().float().data.dtype == mt.float32
    assert mp.to("cpu") is mp and not mp.is_cuda
    unsorted = R.pack_sequence([mt.tensor([1.0]), mt.tensor([2.0, 3.0])], enforce_sorted=False)
    assert unsorted.sorted_indices.tolist() == [1, 0]
    assert unsorted.unsorted_indices.tolist() == [1, 0]
    moved = unsorted.to(dtype=mt.float64)
    assert moved.data.dtype == mt.float64 and moved.sorted_indices.tolist() == [1, 0]
    assert R.invert_permutation(mt.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert R.invert_permutation(None) is None


# -- errors --------------------------------------------------------------------------------
ERROR_CASES = [
    ([3, 1, 2], True, RuntimeError, "must be sorted in decreasing order"),
    ([0, 2, 3], True, RuntimeError, "must be sorted in decreasing order"),
    ([3, 2, 0], True, RuntimeError, "has to be greater than 0"),
    ([3, 2, 0], False, RuntimeError, "has to be greater than 0"),
    ([2, 3], True, RuntimeError, r"Expected `len\(lengths\)` to be equal to batch_size"),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_pack_errors_match_torch(case):
    lens, enforce_sorted, exc, message = case
    with pytest.raises(exc, match=message):
        TR.pack_padded_sequence(torch.zeros(4, 3, 2), lens, enforce_sorted=enforce_sorted)
    with pytest.raises(exc, match=message):
        R.pack_padded_sequence(mt.zeros(4, 3, 2), lens, enforce_sorted=enforce_sorted)


def test_pad_packed_total_length_and_packed_module_errors():
    tp = TR.pack_sequence([torch.zeros(3, 2), torch.zeros(2, 2)])
    mp = R.pack_sequence([mt.zeros(3, 2), mt.zeros(2, 2)])
    message = "Expected total_length to be at least the length of the longest sequence"
    for lib, packed in ((TR, tp), (R, mp)):
        with pytest.raises(ValueError, match=message):
            lib.pad_packed_sequence(packed, total_length=2)
    with pytest.raises(RuntimeError, match="input.size"):
        nn.GRU(3, 4)(mp)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"):
        nn.GRU(2, 4)(mp, mt.zeros(1, 3, 4))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size"):
        nn.LSTM(2, 4)(mp, (mt.zeros(1, 3, 4), mt.zeros(1, 2, 4)))
    with pytest.raises(ValueError, match="does not match weight dtype"):
        nn.RNN(2, 4)(mp.double())
    with pytest.raises(ValueError, match="padding_side"):
        R.pad_sequence([mt.zeros(2)], padding_side="middle")


# -- recurrent layers on packed input --------------------------------------------------------
LAYERS = [
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"bidirectional": True, "bias": False}),
    ("RNN", {"num_layers": 2}),
    ("RNN", {"num_layers": 2, "bidirectional": True, "nonlinearity": "relu"}),
]


def _state_list(name, state) -> list:
    return list(state) if name == "LSTM" else [state]


@pytest.mark.parametrize("with_states", [False, True])
@pytest.mark.parametrize("lengths", ["sorted", "unsorted"])
@pytest.mark.parametrize("layer", LAYERS, ids=lambda c: f"{c[0]}{c[1]}")
def test_packed_layer_matches_torch(device, layer, lengths, with_states):
    name, kwargs = layer
    tmod, mod = float64_pair(torch, name, 3, 4, device=device, **kwargs)
    lens = LENGTHS[lengths]
    rng = np.random.default_rng(3)
    arrays = _seqs(lens, rng)
    states = []
    if with_states:
        layers = tmod.num_layers * (2 if tmod.bidirectional else 1)
        h_size = getattr(tmod, "proj_size", 0) or 4
        states = [rng.standard_normal((layers, len(lens), h_size))]
        if name == "LSTM":
            states.append(rng.standard_normal((layers, len(lens), 4)))
    ts = [torch.tensor(a, requires_grad=True) for a in arrays + states]
    ms = [mt.tensor(a, device=device, requires_grad=True) for a in arrays + states]
    sorted_ = lengths == "sorted"
    tp = TR.pack_sequence(ts[:len(arrays)], enforce_sorted=sorted_)
    mp = R.pack_sequence(ms[:len(arrays)], enforce_sorted=sorted_)

    def call(module, packed, st):
        if not st:
            return module(packed)
        return module(packed, tuple(st) if name == "LSTM" else st[0])

    tout, tstate = call(tmod, tp, ts[len(arrays):])
    out, state = call(mod, mp, ms[len(arrays):])
    assert isinstance(out, R.PackedSequence)
    _assert_packed_equal(out, tout)
    touts, outs = [tout.data, *_state_list(name, tstate)], [out.data, *_state_list(name, state)]
    for o, t in zip(outs[1:], touts[1:]):
        assert tuple(o.shape) == tuple(t.shape) and o.device.type == device
        np.testing.assert_allclose(_np(o), _np(t), **TOL)
    weights = [rng.standard_normal(tuple(t.shape)) for t in touts]
    sum((o * mt.tensor(w, device=device)).sum() for o, w in zip(outs, weights)).backward()
    sum((t * torch.tensor(w)).sum() for t, w in zip(touts, weights)).backward()
    for m, t in zip(ms, ts):
        np.testing.assert_allclose(_np(m.grad), t.grad.numpy(), **TOL)
    for (k, p), (_, tp_) in zip(mod.named_parameters(), tmod.named_parameters()):
        np.testing.assert_allclose(_np(p.grad), tp_.grad.numpy(), **TOL, err_msg=k)


@pytest.mark.parametrize("layer", LAYERS, ids=lambda c: f"{c[0]}{c[1]}")
def test_packed_layer_equals_each_sequence_alone(device, layer):
    """Independent of PyTorch: a packed (unsorted) batch gives each sequence what running it
    alone, unpacked, gives: outputs, final states and gradients."""
    name, kwargs = layer
    _, mod = float64_pair(torch, name, 3, 4, device=device, **kwargs)
    lens = LENGTHS["unsorted"]
    arrays = _seqs(lens, np.random.default_rng(4))
    ms = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]
    out, state = mod(R.pack_sequence(ms, enforce_sorted=False))
    pieces = R.unpack_sequence(out)
    states = _state_list(name, state)
    total = sum((p * p).sum() for p in pieces) + sum((s * s * 3).sum() for s in states)
    total.backward()
    for j, a in enumerate(arrays):
        alone = mt.tensor(a, device=device, requires_grad=True)
        aout, astate = mod(alone.unsqueeze(1))
        np.testing.assert_allclose(_np(pieces[j]), _np(aout[:, 0]), **TOL)
        for s, s_alone in zip(states, _state_list(name, astate)):
            np.testing.assert_allclose(_np(s[:, j]), _np(s_alone[:, 0]), **TOL)
        (aout * aout).sum().add(sum((s * s * 3).sum() for s in _state_list(name, astate))) \
            .backward()
        np.testing.assert_allclose(_np(ms[j].grad), _np(alone.grad), **TOL)


def test_packed_layer_batch_first_and_float32(device):
    """batch_first does not change packed input; float32 within float32 tolerance."""
    torch.manual_seed(5)
    tmod = torch.nn.LSTM(3, 4, 2, batch_first=True, bidirectional=True)
    mod = nn.LSTM(3, 4, 2, batch_first=True, bidirectional=True).to(device)
    copy_weights(tmod, mod, device)
    arrays = [a.astype("float32") for a in _seqs([2, 4, 3], np.random.default_rng(6))]
    tout, (th, tc) = tmod(TR.pack_sequence([torch.tensor(a) for a in arrays], False))
    out, (h, c) = mod(R.pack_sequence([mt.tensor(a, device=device) for a in arrays], False))
    for a, b in ((out.data, tout.data), (h, th), (c, tc)):
        assert a.dtype == mt.float32
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)
    padded, lengths = R.pad_packed_sequence(out, batch_first=True)
    tpadded, _ = TR.pad_packed_sequence(tout, batch_first=True)
    np.testing.assert_allclose(_np(padded), _np(tpadded), rtol=1e-5, atol=1e-6)
    assert lengths.tolist() == [2, 4, 3]


def test_packed_double_backward_matches_torch():
    """create_graph replays the composed steps with the same per-step batch sizes."""
    tmod, mod = float64_pair(torch, "GRU", 3, 4, num_layers=2, bidirectional=True)
    arrays = _seqs(LENGTHS["unsorted"], np.random.default_rng(9))
    results = []
    for lib, utils, module in ((torch, TR, tmod), (mt, R, mod)):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out, h = module(utils.pack_sequence(xs, enforce_sorted=False))
        params = list(module.parameters())
        grads = lib.autograd.grad((out.data * out.data).sum() + (h * h).sum(), params + xs,
                                  create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        results.append([_np(p.grad) for p in params] + [_np(x.grad) for x in xs])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **TOL)


@pytest.mark.parametrize("mode,proj", [("LSTM", False), ("LSTM", True), ("GRU", False),
                                       ("RNN_TANH", False), ("RNN_RELU", False)])
@pytest.mark.parametrize("reverse", [False, True])
def test_fused_recurrence_with_batch_sizes_equals_composed(device, mode, reverse, proj):
    rng = np.random.default_rng(8)
    steps, n, hid, p = 5, 4, 4, 2 if proj else 4
    batch_sizes = (4, 3, 3, 2, 1)
    g = rnn_ops.GATES[mode] * hid
    shapes = {"x": (steps, n, 3), "w_ih": (g, 3), "b_ih": (g,), "h0": (n, p), "w_hh": (g, p),
              "b_hh": (g,)}
    if mode == "LSTM":
        shapes["c0"] = (n, hid)
    if proj:
        shapes["w_hr"] = (p, hid)
    values = {k: rng.standard_normal(s) for k, s in shapes.items()}
    mask = np.arange(n)[None, :] < np.asarray(batch_sizes)[:, None]  # (steps, n) active
    w = rng.standard_normal((steps, n, p)) * mask[:, :, None]
    results = []
    for fused in (True, False):
        ins = {k: mt.tensor(v, device=device, requires_grad=True) for k, v in values.items()}
        out, h_n, c_n = rnn_ops.recurrence(mode, ins["x"], ins["w_ih"], ins["b_ih"], ins["h0"],
                                           ins.get("c0"), ins["w_hh"], ins["b_hh"],
                                           ins.get("w_hr"), reverse=reverse, fused=fused,
                                           batch_sizes=batch_sizes)
        total = (out * mt.tensor(w, device=device)).sum() + (h_n * h_n).sum()
        if c_n is not None:
            total = total + (c_n * 3).sum()
        total.backward()
        results.append([out * mt.tensor(mask[:, :, None] * 1.0, device=device), h_n]
                       + [ins[k].grad for k in sorted(ins)])
    for a, b in zip(*results):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)
    # Padding positions get no gradient.
    np.testing.assert_array_equal(_np(results[0][2 + sorted(values).index("x")])[~mask], 0)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_packed_dropout_between_layers_matches_torch(name):
    """Dropout on each layer's packed output: the same masks as PyTorch after the same seed."""
    tmod, mod = float64_pair(torch, name, 3, 4, 3, dropout=0.5, bidirectional=True)
    arrays = _seqs([2, 5, 3], np.random.default_rng(10))
    torch.manual_seed(3)
    mt.manual_seed(3)
    tout, _ = tmod(TR.pack_sequence([torch.tensor(a) for a in arrays], False))
    out, _ = mod(R.pack_sequence([mt.tensor(a) for a in arrays], False))
    np.testing.assert_allclose(_np(out.data), _np(tout.data), **TOL)


def test_padding_value_is_not_mixed_with_the_data():
    packed = R.pack_sequence([mt.tensor([1.0, float("nan"), float("inf")]), mt.tensor([2.0])])
    padded, _ = R.pad_packed_sequence(packed, padding_value=-2.0)
    tpadded, _ = TR.pad_packed_sequence(
        TR.pack_sequence([torch.tensor([1.0, float("nan"), float("inf")]),
                          torch.tensor([2.0])]), padding_value=-2.0)
    np.testing.assert_array_equal(_np(padded), tpadded.numpy())
