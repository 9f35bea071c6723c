"""``utils.checkpoint``: gradients bit-identical to the run without checkpointing (dropout
masks replayed), PyTorch's semantics and errors for both variants, early stop, nesting, and a
measured drop of the peak memory."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import microtorch as mt
from microtorch.backend import autotune
from microtorch.utils import checkpoint as cp

torch = pytest.importorskip("torch")
nn = mt.nn


def _grads(params: list) -> list:
    out = [p.grad.cpu().numpy().copy() for p in params]
    for p in params:
        p.grad = None
    return out


def _assert_same_bits(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


class _Blocks(nn.Module):
    """Blocks run one after another; ``mode`` picks plain, non-reentrant or reentrant
    checkpointing of each block."""

    def __init__(self, blocks) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.mode = None

    def forward(self, x):
        for block in self.blocks:
            if self.mode is None:
                x = block(x)
            else:
                x = cp.checkpoint(block, x, use_reentrant=self.mode == "reentrant")
        return x


def _mlp():
    return _Blocks([nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Dropout(0.3)),
                    nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Dropout(0.2)),
                    nn.Linear(16, 3)]), (6, 12)


def _conv():
    return _Blocks([nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Dropout2d(0.25)),
                    nn.Sequential(nn.Conv2d(4, 6, 3, stride=2), nn.GELU(), nn.MaxPool2d(2)),
                    nn.Sequential(nn.Flatten(), nn.Linear(24, 5))]), (2, 3, 10, 10)


def _transformer():
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.2,
                                       batch_first=True)
    return _Blocks([layer, nn.Linear(8, 4)]), (2, 5, 8)


@pytest.mark.parametrize("make", [_mlp, _conv, _transformer], ids=["mlp", "conv",
                                                                     "transformer"])
@pytest.mark.parametrize("mode", ["non-reentrant", "reentrant"])
def test_gradients_are_bit_identical_to_the_plain_run(device, make, mode) -> None:
    mt.manual_seed(0)
    model, shape = make()
    model = model.to(device)
    x = mt.randn(*shape).to(device).requires_grad_()
    params = [*model.parameters(), x]
    results = []
    for m in (None, mode):
        model.mode = m
        mt.manual_seed(1)
        if device == "cuda":
            mt.cuda.manual_seed(1)
        out = model(x)
        (out * out).sum().backward()
        results.append((out.detach().cpu().numpy(), _grads(params)))
        after = mt.rand(3, device=device).cpu().numpy()  # the generators end in step too
        results[-1][1].append(after)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    _assert_same_bits(results[0][1], results[1][1])


def test_dropout_masks_come_back_only_with_preserve_rng_state(device) -> None:
    mt.manual_seed(0)
    x = mt.randn(200, device=device, requires_grad=True)

    def fn(t):
        return mt.nn.functional.dropout(t, 0.5) * 3.0

    grads = []
    for preserve in (True, False):
        out = cp.checkpoint(fn, x, use_reentrant=False, preserve_rng_state=preserve)
        out.sum().backward()
        kept = (out != 0).cpu().numpy()
        grads.append(np.array_equal((x.grad != 0).cpu().numpy(), kept))
        x.grad = None
    assert grads == [True, False]


def test_use_reentrant_left_out_warns_and_runs_the_reentrant_variant() -> None:
    messages = []
    for lib in (mt, torch):
        x = lib.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = lib.utils.checkpoint.checkpoint(lambda t: t.sin(), x)
            lib.utils.checkpoint.checkpoint_sequential([lib.nn.Identity()], 1, x)
        assert out.grad_fn.name() == "CheckpointFunctionBackward"
        messages.append([str(w.message) for w in caught])
    assert messages[0] == messages[1] and len(messages[0]) == 2


def _errors(lib, run) -> list[str]:
    out = []
    for fn in run(lib):
        try:
            fn()
            out.append("no error")
        except Exception as e:  # noqa: BLE001  (the class and text are what we compare)
            out.append(f"{type(e).__name__}: {e}".replace("microtorch.", "torch."))
    return out


def test_reentrant_restrictions_raise_pytorchs_errors() -> None:
    def run(lib):
        c = lib.utils.checkpoint.checkpoint
        x = lib.ones(3, requires_grad=True)
        out = c(lambda t: t.sin(), x, use_reentrant=True)
        return [
            lambda: lib.autograd.grad(out.sum(), x, retain_graph=True),
            lambda: out.sum().backward(inputs=[x], retain_graph=True),
            lambda: c(lambda t, k=1: t * k, x, use_reentrant=True, k=2),
            lambda: c(lambda t: t, x, use_reentrant=True, debug=True),
            lambda: c(lambda t: t, x, use_reentrant=True, context_fn=lambda: (None, None)),
            lambda: c(lambda t: t.detach(), x, use_reentrant=True).sum().backward(),
            lambda: c(lambda t: t, x, use_reentrant=False, determinism_check="bits"),
            lambda: c(lambda t: t, x, use_reentrant=False, debug=True,
                      context_fn=lambda: (None, None)),
        ]

    assert _errors(mt, run) == _errors(torch, run)


def test_reentrant_without_inputs_that_require_grad() -> None:
    for lib in (mt, torch):
        w = lib.ones(3, requires_grad=True)
        with pytest.warns(UserWarning, match="^None of the inputs have requires_grad=True. "
                                             "Gradients will be None$"):
            out = lib.utils.checkpoint.checkpoint(lambda t, w=w: t * w, lib.ones(3),
                                                  use_reentrant=True)
        assert not out.requires_grad  # so w gets no gradient, as the warning says


def test_keyword_arguments_non_tensor_outputs_and_autograd_grad(device) -> None:
    def run(lib, dev):
        lib.manual_seed(0)
        x = lib.randn(4, dtype=lib.float64).to(dev).requires_grad_()

        def fn(a, scale=1.0, flag=None):
            return a.sin() * scale, 3, None, {"k": a.exp()}, flag

        out = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False, scale=2.0,
                                              flag="f")
        assert out[1:3] == (3, None) and out[4] == "f"
        loss = out[0].sum() + out[3]["k"].sum()
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return [t.detach().cpu().numpy() for t in (out[0], g, gg)]

    for a, b in zip(run(mt, device), run(torch, "cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)  # float64 sin/exp: libm ulps


def test_nested_checkpoints(device) -> None:
    calls = []

    def inner(t):
        calls.append("inner")
        return t.sin().exp()

    def outer(t):
        calls.append("outer")
        return cp.checkpoint(inner, t * 2, use_reentrant=False).cos()

    x = mt.linspace(-1, 1, 6, device=device, requires_grad=True)
    y = cp.checkpoint(outer, x, use_reentrant=False)
    calls.clear()
    (g,) = mt.autograd.grad(y.sum(), x)
    # cos's input is saved by the outer checkpoint: recomputing it reruns the inner one too
    assert calls == ["outer", "inner", "inner"]
    (ref,) = mt.autograd.grad(((x * 2).sin().exp()).cos().sum(), x)
    np.testing.assert_array_equal(g.cpu().numpy(), ref.cpu().numpy())


def _recompute_trace(lib, early_stop_ctx: bool | None, early_stop_kw: bool = True) -> list:
    calls = []

    def fn(x):
        calls.append("a")
        y = x.sin()
        calls.append("b")
        z = y.exp()
        calls.append("c")
        w = z * 2.0  # saves nothing (a number)
        calls.append("d")
        return w + 1

    x = lib.ones(3, requires_grad=True)
    c = lib.utils.checkpoint
    if early_stop_ctx is None:
        out = c.checkpoint(fn, x, use_reentrant=False, early_stop=early_stop_kw)
    else:
        with c.set_checkpoint_early_stop(early_stop_ctx):
            out = c.checkpoint(fn, x, use_reentrant=False)
    calls.clear()
    out.sum().backward(retain_graph=True)
    out.sum().backward()  # each backward pass recomputes
    return calls


def test_early_stop_of_the_recomputation() -> None:
    for ctx, kw in ((None, True), (False, True), (None, False), (True, False)):
        assert _recompute_trace(mt, ctx, kw) == _recompute_trace(torch, ctx, kw)
    assert _recompute_trace(mt, None) == ["a", "b"] * 2


def test_backward_inside_the_checkpointed_function() -> None:
    def run(lib):
        x = lib.linspace(-1, 1, 5, dtype=lib.float64, requires_grad=True)

        def fn(t):
            y = t.sin()
            z = y.cos()
            (g,) = lib.autograd.grad(z.sum(), t, create_graph=True)
            return t.cos() * g

        out = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
        out.sum().backward()
        return x.grad.numpy()

    np.testing.assert_allclose(run(mt), run(torch), rtol=1e-13)


def test_recomputation_mismatch_raises_checkpoint_error() -> None:
    def run(lib):
        c = lib.utils.checkpoint
        x = lib.ones(5, 8, requires_grad=True)

        def changing(first, later):
            state = {"n": 0}

            def fn(a):
                state["n"] += 1
                return first(a) if state["n"] == 1 else later(a)

            return fn

        fewer = changing(lambda a: a.exp().exp(), lambda a: a.exp())
        other = changing(lambda a: (a * a).exp(), lambda a: (a[:2] * a[:2]).exp())

        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a * 2

            @staticmethod
            def backward(ctx, g):
                ctx.saved_tensors  # noqa: B018
                ctx.saved_tensors  # noqa: B018  (a second unpack)
                return g * 2

        return [
            lambda: c.checkpoint(fewer, x, use_reentrant=False).sum().backward(),
            lambda: c.checkpoint(other, x, use_reentrant=False).sum().backward(),
            lambda: c.checkpoint(lambda a: Twice.apply(a.sin()), x,
                                 use_reentrant=False).sum().backward(),
        ]

    got, want = _errors(mt, run), _errors(torch, run)
    tip = "\nTip: To see a more detailed error message"
    assert [g.split(tip)[0] for g in got] == [w.split(tip)[0] for w in want]
    assert got[0].startswith("CheckpointError: torch.utils.checkpoint: A different number")
    assert issubclass(cp.CheckpointError, RuntimeError)


def test_debug_mode_lists_the_saved_tensors_of_both_runs() -> None:
    state = {"n": 0}

    def fn(a):
        state["n"] += 1
        return a.sin().exp() if state["n"] == 1 else a.exp()

    x = mt.ones(3, requires_grad=True)
    out = cp.checkpoint(fn, x, use_reentrant=False, debug=True)
    with pytest.raises(cp.CheckpointError) as info:
        out.sum().backward()
    text = str(info.value)
    assert "dumping logs of latest computation" in text
    assert "ExpBackward0: [3] torch.float32".replace("torch", "microtorch") in text
    forward, recompute = text.split("Tensors saved during recomputation")
    assert "SinBackward0" in forward and "SinBackward0" not in recompute
    assert "test_checkpoint.py" in text  # the user's line that ran each op
    assert isinstance(info.value.__cause__, cp.CheckpointError)


def test_checkpoint_sequential_matches_the_plain_model(device) -> None:
    mt.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(5) for m in (nn.Linear(8, 8), nn.Tanh())]).to(device)
    x = mt.randn(4, 8).to(device).requires_grad_()
    params = [*model.parameters(), x]
    model(x).pow(2).sum().backward()
    ref = _grads(params)
    for segments in (1, 2, 3, 10):
        for reentrant in (False, True):
            out = cp.checkpoint_sequential(model, segments, x, use_reentrant=reentrant)
            out.pow(2).sum().backward()
            _assert_same_bits(_grads(params), ref)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo$"):
        cp.checkpoint_sequential(model, 2, x, use_reentrant=False, foo=1)


def test_graph_exec_group_recomputes_once() -> None:
    calls = []

    def fn(t):
        calls.append(1)
        return t.sin(), t.cos()

    x = mt.ones(3, requires_grad=True)
    a, b = cp.checkpoint(fn, x, use_reentrant=False)
    calls.clear()
    with cp.GraphExecGroup():
        a.sum().backward()
        b.sum().backward()
    assert calls == [1]
    with cp.GraphExecGroup(), pytest.raises(RuntimeError, match="cannot be nested"):
        cp.GraphExecGroup().__enter__()


def test_recomputation_repeats_the_forwards_autotuning_picks() -> None:
    """Under the timing opt-in (``backends.cpu.benchmark``), while a convolution layout is
    still being measured, the recomputation runs the layout its forward ran (same bits, same
    saved tensors), as ``autotune.replaying``. (By default the shape rule picks the same.)"""
    layout = autotune.registry()["conv2d_layout"]
    layout.force(None)  # measuring again: each call may pick another layout
    mt.backends.cpu.benchmark = True
    try:
        mt.manual_seed(0)
        conv = nn.Conv2d(64, 8, 1)
        x = mt.randn(48, 64, 12, 12)  # several images per block: both layouts apply
        for _ in range(6):
            out = cp.checkpoint(conv, x, use_reentrant=False)
            out.sum().backward()
        log = []
        with autotune.recording(log):
            layout.pick("k", "blocks")
            layout.pick("k", "blocks")
        with autotune.replaying(log):
            again = [layout.pick("k", "blocks") for _ in range(2)]
        assert again == [entry[2] for entry in log]
    finally:
        mt.backends.cpu.benchmark = False
        layout.force(None)


def test_peak_memory_is_lower_with_checkpointing(device) -> None:
    """A deep MLP in groups of k blocks. Exact bytes after the forward: the plain run keeps
    one activation per block (each ReLU's output, the next Linear's input), the checkpointed
    one only the group boundaries (and each checkpoint's RNG state); the peak of backward is
    lower by at least what the forward stopped keeping, less the k activations one group's
    recomputation brings back."""
    depth, width, batch, k = 16, 32, 256, 4
    act = batch * width * 4
    mt.manual_seed(0)
    blocks = [nn.Sequential(nn.Linear(width, width), nn.ReLU()).to(device)
              for _ in range(depth)]
    params = [p for b in blocks for p in b.parameters()]
    x = mt.randn(batch, width).to(device)
    stats = mt.cuda if device == "cuda" else mt.cpu
    rng_bytes = mt.get_rng_state().numel()  # CPU bytes; the CUDA state is host memory too

    def group(i):
        def run(h):
            for block in blocks[i:i + k]:
                h = block(h)
            return h
        return run

    def measure(ckpt: bool):
        # Exact bytes: garbage an earlier test left in cycles must not be collected (and
        # subtracted) in the middle of the measurement: collect it first, then hold the
        # collector off until the measurement is done.
        gc.collect()
        gc.disable()
        try:
            return _measure(ckpt)
        finally:
            gc.enable()

    def _measure(ckpt: bool):
        stats.reset_peak_memory_stats()
        host_before = mt.cpu.memory_allocated()
        base = stats.memory_allocated()
        h = x
        for i in range(0, depth, k):
            h = cp.checkpoint(group(i), h, use_reentrant=False) if ckpt else group(i)(h)
        loss = h.sum()
        kept = stats.memory_allocated() - base
        host_kept = mt.cpu.memory_allocated() - host_before
        h = None
        loss.backward()
        peak = stats.max_memory_allocated() - base
        return kept, host_kept, peak, _grads(params)

    mt.cpu.memory_allocated()  # counting starts
    plain_kept, _, plain_peak, plain_grads = measure(False)
    ckpt_kept, host_kept, ckpt_peak, ckpt_grads = measure(True)
    _assert_same_bits(plain_grads, ckpt_grads)
    groups = depth // k
    assert plain_kept == depth * act + 4  # + the float32 loss
    rng = groups * rng_bytes if device == "cpu" else 0
    assert ckpt_kept == groups * act + 4 + rng  # 3 boundaries and the last output
    if device == "cuda":  # the RNG states (CPU's, and the GPU's 16 bytes) are host memory
        assert host_kept == groups * (rng_bytes + 16)
    assert ckpt_peak < plain_peak
    assert plain_peak - ckpt_peak >= (plain_kept - ckpt_kept) - k * act


def test_cuda_generator_state_round_trips(device) -> None:
    if device != "cuda":
        state = mt.get_rng_state()
        a = mt.rand(4)
        mt.set_rng_state(state)
        assert mt.equal(mt.rand(4), a)
        return
    state = mt.cuda.get_rng_state()
    assert state.dtype == mt.uint8 and tuple(state.shape) == (16,)
    a = mt.rand(5, device="cuda")
    b = mt.randn(3, device="cuda")
    mt.cuda.set_rng_state(state)
    assert mt.equal(mt.rand(5, device="cuda"), a)
    assert mt.equal(mt.randn(3, device="cuda"), b)
    with mt.random.fork_rng(devices=[0]):
        inside = mt.rand(5, device="cuda"), mt.rand(2)
    after = mt.rand(5, device="cuda"), mt.rand(2)
    assert mt.equal(inside[0], after[0]) and mt.equal(inside[1], after[1])
    with pytest.raises(RuntimeError, match="of size 16"):
        mt.cuda.set_rng_state(mt.zeros(3, dtype=mt.uint8))
