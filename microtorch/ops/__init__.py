"""All tensor operations, and the Tensor methods and operators that call them.

Each op is written once against the array module of its inputs (NumPy or CuPy), so the CPU
and CUDA paths share one implementation.
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import _dtype
from ..autograd import views
from ..autograd.function import named
from ..autograd.grad_mode import no_grad, recording
from ..autograd.node import broadcast_message
from . import (
    _writes,
    arrange,
    bessel,
    blas_products,
    calculus,
    comparison,
    counting,
    creation,
    cumulative,
    deprecated_overloads,
    elementwise,
    flat_index,
    float_parts,
    gamma,
    index_reduction,
    indexed,
    integer,
    legacy_storage,
    linalg,
    linalg_norms,
    linalg_toplevel,
    matrix,
    method_aliases,
    numpy_names,
    pinned,
    pointwise_addc,
    random_fill,
    reduce,
    scatter_views,
    shape,
    sign_forms,
    sorting,
    sparse_csr,
    sparse_dispatch,
    sparse_tensor,
    special,
    spectral,
    statistics,
    strided_creation,
    strided_views,
    transcendental,
    view_copies,
)
from . import complex as complex_ops
from ._autocast import autocast_op
from ._util import (
    Tensor,
    assert_no_internal_overlap,
    has_internal_overlap,
    is_scalar,
    promote_operands,
    xp_of,
)
from ._writes import (
    _check_inplace,
    _frozen,
    _inplace,
    _inplace_view,
    _ufunc_inplace,
    _write,
    copy_,
    fill,
    fill_,
    masked_fill_,
    setitem,
    zero_,
)
from .activation import log_softmax, softmax
from .arrange import *  # noqa: F403
from .arrange import unfold
from .bessel import i0
from .blas_products import *  # noqa: F403
from .calculus import *  # noqa: F403
from .comparison import *  # noqa: F403
from .comparison import (
    allclose,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    eq,
    equal,
    ge,
    gt,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    ne,
)
from .complex import *  # noqa: F403
from .copies import clone, contiguous, to
from .counting import *  # noqa: F403
from .creation import *  # noqa: F403
from .cumulative import *  # noqa: F403
from .elementwise import (
    Abs,
    Add,
    Ceil,
    Cos,
    Div,
    Exp,
    Expm1,
    Floor,
    Log,
    Log1p,
    Log2,
    Log10,
    Maximum,
    Minimum,
    Mul,
    Neg,
    Pow,
    Reciprocal,
    Round,
    Rsqrt,
    Sigmoid,
    Sign,
    Sin,
    Sqrt,
    Square,
    Sub,
    Tan,
    Tanh,
    Trunc,
    clamp,
    floor_divide,
    numbers_as_tensor,
    remainder,
    where,
)
from .flat_index import unravel_index
from .float_parts import *  # noqa: F403
from .gamma import *  # noqa: F403
from .grid_sampler import grid_sampler, grid_sampler_2d, grid_sampler_3d
from .hashing import hash_tensor
from .index_reduction import *  # noqa: F403
from .index_writes import index_put, masked_scatter, masked_scatter_
from .indexed import *  # noqa: F403
from .indexing import getitem
from .integer import *  # noqa: F403
from .linalg import bmm, dot, matmul, mm, mv, outer
from .linalg_norms import renorm
from .linalg_toplevel import *  # noqa: F403
from .matrix import *  # noqa: F403
from .pointwise_addc import *  # noqa: F403
from .random_fill import *  # noqa: F403
from .rectifier import Relu
from .reduce import (
    all,
    amax,
    amin,
    aminmax,
    any,
    argmax,
    argmin,
    cumsum,
    logsumexp,
    max,
    mean,
    min,
    nanmean,
    nansum,
    norm,
    prod,
    std,
    std_mean,
    sum,
    sum_to_size,
    var,
    var_mean,
    vector_norm,
)
from .scatter_views import *  # noqa: F403
from .shape import (
    broadcast_to,
    cat,
    chunk,
    concat,
    concatenate,
    expand,
    flatten,
    flip,
    gather,
    index_select,
    masked_fill,
    narrow,
    permute,
    repeat,
    reshape,
    scatter_add,
    select,
    split,
    squeeze,
    stack,
    t,
    transpose,
    unbind,
    unflatten,
    unsqueeze,
    view,
)
from .sign_forms import *  # noqa: F403
from .sorting import *  # noqa: F403
from .sparse_csr import sparse_csr_tensor
from .sparse_tensor import sparse_coo_tensor
from .special import *  # noqa: F403
from .special import erf
from .spectral import *  # noqa: F403
from .statistics import *  # noqa: F403
from .strided_creation import *  # noqa: F403
from .strided_views import *  # noqa: F403
from .transcendental import *  # noqa: F403
from .view_copies import *  # noqa: F403
from .vision import constant_pad_nd


def add(input, other, *, alpha=1) -> Tensor:
    """input + alpha * other."""
    input = numbers_as_tensor(input, other)
    return Add.apply(input, other, alpha)


def sub(input, other, *, alpha=1) -> Tensor:
    """input - alpha * other."""
    input = numbers_as_tensor(input, other)
    return Sub.apply(input, other, alpha)


def mul(input, other) -> Tensor:
    """Elementwise product."""
    input = numbers_as_tensor(input, other)
    return Mul.apply(input, other)


def div(input, other, *, rounding_mode=None) -> Tensor:
    """Elementwise quotient (true division unless rounding_mode is 'floor' or 'trunc')."""
    input = numbers_as_tensor(input, other)
    return Div.apply(input, other, rounding_mode)


@autocast_op("pow")
def pow(input, exponent) -> Tensor:  # noqa: A001
    """input ** exponent (either may be a number)."""
    return Pow.apply(input, exponent)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum (ties share the gradient)."""
    return Maximum.apply(input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum (ties share the gradient)."""
    return Minimum.apply(input, other)


def _unary_function(cls, name):
    def op(input: Tensor) -> Tensor:
        return cls.apply(input)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name}."
    return autocast_op(name)(op)  # exp, log ... run in float32 under CUDA autocast


UNARY = {"neg": Neg, "exp": Exp, "log": Log, "log2": Log2, "log10": Log10, "log1p": Log1p,
         "expm1": Expm1, "sqrt": Sqrt, "rsqrt": Rsqrt, "sin": Sin, "cos": Cos, "tan": Tan,
         "tanh": Tanh, "sigmoid": Sigmoid, "relu": Relu, "abs": Abs, "sign": Sign,
         "floor": Floor, "ceil": Ceil, "trunc": Trunc, "round": Round,
         "reciprocal": Reciprocal, "square": Square}
globals().update({name: _unary_function(cls, name) for name, cls in UNARY.items()})


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001
    """Round half to even; with ``decimals``, to that many decimal places (negative: tens,
    hundreds, ...), computed as PyTorch's kernel does in the input's dtype: ``rint(x * 10**d) /
    10**d`` (``rint(x / 10**-d) * 10**-d`` for negative ``d``). Its gradient is zero."""
    if decimals == 0:
        return Round.apply(input)
    if not input.is_floating_point():
        raise NotImplementedError(f'"round_cpu" not implemented for '
                                  f"'{_dtype.title(input.dtype)}'")
    scale = 10.0 ** builtins.abs(decimals)
    if decimals > 0:
        out = Round.apply(input * scale) / scale
    else:
        out = Round.apply(input / scale) * scale
    return named(out, "RoundBackward1", input)


negative = globals()["neg"]
ger = outer  # PyTorch's old name of outer
absolute = globals()["abs"]
clip = clamp
true_divide = divide = div
multiply = mul
subtract = sub


# -- methods and operators ----------------------------------------------------------------------
def _operator(op):
    """A comparison operator: ``t == None`` (or any non-number) is False, as in PyTorch."""

    def method(self, other):
        if not isinstance(other, Tensor) and not is_scalar(other):
            return NotImplemented  # Python then falls back to identity: == False, != True
        return op(self, other)

    method.__name__ = op.__name__
    return method


def _reflected(op):
    def method(self, other):
        if isinstance(other, np.ndarray):  # ``array + tensor``: a TypeError, as in PyTorch
            return NotImplemented
        return op(other, self)

    return method


def _commuted(op):
    """``number op tensor`` for a commutative op, computed as ``tensor op number`` (the same
    value), so the node's inputs come in PyTorch's order."""

    def method(self, other):
        if isinstance(other, np.ndarray):  # ``array + tensor``: a TypeError, as in PyTorch
            return NotImplemented
        return op(self, other)

    return method


def _rtruediv(self: Tensor, other) -> Tensor:
    if isinstance(other, np.ndarray):
        return NotImplemented
    # number / tensor is reciprocal(tensor) * number in PyTorch, which rounds differently
    # from a true division.
    return mul(globals()["reciprocal"](self), other)


def _new(factory):
    def method(self: Tensor, *args, dtype=None, device=None, requires_grad=False, **kwargs):
        return factory(*args, dtype=self.dtype if dtype is None else dtype,
                       device=self.device if device is None else device,
                       requires_grad=requires_grad, **kwargs)

    method.__doc__ = f"``{factory.__name__}`` with this tensor's dtype and device."
    return method


def _new_tensor(self: Tensor, data, dtype=None, device=None, requires_grad=False) -> Tensor:
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
    return creation._copied(data, self.dtype if dtype is None else dtype,
                            self.device if device is None else device, requires_grad)


def _where_method(self: Tensor, condition: Tensor, other) -> Tensor:
    return where(condition, self, other)


def _expand_as(self: Tensor, other: Tensor) -> Tensor:
    return expand(self, other.shape)


def _view_as(self: Tensor, other: Tensor) -> Tensor:
    return view(self, other.shape)


def _reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return reshape(self, other.shape)


def _clamp_min(self, min):  # noqa: A002
    return named(clamp(self, min=min),
                 "ClampMinBackward1" if isinstance(min, Tensor) else "ClampMinBackward0")


def _clamp_max(self, max):  # noqa: A002
    return named(clamp(self, max=max),
                 "ClampMaxBackward1" if isinstance(max, Tensor) else "ClampMaxBackward0")


def _rsub(self: Tensor, other) -> Tensor:
    if isinstance(other, np.ndarray):
        return NotImplemented
    out = sub(other, self)
    return out if isinstance(other, Tensor) else named(out, "RsubBackward1")


def _iter(self: Tensor):
    if self._data.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(unbind(self, 0))


def _contains(self: Tensor, item) -> bool:
    return bool((self == item).any().item())


METHODS = dict(
    add=add, sub=sub, mul=mul, div=div, pow=pow, matmul=matmul, mm=mm, bmm=bmm, dot=dot, mv=mv,
    outer=outer, ger=outer, maximum=maximum, minimum=minimum, clamp=clamp, clip=clamp,
    where=_where_method,
    clamp_min=_clamp_min, clamp_max=_clamp_max, eq=eq, ne=ne, lt=lt, le=le, gt=gt, ge=ge,
    isfinite=isfinite, isnan=isnan, isinf=isinf, logical_not=logical_not, isclose=isclose,
    allclose=allclose, equal=equal,
    floor_divide=floor_divide, remainder=remainder, true_divide=div, divide=div, multiply=mul,
    subtract=sub, negative=negative, absolute=absolute,
    sum=sum, mean=mean, var=var, std=std, max=max, min=min, amax=amax, amin=amin, argmax=argmax,
    argmin=argmin, prod=prod, logsumexp=logsumexp, norm=norm, cumsum=cumsum, all=all, any=any,
    sum_to_size=sum_to_size, softmax=softmax, log_softmax=log_softmax,
    reshape=reshape, view=view, permute=permute, transpose=transpose, t=t, squeeze=squeeze,
    unsqueeze=unsqueeze, flatten=flatten, unflatten=unflatten, expand=expand,
    broadcast_to=broadcast_to, repeat=repeat, flip=flip, split=split, chunk=chunk, unbind=unbind,
    narrow=narrow, gather=gather, scatter_add=scatter_add, index_select=index_select,
    masked_fill=masked_fill, select=select,
    clone=clone, contiguous=contiguous, expand_as=_expand_as,
    view_as=_view_as, reshape_as=_reshape_as, swapaxes=transpose, swapdims=transpose,
    new_zeros=_new(creation.zeros), new_ones=_new(creation.ones), new_empty=_new(creation.empty),
    new_full=_new(creation.full), new_tensor=_new_tensor,
    zero_=zero_, fill_=fill_, copy_=copy_,
    add_=_ufunc_inplace("add", add), sub_=_ufunc_inplace("subtract", sub),
    __iter__=_iter, __contains__=_contains,
    __add__=add, __radd__=_commuted(add), __sub__=sub, __rsub__=_rsub,
    __mul__=mul, __rmul__=_commuted(mul), __truediv__=div, __rtruediv__=_rtruediv,
    __floordiv__=floor_divide, __rfloordiv__=_reflected(floor_divide), __mod__=remainder,
    __rmod__=_reflected(remainder), __pow__=pow, __rpow__=_reflected(pow), __matmul__=matmul,
    __rmatmul__=_reflected(matmul), __neg__=globals()["neg"], __abs__=globals()["abs"],
    __pos__=lambda self: self, __eq__=_operator(eq), __ne__=_operator(ne), __lt__=_operator(lt),
    __le__=_operator(le), __gt__=_operator(gt), __ge__=_operator(ge),
    __and__=bitwise_and, __or__=bitwise_or, __xor__=bitwise_xor, __invert__=bitwise_not,
    __rand__=_reflected(bitwise_and), __ror__=_reflected(bitwise_or),
    __rxor__=_reflected(bitwise_xor), __lshift__=bitwise_left_shift,  # noqa: F405
    __rshift__=bitwise_right_shift, __rlshift__=_reflected(bitwise_left_shift),  # noqa: F405
    __rrshift__=_reflected(bitwise_right_shift),  # noqa: F405
    bitwise_and=bitwise_and, bitwise_or=bitwise_or, bitwise_xor=bitwise_xor,
    bitwise_not=bitwise_not, unfold=unfold, index_put=index_put,
    masked_scatter=masked_scatter, aminmax=aminmax,
    __getitem__=getitem, __setitem__=setitem,
)


def _array_operand(name: str, op, direct=None):
    """A binary operator that also accepts a NumPy array on its right, as PyTorch's do.

    PyTorch's own operators refuse the array, so Python hands the operation to NumPy, which
    computes it on ``self.numpy()`` (hence an error when ``self`` requires grad) with NumPy's
    promotion rules, and the result comes back as a tensor with bool results as uint8
    (PyTorch's ``__array_wrap__``): ``float32_tensor + int64_array`` is float64. ``==``/``!=``
    compare as tensors. ``array + tensor`` stays a TypeError, as in PyTorch.
    """
    import operator

    numpy_op = getattr(operator, name)  # operator.__add__ is ``a + b``
    # ``direct``: the op's node class's apply, called without the op function's frame (the
    # arithmetic operators are most of a chain of small ops; their defaults are the op's).
    call = direct or op

    def method(self, other):
        if not isinstance(other, np.ndarray):
            return call(self, other)
        if name in ("__eq__", "__ne__"):
            if self.requires_grad:  # NumPy cannot read self: Python's identity fallback
                return NotImplemented
            return op(self, creation.as_tensor(other))
        result = np.asarray(numpy_op(self.numpy(), other))
        if result.dtype == np.bool_:
            result = result.astype(np.uint8)
        return creation.from_numpy(np.ascontiguousarray(result).reshape(result.shape))

    method.__name__ = name
    method.__doc__ = op.__doc__
    return method


_DIRECT = {"__add__": Add.apply, "__sub__": Sub.apply, "__mul__": Mul.apply,
           "__truediv__": Div.apply}
for _name in ("__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__",
              "__pow__", "__matmul__", "__and__", "__or__", "__xor__", "__eq__", "__ne__"):
    METHODS[_name] = _array_operand(_name, METHODS[_name], _DIRECT.get(_name))
# The ops of the smaller op modules whose Tensor methods take the same arguments.
METHODS.update({name: globals()[name] for name in (
    "tril", "triu", "sort", "argsort", "topk", "kthvalue", "addmm", "baddbmm", "diag",
    "diagonal", "trace", "scatter", "index_add", "index_fill", "index_copy", "scatter_reduce",
    "masked_select", "take", "roll", "movedim",
    "moveaxis", "rot90", "atan2", "arctan2", "lerp", "erfc", "erfinv", "nan_to_num", "cumprod",
    "hypot", "dist", "copysign", "kron", "put", "logcumsumexp", "nonzero", "argwhere",
    "count_nonzero", "bincount", "histc", "unique", "unique_consecutive", "cummax", "cummin",
    "logit", "xlogy", "sinc", "frac", "heaviside", "fliplr", "flipud", "tile",
    "repeat_interleave", "diff", "inner", "msort", "addcmul", "addcdiv", "fmod", "float_power",
    "sgn", "signbit", "fix", "deg2rad", "rad2deg", "take_along_dim", "nansum", "nanmean",
    "logical_and", "logical_or", "logical_xor", "median", "quantile", "nanquantile",
    "tensor_split", "hsplit", "vsplit", "dsplit", "gcd", "lcm", "fmax", "fmin", "isposinf",
    "isneginf", "logaddexp", "logaddexp2", "mode", "nanmedian", "cross", "diag_embed",
    "diagflat", "split_with_sizes", "ravel", "bitwise_left_shift", "bitwise_right_shift",
    *transcendental.UNARY_NAMES, *transcendental.ALIASES)}, erf=erf)
METHODS.update({name: globals()[name] for name in UNARY})
METHODS.update(random_fill.METHODS)
METHODS.update(pinned.METHODS)
METHODS.update(hash_tensor=hash_tensor)
METHODS.update(spectral.METHODS)
METHODS.update(sparse_tensor.METHODS)
METHODS.update(sparse_csr.METHODS)
METHODS.update(linalg_toplevel.METHODS)
METHODS.update(strided_views.METHODS)  # as_strided, resize_, data_ptr, untyped_storage ...
for _module in (blas_products, linalg_norms, statistics):  # addmv, renorm, cov, in-place forms
    METHODS.update(_module.METHODS)
for _module in (float_parts, index_reduction, scatter_views, sign_forms, view_copies):
    METHODS.update(_module.METHODS)
METHODS.update(new_empty_strided=strided_creation.new_empty_strided, isreal=isreal,  # noqa: F405
               nonzero_static=nonzero_static, __rdiv__=_rtruediv,  # noqa: F405
               __pos__=positive)  # noqa: F405


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """``polygamma(n, self)``."""
    return polygamma(n, self)  # noqa: F405


_polygamma_method.__name__ = "polygamma"
METHODS.update(lgamma=lgamma, digamma=digamma, mvlgamma=mvlgamma,  # noqa: F405
               polygamma=_polygamma_method, i0=i0, igamma=igamma, igammac=igammac)  # noqa: F405


def _checked(method, check):
    """``method`` after ``check(self, *args, **kwargs)`` (which raises on bad input)."""

    def checked(self, *args, **kwargs):
        check(self, *args, **kwargs)
        return method(self, *args, **kwargs)

    checked.__name__, checked.__doc__ = method.__name__, method.__doc__
    return checked


def install_tensor_methods(cls) -> None:
    """Attach every op as a Tensor method, with in-place ``name_`` forms and operators."""
    methods = dict(METHODS)
    methods["mul_"] = _ufunc_inplace("multiply", mul)
    methods["div_"] = _inplace(div)
    for name in ("neg", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "abs",
                 "floor", "ceil", "round", "trunc", "reciprocal", "sign", "square", "log1p",
                 "expm1", "rsqrt", "clamp", "clamp_min", "clamp_max", "pow",
                 "tril", "triu", "scatter", "scatter_add", "index_add", "index_fill", "index_copy",
                 "scatter_reduce", "atan2", "lerp", "erf",
                 "erfc", "erfinv", "nan_to_num", "cumprod", "hypot", "copysign", "put",
                 "logit", "xlogy", "sinc", "frac", "heaviside", "cumsum", "lgamma", "digamma",
                 "i0", "igamma", "igammac", "mvlgamma", "polygamma",
                 "addcmul", "addcdiv", "fmod", "float_power", "sgn", "fix", "deg2rad", "rad2deg",
                 "logical_and", "logical_or", "logical_xor", "true_divide", "floor_divide",
                 "remainder", "negative", "gcd", "lcm", "log2", "log10", "tan",
                 "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                 "bitwise_left_shift", "bitwise_right_shift", "index_put",
                 *transcendental.UNARY_NAMES):
        methods[name + "_"] = _inplace(methods[name])
    methods["float_power_"] = _checked(methods["float_power_"], special.check_float_power_base)
    for alias, name in transcendental.ALIASES.items():
        methods[alias + "_"] = methods[name + "_"]
    methods["masked_scatter_"] = masked_scatter_
    methods["index_reduce_"] = _inplace(methods["index_reduce"])
    methods["conj_physical_"] = _inplace(complex_ops.conj_physical)
    methods["masked_fill_"] = masked_fill_
    methods["fill_diagonal_"] = indexed.fill_diagonal_
    for name in ("t", "transpose", "squeeze", "unsqueeze", "swapaxes", "swapdims"):
        methods[name + "_"] = _inplace_view(methods[name])
    methods["arctan2_"] = methods["atan2_"]
    methods["clip_"] = methods["clamp_"]
    methods["__iadd__"] = methods["add_"]
    methods["__isub__"] = methods["sub_"]
    methods["__imul__"] = methods["mul_"]
    methods["__itruediv__"] = methods["div_"]
    for op, name in (("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                     ("lshift", "bitwise_left_shift"), ("rshift", "bitwise_right_shift")):
        methods[f"__i{op}__"] = methods[name + "_"]
    numpy_names.install(methods, list(methods))  # x.sum(axis=0, keepdims=True)
    deprecated_overloads.install(methods, method=True)  # p.add_(-lr, g)
    methods.update(method_aliases.methods(methods))  # eq_, greater, addmm_, is_signed ...
    methods.update(legacy_storage.METHODS)  # storage(), set_, new, apply_ ...
    for name, fn in methods.items():
        setattr(cls, name, fn)
    complex_ops.install(cls)
    for name, prop in sparse_tensor.PROPERTIES.items():
        setattr(cls, name, prop)
    cls.T = property(lambda self: permute(self, tuple(range(self._data.ndim))[::-1]),
                     doc="The tensor with its dimensions reversed.")
    cls.mT = property(lambda self: transpose(self, -2, -1),
                      doc="The last two dimensions swapped (batched matrix transpose).")
    for name, prop in linalg_toplevel.PROPERTIES.items():  # mH, H
        setattr(cls, name, prop)


# The functions of the ``microtorch`` namespace (as in ``torch``); the rest are Tensor methods.
__all__ = [
    *creation.__all__, "add", "sub", "mul", "div", "pow", "maximum", "minimum", "where",
    "clamp", "clip", "true_divide", "divide", "multiply", "subtract", "negative", "absolute",
    *UNARY, "eq", "ne", "lt", "le", "gt", "ge", "isfinite", "isnan", "isinf", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "floor_divide", "remainder",
    "logical_and", "logical_or", "logical_xor", "var_mean", "std_mean", "nansum", "nanmean",
    "isclose", "allclose", "equal",
    "matmul", "mm", "bmm", "dot", "mv", "outer", "ger", "softmax", "log_softmax",
    "sum", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin", "prod",
    "logsumexp", "norm", "cumsum", "all", "any",
    "reshape", "permute", "transpose", "t", "squeeze", "unsqueeze", "flatten", "unflatten",
    "broadcast_to", "flip", "cat", "concat", "concatenate", "stack", "split", "chunk", "unbind",
    "narrow", "gather", "scatter_add", "index_select", "masked_fill", "clone", "erf", "select",
    *arrange.__all__, *complex_ops.__all__, *indexed.__all__, *matrix.__all__,
    *sorting.__all__, *special.__all__, *pointwise_addc.__all__, *cumulative.__all__,
    *random_fill.__all__,
    *counting.__all__, *gamma.__all__, *bessel.__all__, *integer.__all__, *spectral.__all__,
    *linalg_toplevel.__all__, *blas_products.__all__, *calculus.__all__, *flat_index.__all__,
    *statistics.__all__, "renorm",
    *comparison.__all__, *transcendental.__all__, "aminmax", "index_put", "masked_scatter",
    "sparse_coo_tensor", "sparse_csr_tensor", "spmm",
    *float_parts.__all__, *index_reduction.__all__, *scatter_views.__all__, *sign_forms.__all__,
    *strided_creation.__all__, *view_copies.__all__, "fill", "constant_pad_nd",
    "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "hash_tensor",
    *strided_views.__all__,
]


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Sparse matrix times dense matrix (``torch.spmm``: ``mm`` of a sparse ``input``)."""
    return mm(input, mat2)


# Sparse compressed layouts (CSC / BSR / BSC) and the legacy sparse products (smm, hspmm ...).
from . import sparse_compressed, sparse_compressed_ops  # noqa: E402
from .sparse_compressed import *  # noqa: E402,F403
from .sparse_compressed_ops import *  # noqa: E402,F403

METHODS.update(sparse_compressed.METHODS)
METHODS.update(sparse_compressed_ops.METHODS)
__all__ += [*sparse_compressed.__all__, *sparse_compressed_ops.__all__]
