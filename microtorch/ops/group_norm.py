"""The graph node of ``nn.functional.group_norm`` on float32/float64 NumPy arrays: one lifted
node, as PyTorch's ``NativeGroupNormBackward0``, computed as PyTorch's CPU kernel
(``group_norm_kernel.cpp``, contiguous layout) computes it, so its bits are PyTorch's:

- forward: each group's ``(mean, var)`` by ``RowwiseMoments`` (``backend.aten_reduce``),
  ``rstd = 1 / sqrt(max(var, 0) + eps)`` in float64 (``eps`` is a double there) rounded to the
  dtype, then ``(x - mean) * rstd`` without an affine, else ``scale * x + bias`` with
  ``scale = rstd * gamma`` and ``bias = -scale * mean + beta`` (multiply-adds fused in the AVX2
  and AVX512 builds);
- backward (bit-exact where each group has a whole number of vectors of channels; groups of
  fewer channels than a vector's lanes still differ in some elements, cause not found): per
  channel ``ds = sum(dy * x)`` and ``db = sum(dy)`` (``vec::map2_reduce_all`` /
  ``reduce_all``), per group ``c2 = (db' * mean - ds') * rstd**3 / (D * HxW)`` and
  ``c3 = -c2 * mean - db' * rstd / (D * HxW)`` of the gamma-weighted sums, then
  ``dx = c1 * dy + c2 * x + c3`` with ``c1 = rstd * gamma``; ``dgamma`` and ``dbeta`` summed
  over the batch in order.

Under ``create_graph`` the composition is differentiated instead (as ``layer_norm``'s node).
This module must not import ``microtorch.nn``.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function, finish, lift
from ..autograd.grad_mode import recording
from ..backend import aten_reduce, cpu_capability
from ..backend.aten_reduce import fma_if
from ._util import _needs
from .layer_norm import affine_norm_edges, composed_grads

__all__ = ["GroupNorm", "group_norm_forward"]


def group_norm_forward(x, gamma, beta, groups: int, eps: float):
    """(out, mean, rstd) of the C-contiguous (N, C, HxW) float32/float64 NumPy array ``x``
    (gamma and beta (C,) arrays or None); mean and rstd (N, groups)."""
    n, c, hw = x.shape
    dt = x.dtype.type
    d = c // groups
    fused = cpu_capability.build() != "DEFAULT"
    mean, var = aten_reduce.rowwise_moments(x.reshape(n * groups, d * hw))
    rstd = (1.0 / np.sqrt(np.maximum(var, dt(0)).astype(np.float64) + float(eps))).astype(dt)
    xg = x.reshape(n, groups, d, hw)
    m4, r4 = mean.reshape(n, groups, 1, 1), rstd.reshape(n, groups, 1, 1)
    if gamma is None and beta is None:
        out = (xg - m4) * r4
    else:
        g = np.ones((groups, d, 1), dt) if gamma is None else gamma.reshape(groups, d, 1)
        scale = r4 * g
        b = dt(0) if beta is None else beta.reshape(groups, d, 1)
        bias = fma_if(-scale, m4, b, fused)
        out = fma_if(scale, xg, bias, fused)
    return out.reshape(x.shape), mean.reshape(n, groups), rstd.reshape(n, groups)


def group_norm_backward(dy, x, mean, rstd, gamma, groups: int, need=(True, True, True)):
    """(dx, dgamma, dbeta) of PyTorch's ``GroupNormBackwardKernelImplInternal`` for the
    (N, C, HxW) arrays ``dy`` and ``x``; each None where ``need`` says so."""
    n, c, hw = x.shape
    dt = x.dtype.type
    d = c // groups
    build = cpu_capability.build()
    fused = build != "DEFAULT"
    ds = aten_reduce.dot_all(dy.reshape(n * c, hw), x.reshape(n * c, hw)).reshape(n, groups, d)
    db = aten_reduce.sum_all(dy.reshape(n * c, hw)).reshape(n, groups, d)
    dx = dgamma = dbeta = None
    if need[0]:
        s = dt(1) / dt(d * hw)
        g = np.ones((groups, d), dt) if gamma is None else gamma.reshape(groups, d)
        # CalcDsDb: the gamma-weighted sums over the group's channels, lanes then the rest
        ds_g = aten_reduce.lanes_dot(ds, np.broadcast_to(g, ds.shape), fused)
        db_g = aten_reduce.lanes_dot(db, np.broadcast_to(g, db.shape), fused)
        m, r = mean, rstd
        c2 = fma_if(db_g, m, -ds_g, fused) * r * r * r * s
        c3 = fma_if(-c2, m, -(db_g * r * s), False)
        c1 = r[:, :, None] * g  # (n, groups, d)
        xg, dyg = x.reshape(n, groups, d, hw), dy.reshape(n, groups, d, hw)
        # (measured: c3 and ds rounded twice, c2's and dx's first multiply-adds fused)
        dx = fma_if(c1[..., None], dyg, c2[:, :, None, None] * xg, fused) + c3[:, :, None, None]
        dx = dx.reshape(x.shape)
    if need[1]:
        # GammaBackward: over the batch in order, acc += (ds - db * mean) * rstd
        diff = fma_if(-db, mean[:, :, None], ds, fused)
        acc = diff[0] * rstd[0, :, None]
        for i in range(1, n):  # (over the batch)
            acc = fma_if(diff[i], rstd[i, :, None], acc, fused)
        dgamma = acc.reshape(c)
    if need[2]:
        dbeta = np.add.accumulate(db, axis=0)[-1].reshape(c)
    return dx, dgamma, dbeta


class GroupNorm(Function):
    """``apply(x, weight, bias, groups, eps, composed)``: x (N, C, ...) normalised over each
    group of ``C / groups`` channels, times ``weight`` plus ``bias`` (each None or (C,), x's
    dtype). ``composed(x, weight, bias)`` computes the same from differentiable ops, for
    ``create_graph``. The node's ``mean`` and ``rstd`` ((N, groups) arrays) are kept on it."""

    lifted = True
    torch_name = "NativeGroupNormBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, groups, eps, composed):
        xa = x._data
        n, c = xa.shape[0], xa.shape[1]
        rows = np.ascontiguousarray(xa).reshape(n, c, -1)
        out, mean, rstd = group_norm_forward(
            rows, None if weight is None else weight._data,
            None if bias is None else bias._data, groups, eps)
        ctx.save_for_backward(x, weight, bias)
        ctx.mean, ctx.rstd, ctx.groups, ctx.composed = mean, rstd, groups, composed
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
        xa = x._data
        n, c = xa.shape[0], xa.shape[1]
        rows = np.ascontiguousarray(xa).reshape(n, c, -1)
        dy = np.ascontiguousarray(g).reshape(rows.shape)
        need = (_needs(ctx, 0), weight is not None and _needs(ctx, 1),
                bias is not None and _needs(ctx, 2))
        dx, dgamma, dbeta = group_norm_backward(
            dy, rows, ctx.mean, ctx.rstd, None if weight is None else weight._data,
            ctx.groups, need)
        return finish(None if dx is None else dx.reshape(xa.shape),
                      None if dgamma is None else dgamma.reshape(weight.shape),
                      None if dbeta is None else dbeta.reshape(bias.shape), None, None, None)
