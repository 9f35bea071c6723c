"""Formulations chosen by a rule of shapes, or by timing on opt-in (backend.autotune): the
choice mechanism, and each formulation of the ops that use it computing the same results
(against PyTorch too)."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch
from microtorch.backend import autotune
from microtorch.ops import conv, rnn


@pytest.fixture
def timing():
    """Timing-based choice opted in (backends.cpu.benchmark) for one test."""
    microtorch.backends.cpu.benchmark = True
    yield
    microtorch.backends.cpu.benchmark = False


def test_choice_follows_the_rule_by_default() -> None:
    c = autotune.Choice("test", ("a", "b"), trials=2)
    assert not microtorch.backends.cpu.benchmark
    assert [c.pick("k", "b") for _ in range(10)] == ["b"] * 10
    assert not c.measuring("k") and c.chosen("k") is None
    with pytest.raises(ValueError, match="unknown variant 'z'"):
        c.pick("k", "z")


def test_choice_measures_each_variant_then_keeps_the_fastest_when_opted_in(timing) -> None:
    c = autotune.Choice("test", ("a", "b"), trials=2)
    # Each variant's first call is a warm-up and does not count: b's is slow (a pool starting).
    times = {"a": [2.0, 2.0, 2.0], "b": [50.0, 1.0, 1.0]}
    runs = []
    while c.measuring("k"):
        v = c.pick("k", "a")
        c.record("k", v, times[v][runs.count(v)])
        runs.append(v)
    assert sorted(runs) == ["a", "a", "a", "b", "b", "b"]
    assert c.chosen("k") == "b" and c.pick("k", "a") == "b"
    assert c.pick("other", "a", allowed=("a",)) == "a" and not c.measuring("other")
    c.force("a")
    assert c.pick("k", "b") == "a"
    with pytest.raises(ValueError, match="unknown variant"):
        c.force("z")
    with pytest.raises(ValueError, match="distinct"):
        autotune.Choice("bad", ("a", "a"))


def test_deterministic_algorithms_override_the_timing_opt_in(timing) -> None:
    c = autotune.Choice("test", ("a", "b"))
    microtorch.use_deterministic_algorithms(True)
    try:
        assert c.pick("k", "b") == "b" and not c.measuring("k")
    finally:
        microtorch.use_deterministic_algorithms(False)
    assert c.measuring("k")


def test_benchmark_flag_takes_bools_only() -> None:
    with pytest.raises(TypeError, match="benchmark must be a bool"):
        microtorch.backends.cpu.benchmark = 1
    assert microtorch.backends.cpu.benchmark is False


def test_conv_layout_rule() -> None:
    """Blocks of one image (>= 512 output pixels) stay blocks; so do images of >= 128 pixels
    whose products are large enough to share in chunks of images (the CNN's 16 -> 32
    convolution); smaller ones take the one-GEMM batch layout; a batch that is one block has
    one layout only."""
    def layout(xs, ws):
        return conv._layout(microtorch.zeros(*xs), microtorch.zeros(*ws), None, (1, 1),
                            (1, 1, 1, 1), (1, 1), 1, xs[2] * xs[3])

    assert layout((64, 1, 28, 28), (16, 1, 3, 3)) == (1, None)
    assert layout((64, 16, 14, 14), (32, 16, 3, 3)) == (1, None)  # 58M multiply-adds
    assert layout((32, 16, 14, 14), (16, 16, 3, 3)) == (32, None)  # 14M: one thread's work
    assert layout((64, 16, 10, 10), (32, 16, 3, 3)) == (64, None)  # 100 pixels
    assert layout((2, 16, 14, 14), (32, 16, 3, 3)) == (2, None)


@pytest.mark.parametrize("case", [  # (input, weight, stride, padding, dilation, groups)
    ((64, 16, 14, 14), (32, 16, 3, 3), 1, 1, 1, 1),  # the CNN's second convolution
    ((48, 6, 24, 20), (64, 3, 3, 2), 1, (1, 0), (1, 2), 2),
    ((22, 16, 32, 32), (32, 16, 3, 3), 2, 1, 1, 1),  # strided: col2im by windows
])
def test_conv_by_image_chunks_is_one_result_for_any_thread_count(case) -> None:
    """One image per block, in chunks of images shared between the pool's threads: the output
    and all three gradients bit for bit the same at 1, 2 and 3 threads; the same terms as the
    layout in one call (exact on small integers, where every sum is exact in float32), and
    within the rounding of their sums on random floats (one call runs wider products, which
    OpenBLAS's Haswell kernels, or two BLAS threads, may round otherwise)."""
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])]

    def run(x0, w0, b0, signs):
        x, w, b = (microtorch.tensor(a.astype(np.float32), requires_grad=True)
                   for a in (x0, w0, b0))
        y = microtorch.nn.functional.conv2d(x, w, b, stride, padding, dilation, groups)
        y.backward(microtorch.tensor(signs(np.arange(y.numel()).reshape(y.shape))
                                     .astype(np.float32)))
        return [t.numpy() for t in (y.detach(), x.grad, w.grad, b.grad)]

    def alternating(i):
        return np.where(i % 3 == 0, -1.0, 1.0) * (1 + i % 5) / 2

    oh, ow = microtorch.nn.functional.conv2d(
        microtorch.zeros(1, *xs[1:]), microtorch.zeros(*ws), None, stride, padding, dilation,
        groups).shape[2:]
    macs = xs[0] * int(np.prod(ws)) * oh * ow  # (large enough to share: one image per block)
    assert conv._images_per_block(xs[0], oh * ow, np, macs) == 1
    before, chunks = microtorch.get_num_threads(), conv._by_image_chunks
    try:
        by_threads = []
        for count in (1, 2, 3):
            microtorch.set_num_threads(count)
            by_threads.append(run(*arrays, alternating))
        integers = [np.round(a * 2) for a in arrays]
        exact = run(*integers, alternating)
        magnitude = run(*map(np.abs, arrays), lambda i: np.abs(alternating(i)))
        conv._by_image_chunks = lambda *args: False
        whole = run(*arrays, alternating)
        whole_exact = run(*integers, alternating)
    finally:
        conv._by_image_chunks = chunks
        microtorch.set_num_threads(before)
    for other in by_threads[1:]:
        for a, b in zip(by_threads[0], other):
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    for a, b in zip(exact, whole_exact):
        np.testing.assert_array_equal(a, b)
    terms = max(xs[0] * oh * ow, int(np.prod(ws[1:])) + 1, ws[0] * ws[2] * ws[3])
    for a, b, m in zip(by_threads[0], whole, magnitude):
        assert (np.abs(a.astype(np.float64) - b) <= 2 * terms * np.finfo(np.float32).eps * m).all()


@pytest.fixture
def forced():
    yield
    conv._LAYOUT.force(None)


CONV_CASES = [  # (input shape, weight shape, stride, padding, dilation, groups)
    ((64, 1, 28, 28), (16, 1, 3, 3), 1, 1, 1, 1),
    ((64, 16, 14, 14), (32, 16, 3, 3), 1, 1, 1, 1),
    ((6, 4, 9, 7), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((8, 3, 5, 5), (4, 3, 1, 1), 1, 0, 1, 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_layouts_agree_with_each_other_and_torch(forced, case) -> None:
    torch = pytest.importorskip("torch")
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(xs).astype(np.float32)
    w0 = rng.standard_normal(ws).astype(np.float32)
    b0 = rng.standard_normal(ws[0]).astype(np.float32)
    results = {}
    for layout in ("blocks", "batch"):
        conv._LAYOUT.force(layout)
        x, w, b = (microtorch.tensor(a, requires_grad=True) for a in (x0, w0, b0))
        out = microtorch.nn.functional.conv2d(x, w, b, stride, padding, dilation, groups)
        (out * out).sum().backward()
        results[layout] = [t.detach().numpy() for t in (out, x.grad, w.grad, b.grad)]
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x0, w0, b0))
    tout = torch.nn.functional.conv2d(tx, tw, tb, stride, padding, dilation, groups)
    (tout * tout).sum().backward()
    expected = [t.detach().numpy() for t in (tout, tx.grad, tw.grad, tb.grad)]
    for layout, got in results.items():
        for a, e in zip(got, expected):
            np.testing.assert_allclose(a, e, rtol=2e-4, atol=2e-3 * np.abs(e).max(),
                                       err_msg=layout)


def test_conv_layout_is_chosen_after_measuring_when_opted_in(forced, timing) -> None:
    conv._LAYOUT.force(None)
    x = microtorch.randn(8, 2, 12, 12, requires_grad=True)
    w = microtorch.randn(3, 2, 3, 3, requires_grad=True)
    key = (x.shape, w.shape, (1, 1), (1, 1, 1, 1), (1, 1), 1, "<f4",
           microtorch.get_num_threads())
    for _ in range(2 * (conv._LAYOUT.trials + 1)):  # (a warm-up call of each, then trials)
        microtorch.nn.functional.conv2d(x, w, padding=1).sum().backward()
    assert conv._LAYOUT.chosen(key) in ("blocks", "batch")


def test_lstm_rows_over_threads_match_one_thread_and_torch() -> None:
    torch = pytest.importorskip("torch")
    before = microtorch.get_num_threads()
    old_min = rnn._ROWS_MIN_WORK
    rnn._ROWS_MIN_WORK = 1  # split even this small batch
    for decide in rnn._ROWS.values():
        decide.force("threads")
    try:
        rng = np.random.default_rng(0)
        x0 = rng.standard_normal((5, 7, 3)).astype(np.float32)
        results = []
        for n in (1, 3):
            microtorch.set_num_threads(n)
            microtorch.manual_seed(0)
            lstm = microtorch.nn.LSTM(3, 4, num_layers=2, batch_first=True)
            x = microtorch.tensor(x0, requires_grad=True)
            out, (h, c) = lstm(x)
            (out.sum() + c.sum()).backward()
            results.append([out.detach().numpy(), x.grad.numpy()]
                           + [p.grad.numpy() for p in lstm.parameters()])
        torch.manual_seed(0)
        tl = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True)
        tx = torch.tensor(x0, requires_grad=True)
        tout, (th, tc) = tl(tx)
        (tout.sum() + tc.sum()).backward()
        expected = [tout.detach().numpy(), tx.grad.numpy()] + [p.grad.numpy()
                                                               for p in tl.parameters()]
        for got in results:
            for a, e in zip(got, expected):
                np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    finally:
        rnn._ROWS_MIN_WORK = old_min
        for decide in rnn._ROWS.values():
            decide.force(None)
        microtorch.set_num_threads(before)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=(2, 3), stride=1, dilation=2)])
def test_max_pool_images_over_threads_are_bit_identical(kwargs) -> None:
    from microtorch.ops import pooling

    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((8, 3, 12, 11)).astype(np.float32)
    x0[0, 0, :3, :3] = np.nan
    x0[1, 1, :4, :4] = -np.inf
    before = microtorch.get_num_threads()
    old_min = pooling._IMAGES_MIN_WORK
    pooling._IMAGES_MIN_WORK = 1
    results = []
    try:
        for variant, n in (("one", 1), ("threads", 3)):
            microtorch.set_num_threads(n)
            for decide in pooling._IMAGES.values():
                decide.force(variant)
            x = microtorch.tensor(x0, requires_grad=True)
            out = microtorch.nn.functional.max_pool2d(x, **kwargs)
            g = microtorch.tensor(np.random.default_rng(1).standard_normal(out.shape)
                                  .astype(np.float32))
            out.backward(g)
            results.append((out.detach().numpy(), x.grad.numpy()))
    finally:
        pooling._IMAGES_MIN_WORK = old_min
        microtorch.set_num_threads(before)
        for decide in pooling._IMAGES.values():
            decide.force(None)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, padding=1),
                                    dict(kernel_size=(2, 3), stride=(3, 5), dilation=(1, 2)),
                                    dict(kernel_size=(3, 2), stride=(4, 5), padding=(1, 1)),
                                    dict(kernel_size=16, ceil_mode=True),
                                    dict(kernel_size=(20, 30), padding=(10, 15), width=2)])
def test_max_pool_backward_of_disjoint_windows_adds_into_zeros(kwargs) -> None:
    """Windows that do not overlap: each gradient written at its maximum's flat position is
    PyTorch's sum into zeros bit for bit (-0.0 becomes 0.0, infinities and NaN stay at their
    element and nowhere else), with NaN and all -inf windows, padding, dilation, a window of
    256 elements (int64 offsets) and one of 600 over an image narrower than it (offsets larger
    than any distance within the image)."""
    from microtorch.ops import pooling

    kwargs = dict(kwargs)
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((3, 4, 21, kwargs.pop("width", 23))).astype(np.float32)
    x0[0, 0, :3, :3] = np.nan
    x0[1, 1, :5, :5] = -np.inf
    x = microtorch.tensor(x0, requires_grad=True)
    out = microtorch.nn.functional.max_pool2d(x, **kwargs)
    g0 = rng.standard_normal(out.shape).astype(np.float32)
    g0.reshape(-1)[:4] = [-0.0, np.inf, -np.inf, np.nan]
    out.backward(microtorch.tensor(g0))
    _, flat = microtorch.nn.functional.max_pool2d(microtorch.tensor(x0), return_indices=True,
                                                  **kwargs)
    expected = np.zeros_like(x0).reshape(x0.shape[0] * x0.shape[1], -1)
    planes = np.arange(expected.shape[0])[:, None]
    np.add.at(expected, (planes, flat.numpy().reshape(expected.shape[0], -1)),
              g0.reshape(expected.shape[0], -1))
    np.testing.assert_array_equal(x.grad.numpy().view(np.int32),
                                  expected.reshape(x0.shape).view(np.int32))
    pair = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    assert pooling._disjoint(pair(kwargs["kernel_size"]),
                             pair(kwargs.get("stride", kwargs["kernel_size"])),
                             pair(kwargs.get("dilation", 1)))


@pytest.mark.parametrize("layout", ["blocks", "batch"])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_data_movement_over_threads_is_bit_identical(forced, layout, case) -> None:
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(xs).astype(np.float32)
    w0 = rng.standard_normal(ws).astype(np.float32)
    before = microtorch.get_num_threads()
    old_min = conv._MOVES_MIN_WORK
    conv._MOVES_MIN_WORK = 1
    conv._LAYOUT.force(layout)
    results = []
    try:
        microtorch.set_num_threads(3)  # the same BLAS threads for both: only the moves differ
        for variant in ("one", "threads"):
            for decide in conv._MOVES.values():
                decide.force(variant)
            x, w = (microtorch.tensor(a, requires_grad=True) for a in (x0, w0))
            out = microtorch.nn.functional.conv2d(x, w, None, stride, padding, dilation, groups)
            (out * out).sum().backward()
            results.append([t.detach().numpy() for t in (out, x.grad, w.grad)])
    finally:
        conv._MOVES_MIN_WORK = old_min
        microtorch.set_num_threads(before)
        for decide in conv._MOVES.values():
            decide.force(None)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_large_relu_over_threads_is_bit_identical_and_checks_in_place_changes() -> None:
    from microtorch.ops import rectifier

    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((600, 1000)).astype(np.float32)
    g0 = rng.standard_normal((600, 1000)).astype(np.float32)
    before = microtorch.get_num_threads()
    results = []
    try:
        microtorch.set_num_threads(3)
        for variant in ("one", "threads"):
            for decide in rectifier._RELU.values():
                decide.force(variant)
            x = microtorch.tensor(x0, requires_grad=True)
            y = microtorch.relu(x * 1.0)
            y.backward(microtorch.tensor(g0))
            results.append((y.detach().numpy(), x.grad.numpy()))
        x = microtorch.tensor(x0, requires_grad=True)
        y = microtorch.relu(x * 1.0)
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward(microtorch.tensor(g0))
    finally:
        microtorch.set_num_threads(before)
        for decide in rectifier._RELU.values():
            decide.force(None)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(results[0][0], np.maximum(x0, 0))
    np.testing.assert_array_equal(results[0][1], np.where(x0 > 0, g0, np.float32(0)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("size", [1024, 5000, (1 << 16) + 3, 3 * (1 << 16)])
def test_relu_against_blocks_of_zeros_matches_the_scalar_maximum(dtype, size) -> None:
    # The SIMD path (maximum against an array of zeros) must give the scalar loop's bits:
    # NaN of either sign kept, -0.0 to +0.0, infinities, across block boundaries.
    rng = np.random.default_rng(size)
    x0 = rng.standard_normal(size).astype(dtype)
    specials = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf], dtype)
    x0[rng.integers(0, size, 60)] = np.resize(specials, 60)
    y = microtorch.relu(microtorch.tensor(x0)).numpy()
    expected = np.maximum(x0, 0)
    assert y.dtype == expected.dtype
    np.testing.assert_array_equal(y.view(np.uint8), expected.view(np.uint8))
