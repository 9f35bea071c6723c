"""The autograd engine: PyTorch's accumulation rules (DESIGN.md §3), graphs, hooks, modes."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import microtorch as mt
from microtorch.autograd import Function


def leaf(values, device, dtype=mt.float32):
    return mt.tensor(values, dtype=dtype, device=device, requires_grad=True)


def host(t):
    return np.asarray(t.detach().cpu())


def shares_memory(a, b) -> bool:
    xp = a._backend.xp
    return bool(xp.shares_memory(a._data, b._data))


# -- accumulation into .grad --------------------------------------------------------------------
def address(arr) -> int:
    """The data pointer of a NumPy or CuPy array (remembering it holds no reference)."""
    return arr.data.ptr if hasattr(arr.data, "ptr") else arr.__array_interface__["data"][0]


class PassThrough(Function):
    """Identity whose backward hands out a fresh buffer and notes its address."""

    handed_out = None

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        out = grad._data * 1  # a fresh, exclusively owned, contiguous buffer
        PassThrough.handed_out = address(out)
        return mt.Tensor._make(out)


def test_exclusively_owned_gradient_is_adopted_without_copy(device):
    x = leaf([1.0, 2.0, 3.0], device)
    y = PassThrough.apply(x)
    y.backward(mt.ones(3, device=device))
    assert address(x.grad._data) == PassThrough.handed_out


def test_gradient_held_elsewhere_is_copied(device):
    x = leaf([1.0, 2.0], device)
    g = mt.tensor([5.0, 6.0], device=device)
    x.backward(g)  # the user's tensor goes straight to the leaf
    assert not shares_memory(x.grad, g)
    x.grad.add_(1)
    assert host(g).tolist() == [5.0, 6.0]


def test_two_leaves_never_share_a_buffer(device):
    a, b = leaf([1.0, 2.0], device), leaf([3.0, 4.0], device)
    for _ in range(2):
        (a + b).sum().backward()
    assert host(a.grad).tolist() == [2.0, 2.0] and host(b.grad).tolist() == [2.0, 2.0]
    assert a.grad is not b.grad and not shares_memory(a.grad, b.grad)
    a.grad.add_(1)
    assert host(b.grad).tolist() == [2.0, 2.0]


def test_first_gradient_shared_by_add_is_not_aliased(device):
    a, b = leaf([1.0, 2.0], device), leaf([3.0, 4.0], device)
    (a + b).backward(mt.ones(2, device=device))
    assert not shares_memory(a.grad, b.grad)
    a.grad.zero_()
    assert host(b.grad).tolist() == [1.0, 1.0]


def test_gradient_from_sum_is_writable(device):
    x = leaf([[1.0, 2.0], [3.0, 4.0]], device)
    x.sum().backward()  # backward of sum hands out a read-only broadcast view
    x.grad.zero_()
    x.grad.add_(2)
    assert host(x.grad).tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_existing_grad_accumulates_in_place(device):
    x = leaf([1.0, 2.0], device)
    (x * 3).sum().backward()
    earlier = x.grad
    (x * 4).sum().backward()
    assert x.grad is earlier
    assert host(earlier).tolist() == [7.0, 7.0]


def test_create_graph_accumulates_out_of_place_with_grad_fn(device):
    x = leaf([2.0], device)
    (x ** 3).sum().backward(create_graph=True)
    first = x.grad
    assert first.grad_fn is not None and host(first).tolist() == [12.0]
    (x ** 2).sum().backward(create_graph=True)
    assert x.grad is not first
    assert x.grad.grad_fn is not None
    assert host(x.grad).tolist() == [16.0]
    assert host(first).tolist() == [12.0]


def test_unreached_parameters_keep_their_grad(device):
    used, unused = leaf([1.0], device), leaf([1.0], device)
    (used * 2).sum().backward()
    assert unused.grad is None
    unused.grad = mt.zeros(1, device=device)
    (used * 2).sum().backward()
    assert host(unused.grad).tolist() == [0.0]


def test_grads_sum_across_backward_calls_until_zeroed(device):
    x = leaf([1.0, 1.0], device)
    for _ in range(3):
        (x * x).sum().backward()
    assert host(x.grad).tolist() == [6.0, 6.0]
    x.grad.zero_()
    (x * x).sum().backward()
    assert host(x.grad).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("bad, message", [
    (lambda d: mt.zeros(3, device=d), "size"),
    (lambda d: mt.zeros(2, dtype=mt.float64, device=d), "type"),
    (lambda d: [0.0, 0.0], "Tensor"),
])
def test_assigning_grad_is_checked(device, bad, message):
    x = leaf([1.0, 2.0], device)
    with pytest.raises((RuntimeError, TypeError), match=message):
        x.grad = bad(device)
    assert x.grad is None


def test_one_tensor_reused_many_times(device):
    x = leaf([1.0, 2.0, 3.0], device)
    y = x * x + x * 2 + x.exp() * x
    y.sum().backward()
    xs = np.array([1.0, 2.0, 3.0])
    expected = 2 * xs + 2 + np.exp(xs) * (1 + xs)
    np.testing.assert_allclose(host(x.grad), expected, rtol=1e-6)


# -- graph lifetime ---------------------------------------------------------------------------
def test_second_backward_through_freed_graph_raises(device):
    x = leaf([1.0, 2.0], device)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_second_backward(device):
    x = leaf([1.0, 2.0], device)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert host(x.grad).tolist() == [4.0, 8.0]


def test_graph_without_saved_tensors_can_run_twice(device):
    a, b = leaf([1.0], device), leaf([2.0], device)
    y = (a + b).sum()
    y.backward()
    y.backward()  # AddBackward and SumBackward save nothing, as in PyTorch
    assert host(a.grad).tolist() == [2.0]


def test_non_scalar_backward_needs_gradient(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        (x * 2).backward()


def test_backward_on_tensor_without_grad_raises(device):
    with pytest.raises(RuntimeError, match="does not require grad"):
        mt.ones(1, device=device).sum().backward()


def test_deep_chain_of_ten_thousand_nodes(device):
    x = leaf([1.0], device, mt.float64)
    y = x
    for _ in range(10_000):
        y = y * 1.0
    y.sum().backward()
    assert host(x.grad).tolist() == [1.0]
    del y  # freeing a 10,000-deep graph must not overflow the stack either


def test_modifying_a_saved_tensor_in_place_is_detected(device):
    x = leaf([1.0, 2.0], device)
    h = x * 1
    y = (h * h).sum()
    with mt.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


# -- higher order, autograd.grad ---------------------------------------------------------------
def test_second_derivative_of_cube(device):
    x = leaf(2.0, device)
    (dx,) = mt.autograd.grad(x ** 3, x, create_graph=True)
    (d2x,) = mt.autograd.grad(dx, x)
    assert dx.item() == 12.0 and d2x.item() == 12.0


def test_autograd_grad_leaves_dot_grad_alone(device):
    x, w = leaf([1.0, 2.0], device), leaf([3.0, 4.0], device)
    (gx,) = mt.autograd.grad((x * w).sum(), x)
    assert host(gx).tolist() == [3.0, 4.0]
    assert x.grad is None and w.grad is None


def test_autograd_grad_unused_input(device):
    x, unused = leaf([1.0], device), leaf([1.0], device)
    with pytest.raises(RuntimeError, match="not have been used"):
        mt.autograd.grad((x * 2).sum(), [x, unused])
    gx, gu = mt.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gu is None and host(gx).tolist() == [2.0]


def test_backward_inputs_restricts_accumulation(device):
    x, w = leaf([1.0], device), leaf([2.0], device)
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None and host(w.grad).tolist() == [1.0]


# -- hooks ------------------------------------------------------------------------------------
def test_leaf_hook_replaces_gradient(device):
    x = leaf([1.0, 2.0], device)
    seen = []
    handle = x.register_hook(lambda g: seen.append(host(g).tolist()) or g * 10)
    (x * 2).sum().backward()
    assert seen == [[2.0, 2.0]] and host(x.grad).tolist() == [20.0, 20.0]
    handle.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert host(x.grad).tolist() == [2.0, 2.0]


def test_non_leaf_hook_and_retain_grad(device):
    x = leaf([1.0, 2.0], device)
    h = x * 3
    h.retain_grad()
    h.register_hook(lambda g: g * 2)
    (h * h).sum().backward()
    # the hook runs before the gradient flows on; retain_grad stores the hooked value
    assert host(h.grad).tolist() == [12.0, 24.0]
    assert host(x.grad).tolist() == [36.0, 72.0]


# -- modes --------------------------------------------------------------------------------------
def test_no_grad_enable_grad_and_set_grad_enabled(device):
    x = leaf([1.0], device)
    with mt.no_grad():
        assert not (x * 2).requires_grad
        with mt.enable_grad():
            assert (x * 2).requires_grad
    mt.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        mt.set_grad_enabled(True)
    with mt.set_grad_enabled(False):
        assert not mt.is_grad_enabled()
    assert mt.is_grad_enabled()

    @mt.no_grad()
    def evaluate():
        return x * 2

    assert not evaluate().requires_grad


def test_in_place_on_leaf_requiring_grad(device):
    w = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w -= 1
    (w * w).sum().backward()
    with mt.no_grad():
        w -= 0.1 * w.grad  # the seeds' manual gradient-descent step
    np.testing.assert_allclose(host(w), [0.8, 1.6], rtol=1e-6)
    assert w.is_leaf and w.requires_grad


def test_in_place_on_non_leaf_is_recorded(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    y.add_(1)
    y.mul_(3)
    y.sum().backward()
    assert host(x.grad).tolist() == [6.0, 6.0]


def test_variable_shim_returns_tensor(device):
    v = mt.autograd.Variable(mt.ones(2, device=device), requires_grad=True)
    assert isinstance(v, mt.Tensor) and v.requires_grad and v.is_leaf


def test_anomaly_mode_names_the_op(device):
    x = leaf([0.0], device)
    with mt.autograd.set_detect_anomaly(True):
        y = x.sqrt() * 0  # d/dx sqrt at 0 is inf; times 0 gives nan
        with pytest.raises(RuntimeError, match="SqrtBackward0"):
            y.sum().backward()


def test_detach_shares_data_and_cuts_graph(device):
    x = leaf([1.0, 2.0], device)
    d = (x * 2).detach()
    assert d.grad_fn is None and not d.requires_grad
    y = x * 2
    y.detach_()
    assert y.is_leaf


# -- memory -----------------------------------------------------------------------------------
def _train_like_iteration(w, x):
    loss = ((x @ w).tanh() ** 2).mean()
    loss.backward()
    with mt.no_grad():
        w -= 0.01 * w.grad
    w.grad = None


def test_training_loop_memory_is_steady_and_cycle_free():
    w = mt.randn(32, 16, requires_grad=True)
    x = mt.randn(64, 32)
    gc.collect()
    gc.disable()
    try:
        tracemalloc.start()
        traced, buffers = [], []
        for _ in range(6):  # 3,000 iterations in windows of 500
            for _ in range(500):
                _train_like_iteration(w, x)
            traced.append(tracemalloc.get_traced_memory()[0])
            buffers.append(mt.cpu.memory_allocated())
        tracemalloc.stop()
        leaked_cycles = gc.collect()
    finally:
        gc.enable()
    # CPython's free lists (which tracemalloc counts as allocated) fill up over the first
    # windows; after that, a leak of even one small object per iteration would show.
    growth = [b - a for a, b in zip(traced, traced[1:])]
    assert max(growth[-2:]) < 4 * 1024, f"traced memory grew per window: {growth}"
    assert len(set(buffers)) == 1, f"tensor buffers grew: {buffers}"
    assert leaked_cycles == 0, f"{leaked_cycles} objects were only freed by the cycle collector"


def test_cpu_memory_stats_count_live_buffers():
    base = mt.cpu.memory_allocated()
    t = mt.zeros(1000, dtype=mt.float64)
    assert mt.cpu.memory_allocated() - base == 8000
    view = t[10:20]
    assert mt.cpu.memory_allocated() - base == 8000  # views cost nothing
    mt.cpu.reset_peak_memory_stats()
    del t, view
    assert mt.cpu.memory_allocated() == base
    assert mt.cpu.max_memory_allocated() >= base + 8000


def test_grad_takes_pytorch_deprecated_only_inputs():
    torch = pytest.importorskip("torch")
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    (g,) = mt.autograd.grad((x ** 3).sum(), x, only_inputs=True, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(FutureWarning) as t_warn:
        torch.autograd.grad((xt ** 3).sum(), xt, only_inputs=False)
    with pytest.warns(FutureWarning) as m_warn:
        mt.autograd.grad((x ** 3).sum(), x, only_inputs=False)
    assert str(m_warn[0].message) == str(t_warn[0].message)
    # is_grads_batched: one batched backward (vmap), as PyTorch's
    (gb,) = mt.autograd.grad(x ** 3, x, mt.eye(2), is_grads_batched=True)
    (tgb,) = torch.autograd.grad(xt ** 3, xt, torch.eye(2), is_grads_batched=True)
    np.testing.assert_allclose(gb.numpy(), tgb.numpy())
