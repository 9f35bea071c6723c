"""The view ops' copying forms (``*_copy``, ``unsafe_split``/``unsafe_chunk``), the
scatter-into-a-view ops (``diagonal_scatter``, ``select_scatter``, ``slice_scatter``) and
``index_reduce`` against PyTorch: values (bitwise), dtypes, grad_fn names, gradients (also of
gradients), ``out=`` and the errors for bad inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _op_parity import parity, parity_error

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

RNG = np.random.default_rng(5)
X = RNG.standard_normal((3, 4))
X3 = RNG.standard_normal((2, 3, 4))
V3, V4 = RNG.standard_normal(3), RNG.standard_normal(4)
FLOATS = ["float64", "float32"]

# -- the *_copy ops --------------------------------------------------------------------------
COPIES = {
    "expand_copy": lambda m, x: m.expand_copy(x[:1], (2, -1)),
    "expand_copy_new_dims": lambda m, x: m.expand_copy(x[:, :1], (2, 3, 5), implicit=True),
    "diagonal_copy": lambda m, x: m.diagonal_copy(x, 1),
    "diagonal_copy_negative": lambda m, x: m.diagonal_copy(x, -1, 1, 0),
    "alias_copy": lambda m, x: m.alias_copy(x.t()),
    "narrow_copy": lambda m, x: m.narrow_copy(x, 1, 1, 2),
    "narrow_copy_method": lambda m, x: x.narrow_copy(0, 2, 1),
    "view_copy": lambda m, x: m.view_copy(x, (2, 6)),
    "view_copy_of_transposed": lambda m, x: m.view_copy(x.t(), (-1,)),
    "permute_copy": lambda m, x: m.permute_copy(x.reshape(2, 3, 2), (2, 0, 1)),
    "split_with_sizes_copy": lambda m, x: m.split_with_sizes_copy(x, [1, 3], 1),
    "unbind_copy": lambda m, x: m.unbind_copy(x, 1),
    "unfold_copy": lambda m, x: m.unfold_copy(x, 1, 2, 1),
    "squeeze_copy": lambda m, x: m.squeeze_copy(x[:1]),
    "squeeze_copy_dim": lambda m, x: m.squeeze_copy(x[:1], 0),
    "squeeze_copy_dims": lambda m, x: m.squeeze_copy(x[:1, :1], (0, 1)),
    "unsqueeze_copy": lambda m, x: m.unsqueeze_copy(x, -1),
    "transpose_copy": lambda m, x: m.transpose_copy(x, 0, -1),
    "t_copy": lambda m, x: m.t_copy(x),
    "t_copy_1d": lambda m, x: m.t_copy(x[0]),
}


# Gradients that are sums (over expanded or scattered-from elements) add in another order
# than PyTorch's: equal to the last bit or two.
SUMS = {"float64": dict(rtol=1e-15, atol=1e-15), "float32": dict(rtol=1e-6, atol=1e-6)}
SUMMED = {"expand_copy", "expand_copy_new_dims", "slice_scatter_defaults",
          "slice_scatter_negative", "slice_scatter_past_end", "double_backward"}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", COPIES)
def test_copies_against_pytorch(name, dtype, device):
    parity(COPIES[name], X.astype(dtype), device=device,
           tol=SUMS[dtype] if name in SUMMED else None)


@pytest.mark.parametrize("name", ["t_copy", "unbind_copy", "permute_copy", "expand_copy"])
def test_copies_of_integers(name, device):
    parity(COPIES[name], np.arange(12).reshape(3, 4), device=device)


def test_view_copy_as_dtype(device):
    # the same bytes read as another dtype; not differentiable, as view(dtype)
    parity(lambda m, x: m.view_copy(x, m.int32), X.astype("float32"), device=device)
    parity(lambda m, x: m.view_copy(x, m.int16), X.astype("float32"), device=device)


@pytest.mark.parametrize("name", ["t_copy", "permute_copy", "diagonal_copy", "expand_copy",
                                  "split_with_sizes_copy", "alias_copy"])
def test_copies_are_fresh_contiguous_tensors(name, device):
    x = mt.tensor(X, device=device)
    out = COPIES[name](mt, x)
    for piece in out if isinstance(out, tuple) else (out,):
        assert piece._base is None and piece.is_contiguous()
        piece.fill_(7.0)  # a copy: the input keeps its values
    np.testing.assert_array_equal(x.cpu().numpy(), X)


COPY_ERRORS = {
    "expand_bad_size": lambda m, x: m.expand_copy(x, (2, 4)),
    "diagonal_same_dims": lambda m, x: m.diagonal_copy(x, 0, 1, 1),
    "narrow_0d": lambda m, x: m.narrow_copy(x[0, 0], 0, 0, 1),
    "narrow_past_end": lambda m, x: m.narrow_copy(x, 0, 2, 2),
    "view_bad_shape": lambda m, x: m.view_copy(x, (5,)),
    "permute_wrong_length": lambda m, x: m.permute_copy(x, (0,)),
    "permute_varargs": lambda m, x: m.permute_copy(x, 1, 0),
    "split_bad_sizes": lambda m, x: m.split_with_sizes_copy(x, [1, 2], 1),
    "unfold_too_big": lambda m, x: m.unfold_copy(x, 1, 5, 1),
    "unsqueeze_dim": lambda m, x: m.unsqueeze_copy(x, 4),
    "t_3d": lambda m, x: m.t_copy(x.reshape(1, 3, 4)),
    "out_other_dtype": lambda m, x: m.t_copy(x, out=m.empty(0, dtype=m.float32)),
    "out_list_too_short": lambda m, x: m.unbind_copy(x, out=[m.empty(0, dtype=m.float64)]),
    "out_list_dtype": lambda m, x: m.split_with_sizes_copy(x, [1, 2], out=[m.empty(0)] * 2),
    "narrow_out_with_grad": lambda m, x: m.narrow_copy(x.requires_grad_(), 0, 0, 1,
                                                       out=m.empty(0, dtype=m.float64)),
}


@pytest.mark.parametrize("name", COPY_ERRORS)
def test_copy_errors(name, device):
    parity_error(COPY_ERRORS[name], X, device=device)


def test_copy_out(device):
    # out= takes the result's dtype only; a sequence result fills a sequence and returns None
    out = parity(lambda m, x: m.t_copy(x, out=m.empty(0, dtype=m.float64)), X, device=device,
                 grad=False)
    assert tuple(out.shape) == (4, 3)
    parity(lambda m, x: m.unbind_copy(x, out=[m.empty(0, dtype=m.float64) for _ in range(3)]),
           X, device=device, grad=False)
    pieces = [mt.empty(5, dtype=mt.float64, device=device) for _ in range(2)]
    with pytest.warns(UserWarning, match="was resized"):
        assert mt.split_with_sizes_copy(mt.tensor(X, device=device), [1, 2], out=pieces) is None
    np.testing.assert_array_equal(pieces[1].cpu().numpy(), X[1:])


def test_copy_out_of_inputs_that_require_grad(device):
    # PyTorch's out= of a *_copy op has no derivative: out then requires grad through a
    # NotImplemented node, whose backward raises
    for lib in (mt, torch):
        x = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
        out = lib.empty(0, dtype=lib.float64)
        lib.t_copy(x, out=out)
        assert out.requires_grad and out.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::t_copy is not implemented"):
            out.sum().backward()


# -- unsafe_split / unsafe_chunk -------------------------------------------------------------
UNSAFE = {
    "unsafe_split": lambda m, x: m.unsafe_split(x, 2, 1),
    "unsafe_split_method": lambda m, x: x.unsafe_split(1),
    "unsafe_split_with_sizes": lambda m, x: m.unsafe_split_with_sizes(x, [1, 2], 0),
    "unsafe_chunk": lambda m, x: m.unsafe_chunk(x, 3, 1),
    "unsafe_chunk_method": lambda m, x: x.unsafe_chunk(2),
}


@pytest.mark.parametrize("name", UNSAFE)
def test_unsafe_splits_against_pytorch(name, device):
    parity(UNSAFE[name], X, device=device)


def test_unsafe_pieces_share_memory_but_are_no_views(device):
    def write(m, x):
        y = x * 1
        first, second = m.unsafe_split(y, 2, 1)
        first.mul_(2)  # into y's memory, unchecked: PyTorch's "unsafe" contract
        return (y, first, second, m.tensor([y._version, first._version, second._version]),
                m.tensor(first._base is None))

    parity(write, X, device=device)


@pytest.mark.parametrize("call", [lambda m, x: m.unsafe_split(x, [1, 2]),
                                  lambda m, x: m.unsafe_chunk(x, 0),
                                  lambda m, x: m.unsafe_split(x, 0)])
def test_unsafe_split_errors(call, device):
    parity_error(call, X, device=device)


# -- diagonal_scatter / select_scatter / slice_scatter ---------------------------------------
SCATTERS = {
    "diagonal_scatter": lambda m, x, s: m.diagonal_scatter(x, s),
    "diagonal_scatter_offset": lambda m, x, s: m.diagonal_scatter(x, s[:2], 2),
    "diagonal_scatter_below": lambda m, x, s: x.diagonal_scatter(s, -1, 1, 0),
    "diagonal_scatter_3d": lambda m, x, s: m.diagonal_scatter(x.reshape(2, 2, 3),
                                                              s[:2].expand(2, 2) * 1, 0, 0, 2),
    "select_scatter": lambda m, x, s: m.select_scatter(x, s[0].expand(4) * 1, 0, 1),
    "select_scatter_last": lambda m, x, s: x.select_scatter(s, -1, -2),
    "slice_scatter": lambda m, x, s: m.slice_scatter(x, s.reshape(3, 1).expand(3, 2) * 1, 1,
                                                     0, 4, 2),
    "slice_scatter_defaults": lambda m, x, s: m.slice_scatter(x, x * s[0]),
    "slice_scatter_negative": lambda m, x, s: x.slice_scatter(x[:, :2] * s[1], 1, -2),
    "slice_scatter_past_end": lambda m, x, s: m.slice_scatter(x, x[1:] * s[2], 0, 1, 100),
    "slice_scatter_empty": lambda m, x, s: m.slice_scatter(x, x[:, :0] * 1, 1, 3, 1),
    "src_of_other_dtype": lambda m, x, s: m.diagonal_scatter(x, s.float()),
    "double_backward": lambda m, x, s: m.autograd.grad(
        (m.slice_scatter(x * x, s.reshape(3, 1) * s.reshape(3, 1), 1, 1, 2) ** 2).sum(),
        (x, s), create_graph=True),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", SCATTERS)
def test_scatters_against_pytorch(name, dtype, device):
    parity(SCATTERS[name], X.astype(dtype), V3.astype(dtype), device=device,
           tol=SUMS[dtype] if name in SUMMED else None)


def test_scatters_of_integers_and_bools(device):
    # src is cast to the input's dtype, as copy_ casts
    parity(lambda m, x: m.diagonal_scatter(x, m.tensor([1.5, 2.5, -3.7])),
           np.arange(12).reshape(3, 4), device=device)
    parity(lambda m, x: m.slice_scatter(x, m.ones(1, dtype=m.bool), 0, 1, 2),
           np.zeros(3, bool), device=device)


def test_slice_scatter_out(device):
    parity(lambda m, x, s: m.slice_scatter(x, s, 0, 1, 3, out=m.empty(0, dtype=m.float64)),
           X, X[1:3] * 2, device=device, grad=False)
    parity_error(lambda m, x, s: m.slice_scatter(x, s, 0, 1, 3, out=m.empty(0)), X, X[1:3],
                 device=device)


SCATTER_ERRORS = {
    "wrong_shape": lambda m, x, s: m.diagonal_scatter(x, m.cat([s, s])),
    "no_broadcast": lambda m, x, s: m.select_scatter(x, s[:1], 0, 0),
    "number_src": lambda m, x, s: m.diagonal_scatter(x, 1.0),
    "same_dims": lambda m, x, s: m.diagonal_scatter(x, s, 0, 1, 1),
    "1d_diagonal": lambda m, x, s: m.diagonal_scatter(s, s[:1]),
    "index_out_of_range": lambda m, x, s: m.select_scatter(x, s, 0, 3),
    "select_0d": lambda m, x, s: m.select_scatter(s[0], s[1], 0, 0),
    "dim_out_of_range": lambda m, x, s: m.select_scatter(x, s, 2, 0),
    "slice_0d": lambda m, x, s: m.slice_scatter(s[0], s[1]),
    "slice_step_0": lambda m, x, s: m.slice_scatter(x, x[:, :0], 1, 0, 4, 0),
    "slice_wrong_shape": lambda m, x, s: m.slice_scatter(x, x[:, :3], 1, 0, 4, 2),
    "no_out_for_select": lambda m, x, s: m.select_scatter(x, s, 1, 0, out=m.empty(0)),
}


@pytest.mark.parametrize("name", SCATTER_ERRORS)
def test_scatter_errors(name, device):
    parity_error(SCATTER_ERRORS[name], X, V3, device=device)


# -- index_reduce ----------------------------------------------------------------------------
REDUCES = ["prod", "mean", "amax", "amin"]
INDEX = [0, 2, 0, 1, 2]
SOURCE = RNG.standard_normal((5, 4))


def _fold_tol(device: str, dtype: str, reduce: str):
    """On a GPU the values an index repeats fold as a tree (a segmented scan), not one after
    the other as PyTorch's CPU loop: products and sums equal to the last bit or two."""
    return SUMS[dtype] if device == "cuda" and reduce in ("prod", "mean") else None


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_index_reduce_against_pytorch(reduce, include_self, dtype, device):
    x, s, tol = X.astype(dtype), SOURCE.astype(dtype), _fold_tol(device, dtype, reduce)
    parity(lambda m, x, s: x.index_reduce(0, m.tensor(INDEX), s, reduce,
                                          include_self=include_self), x, s, device=device,
           tol=tol)
    # (an int32 index: PyTorch's backward without self fails on it, an index_fill of int32)
    index = [3, 3, 0] if include_self else [3, 3, 0, 1]
    parity(lambda m, x, s: m.index_reduce(
        x, 1, m.tensor(index, dtype=m.int32 if include_self else m.int64),
        s[:3, :len(index)] * 1, reduce, include_self=include_self), x, s, device=device,
        tol=tol)
    parity(lambda m, x, s: x[0].index_reduce(0, m.tensor([1, 1, 0]), s[0, :3], reduce,
                                             include_self=include_self), x, s, device=device,
           tol=tol)
    parity(lambda m, x, s: x[0, 0].index_reduce(0, m.tensor([0]), s[0, 0], reduce,
                                                include_self=include_self), x, s, device=device)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_index_reduce_ties_zeros_and_integers(reduce, include_self, device):
    # ties share amax/amin's gradient; prod's gradient around zeros avoids dividing by them;
    # an integer mean rounds down
    parity(lambda m, x, s: x.index_reduce(0, m.tensor([1, 1, 0]), s, reduce,
                                          include_self=include_self),
           np.array([2.0, 0.0, 1.0, 3.0]), np.array([2.0, 0.0, 0.0]), device=device)
    parity(lambda m, x, s: x.index_reduce(0, m.tensor([0, 1, 0]), s, reduce,
                                          include_self=include_self),
           np.array([[0.0, 1.0], [2.0, 0.0]]), np.array([[0.0, 3.0], [0.0, 0.0], [5.0, 2.0]]),
           device=device)
    parity(lambda m, x, s: x.index_reduce(0, m.tensor([0, 0, 1]), s, reduce,
                                          include_self=include_self),
           np.array([[-3, 5], [7, 0]]), np.array([[2, -4], [0, 3], [-7, 1]]), device=device)


def test_index_reduce_inplace_out_and_double_backward(device):
    parity(lambda m, x, s: (x * 1).index_reduce_(0, m.tensor(INDEX), s, "amax"), X, SOURCE,
           device=device)
    parity(lambda m, x, s: m.index_reduce(x, 0, m.tensor(INDEX), s, "mean",
                                          out=m.empty(0, dtype=m.float64)),
           X, SOURCE, device=device, grad=False, tol=_fold_tol(device, "float64", "mean"))
    parity(lambda m, x, s: m.autograd.grad(
        (x.index_reduce(0, m.tensor(INDEX), s, "prod") ** 2).sum(), (x, s), create_graph=True),
        X, SOURCE, device=device, tol=_fold_tol(device, "float64", "prod"))


def test_index_reduce_warns_once_it_is_beta():
    import microtorch.ops.index_reduction as module

    module._warned.clear()
    x = mt.ones(2)
    with pytest.warns(UserWarning, match="index_reduce\\(\\) is in beta"):
        x.index_reduce(0, mt.tensor([0]), mt.ones(1), "prod")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.index_reduce(0, mt.tensor([0]), mt.ones(1), "prod")


INDEX_REDUCE_ERRORS = {
    "reduce_sum": lambda m, x, s: x.index_reduce(0, m.tensor([0]), s[:1], "sum"),
    "index_2d": lambda m, x, s: x.index_reduce(0, m.tensor([[0]]), s[:1], "prod"),
    "index_float": lambda m, x, s: x.index_reduce(0, m.tensor([0.0]), s[:1], "prod"),
    # (.cpu(): a GPU reports a bad index at the next synchronization)
    "index_out_of_range": lambda m, x, s: x.index_reduce(0, m.tensor([3]), s[:1], "prod").cpu(),
    "index_negative": lambda m, x, s: x.index_reduce(0, m.tensor([-1]), s[:1], "amin").cpu(),
    "source_dtype": lambda m, x, s: x.index_reduce(0, m.tensor([0]), s[:1].float(), "prod"),
    "index_count": lambda m, x, s: x.index_reduce(0, m.tensor([0]), s[:2], "prod"),
    "source_shape": lambda m, x, s: x.index_reduce(0, m.tensor([0]), s[:1, :2], "prod"),
    "dim_of_source": lambda m, x, s: x.index_reduce(1, m.tensor([0]), s[0], "prod"),
    "dim_out_of_range": lambda m, x, s: x.index_reduce(2, m.tensor([0]), s[:1], "prod"),
    "bool_1d": lambda m, x, s: m.zeros(2, dtype=m.bool).index_reduce(
        0, m.tensor([0]), m.ones(1, dtype=m.bool), "amax"),
    "bool_without_self": lambda m, x, s: m.zeros(2, 2, dtype=m.bool).index_reduce(
        0, m.tensor([0]), m.ones(1, 2, dtype=m.bool), "amax", include_self=False),
    "bool_mean": lambda m, x, s: m.zeros(2, 2, dtype=m.bool).index_reduce(
        0, m.tensor([0]), m.ones(1, 2, dtype=m.bool), "mean"),
    "out_with_grad": lambda m, x, s: m.index_reduce(x.requires_grad_(), 0, m.tensor([0]), s[:1],
                                                    "prod", out=m.empty(0, dtype=m.float64)),
    "out_dtype": lambda m, x, s: m.index_reduce(x, 0, m.tensor([0]), s[:1], "prod",
                                                out=m.empty(0)),
}


@pytest.mark.parametrize("name", INDEX_REDUCE_ERRORS)
def test_index_reduce_errors(name, device):
    parity_error(INDEX_REDUCE_ERRORS[name], X, SOURCE, device=device)
