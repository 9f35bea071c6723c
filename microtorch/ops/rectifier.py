"""ReLU as a graph node: max(x, 0), its gradient selected as PyTorch's threshold_backward.

On the CPU, contiguous float arrays take the forward's maximum against a cached block of
zeros (NumPy's maximum against a scalar has no SIMD loop) and the backward's selection as a
bitwise and (``np.where`` branches per element); large ones are shared between threads. Both
are elementwise, so every split gives the same bits.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import finish
from ..autograd.grad_mode import recording
from ..backend import compiled
from ..backend.autotune import choice, split_rows
from ._util import Tensor, select_bits, selects_by_bits
from .elementwise import _unary

__all__ = ["Relu"]


# PyTorch's threshold_backward(g, out, 0) selects: g where not (out <= 0), NaN included, and
# +0.0 elsewhere. out = max(x, 0) is never negative, so that is out != 0. A product g * (out != 0)
# is not the same: -0.0 where g < 0, NaN where g is infinite or NaN.
_Relu = _unary("Relu", lambda xp, x: xp.maximum(x, 0),
               lambda g, x, o, F: F.where(o != 0, g, 0.0), "output", False)


def _select_nonzero(g: np.ndarray, o: np.ndarray, res: np.ndarray) -> None:
    """res = g where o != 0, else +0.0, for real float arrays of one shape and width: in one
    compiled pass where the arrays are contiguous and large (``backend.compiled``: 802K
    elements 529 -> 338 us, the same bits), else by bit masks."""
    fused = compiled.kernels_for(np, g.dtype, g.size)
    if fused is not None and g.flags.c_contiguous and o.flags.c_contiguous and \
            res.flags.c_contiguous:
        fused.select_nonzero(g.reshape(-1), o.reshape(-1), res.reshape(-1))
        return
    select_bits(g, np.not_equal(o, 0, out=np.empty(o.shape, np.bool_)), res)  # (0-d: an array)


# Whether a large ReLU (forward, backward) shares its elements between threads: whenever each
# thread gets _RELU_MIN_WORK elements (or by timing, opted in); elementwise, so exact.
_RELU = {"forward": choice("relu_forward_chunks", ("threads", "one")),
         "backward": choice("relu_backward_chunks", ("threads", "one"))}
_RELU_MIN_WORK = 1 << 19  # per thread (both CPU families: docs/architecture.md, "Tuning ...")


# NumPy's maximum against a scalar runs a loop without SIMD, about 3x slower than against an
# array; so a contiguous ReLU takes its zeros from one small read-only block per dtype, reused
# from cache (same bits: NaN propagates, -0.0 gives +0.0, as against the scalar).
_ZERO_BLOCK = 1 << 16
_RELU_BLOCKS_MIN = 1 << 10  # elements below which the scalar loop's fewer calls win
_zero_blocks: dict = {}


def _max_with_zero(src: np.ndarray, dst: np.ndarray) -> None:
    """dst = maximum(src, 0) for 1-D contiguous float arrays, a block of zeros at a time."""
    zeros = _zero_blocks.get(src.dtype)
    if zeros is None:  # (read-only: shared by every call)
        zeros = _zero_blocks.setdefault(src.dtype, np.zeros(_ZERO_BLOCK, src.dtype))
        zeros.flags.writeable = False
    for lo in range(0, src.size, _ZERO_BLOCK):
        hi = min(lo + _ZERO_BLOCK, src.size)
        np.maximum(src[lo:hi], zeros[:hi - lo], out=dst[lo:hi])


class Relu(_Relu):
    """max(x, 0); contiguous float arrays on the CPU against blocks of zeros, large ones in
    chunks over threads."""

    @classmethod
    def forward(cls, ctx, x):
        arr = x._data
        if arr.dtype.kind == "b":
            raise RuntimeError("Boolean inputs not supported for relu")
        if type(arr) is not np.ndarray or arr.size < _RELU_BLOCKS_MIN or \
                arr.dtype.kind != "f" or not arr.flags.c_contiguous:
            return super().forward(ctx, x)
        ctx.save_output()
        out = np.empty_like(arr)
        src, dst = arr.reshape(-1), out.reshape(-1)

        def chunk(lo: int, hi: int) -> None:
            _max_with_zero(src[lo:hi], dst[lo:hi])

        split_rows(_RELU["forward"], (arr.size, arr.dtype.str), chunk, src.size, src.size,
                   _RELU_MIN_WORK)
        return out

    @classmethod
    def backward(cls, ctx, grad):
        g = grad._data if isinstance(grad, Tensor) else grad
        o = ctx._out_data
        if recording() or not (selects_by_bits(g, o) and g.shape == o.shape):
            return super().backward(ctx, grad)  # (the selection as np/cupy/Tensor where)
        _ = ctx.saved_output  # the in-place check: raises if the output was modified since
        res = np.empty_like(g)
        if g.size < 2 * _RELU_MIN_WORK or not (g.flags.c_contiguous and o.flags.c_contiguous
                                                and res.flags.c_contiguous):
            _select_nonzero(g, o, res)  # (one call: too small to share, or not flat)
            return finish(res)
        gf, of, rf = g.reshape(-1), o.reshape(-1), res.reshape(-1)

        def chunk(lo: int, hi: int) -> None:
            _select_nonzero(gf[lo:hi], of[lo:hi], rf[lo:hi])

        split_rows(_RELU["backward"], (g.size, g.dtype.str), chunk, gf.size, gf.size,
                   _RELU_MIN_WORK)
        return finish(res)
