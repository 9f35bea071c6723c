"""The graph node of ``nn.functional.linear``: one lifted node for y = x W^T + b (its
backward one formula on arrays, or on tensors under ``create_graph``), named as PyTorch names
the node it decomposes linear into.

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function, finish, lift
from ..autograd.node import ShownNode, _edge_node
from ..backend.blas import add_product
from ..backend.threads import gemm_threads
from ._util import _needs
from .complex import conj_of
from .linalg import check_addmm_dtypes, check_mm_dtypes

__all__ = ["Linear", "affine"]


# -- linear -------------------------------------------------------------------------------------
# PyTorch's node for F.linear, by (input is 1-D / 2-D / more, has bias): it decomposes linear.
_LINEAR_NAMES = {(1, True): "ViewBackward0", (1, False): "SqueezeBackward4",
                 (2, True): "AddmmBackward0", (2, False): "MmBackward0",
                 (3, True): "ViewBackward0", (3, False): "UnsafeViewBackward0"}


class Linear(Function):
    """``x @ W.T + b`` as one node: dW = g.T @ x, db = g.sum(0), dx = g @ W."""

    lifted = True

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        xa, wa = x._data, weight._data
        # PyTorch's linear is addmm(bias, x, W.T) with a bias, else mm: their checks and words
        if bias is not None:
            check_addmm_dtypes(bias, x, weight)
        else:
            check_mm_dtypes(x, weight)
        if xa.shape[-1] != wa.shape[1]:
            rows = math.prod(xa.shape[:-1])
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                               f"{xa.shape[-1]} and {wa.shape[1]}x{wa.shape[0]})")
        ctx.save_for_backward(x, weight)
        ctx.torch_name = _LINEAR_NAMES[min(xa.ndim, 3), bias is not None]
        ctx.in_ndim = xa.ndim
        return affine(xa, wa, None if bias is None else bias._data)

    @property
    def next_functions(self) -> tuple:
        """The graph PyTorch's linear builds, for walks that print it: ``addmm(bias, x,
        weight.t())`` for 2-D input (``mm`` without bias), through views of x and of the
        product for other ranks; ``TBackward0`` and the views are shown, not run."""
        x, w, b = (*self._next, None, None)[:3]
        t = None if w is None else ShownNode("TBackward0", w)
        nd, bias = self.in_ndim, len(self._next) == 3  # (edges reach the last tensor)
        if nd == 2:
            edges = (b, x, t) if bias else (x, t)
            return tuple((_edge_node(e), 0) for e in edges)
        if x is not None:
            x = ShownNode("UnsqueezeBackward0" if nd == 1 and not bias else "ViewBackward0", x)
        product = ShownNode("AddmmBackward0", b, x, t) if bias else ShownNode("MmBackward0", x, t)
        return ((product, 0),)

    @staticmethod
    def backward(ctx, grad):
        g, x, w = lift(grad, *ctx.saved_tensors)  # arrays, or tensors under create_graph
        out_f, in_f = w.shape
        g2 = g.reshape(-1, out_f)
        if type(g2) is np.ndarray:  # (the two products back to back: one BLAS wake-up)
            gemm_threads(g2.shape[0], out_f, in_f, int(_needs(ctx, 0)) + int(_needs(ctx, 1)))
        # (complex: the conjugates of the other factor, PyTorch's convention)
        gx = None
        if _needs(ctx, 0):  # (>2-D: one GEMM over all leading dims)
            gx = (g2 @ conj_of(w)).reshape(*g.shape[:-1], in_f) if g.ndim > 2 else g @ conj_of(w)
            gx = _round(gx, w.dtype)
        gw = _round(g2.T @ conj_of(x.reshape(-1, in_f)), w.dtype) if _needs(ctx, 1) else None
        gb = _bias_sums(g2) if _needs(ctx, 2) else None
        return finish(gx, gw, gb)


def _bias_sums(g2):
    """``g2.sum(0)``, the bias gradient: for a C-contiguous NumPy float32/float64 ``g2``, the
    product ``ones @ g2`` on the BLAS threads the layer's own products were given
    (``gemm_threads``: no hand-over between the backward's products and this one). Its terms
    add in one order for a given thread count, whatever the data's alignment: the same bits
    every run. Measured on an Intel Xeon VM after the LM's backward products, 1024 x 1000:
    81 us on their two threads against NumPy's 148 us, and more accurate (largest error
    against float64 sums 3.2e-5, NumPy's 1.2e-4). (Through ``last_axis_sums``' one thread it
    took 106 us, and the hand-over to one thread and back slowed the steps around it by 2%.)"""
    if type(g2) is not np.ndarray or g2.dtype.char not in "fd" or not g2.flags.c_contiguous \
            or g2.shape[0] < 2:
        return g2.sum(0)
    return np.ones(g2.shape[0], g2.dtype) @ g2


# Result elements from which a bias goes in through the GEMM (``_addmm``): below, the bias
# pass after the product is cheaper than the GEMM's own handling of beta = 1 (measured on an
# Intel Xeon, 2 threads, F.linear with bias, new / old: 512x64 -> 64 (32k elements) 1.15,
# 128x256 -> 10 1.35; 128x64 -> 1000 (128k) 0.86, 256x64 -> 512 0.70, 512x64 -> 2048 (1M)
# 0.83, 1024x64 -> 1000 0.94).
_ADDMM_MIN_OUTPUT = 1 << 17


def _addmm(ba, xa, wa):
    """x W^T + b as PyTorch's addmm computes it on the CPU: the result filled with the bias,
    the product added into it by the GEMM (``backend.blas``), for large results; None where
    that does not apply (then the product comes first and the bias is added after it)."""
    if not type(xa) is type(wa) is type(ba) is np.ndarray:  # (vmap: batched weights)
        return None
    rows = math.prod(xa.shape[:-1])
    if rows * wa.shape[0] < _ADDMM_MIN_OUTPUT:
        return None
    x2 = xa.reshape(rows, xa.shape[-1]) if xa.flags.c_contiguous else xa
    if x2.ndim != 2 or ba.shape != (wa.shape[0],) or xa.dtype.char not in "fd" or \
            not xa.dtype == wa.dtype == ba.dtype:
        return None
    out = np.empty((x2.shape[0], wa.shape[0]), dtype=ba.dtype)
    out[...] = ba
    if not add_product(out, x2, wa.T):
        return None
    return out.reshape(*xa.shape[:-1], wa.shape[0])


def affine(xa, wa, ba=None):
    """``xa @ wa.T + ba`` on arrays, as ``F.linear`` computes it: on NumPy, small products
    on one BLAS thread (``backend.threads``) and large ones with the bias inside the GEMM
    (``_addmm``); any leading dims of ``xa`` in one GEMM."""
    if type(xa) is np.ndarray:
        gemm_threads(xa.size // max(xa.shape[-1], 1), xa.shape[-1], wa.shape[0])
        if ba is not None and xa.ndim >= 2:
            out = _addmm(ba, xa, wa)
            if out is not None:
                return out
    if xa.ndim > 2:  # one GEMM, not one per leading index (a strided input is copied)
        out = (xa.reshape(-1, xa.shape[-1]) @ wa.T).reshape(*xa.shape[:-1], wa.shape[0])
    else:
        out = xa @ wa.T
    if ba is not None:
        out += ba  # (bfloat16: into the float32 product, one rounding as PyTorch)
    return _round(out, xa.dtype)


def _round(product, dtype):
    """A product of arrays back in its operands' dtype: ml_dtypes multiplies bfloat16 matrices
    in float32 (PyTorch rounds the result to bfloat16). Tensor products already are."""
    return product.astype(dtype) if product.dtype != dtype else product
