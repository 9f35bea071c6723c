"""Tangent rules of forward-mode AD for the common ops (PyTorch's forward formulas).

A rule ``rule(args, kwargs, out, t)`` gets the op's arguments, its output and one tangent per
positional argument (None where there is none: a zero tangent), and returns the output's
tangent (or None), written with Tensor ops so that it is itself differentiable (nested
``jvp``, ``jacrev`` of ``jacfwd``). Ops without a rule get their tangents from their own
backward (``forward_mode._by_double_backward``).

Linear ops apply themselves to the tangent; products are the product rule; the elementwise
ops reuse their backward's local derivative (``derivative(t, x, out, F)`` is ``t * f'(x)``).
"""

from __future__ import annotations

import re

RULES: dict = {}  # op class -> (rule, accepts): accepts(args, kwargs) or None for always
FAMILIES: dict = {}  # base class -> (rule, accepts) for its subclasses


def register(cls, rule, accepts=None) -> None:
    """Give op class ``cls`` the tangent rule ``rule(cls, args, kwargs, out, t)``, used when
    ``accepts(args, kwargs)`` holds (always when None)."""
    RULES[cls] = (rule, accepts)


def rule_for(cls, args: tuple, kwargs: dict):
    """The tangent rule for this call of ``cls`` (its own, or its family's), or None: the
    tangents then come from the op's backward."""
    entry = RULES.get(cls)
    if entry is None:
        _install()
        entry = RULES.get(cls)
        if entry is None:
            entry = next((FAMILIES[b] for b in cls.__mro__[1:] if b in FAMILIES), (None, None))
            RULES[cls] = entry
    rule, accepts = entry
    if rule is None or (accepts is not None and not accepts(args, kwargs)):
        return None
    return rule


def _zeros_like(x):
    return ops.zeros_like(x)


def _sum(*terms):
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total


def linear(index: int = 0):
    """The rule of an op linear in argument ``index``: the op applied to the tangent."""

    def rule(cls, args, kwargs, out, t):
        if t[index] is None:
            return None
        new = list(args)
        new[index] = t[index]
        return cls.apply(*new, **kwargs)

    return rule


def multilinear(*positions):
    """The rule of an op linear in each of the arguments at ``positions`` (a product): the
    sum of the op with one argument replaced by its tangent."""

    def rule(cls, args, kwargs, out, t):
        terms = []
        for i in positions if positions else range(1, len(args)):
            if i < len(t) and t[i] is not None:
                new = list(args)
                new[i] = t[i]
                terms.append(cls.apply(*new, **kwargs))
        return _sum(*terms)

    return rule


# -- elementwise ----------------------------------------------------------------------------------
def _alpha(args, kwargs):
    return args[2] if len(args) > 2 else kwargs.get("alpha", 1)


def _add(cls, args, kwargs, out, t):
    alpha = _alpha(args, kwargs)
    tb = t[1] if len(t) > 1 else None
    return _sum(t[0], None if tb is None else (tb if alpha == 1 else tb * alpha))


def _sub(cls, args, kwargs, out, t):
    alpha = _alpha(args, kwargs)
    tb = t[1] if len(t) > 1 else None
    return _sum(t[0], None if tb is None else (-tb if alpha == 1 else tb * -alpha))


def _mul(cls, args, kwargs, out, t):
    a, b = args[0], args[1]
    return _sum(None if t[0] is None else t[0] * b, None if t[1] is None else a * t[1])


def _div(cls, args, kwargs, out, t):
    if (args[2] if len(args) > 2 else kwargs.get("rounding_mode")) is not None:
        return None  # rounded: piecewise constant
    b = args[1]
    return _sum(None if t[0] is None else t[0] / b,
                None if len(t) < 2 or t[1] is None else -t[1] * out / b)


def _pow(cls, args, kwargs, out, t):
    a, b = args
    ta = tb = None
    if t[0] is not None:
        if isinstance(b, Tensor):
            ta = ops.where(b != 0, t[0] * b * a ** (b - 1), 0.0)
        else:
            ta = t[0] * (b * a ** (b - 1)) if b != 0 else t[0] * 0
    if len(t) > 1 and t[1] is not None:
        base = a if isinstance(a, Tensor) else ops.full_like(b, a)
        tb = t[1] * ops.where((base != 0) | (b < 0), out * base.log(), 0.0)
    return _sum(ta, tb)


def _select(cls, args, kwargs, out, t):  # maximum / minimum: ties share
    a, b = args
    ta = t[0] if t[0] is not None else _zeros_like(a)
    tb = t[1] if t[1] is not None else _zeros_like(b)
    wins = a > b if cls.ufunc == "maximum" else a < b
    return ops.where(a == b, (ta + tb) / 2, ops.where(wins, ta, tb))


def _where(cls, args, kwargs, out, t):
    cond, a, b = args
    ta = t[1] if t[1] is not None else (_zeros_like(a) if isinstance(a, Tensor) else 0.0)
    tb = t[2] if t[2] is not None else (_zeros_like(b) if isinstance(b, Tensor) else 0.0)
    return ops.where(cond, ta, tb)


def _unary(cls, args, kwargs, out, t):
    if t[0] is None:
        return None
    return cls.derivative(t[0], args[0], out, ops)


def _real_or_holomorphic(args, kwargs) -> bool:
    return args[0]._data.dtype.kind != "c"


def _pointwise(cls, args, kwargs, out, t):
    if t[0] is None:
        return None
    return cls.derivative(t[0], args[0], ops, *args[1:])


def _clamp(cls, args, kwargs, out, t):
    if t[0] is None:
        return None
    x, lo, hi = (list(args) + [None, None])[:3]
    lo = kwargs.get("min", lo)
    hi = kwargs.get("max", hi)
    keep = None
    if lo is not None:
        keep = x >= lo
    if hi is not None:
        keep = (x <= hi) if keep is None else keep & (x <= hi)
    return ops.where(keep, t[0], 0.0)


def _number_bounds(args, kwargs) -> bool:
    return not any(isinstance(v, Tensor) for v in (*args[1:], *kwargs.values()))


def _softmax(cls, args, kwargs, out, t):
    if t[0] is None:
        return None
    return out * (t[0] - (out * t[0]).sum(args[1], keepdim=True))


def _log_softmax(cls, args, kwargs, out, t):
    if t[0] is None:
        return None
    return t[0] - (out.exp() * t[0]).sum(args[1], keepdim=True)


def _zero(cls, args, kwargs, out, t):
    return None


def _fill(cls, args, kwargs, out, t):
    """zero_/fill_: the written value's tangent everywhere (a number's: zero)."""
    return None if len(t) < 2 or t[1] is None else t[1].expand(out.shape)


def _no_derivative(cls, args, kwargs, out, t):
    """PyTorch's error for an op that defines no derivative (its name read off the op's
    backward error)."""
    found = re.search(r"aten::(\w+)|'(\w+)'", args[1])
    name = (found.group(1) or found.group(2)) if found else args[2]
    raise NotImplementedError(f"Trying to use forward AD with aten::{name} that does not "
                              f"support it.")


# -- products and joins ---------------------------------------------------------------------------
def _linear_layer(cls, args, kwargs, out, t):  # x W^T + b
    x, w = args[0], args[1]
    tb = t[2] if len(t) > 2 else None
    return _sum(None if t[0] is None else cls.apply(t[0], w, None),
                None if t[1] is None else cls.apply(x, t[1], None), tb)


def _conv(cls, args, kwargs, out, t):  # conv(x, w) + b, bilinear in (x, w)
    x, w, _bias, *rest = args
    tb = t[2] if len(t) > 2 else None
    return _sum(None if t[0] is None else cls.apply(t[0], w, None, *rest),
                None if t[1] is None else cls.apply(x, t[1], None, *rest),
                None if tb is None else tb.reshape((1, -1) + (1,) * (out.dim() - 2)))


def _cat(cls, args, kwargs, out, t):
    if all(x is None for x in t[1:]):
        return None
    return cls.apply(args[0], *(tx if tx is not None else _zeros_like(x)
                                for x, tx in zip(args[1:], t[1:])))


def _index_put(cls, args, kwargs, out, t):  # x with values written at key
    x, key, values = args
    if t[0] is None and t[2] is None:
        return None
    return cls.apply(t[0] if t[0] is not None else _zeros_like(x), key,
                     t[2] if t[2] is not None else _zeros_like(values))


def _scatter_add(cls, args, kwargs, out, t):  # x + scatter_add(src)
    x, dim, index, src = args
    if t[0] is None and t[3] is None:
        return None
    return cls.apply(t[0] if t[0] is not None else _zeros_like(x), dim, index,
                     t[3] if t[3] is not None else _zeros_like(src))


def _reshape(cls, args, kwargs, out, t):  # the tangent reshaped (a copy where it cannot view)
    if t[0] is None:
        return None
    return cls.apply(t[0], args[1], False, *args[3:])


_installed = []


def _install() -> None:
    """The rules of microtorch's ops (on first use: the op modules import this package)."""
    if _installed:
        return
    _installed.append(True)
    from ..ops import (
        activation,
        arrange,
        conv,
        copies,
        counting,
        elementwise,
        indexing,
        linalg,
        matrix,
        pooling,
        random_fill,
        reduce,
        shape,
        sparse,
        vision,
    )
    from ..ops import (
        linear as linear_ops,
    )
    from ..ops._writes import _Fill
    from ..ops.complex import Conj, Imag, Real
    from . import views

    for cls, fn in {
        elementwise.Add: _add, elementwise.Sub: _sub, elementwise.Mul: _mul,
        elementwise.Div: _div, elementwise.Pow: _pow, elementwise.Where: _where,
        elementwise.ClampMinValueOnly: linear(0),
        activation.Softmax: _softmax, activation.LogSoftmax: _log_softmax,
        linalg.MatMul: multilinear(0, 1), linear_ops.Linear: _linear_layer,
        conv.Conv2d: _conv, conv.ConvInputGrad: multilinear(0, 1),
        conv.ConvWeightGrad: multilinear(0, 1), matrix.Einsum: multilinear(),
        shape.Cat: _cat, indexing.IndexPut: _index_put, shape.ScatterAdd: _scatter_add,
        shape.Reshape: _reshape, random_fill.Sampled: _zero,
        counting.NoDerivative: _no_derivative, _Fill: _fill,
        sparse.Embedding: linear(0),
    }.items():
        register(cls, fn)
    register(elementwise.Clamp, _clamp, _number_bounds)
    for cls in (shape.Permute, shape.Expand, shape.Flip, indexing.Index, shape.Gather,
                copies.Clone, copies.ToCopy, indexing.IndexScatter, reduce.Sum, reduce.Mean,
                reduce.Cumsum, reduce.SumToSize, matrix.Diagonal, matrix.DiagonalScatter,
                arrange.Roll, vision.Pad, Real, Imag, Conj,
                pooling.AvgPool2d, pooling.AvgPoolSpread, pooling.MaxPoolScatter,
                pooling.MaxPoolGather, views.StridedCopy):
        register(cls, linear(0))
    FAMILIES[elementwise.Unary] = (_unary, _real_or_holomorphic)
    FAMILIES[elementwise._Select] = (_select, None)
    FAMILIES[activation._Pointwise] = (_pointwise, None)


from .. import ops  # noqa: E402
from .._tensor import Tensor  # noqa: E402
