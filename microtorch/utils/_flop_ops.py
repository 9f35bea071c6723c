"""What the FLOP counter sees of microtorch's ops: each op translated into the ATen calls
PyTorch would have made for it (with their shapes), forward and backward.

The watcher (``_profiler_record.watch``) is called for every op applied while a counter is
active. An op with a rule below runs with the ops inside it muted (PyTorch's dispatcher does not
decompose an op that has a formula), then its rule gives PyTorch's calls for the forward, counted
at once, and a plan for the backward, kept on its graph node: when the engine runs that node the
plan gives the backward's calls for the gradients the node computes (PyTorch's backward of
``mm`` is one ``mm`` per input that needs a gradient, that of ``convolution`` one
``convolution_backward`` with an output mask), counted then under the modules running then; the
node's own backward, which may call ops, is muted. Nodes without a plan (a user's Function, a
node made before the counter started) run their backward unmuted: its ops count as they come.

Some PyTorch ops are Python compositions in microtorch (``addmm``, ``matmul``'s 1-D cases,
attention): the product inside them is one ``MatMul`` node, told apart by the function it was
called from (``_caller``), whose frame holds what PyTorch's choice depends on.
"""

from __future__ import annotations

import inspect
import sys
from math import prod

import numpy as np

from ..autograd import _profiler_record as record
from ..nn.functional.attention import multi_head_attention_forward, scaled_dot_product_attention
from ..nn.functional.conv import conv_transpose3d
from ..nn.functional.linear import bilinear
from ..ops.blas_products import Addbmm
from ..ops.conv import Conv2d, ConvInputGrad
from ..ops.linalg import MatMul, bmm, matmul, mm
from ..ops.linear import Linear
from ..ops.matrix import Einsum, addmm, baddbmm
from ..ops.rnn import Recurrence

__all__ = ["OpPacket", "aten", "start_watching", "stop_watching"]


class OpPacket:
    """An ATen op as a key of FLOP counts (PyTorch's ``OpOverloadPacket``): prints as
    ``aten.mm``; one object per name."""

    __slots__ = ("namespace", "__name__")
    _all: dict[tuple[str, str], OpPacket] = {}

    def __init__(self, namespace: str, name: str) -> None:
        self.namespace = namespace
        self.__name__ = name

    @classmethod
    def get(cls, namespace: str, name: str) -> OpPacket:
        """The packet of ``namespace.name`` (made once)."""
        key = (namespace, name)
        packet = cls._all.get(key)
        if packet is None:
            packet = cls._all[key] = cls(namespace, name)
        return packet

    def __str__(self) -> str:
        return f"{self.namespace}.{self.__name__}"

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self}')>"


class _Namespace:
    """``aten.<op>``: the packet of each op by attribute."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, op: str) -> OpPacket:
        if op.startswith("__"):
            raise AttributeError(op)
        return OpPacket.get(self._name, op)


aten = _Namespace("aten")


# -- products ----------------------------------------------------------------------------------
class _Product:
    """One (batched) matrix product as PyTorch runs it: ``packet`` (mm, addmm, bmm, baddbmm)
    of (batch, m, k) by (batch, k, n); ``left``/``right``: the node inputs (edges) the two
    factors come from; ``added``: the shape of addmm's / baddbmm's added term."""

    __slots__ = ("packet", "batch", "m", "k", "n", "left", "right", "added")

    def __init__(self, packet, batch: int, m: int, k: int, n: int, left: int = 0,
                 right: int = 1, added: tuple | None = None) -> None:
        self.packet, self.batch, self.m, self.k, self.n = packet, batch, m, k, n
        self.left, self.right, self.added = left, right, added

    def _call(self, packet, m: int, k: int, n: int, added=None) -> tuple:
        if packet in (aten.mm, aten.addmm):
            args, out = ((m, k), (k, n)), (m, n)
        else:
            b = self.batch
            args, out = ((b, m, k), (b, k, n)), (b, m, n)
        return packet, (args if added is None else (added, *args)), out

    def forward(self) -> list[tuple]:
        """The forward's call."""
        return [self._call(self.packet, self.m, self.k, self.n, self.added)]

    def backward(self, needs: tuple) -> list[tuple]:
        """One product per factor whose input needs a gradient: grad @ right^T for the left,
        left^T @ grad for the right (mm for addmm, bmm for baddbmm)."""
        packet = aten.mm if self.packet in (aten.mm, aten.addmm) else aten.bmm
        calls = []
        if _needs(needs, self.left):
            calls.append(self._call(packet, self.m, self.n, self.k))
        if _needs(needs, self.right):
            calls.append(self._call(packet, self.k, self.m, self.n))
        return calls


def _needs(needs: tuple, i: int) -> bool:
    return i < len(needs) and needs[i]


def _operand(t) -> tuple:
    """(shape, strides in elements, requires_grad) of a product's operand."""
    arr = t._data
    itemsize = arr.itemsize or 1
    strides = tuple(s // itemsize for s in getattr(arr, "strides", ())) or \
        tuple(int(prod(arr.shape[i + 1:])) for i in range(arr.ndim))
    return tuple(arr.shape), strides, bool(t.requires_grad)


def _foldable(shape: tuple, strides: tuple) -> bool:
    """PyTorch's test that ``t.view(-1, t.size(-1))`` needs no copy (its dims laid out one
    after the other)."""
    return prod(shape) == 0 or all(strides[i] == strides[i + 1] * shape[i + 1]
                                   for i in range(len(shape) - 1))


def _should_fold(one: tuple, two: tuple) -> bool:
    """PyTorch's choice (``should_fold``) of folding the operand with more dims into a matrix
    (mm or mv) rather than batching the other one (bmm): when the other operand requires grad
    (a smaller gradient), or when the fold needs no copy (never for a matrix on the left)."""
    (s1, st1, g1), (s2, st2, g2) = one, two
    if len(s1) >= len(s2):
        big, other_dims, other_grad = (s1, st1), len(s2), g2
    else:  # the right operand transposed is the one folded
        big = ((*s2[:-2], s2[-1], s2[-2]), (*st2[:-2], st2[-1], st2[-2]))
        other_dims, other_grad = len(s1), g1
    if not (len(big[0]) >= 3 and other_dims <= 2):
        return False
    if other_grad:
        return True
    return len(s1) != 2 and _foldable(*big)


def _matmul_product(one: tuple, two: tuple) -> _Product | None:
    """The product PyTorch's ``matmul`` reduces to for two operands (``_operand``): mm for
    matrices (and a vector by a matrix), a folded mm (``_should_fold``), or bmm over the
    broadcast batch; None where it ends in dot or mv (not counted)."""
    (s1, st1, g1), (s2, st2, g2) = one, two
    if len(s1) == len(s2) == 3 and (s1[0] == 1) != (s2[0] == 1):  # a batch of one: a matrix
        if s2[0] == 1:
            s2, st2 = s2[1:], st2[1:]
        else:
            s1, st1 = s1[1:], st1[1:]
        one, two = (s1, st1, g1), (s2, st2, g2)
    d1, d2 = len(s1), len(s2)
    if d2 == 1 and d1 <= 2:
        return None  # dot, mv
    if d1 <= 2 and d2 == 2:
        return _Product(aten.mm, 1, 1 if d1 == 1 else s1[0], s1[-1], s2[1])
    if _should_fold(one, two):
        if d1 >= d2:
            return None if d2 == 1 else _Product(aten.mm, 1, prod(s1[:-1]), s1[-1], s2[-1])
        # (batch2^T folded) @ mat1^T
        return None if d1 == 1 else _Product(aten.mm, 1, prod(s2[:-2]) * s2[-1], s1[-1],
                                             s1[-2], left=1, right=0)
    m = 1 if d1 == 1 else s1[-2]
    n = 1 if d2 == 1 else s2[-1]
    batch = prod(np.broadcast_shapes(tuple(s1[:-2]), tuple(s2[:-2])))
    return _Product(aten.bmm, batch, m, s1[-1], n)


# -- the functions a MatMul may be called from -------------------------------------------------
def _code(fn):
    return inspect.unwrap(fn).__code__


_INNER = {_code(matmul): "matmul", _code(mm): "mm", _code(bmm): "bmm"}
_OUTER = {_code(addmm): "addmm", _code(baddbmm): "baddbmm",
          _code(scaled_dot_product_attention): "sdpa", _code(multi_head_attention_forward): "mha",
          _code(conv_transpose3d): "none", _code(bilinear): "none"}
_FRAMES = 12  # how far up a product's caller is looked for


def _caller():
    """(kind, frame) of the function the op being applied was called from: the nearest of the
    compositions in ``_OUTER``, else of ``_INNER``'s, else (None, None)."""
    frame = sys._getframe(2)
    inner = (None, None)
    for _ in range(_FRAMES):
        if frame is None:
            break
        code = frame.f_code
        kind = _OUTER.get(code)
        if kind is not None:
            return kind, frame
        if inner[0] is None and code in _INNER:
            inner = (_INNER[code], frame)
        frame = frame.f_back
    return inner


def _cpu_flash(q, k, v, mask, dropout_p) -> bool:
    """Whether PyTorch's CPU attention takes its fused flash kernel (no op with a formula:
    nothing counted) rather than the math path (bmm): 4-D float inputs, one head size, no
    dropout, equal batches."""
    if not (q.ndim == k.ndim == v.ndim == 4) or dropout_p or q.device.type != "cpu":
        return False
    if not (q.shape[-1] == k.shape[-1] == v.shape[-1]) or q.dtype.name not in (
            "float32", "float64", "float16", "bfloat16"):
        return False
    if mask is not None and mask.ndim not in (2, 4):
        return False
    return q.shape[0] == k.shape[0] == v.shape[0] and k.shape[1] == v.shape[1] and \
        min(q.shape[2], k.shape[2]) > 0


def _matmul_rule(args: tuple, kwargs: dict, out, caller) -> _Product | None:
    """The product a MatMul node stands for."""
    a, b = args[0], args[1]
    kind, frame = caller
    if kind is None:
        return _matmul_product(_operand(a), _operand(b))
    local = frame.f_locals
    if kind == "none":
        return None
    if kind == "sdpa":
        if _cpu_flash(local["query"], local["key"], local["value"], local["attn_mask"],
                      local["dropout_p"]):
            return None
        return _matmul_product(_operand(a), _operand(b))
    if kind == "mha":
        mask = local.get("attn_mask")
        if mask is not None and "scores" not in local:  # PyTorch: baddbmm(mask, q, k^T)
            return _Product(aten.baddbmm, *a._data.shape, b._data.shape[-1],
                            added=tuple(mask.shape))
        return _matmul_product(_operand(a), _operand(b))
    if kind in ("addmm", "baddbmm"):
        packet = aten.addmm if kind == "addmm" else aten.baddbmm
        shape = a._data.shape
        batch = 1 if kind == "addmm" else shape[0]
        return _Product(packet, batch, shape[-2], shape[-1], b._data.shape[-1],
                        added=tuple(local["input"].shape))
    if kind == "mm":
        return _Product(aten.mm, 1, *a._data.shape, b._data.shape[-1])
    if kind == "bmm":
        return _Product(aten.bmm, *a._data.shape, b._data.shape[-1])
    # matmul: the product of its own operands (before the 1-D ones were made matrices)
    return _matmul_product(_operand(local["input"]), _operand(local["other"]))


def _linear_rule(args: tuple, kwargs: dict, out, caller) -> _Product | None:
    """F.linear: addmm with a 1-D bias (for more than 2 dims: on the folded input, when it is
    contiguous), else matmul(x, W^T) and an addition."""
    x, w = args[0], args[1]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    xs, (n, k) = tuple(x._data.shape), w._data.shape
    if bias is not None and bias.ndim == 1 and (x.ndim <= 2 or x._data.flags.c_contiguous):
        return _Product(aten.addmm, 1, prod(xs[:-1]), k, n, added=(n,))
    return _matmul_product(_operand(x), ((k, n), (1, k), bool(w.requires_grad)))


class _ProductPlan:
    """A product's calls: the forward's, and the backward's for given needs."""

    def __init__(self, product: _Product | None) -> None:
        self.product = product

    def forward(self) -> list[tuple]:
        return [] if self.product is None else self.product.forward()

    def backward(self, needs: tuple) -> list[tuple]:
        return [] if self.product is None else self.product.backward(needs)


# -- convolutions ------------------------------------------------------------------------------
class _ConvPlan:
    """aten.convolution forward; aten.convolution_backward with the output mask of the
    gradients needed (input, weight, bias)."""

    def __init__(self, x_shape, w_shape, bias, stride, pads, dilation, transposed: bool,
                 out_shape, groups: int) -> None:
        self.x, self.w, self.out = tuple(x_shape), tuple(w_shape), tuple(out_shape)
        self.bias = None if bias is None else tuple(bias.shape)
        self.geometry = (list(stride), [pads[0], pads[2]], list(dilation))
        self.transposed, self.groups = transposed, groups
        padding_out = [0, 0]
        if transposed:  # what the output's size says output_padding was
            for i in range(2):
                s, p, d = stride[i], pads[2 * i], dilation[i]
                padding_out[i] = self.out[2 + i] - ((self.x[2 + i] - 1) * s - 2 * p
                                                    + d * (self.w[2 + i] - 1) + 1)
        self.output_padding = padding_out

    def forward(self) -> list[tuple]:
        return [(aten.convolution, (self.x, self.w, self.bias, *self.geometry, self.transposed,
                                    self.output_padding, self.groups), self.out)]

    def backward(self, needs: tuple) -> list[tuple]:
        mask = [_needs(needs, 0), _needs(needs, 1), _needs(needs, 2)]
        if not any(mask):
            return []
        outs = (self.x if mask[0] else None, self.w if mask[1] else None,
                (self.w[1 if self.transposed else 0],) if mask[2] else None)
        args = (self.out, self.x, self.w, self.bias and list(self.bias), *self.geometry,
                self.transposed, self.output_padding, self.groups, mask)
        return [(aten.convolution_backward, args, outs)]


def _conv_rule(args: tuple, kwargs: dict, out, caller) -> _ConvPlan:
    x, w, bias, stride, pads, dilation, groups = args[:7]
    return _ConvPlan(x.shape, w.shape, bias, stride, pads, dilation, False, out.shape, groups)


def _conv_transpose_rule(args: tuple, kwargs: dict, out, caller) -> _ConvPlan:
    g, w, bias, _x_hw, stride, pads, dilation, groups = args[:8]
    return _ConvPlan(g.shape, w.shape, bias, stride, pads, dilation, True, out.shape, groups)


# -- the rest ----------------------------------------------------------------------------------
class _Calls:
    """Fixed forward calls, and a backward given by a function of the needs."""

    def __init__(self, forward: list[tuple], backward=None) -> None:
        self._forward, self._backward = forward, backward

    def forward(self) -> list[tuple]:
        return self._forward

    def backward(self, needs: tuple) -> list[tuple]:
        return [] if self._backward is None else self._backward(needs)


def _addbmm_rule(args: tuple, kwargs: dict, out, caller) -> _Calls:
    """addbmm: PyTorch counts no forward (a kernel of its own); its backward is a bmm per
    batch input that needs a gradient."""
    b1, b2 = args[1]._data.shape, args[2]._data.shape
    product = _Product(aten.bmm, b1[0], b1[1], b1[2], b2[2], left=1, right=2)
    return _Calls([], product.backward)


def _einsum_rule(args: tuple, kwargs: dict, out, caller) -> _Calls:
    """einsum as PyTorch contracts it (left to right, without opt_einsum): each pair a bmm
    over (batch, left-only, summed) x (batch, summed, right-only) letters, or a product
    without FLOPs when nothing is summed; letters no later operand or the output needs are
    summed out of an operand first. Backward: each bmm once per factor needing a gradient."""
    if caller[0] == "none":
        return _Calls([])
    spec, operands = args[0], args[1:]
    lhs, out_letters = spec.split("->")
    subs = lhs.split(",")
    sizes = {c: n for s, op in zip(subs, operands) for c, n in zip(s, op._data.shape)}
    steps = []  # (product, operands up to this step)
    left = set(subs[0])
    for i in range(1, len(subs)):
        later = set(out_letters).union(*subs[i + 1:])
        right = set(subs[i])
        keep = later
        summed = (left & right) - keep
        left_only, right_only = (left - right) & keep, (right - left) & keep
        batch = (left & right) & keep
        if summed:
            steps.append((_Product(aten.bmm, prod(sizes[c] for c in batch),
                                   prod(sizes[c] for c in left_only),
                                   prod(sizes[c] for c in summed),
                                   prod(sizes[c] for c in right_only)), i))
        left = batch | left_only | right_only
    forward = [call for product, _ in steps for call in product.forward()]

    def backward(needs: tuple) -> list[tuple]:
        calls = []
        for product, i in steps:
            # the left factor needs a gradient when an operand folded into it does
            marks = (any(_needs(needs, j + 1) for j in range(i)), _needs(needs, i + 1))
            calls += _Product(aten.bmm, product.batch, product.m, product.k, product.n,
                              left=0, right=1).backward(marks)
        return calls

    return _Calls(forward, backward)


# -- recurrences -------------------------------------------------------------------------------
def _onednn_lstm(x, w_hr, batch_sizes) -> bool:
    """Whether PyTorch's CPU LSTM runs as oneDNN layers (``mkldnn_rnn_layer``: no formula,
    nothing counted; RNN.cpp's ``use_mkldnn``): an unpacked sequence without projections, with
    oneDNN enabled, not empty, in float32, in bfloat16 where the CPU has AVX-512 BW/VL/DQ, or
    in float16 without grad mode where it has AVX-512 FP16."""
    from ..autograd.grad_mode import is_grad_enabled
    from ..backend.cpu_capability import _cpu_features
    from ..backends import mkldnn

    if w_hr is not None or batch_sizes is not None or not mkldnn.enabled or x.numel() == 0:
        return False
    dtype, features = x.dtype.name, _cpu_features()
    if dtype == "bfloat16":
        return all(features.get(k) for k in ("AVX512BW", "AVX512VL", "AVX512DQ"))
    if dtype == "float16":
        return not is_grad_enabled() and bool(features.get("AVX512FP16"))
    return dtype == "float32"


# A step's state past the first, as an input index of ``Recurrence``'s plan: it needs a
# gradient whenever the node's backward runs (it depends on every input of the node).
_INNER_STATE = 11


def _recurrence_rule(args: tuple, kwargs: dict, out, caller) -> _Calls:
    """One layer and direction of an RNN/GRU/LSTM as PyTorch's CPU layer (RNN.cpp's
    ``FullLayer``/``PackedLayer``) runs it: the input projection of every step at once
    (``linear`` on the time-major input: addmm when it has a bias and is contiguous, else
    matmul; on a packed batch's 2-D data: addmm or mm), then per step ``linear_hh`` on the
    state of the step's rows (addmm, or mm without bias) and, for an LSTM with projections, the
    ``matmul_hr`` mm. The cells' other ops have no formula. Backward: each product's mm per
    factor needing a gradient; a step's state needs one from the second step on (it depends on
    every input), the first step's when h0 does. On CUDA PyTorch runs cuDNN and on the CPU
    most float32 LSTMs run oneDNN (``_onednn_lstm``): nothing counted."""
    x, w_ih, b_ih, _h0, _c0, w_hh, b_hh, w_hr, mode, reverse = args[:10]
    batch_sizes = args[10] if len(args) > 10 else kwargs.get("batch_sizes")
    if x.device.type != "cpu" or (mode == "LSTM" and _onednn_lstm(x, w_hr, batch_sizes)):
        return _Calls([])
    steps, n, nin = x.shape
    g, p = w_hh.shape
    sizes = [n] * steps if batch_sizes is None else list(batch_sizes)
    if reverse:
        sizes.reverse()  # (processing order: the first step starts from h0)
    if batch_sizes is not None:  # the packed data, (rows, H_in)
        packet = aten.mm if b_ih is None else aten.addmm
        projection = _Product(packet, 1, sum(sizes), nin, g,
                              added=None if b_ih is None else (g,))
    else:
        projection = _linear_rule((x, w_ih, b_ih), {}, None, caller)
    hh = aten.mm if b_hh is None else aten.addmm
    # (left, right) of the per-step products, as indices of the node's inputs: the state
    # (h0: 3, later ones: _INNER_STATE) by W_hh (5); the LSTM's o * tanh(c) by W_hr (7)
    recurrent = [_Product(hh, 1, b, p, g, left=3 if t == 0 else _INNER_STATE, right=5,
                          added=None if b_hh is None else (g,)) for t, b in enumerate(sizes)]
    projections = [] if w_hr is None else [
        _Product(aten.mm, 1, b, w_hr.shape[1], p, left=_INNER_STATE, right=7) for b in sizes]
    products = ([] if projection is None else [projection]) + recurrent + projections

    def backward(needs: tuple) -> list[tuple]:
        marked = (*needs[:_INNER_STATE], *[False] * (_INNER_STATE - len(needs)), True)
        return [call for product in products for call in product.backward(marked)]

    return _Calls([call for product in products for call in product.forward()], backward)


def _wrap_product(rule):
    def plan(args, kwargs, out, caller):
        return _ProductPlan(rule(args, kwargs, out, caller))

    return plan


# The rules by op class, and whether a rule needs the op's caller.
_RULES = {MatMul: (_wrap_product(_matmul_rule), True),
          Linear: (_wrap_product(_linear_rule), False),
          Conv2d: (_conv_rule, False),
          ConvInputGrad: (_conv_transpose_rule, False),
          Addbmm: (_addbmm_rule, False),
          Einsum: (_einsum_rule, True),
          Recurrence: (_recurrence_rule, False)}


# -- the watcher -------------------------------------------------------------------------------
class _Watcher:
    """The op watcher of one thread: counts for every FlopCounterMode active there (nested
    counters each count, as PyTorch's nested modes do)."""

    def __init__(self) -> None:
        self.counters: list = []
        self.muted = 0

    def _count(self, calls: list[tuple]) -> None:
        for packet, args, out in calls:
            for counter in self.counters:
                counter._count_flops(packet, out, args, {})

    def op(self, cls, args: tuple, kwargs: dict):
        """Run and count one op (``record.PROCEED`` for ops with nothing to count)."""
        if self.muted:
            return record.PROCEED
        rule = _RULES.get(cls)
        custom = rule is None and any(cls in c.flop_registry for c in self.counters)
        if rule is None and not custom:
            return record.PROCEED
        caller = _caller() if rule is not None and rule[1] else (None, None)
        self.muted += 1
        try:
            out = record.run_watched(cls, args, kwargs)
        finally:
            self.muted -= 1
        if custom:  # a user's op with a formula: PyTorch's custom op
            for counter in self.counters:
                counter._count_flops(cls, out, args, kwargs)
            return out
        plan = rule[0](args, kwargs, out, caller)
        self._count(plan.forward())
        node = getattr(out, "grad_fn", None)
        if node is not None:
            node._flop_plan = plan
        return out

    def backward(self, node, step, *step_args):
        """Count a node's backward by its plan (its own ops muted), then run it."""
        plan = node.__dict__.get("_flop_plan") if hasattr(node, "__dict__") else None
        if plan is None or self.muted:
            return step(*step_args)
        self._count(plan.backward(tuple(e is not None for e in node._next)))
        self.muted += 1
        try:
            return step(*step_args)
        finally:
            self.muted -= 1



def start_watching(counter) -> None:
    """Count ``counter``'s FLOPs from now on, in this thread."""
    watcher = record._tls.watcher
    if not isinstance(watcher, _Watcher):
        watcher = _Watcher()
        record.watch(watcher)
    watcher.counters.append(counter)


def stop_watching(counter) -> None:
    """Stop counting for ``counter`` (the watcher goes with the last counter)."""
    watcher = record._tls.watcher
    if isinstance(watcher, _Watcher) and counter in watcher.counters:
        watcher.counters.remove(counter)
        if not watcher.counters:
            record.watch(None)
