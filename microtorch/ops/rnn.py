"""The recurrences behind ``nn.RNN``/``nn.LSTM``/``nn.GRU`` and their cells.

Two implementations of the same formulas (PyTorch's, gate order i,f,g,o and r,z,n):

- composed: one time step from existing differentiable ops (``Linear``, ``Sigmoid``, ``Tanh``,
  ``Relu``, chunk). The cells use it, and so does double backward through a layer.
- ``Recurrence``: one layer and direction over a whole sequence as a single graph node, its
  forward a loop of array ops and its backward backpropagation through time on arrays.
  Composing a sequence from per-step ops would slice the input projection once per step, and
  each slice's backward materialises a gradient of the whole sequence: O(L^2) work. The fused
  node does O(L), as PyTorch does. Under ``create_graph`` its backward replays the composed
  steps and differentiates them, so higher-order gradients stay exact.

Both start from the input projection ``x @ W_ih^T + b_ih`` of every step at once (one matmul
per layer and direction over the time-major input) and run only the recurrent part per step.
The fused node owns that projection, so it lays it out as its loop reads it (the LSTM's
feature-major slabs) and computes the gradients of x, W_ih and both biases from the
pre-activations' gradients in the layout its backward loop wrote them, with no transposing
copy between two nodes. This module must not import ``microtorch.nn``.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function, finish
from ..autograd.grad_mode import recording
from ..backend import compiled
from ..backend.autotune import choice, split_rows, timing_active
from ..backend.blas import transpose_into
from ..backend.threads import blas_threads, gemm_size, gemm_threads, run_rows
from ._util import Tensor, xp_of
from .elementwise import Sigmoid, Tanh
from .linear import Linear, affine
from .rectifier import Relu
from .shape import cat, stack

__all__ = []

# Gate blocks per hidden unit in each mode's weight matrices.
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# -- composed steps --------------------------------------------------------------------------
def _lstm_step(gx: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None,
               w_hr: Tensor | None, gh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step from the input part ``gx``; ``gh``: the state's product, if made."""
    gh = Linear.apply(h, w_hh, b_hh) if gh is None else gh
    i, f, g, o = (gx + gh).chunk(4, 1)
    c = Sigmoid.apply(f) * c + Sigmoid.apply(i) * Tanh.apply(g)
    h = Sigmoid.apply(o) * Tanh.apply(c)
    if w_hr is not None:
        h = Linear.apply(h, w_hr)
    return h, c


def _gru_step(gx: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    xr, xz, xn = gx.chunk(3, 1)
    hr, hz, hn = Linear.apply(h, w_hh, b_hh).chunk(3, 1)
    r = Sigmoid.apply(xr + hr)
    z = Sigmoid.apply(xz + hz)
    n = Tanh.apply(xn + r * hn)  # b_hn stays inside the reset gate's product (PyTorch's GRU)
    return n + z * (h - n)  # = (1 - z) * n + z * h, in PyTorch's order of operations


def _rnn_step(gx: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None, relu: bool,
              gh: Tensor | None = None) -> Tensor:
    pre = gx + (Linear.apply(h, w_hh, b_hh) if gh is None else gh)
    return Relu.apply(pre) if relu else Tanh.apply(pre)


def lstm_cell(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor | None, b_hh: Tensor | None) -> tuple[Tensor, Tensor]:
    """One LSTM step on (N, input) and (N, hidden) tensors: (h', c').

    The state's product is made before the input's, as PyTorch's CPU cell makes them: the
    backward runs the later node first, so the input's gradient comes last (where the module
    tracker of FlopCounterMode ends the cell's backward)."""
    gh = Linear.apply(hx, w_hh, b_hh)
    return _lstm_step(Linear.apply(x, w_ih, b_ih), hx, cx, w_hh, b_hh, None, gh)


def gru_cell(x: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
             b_hh: Tensor | None) -> Tensor:
    """One GRU step: h'."""
    return _gru_step(Linear.apply(x, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_cell(x: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
             b_hh: Tensor | None, relu: bool = False) -> Tensor:
    """One Elman RNN step: act(x W_ih^T + b_ih + h W_hh^T + b_hh), the state's product made
    first (PyTorch's order, see ``lstm_cell``)."""
    gh = Linear.apply(hx, w_hh, b_hh)
    return _rnn_step(Linear.apply(x, w_ih, b_ih), hx, w_hh, b_hh, relu, gh)


def _composed(x: Tensor, w_ih: Tensor, b_ih: Tensor | None, h0: Tensor, c0: Tensor | None,
              w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None, mode: str, reverse: bool,
              batch_sizes: tuple | None = None) -> Tensor:
    """``Recurrence``'s output (same layout) from per-step ops: differentiable to any order.

    With ``batch_sizes`` only the first ``batch_sizes[t]`` rows step at time ``t``; the others
    keep their state (the padded layout of a packed batch, sorted by decreasing length)."""
    xw = Linear.apply(x, w_ih, b_ih)  # every step's input part in one product
    steps, n = xw.shape[:2]
    outs: list = [None] * steps
    h, c = h0, c0
    for t in (reversed(range(steps)) if reverse else range(steps)):
        b = n if batch_sizes is None else batch_sizes[t]
        if b < n:
            h_new, c_new = _composed_step(xw[t][:b], h[:b], None if c is None else c[:b],
                                          w_hh, b_hh, w_hr, mode)
            h = cat([h_new, h[b:]])
            c = None if c is None else cat([c_new, c[b:]])
        else:
            h, c = _composed_step(xw[t], h, c, w_hh, b_hh, w_hr, mode)
        outs[t] = h
    out = stack(outs)
    return cat([out.reshape(-1), c.reshape(-1)]) if mode == "LSTM" else out


def _composed_step(gx, h, c, w_hh, b_hh, w_hr, mode):
    if mode == "LSTM":
        return _lstm_step(gx, h, c, w_hh, b_hh, w_hr)
    if mode == "GRU":
        return _gru_step(gx, h, w_hh, b_hh), None
    return _rnn_step(gx, h, w_hh, b_hh, mode == "RNN_RELU"), None


# -- the fused layer -------------------------------------------------------------------------
def _needs(ctx, i: int) -> bool:
    return i < len(ctx._next) and ctx._next[i] is not None


def _gate_scale(xp, dtype, blocks: str, hid: int):
    """Per-column scale letting one tanh pass compute every gate block's activation.

    sigmoid(x) = 0.5 * tanh(x / 2) + 0.5, so the sigmoid blocks ("s") are halved before tanh
    (exactly: a power of two) and mapped back after it; tanh blocks ("t") are left alone.
    """
    half = [0.5 if b == "s" else 1.0 for b in blocks]
    return xp.repeat(xp.asarray(half, dtype=dtype), hid)


class Recurrence(Function):
    """One layer and direction of an RNN/LSTM/GRU over a sequence, its input projection
    included, as one node (PyTorch's CPU LSTM is one oneDNN layer node too).

    ``apply(x, w_ih, b_ih, h0, c0, w_hh, b_hh, w_hr, mode, reverse, batch_sizes)``: ``x``
    (L, N, H_in) the time-major input, ``h0`` (N, P) and (LSTM) ``c0`` (N, H) the initial
    state. ``batch_sizes`` (a packed batch, padded: rows sorted by decreasing length) says how
    many leading rows are active at each input time step; the others neither compute nor
    change their state, so the final state is each row's state after its own last step
    (reverse: each row starts at its own last element). ``None``: all rows at every step. The
    result is the outputs (L, N, P) in input time order; for the LSTM, flattened and followed
    by the final cell state (one node has one output: ``recurrence`` takes the views apart).

    The RNN's and GRU's input projection ``x W_ih^T + b_ih`` of every step is one matrix
    product before the loop; the LSTM's is part of each step's product (``_lstm_forward``).
    Per step only that product and a few elementwise passes run; whatever does not depend on
    the recurrence (gate scaling, derivative factors) is done once for the whole sequence.
    The backward's products for x and the weights run once over all steps from the
    pre-activations' gradients.
    """

    lifted = True

    @staticmethod
    def forward(ctx, x, w_ih, b_ih, h0, c0, w_hh, b_hh, w_hr, mode, reverse, batch_sizes=None):
        xa, whh = x._data, w_hh._data
        xp, dt = xp_of(xa), xa.dtype
        steps, n = xa.shape[:2]
        g, p = whh.shape
        bs = _step_sizes(batch_sizes, steps, n, reverse)
        # Packed: rows past a step's batch size are never written, so start them at zero.
        empty = xp.empty if batch_sizes is None else xp.zeros
        extra, rows = (), None
        if mode == "LSTM":  # feature-major, the input projection inside each step's product
            biases = [b._data for b in (b_ih, b_hh) if b is not None]
            if xp is np:  # (a product per step, back to back)
                gemm_threads(g, p + xa.shape[2] + bool(biases), n, steps)
            hs_by_feature, extra = _lstm_forward(xp, xa[::-1] if reverse else xa, h0._data,
                                                 c0._data, w_ih._data, whh, biases, w_hr, bs,
                                                 empty, (mode, xa.shape, dt.str))
            hs = hs_by_feature.transpose(0, 2, 1)  # (steps + 1, N, P), a view
        else:  # batch-major, the input projection of every step first (as F.linear's)
            rows = xp.ascontiguousarray(xa.reshape(steps * n, xa.shape[2]))  # (L N, H_in)
            xs = affine(rows, w_ih._data, None if b_ih is None else b_ih._data)  # (F.linear's)
            xs = xs.reshape(steps, n, g)
            if reverse:
                xs = xs[::-1]  # run in processing order; results go back to input order
            if xp is np:
                gemm_threads(n, p, g, steps)  # (a product per step, back to back)
            hs = xp.empty((steps + 1, n, p), dt)  # hs[t]: the state step t starts from
            hs[0] = h0._data
            if mode == "GRU":
                extra = _gru_forward(xp, xs, hs, whh, b_hh, bs, empty)
            else:
                _rnn_forward(xp, xs, hs, whh, b_hh, bs, mode == "RNN_RELU")
        ctx.save_for_backward(x, w_ih, b_ih, h0, c0, w_hh, b_hh, w_hr, hs, *extra)
        ctx.rows = rows
        ctx.mode, ctx.reverse, ctx.batch_sizes, ctx.bs = mode, reverse, batch_sizes, bs
        out = hs[1:][::-1] if reverse else hs[1:]
        if mode == "LSTM":  # outputs and final cell state, each copied once into one array
            c_n = extra[1][steps].T
            packed = xp.empty(out.size + c_n.size, dt)
            packed[:out.size].reshape(out.shape)[...] = out
            packed[out.size:].reshape(c_n.shape)[...] = c_n
            return packed
        return out.copy()  # not a view of hs: in-place ops on the output must not reach it

    @staticmethod
    def backward(ctx, grad):
        if recording():  # create_graph: differentiate the composed steps instead
            return _replay_backward(ctx, grad)
        if isinstance(grad, Tensor):  # (the root gradient, or one from a non-lifted node)
            grad = grad._data
        saved = ctx.saved_tensors
        x, w_ih, b_ih, h0, c0, w_hh, b_hh, w_hr, hs = saved[:9]
        mode, reverse = ctx.mode, ctx.reverse
        xp = xp_of(grad)
        steps, n = x.shape[:2]
        g, p = w_hh.shape
        dout = grad[:steps * n * p].reshape(steps, n, p) if mode == "LSTM" else grad
        if reverse:
            dout = dout[::-1]
        if xp is np:
            gemm_threads(g, n, p, steps)  # (a product per step, back to back)
        # Gradients of the pre-activations: zero for rows that did not step (packed input).
        empty = xp.empty if ctx.batch_sizes is None else xp.zeros
        if mode == "LSTM":
            return _lstm_gradients(xp, ctx, dout, grad[steps * n * p:], saved, empty)
        if mode == "GRU":
            dg, d_hh, dh = _gru_backward(xp, ctx, dout, saved, empty)
        else:
            dg, dh = _rnn_backward(xp, ctx, dout, saved, empty)
            d_hh = dg
        # The input projection's gradients from its (L N, G) rows in input time order, as
        # F.linear's backward computes them (the same bits); the steps' products just ran.
        d = (xp.ascontiguousarray(dg[::-1]) if reverse else dg).reshape(-1, g)
        rows = ctx.rows
        if xp is np:
            gemm_threads(steps * n, g, rows.shape[1], int(_needs(ctx, 0)) + int(_needs(ctx, 1)),
                         run=steps * gemm_size(g, n, p))
        gx = (d @ w_ih._data).reshape(x.shape) if _needs(ctx, 0) else None
        gw_ih = d.T @ rows if _needs(ctx, 1) else None
        gb_ih = d.sum(0) if _needs(ctx, 2) else None
        d_hh = d_hh.reshape(-1, g)  # (processing order, as hs)
        if xp is np:
            gemm_threads(g, steps * n, p)
        gwhh = d_hh.T @ hs[:steps].reshape(-1, p) if _needs(ctx, 5) else None
        gbhh = d_hh.sum(0) if b_hh is not None and _needs(ctx, 6) else None
        return _finish(saved, gx, gw_ih, gb_ih, dh, None, gwhh, gbhh, None)


def _finish(saved, *grads) -> tuple:
    """``finish`` of the eight tensor inputs' gradients, each in its input's dtype (ml_dtypes
    multiplies bfloat16 matrices in float32, and PyTorch's gradients are the parameters'
    dtype), and None for mode, reverse and batch_sizes."""
    grads = tuple(g if g is None or g.dtype == t._data.dtype else g.astype(t._data.dtype)
                  for g, t in zip(grads, saved[:8]))
    return finish(*grads, None, None, None)


def _lstm_gates(xp, a, hid: int):
    """A copy of ``a``, rows (or entries) in PyTorch's LSTM gate order i, f, g, o, in the
    order the fused loop runs the gates, i, f, o, g (the three sigmoid blocks side by side:
    one affine pass per step), their sigmoid rows halved (exact: a power of two), since
    sigmoid(x) = tanh(x / 2) / 2 + 1 / 2 and one tanh pass covers every gate."""
    out = xp.concatenate((a[:2 * hid], a[3 * hid:], a[2 * hid:3 * hid]))
    out[:3 * hid] *= 0.5
    return out


def _lstm_forward(xp, x, h0, c0, wih, whh, biases, w_hr, bs, empty, key):
    """The LSTM recurrence of ``Recurrence.forward`` on arrays, feature-major: every per-step
    array is (features, rows), so each gate block is one contiguous (H, N) slab and each
    step's product runs along the G = 4H rows, which OpenBLAS shares between its threads (a
    (N, P) @ (P, G) product with N = 32 rows it splits far worse: 46 vs 31 us for 32 x 128 x
    512 on an Intel Xeon, 2 threads).

    Each step's product is the whole pre-activation: [W_hh | W_ih | b] (G, K) @ [h_t; x_t; 1]
    (K, N), K = P + H_in + 1, the stacked operands kept in ``hx`` (L + 1, K, N). The input part
    then needs no projection of its own, no (G, L, N) array of it and no pass adding it per
    step. Measured on an Intel Xeon VM (2 threads, 50 steps of 32 rows, hidden 128), the
    forward: 2.9 ms for H_in = 16 against 3.1-3.3 ms of loop adding a (G, L, N) projection
    slab per step plus 0.35 ms of projection; 4.2 ms for H_in = 128 against 3.1-3.3 + 1.0 ms.
    The backward's weight gradients become one product (``_lstm_gradients``).

    ``x`` (L, N, H_in) in processing order, ``biases`` the arrays of b_ih and b_hh given (none,
    one or both). Returns the states (L + 1, P, N) (a view of ``hx``)
    and what the backward needs: (activations (L, 4, H, N) in the loop's gate order i, f, o,
    g, cell states (L + 1, H, N), tanh of them (L, H, N), the projection's inputs (L, H, N) or
    None, ``hx``).
    """
    steps, n, nin = x.shape
    (g, p), hid, dt = whh.shape, whh.shape[0] // 4, x.dtype
    bias = sum(biases[1:], biases[0]) if biases else None  # b_ih + b_hh, or the one given
    k = p + nin + (bias is not None)
    w = xp.empty((g, k), dt)
    w[:, :p], w[:, p:p + nin] = whh, wih
    if bias is not None:
        w[:, -1] = bias
    w = _lstm_gates(xp, w, hid)
    hx = xp.empty((steps + 1, k, n), dt)
    hs = hx[:, :p]  # hs[t]: the state step t starts from
    hs[0] = h0.T
    hx[:steps, p:p + nin] = x.transpose(0, 2, 1)
    hx[steps, p:] = 0  # (the last state's row is never multiplied: defined all the same)
    if bias is not None:
        hx[:, -1] = 1
    acts = empty((steps, 4, hid, n), dt)
    cs = xp.empty((steps + 1, hid, n), dt)
    cs[0] = c0.T
    tcs = empty((steps, hid, n), dt)  # tanh(c)
    ms = empty((steps, hid, n), dt) if w_hr is not None else None
    whr = w_hr._data if w_hr is not None else None
    flat = acts.reshape(steps, g, n)
    fc = xp.empty((hid, n), dt)  # f * c of the step
    fused = compiled.kernels_for(xp, dt)
    cell = fused.lstm_forward_cell if fused is not None else None
    if cell is not None:  # (whole steps, for the kernel)
        acts_row, cs_row = compiled.as_rows(acts), compiled.as_rows(cs)

    def lstm_rows(lo: int, hi: int) -> None:  # rows (columns here) lo:hi, every step
        for t in range(steps):
            e = max(lo, min(bs[t], hi))  # rows lo:e step; e:hi have finished
            if e > lo:
                a, (i, f, o, gg) = flat[t, :, lo:e], acts[t, :, :, lo:e]
                xp.matmul(w, hx[t, :, lo:e], out=a)
                xp.tanh(a, out=a)
                c = cs[t + 1, :, lo:e]
                if cell is not None and e - lo == n:  # (one compiled pass: the same bits)
                    cell(acts_row[t], cs_row[t], cs_row[t + 1])
                elif cell is not None:
                    cell(acts[t, :, :, lo:e], cs[t, :, lo:e], c)
                else:
                    sig = flat[t, :3 * hid, lo:e]  # sigmoid = tanh(x / 2) / 2 + 1 / 2
                    sig *= 0.5
                    sig += 0.5
                    xp.multiply(i, gg, out=c)
                    c += xp.multiply(f, cs[t, :, lo:e], out=fc[:, lo:e])
                xp.tanh(c, out=tcs[t, :, lo:e])
                if ms is None:
                    xp.multiply(o, tcs[t, :, lo:e], out=hs[t + 1, :, lo:e])
                else:
                    xp.multiply(o, tcs[t, :, lo:e], out=ms[t, :, lo:e])
                    xp.matmul(whr, ms[t, :, lo:e], out=hs[t + 1, :, lo:e])
            if e < hi:  # finished rows keep their state
                hs[t + 1, :, e:hi] = hs[t, :, e:hi]
                cs[t + 1, :, e:hi] = cs[t, :, e:hi]

    _over_rows(xp, lstm_rows, n, steps * n * g, "forward", key)
    return hs, (acts, cs, tcs, ms, hx)


def _lstm_backward(xp, ctx, dout, dc_n, saved, empty):
    """Backpropagation through time of ``_lstm_forward``, feature-major like it.

    ``dout`` (L, N, P): the outputs' gradients in processing order; ``dc_n``: the final cell
    state's, flat. Returns the pre-activations' gradients (L, G, N) in processing order, the
    gradients reaching h0 (P, N) and c0 (H, N), and the projection weight's gradient (P, H)
    when it has one and it is needed, else None.
    """
    w_hh, w_hr = saved[5], saved[7]
    acts, cs, tcs, ms = saved[9:13]
    steps, n = saved[0].shape[:2]
    g, p = w_hh.shape
    hid, dt = g // 4, dout.dtype
    bs = ctx.bs
    i, f, o, gg = acts.transpose(1, 0, 2, 3)
    fused = compiled.kernels_for(xp, dt) if w_hr is None else None
    # Everything that does not depend on the recurrence, for all steps at once, in PyTorch's
    # gate order: d pre-activation = dc * k[:, :3] (i, f, g blocks), dh_out * k[:, 3] (o).
    # (The compiled cell computes these per element as it goes: the same bits.)
    k = xp.empty_like(acts) if fused is None else None
    kc = xp.empty_like(tcs) if fused is None else None  # dc += dh_out * o * (1 - tanh(c)^2)

    def factors(lo: int, hi: int) -> None:  # steps lo:hi (elementwise: any split)
        a, kb = acts[lo:hi, :2], k[lo:hi]  # (i, f: the first blocks in both orders)
        xp.subtract(1, a, out=kb[:, :2])  # sigmoid derivatives s (1 - s)
        kb[:, :2] *= a
        xp.subtract(1, o[lo:hi], out=kb[:, 3])
        kb[:, 3] *= o[lo:hi]
        kb[:, 0] *= gg[lo:hi]
        kb[:, 1] *= cs[lo:hi]
        k2 = kb[:, 2]
        xp.multiply(gg[lo:hi], gg[lo:hi], out=k2)
        xp.subtract(1, k2, out=k2)
        k2 *= i[lo:hi]
        kb[:, 3] *= tcs[lo:hi]
        kcb = kc[lo:hi]
        xp.multiply(tcs[lo:hi], tcs[lo:hi], out=kcb)
        xp.subtract(1, kcb, out=kcb)
        kcb *= o[lo:hi]

    if fused is None:
        _over_steps(xp, factors, steps, k.size)
    dg4 = empty((steps, 4, hid, n), dt)
    dg = dg4.reshape(steps, g, n)
    d_out = xp.ascontiguousarray(dout.transpose(0, 2, 1))  # (L, P, N)
    dh = xp.zeros((p, n), dt)  # gradient reaching h_t through the recurrence
    dc = xp.ascontiguousarray(dc_n.reshape(n, hid).T)
    whh_t = xp.ascontiguousarray(w_hh._data.T)  # (P, G)
    whr_t = xp.ascontiguousarray(w_hr._data.T) if w_hr is not None else None
    dhs = empty((steps, p, n), dt) if w_hr is not None and _needs(ctx, 7) else None

    def fused_rows(lo: int, hi: int) -> None:  # lstm_rows' steps, each in one compiled pass
        cell = fused.lstm_backward_cell
        rows = [compiled.as_rows(a) for a in (d_out, acts, cs, tcs, dg4)]
        dh_row, dc_row = compiled.as_rows(dh), compiled.as_rows(dc)
        for t in reversed(range(steps)):
            e = max(lo, min(bs[t], hi))
            if e < hi:  # finished rows: their output's gradient only
                dh[:, e:hi] += d_out[t, :, e:hi]
            if e - lo == n:  # every row: contiguous, as one long row
                cell(dh_row, *(r[t] for r in rows[:4]), dc_row, rows[4][t])
            elif e > lo:
                cell(dh[:, lo:e], d_out[t, :, lo:e], acts[t, :, :, lo:e], cs[t, :, lo:e],
                     tcs[t, :, lo:e], dc[:, lo:e], dg4[t, :, :, lo:e])
            if e > lo:
                xp.matmul(whh_t, dg[t, :, lo:e], out=dh[:, lo:e])

    def lstm_rows(lo: int, hi: int) -> None:  # rows (columns here) lo:hi, every step back
        for t in reversed(range(steps)):
            e = max(lo, min(bs[t], hi))
            dh[:, lo:hi] += d_out[t, :, lo:hi]
            if e == lo:
                continue
            dm, dcb = dh[:, lo:e], dc[:, lo:e]
            if whr_t is not None:
                if dhs is not None:
                    dhs[t, :, lo:e] = dm
                dm = whr_t @ dm  # through the projection: gradient of o * tanh(c)
            dcb += dm * kc[t, :, lo:e]
            xp.multiply(dcb, k[t, :3, :, lo:e], out=dg4[t, :3, :, lo:e])
            xp.multiply(dm, k[t, 3, :, lo:e], out=dg4[t, 3, :, lo:e])
            dcb *= f[t, :, lo:e]
            xp.matmul(whh_t, dg[t, :, lo:e], out=dh[:, lo:e])

    _over_rows(xp, lstm_rows if fused is None else fused_rows, n, steps * n * g, "backward",
               ("LSTM", (steps, n), dt.str))
    gwhr = None
    if dhs is not None:  # sum over steps and rows of dh_t m_t^T, as one product
        gwhr = _batch_major(xp, dhs).reshape(-1, p).T @ _batch_major(xp, ms).reshape(-1, hid)
    return dg, dh, dc, gwhr


def _lstm_gradients(xp, ctx, dout, dc_n, saved, empty) -> tuple:
    """``Recurrence.backward`` of the LSTM: the loop (``_lstm_backward``), then the products
    over all steps. The weights' and biases' gradients are one product, (G, L N) @ (L N, K)
    against the forward's stacked [h_t; x_t; 1] (``_lstm_forward``), each operand moved once
    into that layout by whole (N,) rows; x's gradient is the input weights' transpose times
    the pre-activations' gradients. Everything in input time order."""
    x, w_ih, w_hh, hx = saved[0], saved[1], saved[5], saved[13]
    steps, n, nin = x.shape
    g, p = w_hh.shape
    dg, dh, dc, gwhr = _lstm_backward(xp, ctx, dout, dc_n, saved, empty)

    def by_feature(arr):  # (L, F, N) in processing order -> (F, L N) in input time order
        out = xp.empty((arr.shape[1], steps, n), arr.dtype)
        out[...] = (arr[::-1] if ctx.reverse else arr).transpose(1, 0, 2)
        return out.reshape(arr.shape[1], steps * n)

    d = by_feature(dg)
    gx = gw = None
    if _needs(ctx, 0):  # (the steps' products just ran: one run for BLAS's threads)
        if xp is np:
            gemm_threads(steps * n, g, nin, run=steps * gemm_size(g, n, p))
        gx = (d.T @ w_ih._data).reshape(x.shape)
    if any(_needs(ctx, i) for i in (1, 2, 5, 6)):
        if xp is np:
            gemm_threads(g, steps * n, hx.shape[1])
        gw = d @ by_feature(hx[:steps]).T  # (G, K): [W_hh | W_ih | b] gradients

    def part(i, cols):  # a contiguous copy of gw's columns if input i needs it
        return xp.ascontiguousarray(gw[:, cols]) if _needs(ctx, i) else None

    bias = -1  # (the biases' column, the same sums for both: two arrays)
    return _finish(saved, gx, part(1, slice(p, p + nin)), part(2, bias), _batch_major(xp, dh),
                   _batch_major(xp, dc), part(5, slice(0, p)), part(6, bias), gwhr)


def _batch_major(xp, arr):
    """(..., features, rows) -> C-contiguous (..., rows, features): large matrices by
    OpenBLAS's blocked copy (exact for these values), others by NumPy."""
    if xp is np:
        out = np.empty(arr.shape[:-2] + arr.shape[-1:] + arr.shape[-2:-1], arr.dtype)
        if transpose_into(out, arr):
            return out
    return xp.ascontiguousarray(xp.swapaxes(arr, -1, -2))


def _gru_forward(xp, xs, hs, whh, b_hh, bs, empty):
    """The GRU recurrence on arrays, batch-major: ``xs`` (L, N, G) the input part in
    processing order, ``hs`` (L + 1, N, P) the states (``hs[0]`` set). Returns what the
    backward needs: the activations r, z, n (L, N, 3, H) and h W_hh^T + b_hh (L, N, G)."""
    steps, n, g = xs.shape
    hid, dt = g // 3, xs.dtype
    scale = _gate_scale(xp, dt, "sst", hid)
    xs = xs * scale
    whh_t = xp.ascontiguousarray(whh.T)
    whh_t *= scale
    bias = b_hh._data * scale if b_hh is not None else None
    acts = empty((steps, n, 3, hid), dt)  # r, z, n
    ghs = empty((steps, n, g), dt)  # h W_hh^T + b_hh (r, z halved): n needs W_hn h
    flat = acts.reshape(steps, n, g)
    for t in range(steps):
        b = bs[t]
        a, x, gh = flat[t, :b], xs[t, :b], ghs[t, :b]
        xp.matmul(hs[t, :b], whh_t, out=gh)
        if bias is not None:
            gh += bias
        rz = a[:, :2 * hid]
        xp.add(x[:, :2 * hid], gh[:, :2 * hid], out=rz)
        xp.tanh(rz, out=rz)
        rz *= 0.5
        rz += 0.5
        new = a[:, 2 * hid:]
        xp.multiply(a[:, :hid], gh[:, 2 * hid:], out=new)
        new += x[:, 2 * hid:]
        xp.tanh(new, out=new)
        h = hs[t + 1, :b]
        xp.subtract(hs[t, :b], new, out=h)
        h *= a[:, hid:2 * hid]
        h += new
        if b < n:
            hs[t + 1, b:] = hs[t, b:]
    return acts, ghs


def _rnn_forward(xp, xs, hs, whh, b_hh, bs, relu: bool) -> None:
    """The Elman recurrence on arrays, batch-major, into ``hs`` (L + 1, N, P)."""
    steps, n = xs.shape[:2]
    if b_hh is not None:
        xs = xs + b_hh._data
    whh_t = xp.ascontiguousarray(whh.T)
    for t in range(steps):
        b = bs[t]
        h = hs[t + 1, :b]
        xp.matmul(hs[t, :b], whh_t, out=h)
        h += xs[t, :b]
        if relu:
            xp.maximum(h, 0, out=h)
        else:
            xp.tanh(h, out=h)
        if b < n:
            hs[t + 1, b:] = hs[t, b:]


def _gru_backward(xp, ctx, dout, saved, empty):
    """Backpropagation through time of ``_gru_forward``: the gradients of the input part and
    of the recurrent part's pre-activations (L, N, G) in processing order (they differ in the
    n block: r * dn), and of h0."""
    hs, (acts, ghs) = saved[8], saved[9:]
    whh = saved[5]._data
    steps, n, g = ghs.shape
    hid, dt, bs = g // 3, dout.dtype, ctx.bs
    r, z, new = acts.transpose(2, 0, 1, 3)
    # d(r, z, n pre-activations) = dh_out * kzn (z, n blocks); dr = dn * kr
    kzn = xp.empty((steps, n, 2, hid), dt)
    xp.subtract(hs[:-1], new, out=kzn[:, :, 0])
    kzn[:, :, 0] *= z
    kzn[:, :, 0] *= 1 - z
    xp.multiply(new, new, out=kzn[:, :, 1])
    xp.subtract(1, kzn[:, :, 1], out=kzn[:, :, 1])
    kzn[:, :, 1] *= 1 - z
    kr = r * (1 - r)
    kr *= ghs[:, :, 2 * hid:]
    dg4 = empty((steps, n, 3, hid), dt)
    dgh4 = empty((steps, n, 3, hid), dt)
    dg, dgh = dg4.reshape(steps, n, g), dgh4.reshape(steps, n, g)
    dh = xp.zeros((n, hs.shape[2]), dt)  # gradient reaching h_t through the recurrence
    for t in reversed(range(steps)):
        b = bs[t]
        dh += dout[t]
        dhb = dh[:b]
        xp.multiply(dhb[:, None, :], kzn[t, :b], out=dg4[t, :b, 1:])
        xp.multiply(dg4[t, :b, 2], kr[t, :b], out=dg4[t, :b, 0])
        dgh4[t, :b, :2] = dg4[t, :b, :2]
        xp.multiply(dg4[t, :b, 2], r[t, :b], out=dgh4[t, :b, 2])
        dhb *= z[t, :b]
        dhb += dgh[t, :b] @ whh
    return dg, dgh, dh


def _rnn_backward(xp, ctx, dout, saved, empty):
    """Backpropagation through time of ``_rnn_forward``: the pre-activations' gradients
    (L, N, G) in processing order and h0's."""
    hs, whh = saved[8], saved[5]._data
    steps, n, p = dout.shape
    out = hs[1:]
    k = out > 0 if ctx.mode == "RNN_RELU" else 1 - out * out
    dg = empty((steps, n, whh.shape[0]), dout.dtype)
    dh = xp.zeros((n, p), dout.dtype)
    for t in reversed(range(steps)):
        b = ctx.bs[t]
        dh += dout[t]
        d = dg[t, :b]
        xp.multiply(dh[:b], k[t, :b], out=d)
        xp.matmul(d, whh, out=dh[:b])
    return dg, dh


# Gate elements per thread below which one thread runs a recurrence faster (the Python
# loop over time steps then costs more than the arithmetic a second thread takes over).
_ROWS_MIN_WORK = 1 << 17


# Whether a recurrence's rows run on several threads, for the forward and backward loops.
# Row blocks round differently in the last bit from one product over all rows, so the rule is
# "one" (each step's product on BLAS's threads); the split runs only when forced
# (``_ROWS[phase].force("threads")``) or chosen by timing under the backends.cpu.benchmark
# opt-in, which accepts results that vary from run to run.
_ROWS = {"forward": choice("recurrence_forward_rows", ("threads", "one")),
         "backward": choice("recurrence_backward_rows", ("threads", "one"))}


def _over_rows(xp, fn, n: int, work: int, phase: str, key) -> None:
    """Run a recurrence ``fn(lo, hi)`` over the batch rows.

    By default in one call, each step's product on BLAS's threads by the size rule that
    ``Recurrence`` set (``gemm_threads``): those threads keep spinning between the steps, so
    each hand-over costs far less than waking a pool thread would. Rows are independent, so
    they may instead be shared between threads, each with single-threaded BLAS (when a caller
    forces "threads", or under the timing opt-in); the row blocks' products may round
    differently in the last bit from one product over all rows.
    """
    decide = _ROWS[phase]
    if xp is not np or decide.forced == "one" or (decide.forced is None
                                                  and not timing_active()):
        fn(0, n)
        return
    with blas_threads(1):
        split_rows(decide, key, fn, n, work, _ROWS_MIN_WORK, by_rule="one")


def _over_steps(xp, fn, steps: int, work: int) -> None:
    """``fn(lo, hi)``, elementwise work over time steps lo:hi that does not depend on the
    recurrence, shared between microtorch's threads on the CPU (exact: every element is
    computed by the same operations whatever the split)."""
    if xp is np:
        run_rows(fn, steps, work, _ROWS_MIN_WORK)
    else:
        fn(0, steps)


def _step_sizes(batch_sizes: tuple | None, steps: int, n: int, reverse: bool) -> tuple:
    """Active rows at each processing step: all ``n``, or ``batch_sizes`` in processing order."""
    if batch_sizes is None:
        return (n,) * steps
    return tuple(batch_sizes[::-1]) if reverse else tuple(batch_sizes)


def _replay_backward(ctx, grad: Tensor) -> tuple:
    """Gradients under create_graph: rerun the steps as composed ops and differentiate them."""
    from ..autograd import grad as autograd_grad

    inputs = ctx.saved_tensors[:8]
    wanted = [i for i, t in enumerate(inputs) if t is not None and _needs(ctx, i)]
    out = _composed(*inputs, ctx.mode, ctx.reverse, ctx.batch_sizes)
    found = autograd_grad(out, [inputs[i] for i in wanted], grad, create_graph=True,
                          allow_unused=True)
    grads: list = [None] * 11
    for i, gi in zip(wanted, found):
        grads[i] = gi
    return tuple(grads)


def recurrence(mode: str, x: Tensor, w_ih: Tensor, b_ih: Tensor | None, h0: Tensor,
               c0: Tensor | None, w_hh: Tensor, b_hh: Tensor | None,
               w_hr: Tensor | None = None, reverse: bool = False, fused: bool = True,
               batch_sizes: tuple | None = None) -> tuple[Tensor, Tensor, Tensor | None]:
    """Run one layer and direction over the time-major input ``x`` (L, N, H_in), its input
    projection included: (outputs (L, N, P), final h (N, P), final c or None).

    ``fused=False`` composes the steps from per-step ops instead (slower, same values).
    ``batch_sizes``: active leading rows per time step (a padded packed batch, see
    ``Recurrence``); the final states are then each row's own last.
    """
    if batch_sizes is not None:
        batch_sizes = tuple(int(b) for b in batch_sizes)
    args = (x, w_ih, b_ih, h0, c0, w_hh, b_hh, w_hr, mode, reverse, batch_sizes)
    packed = Recurrence.apply(*args) if fused else _composed(*args)
    steps, n = x.shape[:2]
    c_n = None
    if mode == "LSTM":
        p, k = w_hh.shape[1], steps * n * w_hh.shape[1]
        out = packed[:k].reshape(steps, n, p)
        c_n = packed[k:].reshape(n, c0.shape[1])
    else:
        out = packed
    return out, out[0 if reverse else steps - 1], c_n
