"""numba kernels for ``compiled``: each one pass over arrays that NumPy would walk several
times, rounding every element exactly as the NumPy code it replaces does.

The LSTM kernels take (rows, columns) arrays of any strides; callers pass contiguous data as
one row, (1, H N): LLVM vectorizes one long loop best (over (H, N) = (128, 32) the kernel ran
half as fast). numba compiles a version per layout and dtype.

Every operation is written in the order the NumPy path performs it, one IEEE operation per
NumPy pass (a product, then a sum: no fused multiply-add, which numba forms only under
fast-math). The constants 0, 1 and 0.5 are exact in any float type, so one kernel serves
float32 and float64. Importing this module imports numba (ImportError when it is missing).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)
_OPTIONS = {"nogil": True, "error_model": "numpy"}


def _compiled(fn):
    """``fn`` compiled on first call, its machine code cached on disk where numba finds a
    writable place (next to this file, else the user's cache directory); where it finds
    none, compiled again in each process."""
    try:
        return njit(cache=True, **_OPTIONS)(fn)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return njit(**_OPTIONS)(fn)


@_compiled
def lstm_forward_cell(acts, c_prev, c):
    """One LSTM step after the gates' tanh, on (rows, columns) arrays: ``acts`` (4, R, C)
    holds tanh of the pre-activations, gate order i, f, o, g, the sigmoid blocks'
    pre-activations halved; the first three blocks become sigmoids in place
    (tanh(x / 2) / 2 + 1 / 2), and ``c`` (R, C) becomes i * g + f * c_prev."""
    for r in range(c.shape[0]):
        for j in range(c.shape[1]):
            i = acts[0, r, j] * _HALF + _HALF
            f = acts[1, r, j] * _HALF + _HALF
            acts[0, r, j] = i
            acts[1, r, j] = f
            acts[2, r, j] = acts[2, r, j] * _HALF + _HALF
            c[r, j] = i * acts[3, r, j] + f * c_prev[r, j]


@_compiled
def lstm_backward_cell(dh, dout, acts, c_prev, tanh_c, dc, dg):
    """One LSTM step of backpropagation through time without a projection, on (R, C) arrays.
    With dm = dh + dout (the gradient reaching the step's output),
    dc += dm * o * (1 - tanh(c)^2); then the pre-activations' gradients ``dg`` (4, R, C) in
    PyTorch's gate order i, f, g, o (``acts`` is in the loop's order i, f, o, g):
    dc * i(1 - i) g, dc * f(1 - f) c_prev, dc * (1 - g^2) i and dm * o(1 - o) tanh(c); last,
    dc *= f for the step before. ``dh`` is read only (the caller's product overwrites it)."""
    for r in range(dc.shape[0]):
        for j in range(dc.shape[1]):
            i = acts[0, r, j]
            f = acts[1, r, j]
            o = acts[2, r, j]
            g = acts[3, r, j]
            t = tanh_c[r, j]
            dm = dh[r, j] + dout[r, j]
            d = dc[r, j] + dm * ((_ONE - t * t) * o)
            dg[0, r, j] = d * (((_ONE - i) * i) * g)
            dg[1, r, j] = d * (((_ONE - f) * f) * c_prev[r, j])
            dg[2, r, j] = d * ((_ONE - g * g) * i)
            dg[3, r, j] = dm * (((_ONE - o) * o) * t)
            dc[r, j] = d * f


@_compiled
def max_pool_scatter(g, idx, out, offsets, width, stride_h, stride_w, top, left):
    """Max pooling's backward: each gradient ``g`` (N, C, OH, OW) added at the input element
    its window's index ``idx`` names, into ``out`` (N, C, H W), the input gradient with each
    image flat (zeros beforehand). Windows run in row-major order, as PyTorch adds them, so an
    element that overlapping windows share gets PyTorch's sum (and 0.0 + g where one window
    reaches it). ``offsets[k]``: how far kernel offset k lies from its window's first
    element, flat in an image ``width`` wide; window (oy, ox) starts at row
    oy * stride_h - top, column ox * stride_w - left (in the padding for some windows; the
    element an index names never is)."""
    n, c, oh, ow = g.shape
    for b in range(n):
        for ch in range(c):
            for oy in range(oh):
                start = (oy * stride_h - top) * width - left
                for ox in range(ow):
                    out[b, ch, start + ox * stride_w + offsets[idx[b, ch, oy, ox]]] += \
                        g[b, ch, oy, ox]


@_compiled
def select_nonzero(g, o, out):
    """ReLU's backward on flat arrays: out = g where o != 0 (NaN included), else +0.0, each
    element selected, never multiplied (a product with a 0/1 mask gives -0.0 and NaN)."""
    for i in range(g.shape[0]):
        out[i] = g[i] if o[i] != 0 else _ZERO


@njit(inline="always")
def _row_value_op(a, v, op):
    """``a - v`` (op 0), ``a * v`` (1) or ``a / v`` (2): one IEEE operation. Inlined into the
    row-value loops, where LLVM moves the branch on the loop-invariant ``op`` out of the loop
    and vectorizes each arm (as fast as three loops written out)."""
    if op == 0:
        return a - v
    if op == 1:
        return a * v
    return a / v


@_compiled
def by_row_value(x, col, out, op):
    """``out = x (op) col`` on (R, C) arrays, ``col`` (R, 1) holding one value per row
    (``_row_value_op``). NumPy's broadcast of such a column runs its inner loop once per row at
    some 2.5x the cost of a plain elementwise pass (256 x 1000 float32: 88 us against 34), this
    loop at the plain pass's speed."""
    for r in range(x.shape[0]):
        v = col[r, 0]
        for j in range(x.shape[1]):
            out[r, j] = _row_value_op(x[r, j], v, op)


@_compiled
def by_row_value_in_place(a, col, op):
    """``by_row_value(a, col, a, op)`` in place. Its own kernel: with one array LLVM knows each
    element is read before it is written and vectorizes the loop; given the same array twice it
    must assume overlap and runs the loop one element at a time (a division 4.7x slower)."""
    for r in range(a.shape[0]):
        v = col[r, 0]
        for j in range(a.shape[1]):
            a[r, j] = _row_value_op(a[r, j], v, op)


@_compiled
def scaled_rows_less_targets(e, coef, targets, picked, out):
    """Cross entropy's gradient on (R, C) arrays: ``out = e * coef`` (``coef`` one value per
    row), then ``picked[r]`` taken from each row's element at column ``targets[r]``: NumPy's
    column product and its indexed subtraction, in that order."""
    for r in range(e.shape[0]):
        v = coef[r]
        for j in range(e.shape[1]):
            out[r, j] = e[r, j] * v
        out[r, targets[r]] -= picked[r]


@_compiled
def adam_step(p, g, m, v, v_max, amsgrad, w, w_low, beta2, one_minus_beta2, bc2_sqrt, eps,
              neg_step_size):
    """One Adam step over flat arrays after the gradient's decay (``optim.adam``'s NumPy
    passes, in their order): ``m`` lerped towards ``g`` by PyTorch's formula (``w_low``:
    m + (g - m) w, else g - (g - m) w with w = 1 - weight), ``v = v beta2 + (g (1 - beta2)) g``,
    with ``amsgrad`` ``v_max = max(v_max, v)`` (NaN if either is), then ``p += m neg_step_size
    / (sqrt(v) / bc2_sqrt + eps)``. The scalars come in the arrays' dtype, as NumPy rounds
    Python floats meeting them."""
    for i in range(p.shape[0]):
        gi = g[i]
        mi = m[i]
        mi = mi + (gi - mi) * w if w_low else gi - (gi - mi) * w
        m[i] = mi
        vi = v[i] * beta2 + (gi * one_minus_beta2) * gi
        v[i] = vi
        if amsgrad:
            top = v_max[i]
            if vi > top or vi != vi:
                top = vi
            v_max[i] = top
            vi = top
        p[i] = p[i] + (mi * neg_step_size) / (np.sqrt(vi) / bc2_sqrt + eps)
