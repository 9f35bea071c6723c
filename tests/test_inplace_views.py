"""In-place operations on views (``autograd.views``: CopySlices, view regeneration) against
PyTorch: forward values, the leaves' gradients, grad_fn-free behaviour under no_grad, and the
errors for what PyTorch forbids.

Each case is ``fn(m, x, b, c)`` with ``m`` the module (``microtorch`` or ``torch``) and three
float64 leaves (shapes (3, 4), (3,), (4,)); it returns the tensors whose gradient is checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import microtorch

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

TOL = dict(rtol=1e-12, atol=1e-12)
_RNG = np.random.default_rng(7)
INPUTS = [_RNG.standard_normal((3, 4)), _RNG.standard_normal(3), _RNG.standard_normal(4)]


def as_numpy(t) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def leaves(m, device, requires_grad=True) -> list:
    if m is torch:
        return [torch.tensor(a, requires_grad=requires_grad) for a in INPUTS]
    return [m.tensor(a, device=device, requires_grad=requires_grad) for a in INPUTS]


def outputs(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compare_grads(fn, device, inputs=None) -> None:
    """Run ``fn`` on both frameworks: same outputs, then the same leaf gradients after a
    backward from every output with one random upstream gradient each."""
    runs = []
    for m in (microtorch, torch):
        ins = leaves(m, device) if inputs is None else inputs(m, device)
        outs = outputs(fn(m, *ins))
        runs.append((m, ins, outs))
    (_, ours_in, ours), (_, theirs_in, theirs) = runs
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(as_numpy(o), as_numpy(t), **TOL)
        assert o.requires_grad == t.requires_grad
        assert (o.grad_fn is None) == (t.grad_fn is None)
    rng = np.random.default_rng(1)
    pairs = [(o, t) for o, t in zip(ours, theirs) if t.requires_grad]
    upstream = [rng.standard_normal(tuple(t.shape)) for _, t in pairs]
    microtorch.autograd.backward([o for o, _ in pairs],
                                 [microtorch.tensor(g, device=device) for g in upstream])
    torch.autograd.backward([t for _, t in pairs], [torch.tensor(g) for g in upstream])
    for o, t in zip(ours_in, theirs_in):
        if not t.requires_grad:
            continue
        assert (o.grad is None) == (t.grad is None)
        if t.grad is not None:
            np.testing.assert_allclose(as_numpy(o.grad), as_numpy(t.grad), **TOL)


# -- the patterns -------------------------------------------------------------------------------
def _column_add(m, x, b, c):
    y = x * 2
    y[:, 0].add_(b)  # out[:, 0].add_(bias)
    return y


def _select_mul_then_use_both(m, x, b, c):
    y = x * 2
    v = y[:, 1]
    v.mul_(3)
    return y, v * b


def _narrow_scale(m, x, b, c):
    h = x * 1.5
    h.narrow(1, 0, 2).mul_(0.5)
    return h


def _flat_strided_zero(m, x, b, c):
    y = x * 2
    y.view(-1)[::2].zero_()
    return y


def _transpose_add(m, x, b, c):
    y = x * 1
    y.t().add_(c.reshape(4, 1))
    return y, y.t()


def _relu_on_slice(m, x, b, c):
    y = x * 2
    m.nn.functional.relu_(y[:2])
    return y


def _chain_of_views(m, x, b, c):
    y = x * 2
    y[1:][:, 0].mul_(b[1:])
    return y


def _base_modified_after_view(m, x, b, c):
    y = x * 2
    v = y[:, 1]
    y.mul_(b.reshape(3, 1))
    return v * 1, y


def _sibling_view(m, x, b, c):
    y = x * 2
    first, second = y[0], y[1]
    first.mul_(c)
    return second * 3, y.sum()


def _base_without_grad(m, x, b, c):
    out = m.zeros(3, 4, dtype=m.float64, device=x.device)
    row = out[1]  # taken before the base requires grad: regenerated afterwards
    out[:, 0].add_(b)
    return out * x, row * 2


def _several_ops_on_one_view(m, x, b, c):
    y = x * 2
    v = y[:, 1]
    v.mul_(2)
    v.add_(b)
    v.exp_()
    return y, v


def _view_then_base(m, x, b, c):
    y = x * 2
    v = y[:, 1]
    v.mul_(2)
    y.add_(x)
    return v * 1


def _setitem_through_view(m, x, b, c):
    y = x * 2
    v = y[:, 1:3]
    v[0] = c[:2]
    v[1:, 0] = 0.5
    return y


def _augmented_assignment(m, x, b, c):
    y = x * 2
    y[:, 0] += b  # getitem, __iadd__ on the view, then setitem of the view onto itself
    return y


def _copy_into_row(m, x, b, c):
    y = x * 2
    y[0].copy_(c)
    return y


def _other_operand_is_a_view(m, x, b, c):
    y = x * 2
    y[0].add_(y[1])
    return y


def _zero_dim_view(m, x, b, c):
    y = x * 2
    y[0, 1].mul_(5)
    return y


def _transposed_layout_base(m, x, b, c):
    y = x.t() * 2  # not a view, but laid out column-major
    y[:, 1].add_(c.sum())
    y[1:3].mul_(c[:2].reshape(2, 1))
    return y


def _expanded_view_regenerated(m, x, b, c):
    y = x * 2
    e = y[0:1].expand(3, 4)
    y.mul_(b.reshape(3, 1))
    return e * 1


def _permuted_3d(m, x, b, c):
    z = (x.reshape(2, 3, 2) * 1).permute(2, 0, 1)
    z[0].sub_(b.reshape(1, 3))
    z[:, 1].div_(c[:2].reshape(2, 1) ** 2 + 1)
    return z


def _masked_fill_and_clamp(m, x, b, c):
    y = x * 2
    v = y[1:]
    v.masked_fill_(v > 0, 0.25)
    y[:, ::2].clamp_(-0.5, 0.5)
    y[1].sigmoid_()
    return y


def _unsqueezed_select(m, x, b, c):
    y = x * 2
    y.unsqueeze(0)[0, 1].div_(c * c + 1)
    return y


CASES = {f.__name__[1:]: f for f in (
    _column_add, _select_mul_then_use_both, _narrow_scale, _flat_strided_zero, _transpose_add,
    _relu_on_slice, _chain_of_views, _base_modified_after_view, _sibling_view,
    _base_without_grad, _several_ops_on_one_view, _view_then_base, _setitem_through_view,
    _augmented_assignment, _copy_into_row, _other_operand_is_a_view, _zero_dim_view,
    _transposed_layout_base, _expanded_view_regenerated, _permuted_3d, _masked_fill_and_clamp,
    _unsqueezed_select)}


@pytest.mark.parametrize("name", CASES)
def test_same_values_and_gradients_as_pytorch(name, device):
    compare_grads(CASES[name], device)


@pytest.mark.parametrize("name", CASES)
def test_no_graph_under_no_grad(name, device):
    results = []
    for m in (microtorch, torch):
        with m.no_grad():
            outs = outputs(CASES[name](m, *leaves(m, device)))
        assert all(o.grad_fn is None and not o.requires_grad for o in outs)
        results.append(outs)
    for o, t in zip(*results):
        np.testing.assert_allclose(as_numpy(o), as_numpy(t), **TOL)


def test_create_graph_through_copy_slices(device):
    def fn(m, x, b, c):
        y = x * x
        y[:, 1].mul_(b)
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        return g * y

    compare_grads(fn, device)


def test_retain_grad_follows_the_view(device):
    grads = []
    for m in (microtorch, torch):
        x, b, _ = leaves(m, device)
        y = x * 2
        v = y[0:2]
        v.retain_grad()
        y.retain_grad()
        v.mul_(b[:2].reshape(2, 1))
        ((y * y).sum() + (v * v).sum()).backward()
        grads.append((as_numpy(v.grad), as_numpy(y.grad), as_numpy(x.grad)))
    for o, t in zip(*grads):
        np.testing.assert_allclose(o, t, **TOL)


def test_graph_nodes_and_base(device):
    x = microtorch.tensor(INPUTS[0], device=device, requires_grad=True)
    y = x * 2
    v = y[:, 1]
    w = v[1:]
    assert y._base is None and v._base is y and w._base is y and v._is_view()
    assert y.detach()._base is None
    v.mul_(3)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    assert repr(y.grad_fn).startswith("<CopySlices object")
    assert v.grad_fn.name() == "AsStridedBackward0"
    assert v.grad_fn.next_functions[0][0] is y.grad_fn
    assert w.grad_fn.name() == "AsStridedBackward0"  # regenerated from the base's new node
    assert v._version == y._version == 1
    assert "grad_fn=<CopySlices>" in repr(y)


def test_base_is_pytorchs_for_view_ops():
    for op in (lambda t: t[1], lambda t: t[:, 1:3], lambda t: t.t(), lambda t: t.view(-1),
               lambda t: t.permute(1, 0), lambda t: t.unsqueeze(0), lambda t: t.narrow(0, 1, 2),
               lambda t: t[0, 1], lambda t: t.reshape(4, 3), lambda t: t.expand(2, 3, 4),
               lambda t: t[1:][0], lambda t: t * 1, lambda t: t.clone(), lambda t: t[[0, 2]]):
        views = []
        for m in (microtorch, torch):
            base = m.tensor(INPUTS[0]) * 1
            out = op(base)
            views.append(out._base is base)
        assert views[0] == views[1]


# -- finite differences --------------------------------------------------------------------------
def _fd_copy_slices(x, b):
    y = x * x
    y[:, 1].mul_(b)
    y[0].add_(b.sum())
    return y


def _fd_regenerated(x, b):
    y = x * 2
    side = y.t()[1:]
    y[:, 0:2].mul_(b.reshape(3, 1))
    return side * side


def _fd_transposed_base(x, b):
    y = x.t() * x.t()
    y[1:3].sub_(b.reshape(1, 3))
    return y.tanh()


@pytest.mark.parametrize("fn", [_fd_copy_slices, _fd_regenerated, _fd_transposed_base])
def test_finite_differences(fn, device):
    finite_difference_check(fn, INPUTS[:2], device)


# -- errors --------------------------------------------------------------------------------------
def same_error(fn, device, match=None) -> None:
    """Both frameworks raise a RuntimeError for ``fn(m, x, b, c)``, with the same message (or
    both matching ``match``)."""
    messages = []
    for m in (microtorch, torch):
        with pytest.raises(RuntimeError) as info:
            fn(m, *leaves(m, device))
        messages.append(str(info.value))
    if match is None:
        assert messages[0] == messages[1]
    else:
        for message in messages:
            assert match in message, message


LEAF_VIEW_OPS = {
    "select_mul": lambda m, x, b, c: x[0].mul_(2),
    "transpose_add": lambda m, x, b, c: x.t().add_(1),
    "chain": lambda m, x, b, c: x[1:][0].mul_(2),
    "flat_zero": lambda m, x, b, c: x.view(-1).zero_(),
    "copy": lambda m, x, b, c: x[0].copy_(c),
    "setitem": lambda m, x, b, c: x[0].__setitem__(1, 5.0),
    "relu": lambda m, x, b, c: m.nn.functional.relu_(x[:2]),
}


@pytest.mark.parametrize("name", LEAF_VIEW_OPS)
def test_view_of_leaf_raises(name, device):
    same_error(LEAF_VIEW_OPS[name], device)


def test_view_that_is_a_leaf_raises(device):
    def fn(m, x, b, c):
        view = m.zeros(4, dtype=m.float64, device=x.device)[1:3].requires_grad_()
        view.mul_(2)

    same_error(fn, device)


def _no_grad_view(m, x, b, c):
    y = x * 2
    with m.no_grad():
        v = y[0]
    v.mul_(2)


def _no_grad_view_other_operand(m, x, b, c):
    out = m.zeros(3, 4, dtype=m.float64, device=x.device)
    with m.no_grad():
        v = out[0]
    v.add_(c)


def _no_grad_view_of_leaf(m, x, b, c):
    with m.no_grad():
        v = x[0]
    v.mul_(2)


def _view_of_no_grad_view(m, x, b, c):
    y = x * 2
    with m.no_grad():
        v = y[1:]
    v[:, 0].mul_(2)


def _no_grad_view_after_base_changed(m, x, b, c):
    y = x * 2
    with m.no_grad():
        v = y[0]
    y.mul_(2)
    return v.grad_fn


def _unbind(m, x, b, c):
    (x * 2).unbind(0)[1].mul_(2)


def _split(m, x, b, c):
    (x * 2).split(2)[0].mul_(2)


def _split_sizes(m, x, b, c):
    (x * 2).split([1, 2])[1].add_(1)


def _chunk(m, x, b, c):
    (x * 2).chunk(2, 1)[1].mul_(2)


def _iterate(m, x, b, c):
    for row in x * 2:
        row.mul_(2)


def _unbind_without_grad_base(m, x, b, c):
    m.zeros(3, 4, dtype=m.float64, device=x.device).unbind(0)[0].add_(c)


def _unbind_after_base_changed(m, x, b, c):
    y = x * 2
    parts = y.unbind(0)
    y.mul_(2)
    return parts[1].grad_fn


def _overlapping(m, x, b, c):
    (x * 2)[0:1].expand(3, 4).mul_(2)


ERRORS = {f.__name__[1:]: f for f in (
    _no_grad_view, _no_grad_view_other_operand, _no_grad_view_of_leaf,
    _no_grad_view_after_base_changed, _unbind, _split, _split_sizes, _chunk, _iterate,
    _unbind_without_grad_base, _unbind_after_base_changed, _overlapping)}


@pytest.mark.parametrize("name", ERRORS)
def test_forbidden_like_pytorch(name, device):
    same_error(ERRORS[name], device)


def test_forbidden_view_of_forbidden_view(device):
    same_error(_view_of_no_grad_view, device,
               match="created in no_grad mode and is being modified inplace with grad mode "
                     "enabled")

    def fn(m, x, b, c):
        (x * 2).unbind(0)[0][1:].mul_(2)

    same_error(fn, device, match="is a view and is being modified inplace. This view is the "
                                 "output of a function that returns multiple views.")


def test_allowed_under_no_grad(device):
    for m in (microtorch, torch):
        x, _, _ = leaves(m, device)
        with m.no_grad():
            x[0].mul_(2)
            (x * 2).unbind(0)[0].mul_(2)
            v = x[1]
            v.add_(1)
        assert x.is_leaf and x.grad_fn is None


def test_saved_values_overwritten_through_a_view_are_detected(device):
    def overwrite_saved_operand(m, x, b, c):
        y = x * 2
        y[:, :2].mul_(y[:, 2:])
        y.sum().backward()

    def overwrite_saved_output(m, x, b, c):
        h = x.tanh()
        h.narrow(1, 0, 2).mul_(0.5)
        h.sum().backward()

    for fn in (overwrite_saved_operand, overwrite_saved_output):
        same_error(fn, device, match="modified by an inplace operation")


def test_base_with_gaps_raises_before_writing():
    data = np.arange(12.0)[::2]  # a base that is itself strided: no as_strided description
    base = microtorch.from_numpy(data)
    b = microtorch.ones(2, dtype=microtorch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="storage is not dense"):
        base[1:3].add_(b)
    assert data.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0] and base.grad_fn is None


def test_base_whose_data_was_replaced_raises(device):
    base = microtorch.zeros(3, 4, dtype=microtorch.float64, device=device)
    view = base[0]
    base.data = microtorch.zeros(3, 4, dtype=microtorch.float64, device=device)
    c = microtorch.ones(4, dtype=microtorch.float64, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="no longer shares storage with its base"):
        view.add_(c)


def test_views_start_checking_at_the_first_graph_change():
    # A fresh interpreter: views are plain Tensors until a recorded in-place op changes the
    # node of a base with live views; the views alive then are converted and regenerate.
    code = textwrap.dedent("""
        import microtorch as mt
        x = mt.arange(12.0).reshape(3, 4).requires_grad_()
        y = x * 2
        v = y[:, 1]
        w = (x * 3).t()
        assert type(v) is mt.Tensor and type(w) is mt.Tensor
        (x * 4)[0].mul_(2)          # a view, but its own base: no other live view is stale
        y.mul_(3)
        assert type(v) is not mt.Tensor and v.grad_fn.name() == "AsStridedBackward0"
        assert w.grad_fn.name() == "TBackward0"   # its base's node did not change
        (v.sum() + w.sum()).backward()
        assert x.grad[:, 1].tolist() == [9.0, 9.0, 9.0], x.grad
        assert x.grad[:, 0].tolist() == [3.0, 3.0, 3.0], x.grad
        print("ok")
    """)
    repo = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=repo, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


# -- property test -------------------------------------------------------------------------------
INPLACE = {
    "mul_scalar": lambda v, z: v.mul_(2.5),
    "add_tensor": lambda v, z: v.add_(z),
    "mul_tensor": lambda v, z: v.mul_(z),
    "sigmoid_": lambda v, z: v.sigmoid_(),
    "zero_": lambda v, z: v.zero_(),
    "copy_": lambda v, z: v.copy_(z),
    "setitem": lambda v, z: v.__setitem__(Ellipsis, z),
}


@st.composite
def view_chains(draw):
    """A shape, a chain of basic views of it (strided slices, transposes, selects) and the
    view's final shape."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    current, steps = list(shape), []
    for _ in range(draw(st.integers(1, 4))):
        kinds = ["slice", "select"] + (["transpose"] if len(current) >= 2 else [])
        if not current:
            break
        kind = draw(st.sampled_from(kinds))
        d = draw(st.integers(0, len(current) - 1))
        if kind == "slice":
            start = draw(st.integers(0, current[d] - 1))
            stop = draw(st.integers(start + 1, current[d]))
            step = draw(st.integers(1, 3))
            steps.append(("slice", d, start, stop, step))
            current[d] = len(range(start, stop, step))
        elif kind == "select":
            steps.append(("select", d, draw(st.integers(-current[d], current[d] - 1))))
            current.pop(d)
        else:
            d1 = draw(st.integers(0, len(current) - 1))
            steps.append(("transpose", d, d1))
            current[d], current[d1] = current[d1], current[d]
    return tuple(shape), steps, tuple(current)


def _apply_view(t, step):
    kind, d = step[:2]
    if kind == "slice":
        return t[(slice(None),) * d + (slice(*step[2:]),)]
    if kind == "select":
        return t[(slice(None),) * d + (step[2],)]
    return t.transpose(d, step[2])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chain=view_chains(), op=st.sampled_from(sorted(INPLACE)), sibling=st.booleans(),
       data=st.data())
def test_random_view_chains_with_one_inplace_op(chain, op, sibling, data, device):
    shape, steps, view_shape = chain
    elements = st.floats(-2, 2, allow_nan=False)
    arrays = [data.draw(hnp.arrays(np.float64, shape, elements=elements)),
              data.draw(hnp.arrays(np.float64, view_shape, elements=elements))]

    def fn(m, x, z):
        y = x * 1.5
        side = y.transpose(0, -1)[..., :1] if sibling else None  # taken before the write
        v = y
        for step in steps:
            v = _apply_view(v, step)
        INPLACE[op](v, z)
        return (y, v) if side is None else (y, v, side * 2)

    def inputs(m, dev):
        if m is torch:
            return [torch.tensor(a, requires_grad=True) for a in arrays]
        return [m.tensor(a, device=dev, requires_grad=True) for a in arrays]

    compare_grads(fn, device, inputs)


@pytest.mark.parametrize("sizes", [(3, 1), (1, 1), (2, 1, 1), (1, 2)])
def test_repeat_is_a_copy_even_when_only_size_one_dims_repeat(sizes, device):
    # (reshaping the expanded input can stay a view there; PyTorch's repeat always copies)
    x = microtorch.zeros(1, 3, device=device)
    y = x.repeat(*sizes)
    y[(0,) * y.ndim] = 5.0
    assert not x.cpu().numpy().any() and y._base is None
    leaf = microtorch.ones(1, 3, device=device, requires_grad=True)
    z = leaf.repeat(*sizes)
    z.mul_(2.0)  # not a view of the leaf: allowed, as in PyTorch
    z.sum().backward()
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), np.full((1, 3), 2.0 * np.prod(sizes)))
