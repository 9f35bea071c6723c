"""The graph node of ``nn.functional.layer_norm`` on float32/float64 arrays: one lifted node,
as PyTorch's ``NativeLayerNormBackward0``, instead of the nine ops of its composition and
their twelve backward nodes.

Both directions work on the input as rows, (leading elements, normalised elements), and
take each row's sums as a product with ones (``backend.blas.last_axis_sums``: NumPy reduces
each short row in its own inner-loop call) and the weight's and bias's sums over rows as a
product of ones with the rows. The forward: the mean, the centred values, the biased
variance, ``rstd = 1 / sqrt(var + eps)``, ``xhat = centred * rstd``, then the weight and bias.
The backward is PyTorch's formula, one expression per row instead of the chain of the
composition's nodes: ``dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))`` with
``gw = g * weight``; ``dweight = sum(g * xhat)`` and ``dbias = sum(g)`` over the rows. Under
``create_graph`` the composition is differentiated instead, so higher derivatives (and
forward-mode tangents, taken through it) need no formula of their own.

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function, finish, lift
from ..autograd.grad_mode import recording
from ..autograd.node import _edge_node
from ..backend.blas import last_axis_sums
from ..backend.threads import one_blas_thread
from ._util import _needs, xp_of

__all__ = ["LayerNorm", "row_moments", "affine_norm_edges", "composed_grads"]


def _column_sums(a):
    """The sums of the (R, N) array ``a``'s columns, (N,): ones @ a on one thread of NumPy's
    BLAS for C-contiguous float32/float64 arrays (each column's terms in one order, whatever
    thread count the op before left: the same bits every run), ``a.sum(0)`` otherwise."""
    if type(a) is np.ndarray and a.flags.c_contiguous and a.shape[0] > 1:
        one_blas_thread()  # (memory-bound: a second thread gains nothing, and waking it costs)
        return np.ones(a.shape[0], a.dtype) @ a
    return a.sum(0)


def row_moments(rows, eps: float) -> tuple:
    """(mean, rows - mean, 1 / sqrt(biased var + eps)) of the C-contiguous (R, N) float32 or
    float64 array ``rows``, the means and reciprocals as (R, 1): the layer norm's statistics
    (also ``native_layer_norm``'s second and third results)."""
    n = rows.shape[1]
    mean = last_axis_sums(rows) / n
    centred = rows - mean
    var = last_axis_sums(centred * centred) / n
    return mean, centred, 1 / xp_of(rows).sqrt(var + eps)


def affine_norm_edges(node) -> tuple:
    """``next_functions`` of a layer or group norm node: PyTorch's three edges, (input,
    weight, bias), a missing weight or bias as None (the node's own edges end at its last
    tensor argument)."""
    return tuple((_edge_node(e), 0) for e in (*node._next, None, None)[:3])


def composed_grads(ctx, grad) -> tuple:
    """The gradients of (input, weight, bias) under ``create_graph``: through the node's
    composition of differentiable ops (``ctx.composed``), so they differentiate again."""
    from ..autograd import grad as autograd_grad

    x, weight, bias = ctx.saved_tensors
    wanted = [t for t in (x, weight, bias) if t is not None and t.requires_grad]
    found = iter(autograd_grad(ctx.composed(x, weight, bias), wanted, grad,
                               create_graph=True, allow_unused=True))
    return tuple(next(found) if t is not None and t.requires_grad else None
                 for t in (x, weight, bias))


class LayerNorm(Function):
    """``apply(x, weight, bias, dims, eps, composed)``: x normalised over its trailing
    ``dims`` (biased variance, ``eps`` inside the square root), times ``weight`` plus
    ``bias`` (each None or of the normalised shape, x's dtype). ``composed(x, weight, bias)``
    computes the same from differentiable ops, for ``create_graph``."""

    lifted = True
    torch_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, dims, eps, composed):
        xa = x._data
        xp = xp_of(xa)
        n = math.prod(xa.shape[d] for d in dims)
        rows = xa.reshape(-1, n)
        if not rows.flags.c_contiguous:
            rows = xp.ascontiguousarray(rows)
        _, centred, rstd = row_moments(rows, eps)
        xhat = centred * rstd
        out = xhat if weight is None else xhat * weight._data.reshape(n)
        if bias is not None:
            out = out + bias._data.reshape(n)
        elif out is xhat:
            out = xhat.copy()  # (xhat is kept for the backward)
        ctx.save_for_backward(x, weight, bias)
        ctx.xhat, ctx.rstd, ctx.composed = xhat, rstd, composed
        return out.reshape(xa.shape)

    @property
    def next_functions(self) -> tuple:
        return affine_norm_edges(self)

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias = ctx.saved_tensors
        if recording():  # create_graph: differentiate the composition
            return composed_grads(ctx, grad) + (None, None, None)
        (g,) = lift(grad)
        xhat, rstd = ctx.xhat, ctx.rstd
        n = xhat.shape[1]
        g = g.reshape(-1, n)
        if not g.flags.c_contiguous:
            g = xp_of(g).ascontiguousarray(g)
        gx = gw = gb = None
        if _needs(ctx, 0):
            scaled = g if weight is None else g * weight._data.reshape(n)
            gx = scaled - last_axis_sums(scaled) / n
            gx -= xhat * (last_axis_sums(scaled * xhat) / n)
            gx *= rstd
            gx = gx.reshape(x.shape)
        if weight is not None and _needs(ctx, 1):
            gw = _column_sums(g * xhat).reshape(weight.shape)
        if bias is not None and _needs(ctx, 2):
            gb = _column_sums(g).reshape(bias.shape)
        return finish(gx, gw, gb, None, None, None)
