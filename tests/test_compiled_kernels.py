"""The numba kernels of ``backend.compiled`` give the same bits as the NumPy passes they
replace (and as PyTorch, where those do) in every case that reaches them. The LSTM: whole
batches, packed sequences (column slices), rows shared between threads, both directions,
float32 and float64, a projection (which keeps the NumPy path), NaN and infinities. Max
pooling's backward: overlapping, padded, dilated and ceil-mode windows, NaN and -inf windows,
ties. ReLU's backward: zeros of both signs, NaN and infinities in the input and gradient. The
row-value operations (the softmax family's and cross entropy's): every operation against its
ufunc, and the ops through them with infinite and NaN rows, reductions, weights and ignored
targets. Adam's step: every option (amsgrad, coupled and decoupled weight decay, maximize, a
first-moment weight of 0.5 or more), NaN and infinite gradients, 0-d parameters. Switching them
off falls back cleanly."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch
from microtorch.backend import compiled
from microtorch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from microtorch.ops import rnn

pytest.importorskip("numba")


@pytest.fixture
def restore(monkeypatch):
    monkeypatch.setattr(compiled, "MIN_ELEMENTS", 0)  # the kernels for these small arrays too
    yield
    compiled.set_enabled(None)
    for decide in rnn._ROWS.values():
        decide.force(None)


def _lstm_run(seed, flag, *, dtype=np.float32, bidirectional=False, proj_size=0,
              lengths=None, special=False):
    """Outputs, final states and every gradient of a 2-layer LSTM, as NumPy arrays."""
    compiled.set_enabled(flag)
    microtorch.manual_seed(seed)
    lstm = microtorch.nn.LSTM(5, 6, num_layers=2, bidirectional=bidirectional,
                              proj_size=proj_size).to(getattr(microtorch, np.dtype(dtype).name))
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal((7, 4, 5)).astype(dtype) * 2
    if special:  # saturated gates, an infinity and a NaN travel through both paths alike
        x0[1, 0, 0], x0[2, 1, 1], x0[3, 2, 2] = 40.0, np.inf, np.nan
    x = microtorch.tensor(x0, requires_grad=True)
    inp = pack_padded_sequence(x, lengths) if lengths is not None else x
    out, (h, c) = lstm(inp)
    if lengths is not None:
        out = pad_packed_sequence(out)[0]
    ((out * out).sum() + (h * h).sum() + (c * c).sum()).backward()
    grads = [x.grad] + [p.grad for p in lstm.parameters()]
    return [t.detach().numpy().copy() for t in [out, h, c, *grads]]


def _same_bits(a_list, b_list, *, nan_sign: bool = True):
    """Every element's bits equal; with ``nan_sign`` False, a NaN's sign and payload may
    differ (IEEE leaves them open where two NaNs meet in an addition, and LLVM may swap an
    addition's operands)."""
    assert len(a_list) == len(b_list)
    for a, b in zip(a_list, b_list):
        assert a.dtype == b.dtype and a.shape == b.shape
        if not nan_sign:
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
            a, b = np.where(np.isnan(a), np.nan, a), np.where(np.isnan(b), np.nan, b)
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("kwargs", [
    {},
    {"dtype": np.float64},
    {"bidirectional": True},
    {"lengths": [7, 5, 5, 2]},
    {"lengths": [7, 5, 5, 2], "bidirectional": True},
    {"proj_size": 3},
    {"special": True},
])
def test_lstm_compiled_and_numpy_paths_give_the_same_bits(restore, kwargs) -> None:
    assert compiled.kernels() is not None or not compiled.enabled()
    _same_bits(_lstm_run(0, True, **kwargs), _lstm_run(0, False, **kwargs))


def test_lstm_compiled_kernels_on_rows_shared_between_threads(restore, monkeypatch) -> None:
    # Shared rows hand the kernels column slices (strided views), not whole steps.
    monkeypatch.setattr(rnn, "_ROWS_MIN_WORK", 1)
    before = microtorch.get_num_threads()
    microtorch.set_num_threads(2)
    try:
        for decide in rnn._ROWS.values():
            decide.force("threads")
        split = _lstm_run(1, True)
        split_numpy = _lstm_run(1, False)
    finally:
        microtorch.set_num_threads(before)
    _same_bits(split, split_numpy)


def test_kernels_are_none_when_switched_off(restore, monkeypatch) -> None:
    compiled.set_enabled(False)
    assert compiled.kernels() is None
    compiled.set_enabled(None)
    monkeypatch.setenv("MICROTORCH_NUMBA", "0")
    assert not compiled.enabled() and compiled.kernels() is None
    monkeypatch.setenv("MICROTORCH_NUMBA", "1")
    assert compiled.enabled() and compiled.kernels() is not None


def test_lstm_backward_kernel_matches_its_numpy_formulas() -> None:
    # The kernel alone, on strided (R, C) views and on one long row.
    kernels = compiled.kernels()
    assert kernels is not None
    rng = np.random.default_rng(2)
    hid, n = 6, 5
    acts = rng.random((4, hid, n)).astype(np.float32)
    c_prev, tanh_c, dh, dout, dc0 = (rng.standard_normal((hid, n)).astype(np.float32)
                                     for _ in range(5))
    i, f, o, g = acts
    dm = dh + dout
    dc = dc0 + dm * ((1 - tanh_c * tanh_c) * o)
    expected_dg = np.stack([dc * (((1 - i) * i) * g), dc * (((1 - f) * f) * c_prev),
                            dc * ((1 - g * g) * i), dm * (((1 - o) * o) * tanh_c)])
    for cols in (slice(None), slice(1, 4)):
        dcs, dg = dc0.copy(), np.zeros((4, hid, n), np.float32)
        kernels.lstm_backward_cell(dh[:, cols], dout[:, cols], acts[:, :, cols],
                                   c_prev[:, cols], tanh_c[:, cols], dcs[:, cols],
                                   dg[:, :, cols])
        np.testing.assert_array_equal(dg[:, :, cols], expected_dg[:, :, cols])
        np.testing.assert_array_equal(dcs[:, cols], (dc * f)[:, cols])
    dcs, dg = dc0.copy(), np.zeros((4, hid, n), np.float32)
    rows = [compiled.as_rows(a) for a in (dh, dout, acts, c_prev, tanh_c, dcs, dg)]
    kernels.lstm_backward_cell(*rows)
    np.testing.assert_array_equal(dg, expected_dg)
    np.testing.assert_array_equal(dcs, dc * f)


def test_as_rows_refuses_to_copy() -> None:
    a = np.zeros((3, 4, 5), np.float32)
    for fine in (a, a[1:], a[:, :, :1], a[:, :1], a[:, :, ::2][:, :1], np.zeros((5, 3, 0))):
        rows = compiled.as_rows(fine)  # (leading axes, length-1 and empty axes: views)
        assert rows.shape == fine.shape[:-2] + (1, fine.shape[-2] * fine.shape[-1])
        assert rows.size == 0 or np.shares_memory(rows, fine)
    for strided in (a[:, :, :2], a[:, ::2], a.transpose(0, 2, 1)):
        with pytest.raises(ValueError, match="do not merge into one"):
            compiled.as_rows(strided)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1, padding=1),  # overlapping: sums in PyTorch's order
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1)),
    dict(kernel_size=(3, 2), stride=(4, 5), padding=(1, 1)),
    dict(kernel_size=16, ceil_mode=True),  # 256 offsets: int64 indices
])
def test_max_pool_backward_kernel_matches_numpy_and_torch(restore, dtype, kwargs) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x0 = rng.standard_normal((3, 4, 17, 19)).astype(dtype)
    x0[0, 0, :3, :3] = np.nan
    x0[1, 1, :5, :5] = -np.inf
    x0[2, 2] = np.round(x0[2, 2])  # ties
    grads = {}
    for flag in (True, False):
        compiled.set_enabled(flag)
        x = microtorch.tensor(x0, requires_grad=True)
        out = microtorch.nn.functional.max_pool2d(x, **kwargs)
        g0 = np.random.default_rng(5).standard_normal(out.shape).astype(dtype)
        g0.reshape(-1)[:4] = [-0.0, np.inf, -np.inf, np.nan]
        out.backward(microtorch.tensor(g0))
        grads[flag] = x.grad.numpy()
    _same_bits([grads[True]], [grads[False]])
    tx = torch.tensor(x0, requires_grad=True)
    torch.nn.functional.max_pool2d(tx, **kwargs).backward(torch.tensor(g0))
    np.testing.assert_array_equal(grads[True], tx.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_backward_kernel_matches_numpy_and_torch(restore, dtype) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    x0 = rng.standard_normal((3, 1 << 18)).astype(dtype)  # large: shared between threads
    x0[0, :5] = [0.0, -0.0, np.nan, np.inf, -np.inf]
    g0 = rng.standard_normal(x0.shape).astype(dtype)
    g0[1, :4] = [-0.0, np.inf, -np.inf, np.nan]
    g0[0, :5] = [np.nan, np.inf, -1.0, -0.0, np.nan]
    grads = []
    for flag in (True, False):
        compiled.set_enabled(flag)
        x = microtorch.tensor(x0, requires_grad=True)
        microtorch.relu(x).backward(microtorch.tensor(g0))
        grads.append(x.grad.numpy())
    _same_bits(grads[:1], grads[1:])
    tx = torch.tensor(x0, requires_grad=True)
    torch.relu(tx).backward(torch.tensor(g0))
    _same_bits([grads[0]], [tx.grad.numpy()])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ufunc", [np.subtract, np.multiply, np.divide])
def test_row_value_kernel_matches_its_ufunc(restore, dtype, ufunc) -> None:
    from microtorch.backend.rows import by_row_value

    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 9)).astype(dtype)
    x[0, :5] = [0.0, -0.0, np.nan, np.inf, -np.inf]
    col = rng.standard_normal((6, 1)).astype(dtype)
    col[1:5, 0] = [0.0, -0.0, np.inf, np.nan]  # (division by zeros and infinities: silent)
    expected = np.empty_like(x)
    with np.errstate(all="ignore"):
        ufunc(x, col, out=expected)
    for flag in (True, False):
        compiled.set_enabled(flag)
        out = np.full_like(x, 7.0)
        with np.errstate(all="ignore"):
            assert by_row_value(ufunc, x, col, out) is out
        _same_bits([out], [expected])
    compiled.set_enabled(True)
    out = x.copy()  # (in place, as the softmax's passes use it)
    by_row_value(ufunc, out, col, out)
    _same_bits([out], [expected])


def _softmax_family_run(flag, dtype, fn):
    """Value and input gradient of ``fn`` (the softmax family, cross entropy) on logits with
    an infinite and a NaN row, as NumPy arrays, with the compiled kernels on or off."""
    compiled.set_enabled(flag)
    rng = np.random.default_rng(8)
    x0 = rng.standard_normal((70, 33)).astype(dtype) * 3
    x0[3, 4], x0[5, 6], x0[7, :] = np.inf, np.nan, -np.inf
    x = microtorch.tensor(x0, requires_grad=True)
    out = fn(x)
    g0 = rng.standard_normal(out.shape).astype(dtype)
    out.backward(microtorch.tensor(g0))
    return [np.atleast_1d(out.detach().numpy()).copy(), x.grad.numpy().copy()]


_TARGETS = microtorch.tensor(np.random.default_rng(9).integers(0, 33, 70))
_WEIGHTS = np.random.default_rng(10).random(33)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [
    lambda x: microtorch.softmax(x, 1),
    lambda x: microtorch.log_softmax(x, 1),
    lambda x: microtorch.nn.functional.cross_entropy(x, _TARGETS),
    lambda x: microtorch.nn.functional.cross_entropy(x, _TARGETS, reduction="sum"),
    lambda x: microtorch.nn.functional.cross_entropy(x, _TARGETS, reduction="none"),
    lambda x: microtorch.nn.functional.cross_entropy(x, _TARGETS, ignore_index=int(_TARGETS[0])),
    lambda x: microtorch.nn.functional.cross_entropy(
        x, _TARGETS, weight=microtorch.tensor(_WEIGHTS, dtype=x.dtype)),
], ids=["softmax", "log_softmax", "ce_mean", "ce_sum", "ce_none", "ce_ignore", "ce_weight"])
def test_softmax_family_kernels_give_the_numpy_paths_bits(restore, dtype, fn) -> None:
    _same_bits(_softmax_family_run(True, dtype, fn), _softmax_family_run(False, dtype, fn))


def _adam_run(flag, dtype, options):
    """Parameters and every state array after six Adam steps (a NaN, an infinity and -0.0 in
    one step's gradient), with the compiled kernels on or off."""
    compiled.set_enabled(flag)
    rng = np.random.default_rng(11)
    params = [microtorch.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
              for shape in [(30, 17), (7,), ()]]
    opt = microtorch.optim.Adam(params, lr=1e-2, **options)
    for k in range(6):
        for p in params:
            g = rng.standard_normal(p.shape).astype(dtype)
            if k == 3 and p.ndim == 2:
                g[0, :3] = [np.nan, np.inf, -0.0]
            p.grad = microtorch.tensor(g)
        opt.step()
    return [p.detach().numpy().reshape(-1).copy() for p in params] + \
        [opt.state[p][key].numpy().reshape(-1).copy() for p in params
         for key in sorted(opt.state[p]) if key != "step"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("options", [
    {}, {"amsgrad": True}, {"weight_decay": 0.1}, {"maximize": True}, {"betas": (0.3, 0.9)},
    {"weight_decay": 0.1, "decoupled_weight_decay": True},
], ids=["plain", "amsgrad", "decay", "maximize", "heavy_weight", "decoupled"])
def test_adam_step_kernel_gives_the_numpy_paths_bits(restore, dtype, options) -> None:
    _same_bits(_adam_run(True, dtype, options), _adam_run(False, dtype, options))


def test_adam_step_with_parameters_of_mixed_dtypes(restore) -> None:
    # The kernels are chosen by the step's first parameter; a complex or float64 parameter
    # beside it takes the NumPy passes or the kernel of its own dtype, the same bits either way.
    def run(flag):
        compiled.set_enabled(flag)
        rng = np.random.default_rng(15)
        params = [microtorch.tensor(rng.standard_normal(50).astype(np.float32),
                                    requires_grad=True),
                  microtorch.tensor((rng.standard_normal(3) + 1j * rng.standard_normal(3))
                                    .astype(np.complex64), requires_grad=True),
                  microtorch.tensor(rng.standard_normal(4), requires_grad=True)]
        opt = microtorch.optim.Adam(params, lr=0.1, amsgrad=True)
        for _ in range(3):
            for p in params:
                p.grad = microtorch.tensor(rng.standard_normal(p.shape).astype(
                    p.detach().numpy().real.dtype).astype(p.detach().numpy().dtype))
            opt.step()
        return [p.detach().numpy().view(np.uint8).copy() for p in params]

    _same_bits(run(True), run(False))


def test_numba_is_imported_on_first_use_and_works_without_a_cache_directory() -> None:
    # A fresh process: importing microtorch leaves numba unimported; where numba finds no
    # writable cache directory the kernels compile without one instead of failing.
    import subprocess
    import sys

    code = ("import sys, numpy as np, microtorch\n"
            "assert 'numba' not in sys.modules\n"
            "import numba.core.caching as caching\n"
            "caching.CacheImpl._locator_classes = []\n"
            "from microtorch.backend import compiled\n"
            "k = compiled.kernels()\n"
            "assert type(k.select_nonzero._cache).__name__ == 'NullCache'\n"
            "g = np.array([1.0, -2.0, 3.0], np.float32); out = np.empty_like(g)\n"
            "k.select_nonzero(g, np.array([1.0, 0.0, np.nan], np.float32), out)\n"
            "assert out.tolist() == [1.0, 0.0, 3.0]\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_small_elementwise_passes_keep_numpy(restore, monkeypatch) -> None:
    monkeypatch.setattr(compiled, "MIN_ELEMENTS", 1 << 16)
    assert compiled.kernels_for(np, np.float32, (1 << 16) - 1) is None
    assert compiled.kernels_for(np, np.float32, 1 << 16) is not None
    assert compiled.kernels_for(np, np.float32) is not None  # (no size: the LSTM's cells)
    assert compiled.kernels_for(np, np.float16, 1 << 20) is None


# (input shape, weight shape, stride, padding, dilation, groups): stride 1 at "same" width
# (the kernels' one-run-per-offset path) and everything else (row by row).
_CONV_CASES = [
    ((64, 16, 14, 14), (32, 16, 3, 3), 1, 1, 1, 1),  # the CNN benchmark's second convolution
    ((3, 4, 9, 11), (6, 2, 5, 3), 1, (2, 1), 1, 2),
    ((2, 3, 10, 8), (4, 3, 3, 3), 1, (2, 2), 2, 1),  # dilated, still the same width
    ((2, 2, 7, 6), (3, 2, 2, 4), 1, "same", (1, 2), 1),  # uneven: 0 rows above, 1 below
    ((5, 4, 9, 7), (6, 2, 3, 2), (2, 1), (2, 1), (1, 2), 2),
    ((3, 2, 8, 8), (4, 2, 5, 3), (1, 3), (3, 1), (2, 1), 1),
    ((4, 6, 7, 9), (6, 3, 2, 2), (3, 2), (0, 4), 1, 2),
    ((2, 3, 5, 5), (3, 3, 1, 1), 2, 0, 1, 1),
    ((2, 3, 6, 5), (4, 3, 3, 3), 1, 0, 1, 1),  # stride 1, narrower output
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", _CONV_CASES)
@pytest.mark.parametrize("threads", [1, 3])
def test_conv_column_kernels_give_the_numpy_paths_bits(restore, monkeypatch, dtype, case,
                                                       threads) -> None:
    """Convolution's compiled im2col and col2im against its NumPy copies and slice-adds:
    forward, every gradient and a double backward, NaN, infinities and -0.0 included (a NaN's
    sign where two meet aside), images shared between threads (every block layout the shapes
    take)."""
    from microtorch.ops import conv

    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(7)
    x0 = rng.standard_normal(xs).astype(dtype)
    x0.reshape(-1)[[0, 5, 9, 13]] = [np.nan, np.inf, -0.0, -np.inf]
    w0 = rng.standard_normal(ws).astype(dtype)
    b0 = rng.standard_normal(ws[0]).astype(dtype)
    monkeypatch.setattr(conv, "_MOVES_MIN_WORK", 1)  # share even these small images
    before = microtorch.get_num_threads()
    results = {}
    try:
        microtorch.set_num_threads(threads)
        for flag in (True, False):
            compiled.set_enabled(flag)
            x, w, b = (microtorch.tensor(a, requires_grad=True) for a in (x0, w0, b0))
            y = microtorch.nn.functional.conv2d(x, w, b, stride, padding, dilation, groups)
            g0 = np.random.default_rng(8).standard_normal(y.shape).astype(dtype)
            g0.reshape(-1)[:3] = [-0.0, np.inf, np.nan]
            gx, gw = microtorch.autograd.grad(y, (x, w), microtorch.tensor(g0),
                                              create_graph=True)
            (gx.sum() + (gw * gw).sum()).backward()
            results[flag] = [t.detach().numpy().copy() for t in (y, gx, gw, x.grad, w.grad)]
    finally:
        microtorch.set_num_threads(before)
    _same_bits(results[True], results[False], nan_sign=False)


def _pair(v):
    return v if isinstance(v, tuple) else (v, v)


@pytest.mark.parametrize("case", _CONV_CASES)
@pytest.mark.parametrize("images_per_block", [1, 2, "all"])
def test_conv_column_kernels_against_the_windows(case, images_per_block) -> None:
    """``im2col`` and ``col2im`` called directly, for blocks of several images and for a
    share of the blocks or of one block's images: every element of their share (and no
    other) as the strided windows give it, bit for bit."""
    from microtorch.ops import conv
    from microtorch.ops._windows import _col2im, _crop_hw, _pad_hw

    kernels = compiled.kernels()
    xs, ws, stride, padding, dilation, groups = case
    n, c, h, w = xs
    kh, kw = ws[2:]
    st, dil = (_pair(stride), _pair(dilation))
    if padding == "same":  # (PyTorch's split: the odd one below and right)
        total = [d * (k - 1) for d, k in zip(dil, (kh, kw))]
        pads = (total[0] // 2, total[0] - total[0] // 2, total[1] // 2, total[1] - total[1] // 2)
    else:
        pads = tuple(v for v in _pair(padding) for _ in range(2))
    oh, ow = conv._conv_out_hw(h, w, kh, kw, st, pads, dil)
    nb = {1: 1, 2: 2 if n % 2 == 0 else 1, "all": n}[images_per_block]
    b, cg, p = n // nb, c // groups, oh * ow
    rng = np.random.default_rng(9)
    x0 = rng.standard_normal(xs).astype(np.float32)
    # The windows: (B, G, KH, KW, Cg, Nb, OH, OW) views of the padded images.
    xpad = _pad_hw(x0, pads)
    s0, s1, s2, s3 = xpad.strides
    win = np.lib.stride_tricks.as_strided(
        xpad, (b, groups, kh, kw, cg, nb, oh, ow),
        (nb * s0, cg * s1, dil[0] * s2, dil[1] * s3, s1, s0, st[0] * s2, st[1] * s3))
    expected = np.ascontiguousarray(win).reshape(b, groups, kh * kw * cg, nb, p)
    gcols = rng.standard_normal(expected.shape).astype(np.float32)
    gpad = np.zeros((b, groups, cg, nb, h + pads[0] + pads[1], w + pads[2] + pads[3]),
                    np.float32)
    _col2im(gpad, gcols.reshape(b, groups, kh, kw, cg, nb, oh, ow).transpose(
        2, 3, 0, 1, 4, 5, 6, 7), *st, *dil)
    expected_gx = np.ascontiguousarray(_crop_hw(gpad, pads, h, w).transpose(
        0, 3, 1, 2, 4, 5)).reshape(xs)
    spans = [(0, b, 0, nb)] + ([(1, b, 0, nb)] if b > 1 else [(0, 1, 1, nb)])
    for span in spans:
        cols = np.full(expected.shape, 7.0, np.float32)
        gx = np.full(xs, 7.0, np.float32)
        kernels.im2col(x0, cols, kh, kw, *st, pads[0], pads[2], *dil, oh, ow, *span)
        kernels.col2im(gcols, gx, kh, kw, *st, pads[0], pads[2], *dil, oh, ow, *span)
        blk, img = slice(span[0], span[1]), slice(span[2], span[3])
        mine = np.zeros(expected.shape, bool)
        mine[blk, :, :, img] = True
        np.testing.assert_array_equal(cols[mine].view(np.int32), expected[mine].view(np.int32))
        assert (cols[~mine] == 7.0).all()
        mine_x = mine[:, 0, 0, :, 0].reshape(n)
        np.testing.assert_array_equal(gx[mine_x].view(np.int32),
                                      expected_gx[mine_x].view(np.int32))
        assert (gx[~mine_x] == 7.0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 4, 17, 19), (2, 3, 8, 8), (1, 2, 3, 2)])
@pytest.mark.parametrize("grad", [True, False])
def test_max_pool_forward_gives_pytorchs_value_and_index(restore, dtype, shape, grad) -> None:
    """2x2 max pooling at stride 2, by the compiled kernel and by the NumPy passes: PyTorch's
    index (the first maximum, the last NaN) and its value, the element at that index, bit for
    bit: a window holding both 0.0 and -0.0 gives the sign of its first zero (NumPy's SIMD
    ``maximum`` returns a tie's later operand, its scalar loop the earlier), a window of
    NaNs its last NaN. Odd sizes drop the last row or column, as PyTorch does."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    x0 = rng.standard_normal(shape).astype(dtype)
    flat = x0.reshape(-1)
    flat[rng.integers(0, flat.size, flat.size // 3)] = 0.0
    flat[rng.integers(0, flat.size, flat.size // 3)] = -0.0
    flat[rng.integers(0, flat.size, 4)] = [np.nan, -np.nan, np.inf, -np.inf]
    x0[0, 0, :2, :2] = -np.inf  # a window of -inf only
    expected, expected_idx = torch.nn.functional.max_pool2d(torch.tensor(x0), 2,
                                                            return_indices=True)
    for flag in (True, False):
        compiled.set_enabled(flag)
        x = microtorch.tensor(x0, requires_grad=grad)
        if grad:
            y, idx = microtorch.nn.functional.max_pool2d(x, 2, return_indices=True)
            np.testing.assert_array_equal(idx.numpy(), expected_idx.numpy())
        else:
            y = microtorch.nn.functional.max_pool2d(x, 2)
        _same_bits([y.detach().numpy()], [expected.numpy()])


@pytest.mark.parametrize("case", [  # (input shape, weight shape, conv2d keywords)
    ((0, 3, 8, 8), (4, 3, 3, 3), dict(padding=1)),  # an empty batch: no block to write
    ((2, 3, 8, 8), (4, 3, 3, 3), dict(padding=4)),  # rows and columns of windows all padding
    ((2, 3, 4, 5), (4, 3, 5, 5), dict(padding=3)),  # a kernel larger than the image
    ((2, 3, 6, 6), (4, 3, 1, 1), dict(padding=2)),  # 1x1 windows, padded (not pointwise)
    ((2, 3, 9, 9), (4, 3, 2, 2), dict(stride=4, padding=1)),  # strides skip elements
])
def test_conv_column_kernels_on_edge_geometry(restore, case) -> None:
    """The compiled im2col and col2im write only their arrays' elements (they check no
    bounds: an empty batch once wrote a block past its end) and agree with the NumPy path
    and PyTorch where windows reach wholly into the padding."""
    torch = pytest.importorskip("torch")
    xs, ws, kwargs = case
    rng = np.random.default_rng(12)
    x0 = rng.standard_normal(xs).astype(np.float32)
    w0 = rng.standard_normal(ws).astype(np.float32)
    results = {}
    for flag in (True, False):
        compiled.set_enabled(flag)
        x, w = (microtorch.tensor(a, requires_grad=True) for a in (x0, w0))
        y = microtorch.nn.functional.conv2d(x, w, None, **kwargs)
        g0 = np.random.default_rng(13).standard_normal(y.shape).astype(np.float32)
        y.backward(microtorch.tensor(g0))
        results[flag] = [t.detach().numpy().copy() for t in (y, x.grad, w.grad)]
    _same_bits(results[True], results[False])
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x0, w0))
    ty = torch.nn.functional.conv2d(tx, tw, None, **kwargs)
    ty.backward(torch.tensor(g0))
    for mine, theirs in zip(results[True], (ty, tx.grad, tw.grad)):
        np.testing.assert_allclose(mine, theirs.detach().numpy(), rtol=1e-4, atol=1e-4)
