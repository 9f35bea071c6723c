"""``microtorch.vmap`` against ``torch.vmap`` and against the per-sample loop: batching rules for
elementwise, reduction, matmul, shape, indexing and nn.functional ops (one batched call: no
per-sample fallback warning), in_dims/out_dims, nesting, chunking, randomness, PyTorch's errors,
and gradients through vmap.

Values are float64 and agree with PyTorch's and with the loop's to 1e-12 (the batched kernels
may sum in another order than the per-sample ones: a tolerance, not bit equality, for those)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as MF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

TOL = dict(rtol=1e-12, atol=1e-12)
B = 3


def _gen(seed: int = 0):
    g = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    def ints(high, *shape):
        return torch.randint(0, high, shape, generator=g)

    return rand, ints


def _to_mt(x, device):
    if isinstance(x, torch.Tensor):
        return mt.tensor(x.detach().numpy(), device=device)
    return x


def _np(t):
    return t.detach().cpu().numpy()


# (id, fn(T, F, *args), inputs(rand, ints), in_dims)
OPS = [
    ("exp_sin", lambda T, F, x: x.exp() * x.sin(), lambda r, i: [r(B, 4)], 0),
    ("add_broadcast", lambda T, F, x, y: x + y, lambda r, i: [r(B, 4), r(B, 2, 4)], 0),
    ("add_unbatched", lambda T, F, x, y: x - y * 2.5, lambda r, i: [r(B, 2, 4), r(4)], (0, None)),
    ("where", lambda T, F, x: T.where(x > 0, x, -x), lambda r, i: [r(B, 4, 2)], 0),
    ("clamp", lambda T, F, x: x.clamp(-0.5, 0.5), lambda r, i: [r(B, 5)], 0),
    ("pow", lambda T, F, x, y: x.abs() ** y, lambda r, i: [r(B, 4), r(B, 4)], 0),
    ("max_dim", lambda T, F, x: x.max(dim=1).values + x.amin(0).sum(), lambda r, i: [r(B, 4, 5)],
     0),
    ("max_all_argmax", lambda T, F, x: x.max() + x.argmax() + x.argmax(-1).sum(),
     lambda r, i: [r(B, 4, 5)], 0),
    ("sum_mean_var", lambda T, F, x: x.sum((0, -1), keepdim=True) + x.mean(0) + x.var(1).sum()
     + x.std(), lambda r, i: [r(B, 4, 5, 2)], 0),
    ("norm_logsumexp", lambda T, F, x: x.norm() + x.norm(dim=1).sum() + x.logsumexp(1),
     lambda r, i: [r(B, 4, 5)], 0),
    ("cumsum_prod", lambda T, F, x: x.cumsum(1) * x.prod(1, keepdim=True),
     lambda r, i: [r(B, 4, 5)], 0),
    ("matmul_vv", lambda T, F, x, y: x @ y, lambda r, i: [r(B, 4), r(B, 4)], 0),
    ("matmul_mv", lambda T, F, x, y: x @ y, lambda r, i: [r(B, 3, 4), r(B, 4)], 0),
    ("matmul_vm", lambda T, F, x, y: x @ y, lambda r, i: [r(B, 4), r(B, 4, 3)], 0),
    ("matmul_broadcast", lambda T, F, x, y: x @ y, lambda r, i: [r(B, 2, 3, 4), r(4, 2)],
     (0, None)),
    ("matmul_unbatched_left", lambda T, F, x, y: x @ y, lambda r, i: [r(2, 3, 4), r(B, 4, 5)],
     (None, 0)),
    ("bmm_mm_mv_dot", lambda T, F, x, y: T.bmm(x, y).sum() + T.mm(x[0], y[0])
     + T.mv(x[0], y[0, :, 0]).sum() + T.dot(x[0, 0], x[1, 0]),
     lambda r, i: [r(B, 2, 3, 4), r(B, 2, 4, 2)], 0),
    ("einsum", lambda T, F, x, y: T.einsum("ij,jk->ik", x, y) + T.einsum("ij,jk", x, y),
     lambda r, i: [r(B, 3, 4), r(B, 4, 2)], 0),
    ("einsum_ellipsis", lambda T, F, x, y: T.einsum("...i,...i->...", x, y),
     lambda r, i: [r(B, 2, 4), r(2, 4)], (0, None)),
    ("outer", lambda T, F, x, y: T.outer(x, y), lambda r, i: [r(B, 3), r(B, 4)], 0),
    ("view_reshape", lambda T, F, x: x.reshape(2, 6).view(12)[::2].unsqueeze(0).squeeze(),
     lambda r, i: [r(B, 3, 4)], 0),
    ("permute_transpose", lambda T, F, x: x.permute(2, 0, 1).transpose(0, 1).flatten(1),
     lambda r, i: [r(B, 2, 3, 4)], 0),
    ("t_mT", lambda T, F, x: x.t() @ x + x.mT @ x, lambda r, i: [r(B, 3, 4)], 0),
    ("cat_stack", lambda T, F, x, y: T.cat([x, y, x], 1).sum() + T.stack([x, y]).sum(0),
     lambda r, i: [r(B, 2, 3), r(2, 3)], (0, None)),
    ("split_chunk_unbind", lambda T, F, x: T.split(x, [1, 3], dim=1)[1]
     * x.chunk(2, 0)[0].sum() + x.unbind(1)[2].sum(), lambda r, i: [r(B, 2, 4)], 0),
    ("expand_repeat", lambda T, F, x: x.unsqueeze(1).expand(2, 3, 5).repeat(1, 2, 1),
     lambda r, i: [r(B, 2, 5)], 0),
    ("flip_roll", lambda T, F, x: x.flip(0).roll(1, 1), lambda r, i: [r(B, 3, 4)], 0),
    ("basic_index", lambda T, F, x: x[1:, ::2, None, ..., 0], lambda r, i: [r(B, 3, 4, 2)], 0),
    ("index_int_tensor", lambda T, F, x, k: x[k].sum(0) + x[:, k[0]], lambda r, i: [
        r(B, 3, 3), i(3, 3, 3)], (0, None)),
    ("index_separated", lambda T, F, x: x[T.tensor([0, 1]), :, T.tensor([1, 0])],
     lambda r, i: [r(B, 2, 3, 4)], 0),
    ("index_batched", lambda T, F, x, k: x[k], lambda r, i: [r(B, 5, 2), i(5, B, 3)], 0),
    ("index_unbatched_by_batched", lambda T, F, x, k: x[k], lambda r, i: [r(5, 2), i(5, B, 3)],
     (None, 0)),
    ("gather_index_select", lambda T, F, x, k: x.gather(1, k) + x.index_select(1, T.tensor([
        2, 0])).sum(), lambda r, i: [r(B, 3, 5), i(5, B, 3, 2)], 0),
    ("masked_fill", lambda T, F, x: x.masked_fill(x > 0, 0.0), lambda r, i: [r(B, 3, 5)], 0),
    ("setitem_clone", lambda T, F, x: _set(x.clone(), (slice(None), 1), x[:, 0] * 2),
     lambda r, i: [r(B, 3, 4)], 0),
    ("scatter_add_out_of_place", lambda T, F, x, k: T.zeros(3, 5, dtype=x.dtype,
                                                          device=x.device).scatter_add(1, k, x),
     lambda r, i: [r(B, 3, 2), i(5, B, 3, 2)], 0),
    ("linear", lambda T, F, x, w, b: F.linear(x, w, b), lambda r, i: [r(B, 5), r(4, 5), r(4)],
     (0, None, None)),
    ("linear_batched_weights", lambda T, F, x, w, b: F.linear(x, w, b),
     lambda r, i: [r(B, 2, 5), r(B, 4, 5), r(B, 4)], 0),
    ("conv2d", lambda T, F, x, w: F.conv2d(x, w, padding=1),
     lambda r, i: [r(B, 2, 3, 6, 6), r(4, 3, 3, 3)], (0, None)),
    ("conv2d_batched_weights", lambda T, F, x, w: F.conv2d(x, w, stride=2),
     lambda r, i: [r(B, 2, 3, 6, 6), r(B, 4, 3, 3, 3)], 0),
    ("conv1d", lambda T, F, x, w: F.conv1d(x, w), lambda r, i: [r(B, 2, 3, 7), r(4, 3, 3)],
     (0, None)),
    ("pools", lambda T, F, x: F.max_pool2d(x, 2) + F.avg_pool2d(x, 2),
     lambda r, i: [r(B, 2, 3, 6, 6)], 0),
    ("softmax_log_softmax", lambda T, F, x: F.softmax(x, -1) + F.log_softmax(x, 0),
     lambda r, i: [r(B, 3, 4)], 0),
    ("cross_entropy", lambda T, F, x, y: F.cross_entropy(x, y) + F.cross_entropy(
        x, y, reduction="sum", label_smoothing=0.1), lambda r, i: [r(B, 4, 5), i(5, B, 4)], 0),
    ("cross_entropy_one_sample", lambda T, F, x, y: F.cross_entropy(x, y),
     lambda r, i: [r(B, 5), i(5, B)], 0),
    ("nll_mse_l1", lambda T, F, x, y, z: F.nll_loss(F.log_softmax(x, 1), y) + F.mse_loss(x, z)
     + F.l1_loss(x, z), lambda r, i: [r(B, 4, 5), i(5, B, 4), r(B, 4, 5)], 0),
    ("activations", lambda T, F, x: F.relu(x) + F.gelu(x) + F.silu(x) + T.tanh(x)
     + T.sigmoid(x) + F.elu(x) + F.leaky_relu(x, 0.1) + F.softplus(x)
     + F.gelu(x, approximate="tanh") + F.hardtanh(x) + F.mish(x), lambda r, i: [r(B, 3, 4)], 0),
    ("layer_norm", lambda T, F, x, w, b: F.layer_norm(x, (4,), w, b),
     lambda r, i: [r(B, 3, 4), r(4), r(4)], (0, None, None)),
    ("group_norm", lambda T, F, x: F.group_norm(x, 2), lambda r, i: [r(B, 2, 4, 3)], 0),
    ("batch_norm_eval", lambda T, F, x, m, v: F.batch_norm(x, m, v, training=False),
     lambda r, i: [r(B, 4, 3), r(3), r(3).abs()], (0, None, None)),
    ("embedding", lambda T, F, k, w: F.embedding(k, w), lambda r, i: [i(6, B, 3), r(6, 4)],
     (0, None)),
    ("one_hot", lambda T, F, k: F.one_hot(k, 5), lambda r, i: [i(5, B, 3)], 0),
    ("sort_topk", lambda T, F, x: x.sort(1).values + x.topk(2, 1).values.sum(),
     lambda r, i: [r(B, 3, 4)], 0),
    ("tril_diagonal_trace", lambda T, F, x: x.tril() + x.triu(1) + T.diagonal(x).sum()
     + x.trace(), lambda r, i: [r(B, 4, 4)], 0),
    ("pad", lambda T, F, x: F.pad(x, (1, 2)), lambda r, i: [r(B, 3, 4)], 0),
    ("attention", lambda T, F, q, k, v: F.scaled_dot_product_attention(q, k, v),
     lambda r, i: [r(B, 2, 3, 4), r(B, 2, 3, 4), r(B, 2, 3, 4)], 0),
    ("cosine_similarity", lambda T, F, x, y: F.cosine_similarity(x, y, dim=-1),
     lambda r, i: [r(B, 3, 4), r(B, 3, 4)], 0),
    ("new_tensors", lambda T, F, x: x + x.new_zeros(4) + T.zeros_like(x)
     + T.ones(4, dtype=x.dtype, device=x.device), lambda r, i: [r(B, 4)], 0),
    ("dtype_casts", lambda T, F, x: x.float().double() + x.to(T.float32).sum(),
     lambda r, i: [r(B, 4)], 0),
    ("erf_special", lambda T, F, x: T.erf(x) + T.lgamma(x.abs() + 1), lambda r, i: [r(B, 4)], 0),
]


def _set(t, key, value):
    t[key] = value
    return t


@pytest.mark.parametrize("case", OPS, ids=[c[0] for c in OPS])
def test_vmap_matches_torch_and_the_loop_with_one_batched_call(case, device):
    name, fn, make, in_dims = case
    rand, ints = _gen()
    inputs = make(rand, ints)
    ours_in = [_to_mt(x, device) for x in inputs]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop")
        ours = mt.vmap(lambda *a: fn(mt, MF, *a), in_dims)(*ours_in)
    theirs = torch.vmap(lambda *a: fn(torch, TF, *a), in_dims)(*inputs)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(_np(ours), theirs.numpy(), **TOL)
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(inputs)
    loop = mt.stack([fn(mt, MF, *(x.select(d, b) if d is not None else x
                                  for x, d in zip(ours_in, dims))) for b in range(B)])
    np.testing.assert_allclose(_np(ours), _np(loop), **TOL)


def test_elementwise_results_equal_the_loop_bit_for_bit(device):
    x = mt.randn(5, 7, dtype=mt.float64, device=device)
    f = lambda t: (t.exp() * t.sin() + 1).tanh() / (t * t + 1)  # noqa: E731
    np.testing.assert_array_equal(_np(mt.vmap(f)(x)), _np(mt.stack([f(r) for r in x])))


def test_a_function_without_rule_runs_per_sample_with_pytorchs_warning(device):
    x = mt.sort(mt.randn(4, 6, dtype=mt.float64, device=device), dim=1).values
    v = mt.randn(4, 3, dtype=mt.float64, device=device)
    with pytest.warns(UserWarning, match="There is a performance drop because we have not yet "
                                         "implemented the batching rule for numpy"):
        out = mt.vmap(mt.searchsorted)(x, v)
    np.testing.assert_array_equal(_np(out), _np(mt.stack([mt.searchsorted(a, b)
                                                          for a, b in zip(x, v)])))


# -- in_dims, out_dims, pytrees, nesting, chunking ------------------------------------------------
def test_in_dims_out_dims_and_pytrees():
    rand, _ = _gen(1)
    a, b, c = rand(4, 3), rand(3, 4), rand(4)

    def f(pair, d):
        return {"s": pair[0] * pair[1]["w"] + d, "t": (pair[0].sum(), d)}

    def run(T, vm, a, b, c):
        return vm(f, in_dims=((1, {"w": 0}), None), out_dims={"s": 1, "t": (0, None)})(
            (a, {"w": b}), c)

    ours = run(mt, mt.vmap, *(mt.tensor(x.numpy()) for x in (a, b, c)))
    theirs = run(torch, torch.vmap, a, b, c)
    np.testing.assert_allclose(_np(ours["s"]), theirs["s"].numpy(), **TOL)
    np.testing.assert_allclose(_np(ours["t"][0]), theirs["t"][0].numpy(), **TOL)
    np.testing.assert_allclose(_np(ours["t"][1]), theirs["t"][1].numpy(), **TOL)
    # negative dims, an unbatched output expanded along out_dims, keyword arguments
    ours = mt.vmap(lambda x, y, scale=1.0: (x * scale, y), in_dims=(-1, None),
                   out_dims=(-1, 0))(mt.tensor(a.numpy()), mt.tensor(c.numpy()), scale=2.0)
    theirs = torch.vmap(lambda x, y, scale=1.0: (x * scale, y), in_dims=(-1, None),
                        out_dims=(-1, 0))(a, c, scale=2.0)
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(_np(o), t.numpy(), **TOL)


def test_nested_vmap_and_chunk_size():
    rand, _ = _gen(2)
    x, y = rand(2, 3, 4), rand(3, 4, 5)
    f = lambda a, b: (a @ b).relu().sum(-1)  # noqa: E731
    ours = mt.vmap(mt.vmap(f, in_dims=(0, None)), in_dims=(0, None))(
        mt.tensor(x.numpy()), mt.tensor(y.numpy()))
    theirs = torch.vmap(torch.vmap(f, in_dims=(0, None)), in_dims=(0, None))(x, y)
    np.testing.assert_allclose(_np(ours), theirs.numpy(), **TOL)
    # an inner vmap over a tensor batched by the outer one (levels cross)
    ours = mt.vmap(lambda a: mt.vmap(lambda r: r * a.sum())(a))(mt.tensor(x.numpy()))
    theirs = torch.vmap(lambda a: torch.vmap(lambda r: r * a.sum())(a))(x)
    np.testing.assert_allclose(_np(ours), theirs.numpy(), **TOL)
    whole = mt.vmap(f, in_dims=(None, 0))(mt.tensor(x[0].numpy()), mt.tensor(y.numpy()))
    for chunk in (1, 2, 3, 5):
        chunked = mt.vmap(f, in_dims=(None, 0), chunk_size=chunk)(
            mt.tensor(x[0].numpy()), mt.tensor(y.numpy()))
        np.testing.assert_array_equal(_np(chunked), _np(whole))


def test_torch_vmap_alias_and_func_vmap_are_one():
    assert mt.vmap is mt.func.vmap


# -- randomness -------------------------------------------------------------------------------
def _draws(lib, xs) -> dict:
    lib.manual_seed(0)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in "
                                           "randomness error mode"):
        lib.vmap(lambda t: t + lib.rand(3))(xs)
    out = {}
    for mode in ("same", "different"):
        lib.manual_seed(0)
        out[mode] = lib.vmap(lambda t: t + lib.randn(3), randomness=mode)(xs).numpy()
    lib.manual_seed(0)
    out["bernoulli"] = lib.vmap(lambda t: lib.bernoulli(t + 0.5), randomness="different")(
        xs).numpy()
    return out


def test_randomness_modes_match_pytorch():
    x = torch.zeros(4, 3)
    results = {}
    for lib, xs in ((torch, x), (mt, mt.zeros(4, 3))):
        results[lib.__name__] = _draws(lib, xs)
    for mode in ("same", "different", "bernoulli"):
        np.testing.assert_array_equal(results["microtorch"][mode], results["torch"][mode])
    assert (results["microtorch"]["same"] == results["microtorch"]["same"][0]).all()
    assert len({tuple(r) for r in results["microtorch"]["different"]}) == 4
    with pytest.raises(RuntimeError, match="Cannot ask for different inplace randomness on an "
                                           "unbatched tensor"):
        mt.vmap(lambda t: mt.zeros(3).normal_(), randomness="different")(mt.zeros(4, 3))
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are 'error', "
                                           "'different', or 'same'. Got bad"):
        mt.vmap(lambda t: t, randomness="bad")


def test_dropout_randomness_and_chunks_of_same_randomness():
    x = mt.ones(6, 50)
    mt.manual_seed(0)
    same = mt.vmap(lambda t: MF.dropout(t, 0.5), randomness="same")(x)
    assert (same == same[0]).all()
    mt.manual_seed(0)
    diff = mt.vmap(lambda t: MF.dropout(t, 0.5), randomness="different")(x)
    assert not (diff == diff[0]).all()
    assert set(np.unique(_np(diff))) <= {0.0, 2.0}
    mt.manual_seed(0)
    chunked = mt.vmap(lambda t: t + mt.rand(50), randomness="same", chunk_size=4)(x)
    assert (chunked == chunked[0]).all()


# -- PyTorch's errors ---------------------------------------------------------------------------
def _same_error(ours, theirs, exc):
    with pytest.raises(exc) as got:
        ours()
    with pytest.raises(exc) as want:
        theirs()
    assert str(got.value).replace("microtorch", "torch") == str(want.value)


ERRORS = [
    (lambda T: T.vmap(lambda t: t.item())(T.ones(3, 2)), RuntimeError),
    (lambda T: T.vmap(lambda t: bool(t.sum() > 0))(T.ones(3, 2)), RuntimeError),
    (lambda T: T.vmap(lambda t: t.nonzero())(T.ones(3, 2)), RuntimeError),
    (lambda T: T.vmap(lambda t: t[t > 0])(T.ones(3, 2)), RuntimeError),
    (lambda T: T.vmap(lambda t: T.zeros(2).copy_(t))(T.ones(3, 2)), RuntimeError),
    (lambda T: T.vmap(lambda t: t, in_dims=1)(T.ones(3)), ValueError),
    (lambda T: T.vmap(lambda t: t, in_dims=-3)(T.ones(3, 2)), ValueError),
    (lambda T: T.vmap(lambda a, b: a + b)(T.ones(3, 2), T.ones(2, 2)), ValueError),
    (lambda T: T.vmap(lambda a, b: a + b, in_dims=(0,))(T.ones(3), T.ones(3)), ValueError),
    (lambda T: T.vmap(lambda a: a, in_dims=0.5)(T.ones(3)), ValueError),
    (lambda T: T.vmap(lambda a: a)(3), ValueError),
    (lambda T: T.vmap(lambda a: a)(), ValueError),
    (lambda T: T.vmap(lambda a: 3)(T.ones(3)), ValueError),
    (lambda T: T.vmap(lambda a: a, out_dims=2)(T.ones(3, 2)), IndexError),
    (lambda T: T.vmap(lambda a: (a, a), out_dims=(0,))(T.ones(3)), ValueError),
    (lambda T: T.vmap(lambda a: a, out_dims=None)(T.ones(3)), ValueError),
    (lambda T: T.vmap(lambda a: a, chunk_size=0), ValueError),
    (lambda T: T.vmap(lambda a: a, in_dims=None)(T.ones(3)), ValueError),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_are_pytorchs(k):
    make, exc = ERRORS[k]
    _same_error(lambda: make(mt), lambda: make(torch), exc)


def test_unbatched_output_with_out_dims_none_and_item_in_vmap():
    out = mt.vmap(lambda a: mt.zeros(4), out_dims=None)(mt.ones(3))
    assert tuple(out.shape) == (4,)
    out = mt.vmap(lambda a: mt.zeros(4))(mt.ones(3))
    assert tuple(out.shape) == (3, 4)


# -- gradients through vmap --------------------------------------------------------------------
def test_backward_through_vmap_reaches_batched_and_captured_tensors(device):
    rand, _ = _gen(3)
    xv, wv = rand(6, 4), rand(4, 3)
    x = mt.tensor(xv.numpy(), device=device, requires_grad=True)
    w = mt.tensor(wv.numpy(), device=device, requires_grad=True)
    mt.vmap(lambda r: (r @ w).tanh().sum())(x).pow(2).sum().backward()
    tx, tw = xv.clone().requires_grad_(), wv.clone().requires_grad_()
    torch.vmap(lambda r: (r @ tw).tanh().sum())(tx).pow(2).sum().backward()
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), **TOL)
    np.testing.assert_allclose(_np(w.grad), tw.grad.numpy(), **TOL)
    # create_graph: the gradient through vmap is differentiable again
    x2 = mt.tensor(xv.numpy(), device=device, requires_grad=True)
    (g,) = mt.autograd.grad(mt.vmap(lambda r: (r ** 3).sum())(x2).sum(), x2, create_graph=True)
    (gg,) = mt.autograd.grad(g.sum(), x2)
    np.testing.assert_allclose(_np(gg), 6 * xv.numpy(), **TOL)


def test_is_grads_batched_matches_pytorch(device):
    rand, _ = _gen(4)
    xv = rand(3, 2)
    x = mt.tensor(xv.numpy(), device=device, requires_grad=True)
    tx = xv.clone().requires_grad_()
    basis = torch.eye(6, dtype=torch.float64).reshape(6, 3, 2)
    (ours,) = mt.autograd.grad(x.sin() * x, x, _to_mt(basis, device), is_grads_batched=True)
    (theirs,) = torch.autograd.grad(tx.sin() * tx, tx, basis, is_grads_batched=True)
    np.testing.assert_allclose(_np(ours), theirs.numpy(), **TOL)


def test_printing_inside_vmap_is_pytorchs(capsys):
    mt.vmap(lambda t: print(t) or t)(mt.arange(6.0).reshape(2, 3))
    torch.vmap(lambda t: print(t) or t)(torch.arange(6.0).reshape(2, 3))
    ours, theirs = capsys.readouterr().out.split("\n)\n")[:2]
    assert ours == theirs.lstrip("\n")


def test_sort_and_topk_order_equal_values_as_pytorch_inside_vmap():
    """Ties keep PyTorch's CPU order under vmap too: the stable sort and the replay of
    std::sort's order run on the physical arrays (rows of 4 and of 40 elements)."""
    rng = np.random.default_rng(0)
    for shape in ((3, 2, 4), (2, 3, 40)):
        x = rng.integers(0, 3, shape).astype(float)
        for f in (lambda v: v.sort(1).indices, lambda v: v.sort(-1, descending=True).indices,
                  lambda v: v.topk(2, -1).indices):
            assert mt.vmap(f)(mt.tensor(x)).tolist() == torch.vmap(f)(torch.tensor(x)).tolist()
