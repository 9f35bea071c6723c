"""numba kernels for ``compiled``: each one pass over arrays that NumPy would walk several
times, rounding every element exactly as the NumPy code it replaces does.

The LSTM kernels take (rows, columns) arrays of any strides; callers pass contiguous data as
one row, (1, H N): LLVM vectorizes one long loop best (over (H, N) = (128, 32) the kernel ran
half as fast). numba compiles a version per layout and dtype.

Every operation is written in the order the NumPy path performs it, one IEEE operation per
NumPy pass (a product, then a sum: no fused multiply-add, which numba forms only under
fast-math). Where PyTorch's kernels fuse a multiply-add (``backend.aten_arith``), a kernel
says so with ``_fma``: LLVM's ``llvm.fma``, one rounding on any CPU (an FMA instruction, or
libm's exact ``fma`` without one). The constants 0, 1 and 0.5 are exact in any float type, so
one kernel serves float32 and float64. Importing this module imports numba (ImportError when
it is missing).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types, uint64
from numba.extending import intrinsic

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


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``llvm.fma``), for three floats of one type."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return a(a, b, c), codegen


@njit(inline="always")
def _multiply_add(a, b, c, fused):
    """``a * b + c``: rounded once when ``fused``, else a product then a sum."""
    return _fma(a, b, c) if fused else a * b + c


@_compiled
def axpy_fused(y, x, alpha):
    """``y = fma(x, alpha, y)`` over flat arrays, in place: PyTorch's ``y.add_(x, alpha=a)``
    in its AVX2 and AVX512 kernels (``alpha`` in the arrays' dtype)."""
    for i in range(y.shape[0]):
        y[i] = _fma(x[i], alpha, y[i])


@_compiled
def addcmul_fused(y, t1, t2, value):
    """``y = fma(t1 * value, t2, y)`` over flat arrays, in place: PyTorch's
    ``y.addcmul_(t1, t2, value=v)`` in its AVX2 and AVX512 kernels (``value`` in the arrays'
    dtype; the scaled ``t1`` is rounded on its own, the product with ``t2`` is not)."""
    for i in range(y.shape[0]):
        y[i] = _fma(t1[i] * value, t2[i], y[i])


@_compiled
def multiply_add_fused(a, b, c, out):
    """``out = fma(a, b, c)`` over flat arrays of one length and dtype (any strides: a number
    broadcast to the length has stride 0): ``aten_arith.multiply_add`` where PyTorch's
    kernel fuses the multiply-add of a pointwise formula (tanh's backward, GELU's)."""
    for i in range(out.shape[0]):
        out[i] = _fma(a[i], b[i], c[i])


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
def adam_step(p, g, m, v, v_max, amsgrad, coeff, w_low, beta2, one_minus_beta2, bc2_sqrt, eps,
              neg_step_size, fused):
    """One Adam step over flat arrays after the gradient's decay (``optim.adam``'s NumPy
    passes, in their order): ``m`` lerped towards ``g`` by PyTorch's formula, ``(g - m) coeff``
    added to m (``w_low``) or to g (coeff = weight - 1), ``v = v beta2 + (g (1 - beta2)) g``,
    those two multiply-adds rounded once when ``fused`` (``aten_arith``), with ``amsgrad``
    ``v_max = max(v_max, v)`` (NaN if either is), then ``p += m neg_step_size / (sqrt(v) /
    bc2_sqrt + eps)``. The scalars come in the arrays' dtype, as NumPy rounds Python floats
    meeting them."""
    for i in range(p.shape[0]):
        gi = g[i]
        mi = m[i]
        mi = _multiply_add(gi - mi, coeff, mi if w_low else gi, fused)
        m[i] = mi
        vi = _multiply_add(gi * one_minus_beta2, gi, v[i] * beta2, fused)
        v[i] = vi
        if amsgrad:
            top = v_max[i]
            if vi > top or vi != vi:
                top = vi
            v_max[i] = top
            vi = top
        p[i] = p[i] + (mi * neg_step_size) / (np.sqrt(vi) / bc2_sqrt + eps)



# Array indices in the convolution kernels below are unsigned: numba wraps a negative signed
# index around (as Python does), a test in every access that stops LLVM vectorizing the loop
# (a copy of 196-element runs 890 us signed, 298 unsigned; NumPy's strided copy 288).
_U = uint64


@njit(inline="always")
def _inside(w0, stride, ow, width):
    """The window columns q (``lo`` to ``hi``) whose input column q * stride + w0 lies inside
    an image ``width`` wide; the others fall in the padding."""
    lo = min(ow, max(0, -(w0 // stride)))
    return lo, max(lo, min(ow, (width - 1 - w0) // stride + 1))


@njit(inline="always")
def _inside_rows(i, dh, sh, top, oh, height):
    """The window rows r (``lo`` to ``hi``) of kernel row ``i`` inside the image."""
    return _inside(i * dh - top, sh, oh, height)


@_compiled
def _column_masks(kw, dw, left, width, ow, size):
    """(KW, size): whether flat window position k (of OH rows OW wide) of kernel column j
    falls on an input column inside the image."""
    masks = np.zeros((kw, size), np.bool_)
    for j in range(kw):
        for k in range(size):
            masks[j, k] = 0 <= k % ow + j * dw - left < width
    return masks


@njit(inline="always")
def _shifted_run(i, j, dh, dw, top, left, h, w, ow, r_lo, r_hi):
    """At stride 1 and "same" width: (shift, lo, hi), kernel offset (i, j)'s flat distance
    from a window position to its input element, and the window positions lo to hi of the
    rows ``r_lo`` to ``r_hi`` whose element lies in the image's rows."""
    shift = (i * dh - top) * w + j * dw - left
    lo = max(r_lo * ow, -shift)
    return shift, lo, max(lo, min(r_hi * ow, h * w - shift))


@njit(inline="always")
def _column_start(blk, gi, row, m, groups, krows, nb, p):
    """Where image ``m`` of block ``blk``, group ``gi``, begins its row ``row`` of the
    (B, G, K, Nb, P) columns, flat."""
    return _U((((blk * groups + gi) * krows + row) * nb + m) * p)


@_compiled
def im2col(x, cols, kh, kw, sh, sw, top, left, dh, dw, oh, ow, blk_lo, blk_hi, m_lo, m_hi):
    """Convolution's columns: ``cols`` (B, G, K, Nb, OH OW), K's rows ordered kernel offset
    (i, j) before channel (``ops.conv._im2col``), from the images ``x`` (B Nb, G Cg, H, W),
    zeros where a window reaches into the padding (``top`` rows, ``left`` columns); blocks
    ``blk_lo`` to ``blk_hi``, images ``m_lo`` to ``m_hi`` of each (a thread's share).

    Both arrays are C-contiguous. Where windows move one element a step and output rows are
    as wide as input rows (stride 1, "same" width), a kernel offset's whole plane is one
    shifted run of the image, its padding columns masked to zero: one vectorized loop of
    OH OW elements instead of OH runs of OW (NumPy's strided copy pays some 20 ns a run;
    the CNN benchmark's 16 -> 32 columns 689 -> 324 us). Otherwise row by row."""
    groups, krows, nb, p = cols.shape[1:]
    c, h, w = x.shape[1], x.shape[2], x.shape[3]
    cg = c // groups
    flat = sh == 1 and sw == 1 and ow == w
    masks = _column_masks(kw, dw, left, w, ow, p).reshape(-1)
    xf, cf = x.reshape(-1), cols.reshape(-1)
    for blk in range(blk_lo, blk_hi):
        for gi in range(groups):
            for i in range(kh):
                r_lo, r_hi = _inside_rows(i, dh, sh, top, oh, h)
                for j in range(kw):
                    w0 = j * dw - left
                    q_lo, q_hi = _inside(w0, sw, ow, w)
                    shift, lo, hi = _shifted_run(i, j, dh, dw, top, left, h, w, ow, r_lo, r_hi)
                    mask = _U(j * p)
                    for ch in range(cg):
                        for m in range(m_lo, m_hi):
                            dst = _column_start(blk, gi, (i * kw + j) * cg + ch, m, groups,
                                                krows, nb, p)
                            plane = ((blk * nb + m) * c + gi * cg + ch) * h * w
                            if flat:
                                for k in range(_U(lo)):
                                    cf[dst + k] = 0
                                src = _U(plane + shift + lo)
                                for k in range(_U(hi - lo)):
                                    v = xf[src + k]
                                    cf[dst + _U(lo) + k] = v if masks[mask + _U(lo) + k] else 0
                                for k in range(_U(hi), _U(p)):
                                    cf[dst + k] = 0
                                continue
                            for k in range(_U(p)):
                                cf[dst + k] = 0
                            for r in range(r_lo, r_hi):
                                row = _U(r * ow)
                                src = _U(plane + (r * sh + i * dh - top) * w + q_lo * sw + w0)
                                for q in range(_U(q_hi - q_lo)):
                                    cf[dst + row + _U(q_lo) + q] = xf[src + q * _U(sw)]


@_compiled
def col2im(gcols, gx, kh, kw, sh, sw, top, left, dh, dw, oh, ow, blk_lo, blk_hi, m_lo,
           m_hi):
    """Convolution's input gradient from its gradient columns: ``gx`` (B Nb, G Cg, H, W)
    written with the sum, at each input element, of the columns (B, G, K, Nb, OH OW) whose
    windows reach it (blocks and images as ``im2col``'s), added kernel offset by kernel
    offset from 0.0 (``_windows._col2im``'s slice-adds over a zeroed padded image, in their
    order: the same bits, but for which NaN a sum of two NaNs gives, which IEEE leaves open
    and LLVM may swap); terms that land in the padding are dropped. Both arrays
    C-contiguous.

    Stride 1 at "same" width goes as ``im2col``: one shifted run per kernel offset, the
    padding's terms masked to +0.0, which leaves every sum's bits alone (a sum begun at +0.0
    is never -0.0, and x + 0.0 = x for every other x)."""
    groups, krows, nb, p = gcols.shape[1:]
    c, h, w = gx.shape[1], gx.shape[2], gx.shape[3]
    cg = c // groups
    flat = sh == 1 and sw == 1 and ow == w
    masks = _column_masks(kw, dw, left, w, ow, p).reshape(-1)
    gf, xf = gcols.reshape(-1), gx.reshape(-1)
    for blk in range(blk_lo, blk_hi):
        for gi in range(groups):
            for ch in range(cg):
                for m in range(m_lo, m_hi):
                    plane = ((blk * nb + m) * c + gi * cg + ch) * h * w
                    for k in range(_U(h * w)):
                        xf[_U(plane) + k] = 0
                    for i in range(kh):
                        r_lo, r_hi = _inside_rows(i, dh, sh, top, oh, h)
                        for j in range(kw):
                            w0 = j * dw - left
                            src = _column_start(blk, gi, (i * kw + j) * cg + ch, m, groups,
                                                krows, nb, p)
                            if flat:
                                shift, lo, hi = _shifted_run(i, j, dh, dw, top, left, h, w,
                                                             ow, r_lo, r_hi)
                                dst = _U(plane + shift + lo)
                                mask = _U(j * p + lo)
                                run = src + _U(lo)
                                for k in range(_U(hi - lo)):
                                    v = gf[run + k]
                                    xf[dst + k] += v if masks[mask + k] else 0
                                continue
                            q_lo, q_hi = _inside(w0, sw, ow, w)
                            for r in range(r_lo, r_hi):
                                dst = _U(plane + (r * sh + i * dh - top) * w + q_lo * sw + w0)
                                row = src + _U(r * ow + q_lo)
                                for q in range(_U(q_hi - q_lo)):
                                    xf[dst + q * _U(sw)] += gf[row + q]


@_compiled
def max_pool_2x2(x, best, idx):
    """Max pooling over 2x2 windows at stride 2 of the C-contiguous images ``x`` (N, C, H,
    W) into ``best`` and ``idx`` (N, C, OH, OW), as PyTorch's loop decides: the index is the
    first maximum (offsets 0, 1 in the window's top row, 2, 3 below), or the last NaN of a
    window holding one, and the value the element at it. Written as selects, no branches,
    so LLVM vectorizes along the output row (64 x 16 x 28 x 28 float32: 747 us on one thread
    against 1282 for the NumPy passes)."""
    c, h, w = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = best.shape[2], best.shape[3]
    xf, bf, jf = x.reshape(-1), best.reshape(-1), idx.reshape(-1)
    for plane in range(x.shape[0] * c):
        for r in range(oh):
            top = _U(plane * h * w + 2 * r * w)
            below = top + _U(w)
            out = _U(plane * oh * ow + r * ow)
            for q in range(_U(ow)):
                v0, v1 = xf[top + 2 * q], xf[top + 2 * q + 1]
                v2, v3 = xf[below + 2 * q], xf[below + 2 * q + 1]
                m = v0
                at = 0
                c1 = v1 > m
                m = v1 if c1 else m
                at = 1 if c1 else at
                c2 = v2 > m
                m = v2 if c2 else m
                at = 2 if c2 else at
                c3 = v3 > m
                m = v3 if c3 else m
                at = 3 if c3 else at
                n1, n2, n3 = v1 != v1, v2 != v2, v3 != v3
                nan = v0 != v0 or n1 or n2 or n3
                bf[out + q] = (v3 if n3 else v2 if n2 else v1 if n1 else v0) if nan else m
                jf[out + q] = (3 if n3 else 2 if n2 else 1 if n1 else 0) if nan else at
