"""PyTorch's ``out=`` argument of the namespace functions (``torch.add(a, b, out=r)``).

The ops compute their result as usual; ``with_out`` then writes it into the caller's tensor
the way PyTorch's ``resize_output`` and TensorIterator do: an ``out`` of another shape is
resized (with PyTorch's deprecation warning when it held elements), the result is cast to
``out``'s dtype where PyTorch's casting rules allow it, and ``out`` itself is returned. As in
PyTorch, ``out=`` does not record gradients: it is refused while any argument requires grad.
Only the functions PyTorch gives ``out=`` are wrapped; Tensor methods never take it.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import _dtype
from ..autograd import saved
from ..autograd.grad_mode import INFERENCE_INPLACE, in_inference_mode, is_grad_enabled
from ._util import Tensor

# The namespace functions that take ``out=`` in PyTorch (those with a tuple result take a tuple).
OUT_FUNCTIONS = (
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "where", "clamp", "clip",
    "true_divide", "divide", "multiply", "subtract", "negative", "absolute",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "floor_divide", "remainder",
    "matmul", "mm", "bmm", "dot", "mv", "outer", "addmm", "baddbmm", "tensordot",
    "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "logsumexp", "norm", "cumsum",
    "cumprod", "all", "any", "max", "min", "std", "var", "sort", "topk", "kthvalue",
    "cat", "concat", "concatenate", "stack", "gather", "index_select", "masked_select",
    "atan2", "arctan2", "lerp", "erfc", "erfinv", "hypot", "copysign", "tril", "triu", "erf",
    "neg", "exp", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "abs", "sign", "floor", "ceil",
    "round", "trunc", "reciprocal", "square", "exp2", "zeros", "ones", "empty", "rand", "randn",
    "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
    "logaddexp", "logaddexp2", "fmax", "fmin", "isposinf", "isneginf", "isin", "aminmax",
    "mode", "nanmedian", "cross", "column_stack", "logspace", "bitwise_left_shift",
    "bitwise_right_shift", "linspace", "arange", "i0", "igamma", "igammac", "lgamma", "digamma",
    "polygamma", "mvlgamma", "xlogy", "sinc", "logit", "take", "complex",
)
# Creation functions take their dtype and device from ``out`` unless given.
CREATION = frozenset({"zeros", "ones", "empty", "rand", "randn", "logspace", "linspace",
                      "arange"})
# The ops whose out= PyTorch refuses when its elements share memory with each other
# (assert_no_internal_overlap) or with an input's (assert_no_overlap): the written result
# would depend on the order of the writes, or read values already overwritten.
NO_OVERLAP = frozenset({"masked_select", "gather", "index_select", "cat", "concat",
                        "concatenate", "kthvalue", "take"})
# Structured kernels whose out= must already have the result's dtype (no casting).
EXACT_DTYPE = frozenset({"aminmax", "gather", "complex"})
OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor "
           "refer to a single memory location. Please clone() the tensor before performing the "
           "operation.")


def _dense(arr) -> bool:
    """PyTorch's is_non_overlapping_and_dense: the elements fill their memory span exactly."""
    span = arr.itemsize + sum((n - 1) * abs(s) for n, s in zip(arr.shape, arr.strides))
    return span == arr.nbytes


def _overlaps(out: Tensor, t: Tensor) -> bool:
    """PyTorch's get_overlap_status is Full or Partial: the same tensor, or two non-empty
    dense ones whose memory spans meet (a strided pair is "too hard" there and passes).
    Pointer arithmetic only: no device sync."""
    if out is t:
        return True
    a, b = out._data, t._data
    if a.size == 0 or b.size == 0 or type(a) is not type(b) or not (_dense(a) and _dense(b)):
        return False
    may_share = getattr(out._backend.xp, "may_share_memory", None)
    return may_share is not None and bool(may_share(a, b))


def _same_place(a: Tensor, b: Tensor) -> bool:
    """Whether ``a`` and ``b`` are the same elements in the same memory (a full overlap)."""
    x, y = a._data, b._data
    if a is b:
        return True
    if x.shape != y.shape or x.strides != y.strides or type(x) is not type(y):
        return False
    ptr = (lambda arr: arr.__array_interface__["data"][0]) if type(x) is np.ndarray else \
        (lambda arr: arr.data.ptr)
    return ptr(x) == ptr(y)


def check_no_overlap(name: str, outs, args: tuple, kwargs: dict) -> None:
    """PyTorch's overlap checks of ``name``'s out= tensors against its inputs, made before
    the op runs so nothing is written. gather's index may coincide with out (PyTorch only
    refuses a partial overlap there)."""
    from ._util import assert_no_internal_overlap

    inputs = []
    for v in (*args, *kwargs.values()):
        if isinstance(v, Tensor):
            inputs.append(v)
        elif isinstance(v, (list, tuple)):
            inputs.extend(x for x in v if isinstance(x, Tensor))
    index = args[2] if name == "gather" and len(args) > 2 else kwargs.get("index")
    for o in outs:
        if not isinstance(o, Tensor):
            continue
        assert_no_internal_overlap(o._data)
        if any(_overlaps(o, t) for t in inputs if t is not index or not _same_place(o, t)):
            raise RuntimeError(OVERLAP)


def check_exact_dtype(result: Tensor, out) -> None:
    """A structured kernel's out= rule: ``out`` has exactly the result's dtype."""
    if isinstance(out, Tensor) and out.dtype != result.dtype:
        from .linalg import cpp_name

        raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(result)}, but got "
                           f"{cpp_name(out)} instead")


def _any_requires_grad(values) -> bool:
    for v in values:
        if isinstance(v, Tensor) and v.requires_grad:
            return True
        if isinstance(v, (list, tuple)) and _any_requires_grad(v):
            return True
    return False


def write_out(name: str, result: Tensor, out: Tensor, warn_resize: bool = True) -> Tensor:
    """Store ``result`` into ``out`` (resized and cast as PyTorch does) and return ``out``;
    creation functions resize without PyTorch's deprecation warning (``warn_resize``)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out._inference and not in_inference_mode():
        raise RuntimeError(INFERENCE_INPLACE)
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to have device {result.device}, but got "
                           f"{out.device} instead")
    res_dtype, out_dtype = result.dtype, out.dtype
    if res_dtype != out_dtype and res_dtype._category > out_dtype._category:
        raise RuntimeError(f"result type {_dtype.title(res_dtype)} can't be cast to the "
                           f"desired output type {_dtype.title(out_dtype)}")
    arr = result._data
    if tuple(out._data.shape) != tuple(arr.shape):
        if out._data.size != 0 and warn_resize:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out._data.shape)}, which does not match the required output shape "
                f"{list(arr.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).", UserWarning, stacklevel=3)
        # A fresh array of the new shape, as PyTorch's resize_ gives new storage.
        out._data = out._backend.xp.empty(arr.shape, dtype=out._data.dtype)
    elif saved.writes.count:
        saved.before_write(out)
    out._data[...] = arr
    out._vbox[0] += 1
    return out


def with_out(name: str, fn):
    """``fn`` with PyTorch's keyword ``out=`` (a tensor, or a tuple for tuple results)."""

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if is_grad_enabled() and _any_requires_grad((*args, *kwargs.values())):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
        if name in CREATION and isinstance(out, Tensor):
            kwargs.setdefault("dtype", out.dtype)
            kwargs.setdefault("device", out.device)
        if name in NO_OVERLAP:
            check_no_overlap(name, out if isinstance(out, (tuple, list)) else (out,), args,
                             kwargs)
        result = fn(*args, **kwargs)
        if isinstance(result, tuple):
            if not isinstance(out, (tuple, list)) or len(out) != len(result):
                raise TypeError(f"{name}(): argument 'out' must be tuple of {len(result)} "
                                f"Tensors, not {type(out).__name__}")
            if name in EXACT_DTYPE:  # (every out checked before the first is written)
                for r, o in zip(result, out):
                    check_exact_dtype(r, o)
            written = [write_out(name, r, o) for r, o in zip(result, out)]
            return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
        if name in EXACT_DTYPE:
            check_exact_dtype(result, out)
        return write_out(name, result, out, warn_resize=name not in CREATION)

    return wrapper


def install(namespace: dict) -> None:
    """Give the ``OUT_FUNCTIONS`` present in ``namespace`` PyTorch's ``out=`` argument."""
    for name in OUT_FUNCTIONS:
        if name in namespace:
            namespace[name] = with_out(name, namespace[name])


def write_exact(name: str, result: Tensor, out: Tensor) -> Tensor:
    """``write_out`` for the ``out=`` of PyTorch's generated out variants (the ``*_copy`` ops,
    ``slice_scatter``, ``index_reduce``): they copy the functional result into ``out`` and
    take no other dtype than the result's."""
    check_exact_dtype(result, out)
    return write_out(name, result, out)


def with_exact_out(name: str, fn, grad_check: bool = True, kernel: str | None = None):
    """``fn`` with the ``out=`` of a generated out variant (see ``write_exact``): a sequence
    result takes a sequence of as many tensors and the call then returns None, as PyTorch's
    does. ``grad_check``: refuse inputs that require grad (ops with a derivative formula of
    their own; the ``*_copy`` of a view op has none). ``kernel``: the overload PyTorch's
    error for an ``out`` of another length names (``unbind_copy_int``)."""

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if grad_check and is_grad_enabled() and _any_requires_grad((*args, *kwargs.values())):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
        result = fn(*args, **kwargs)
        if not isinstance(result, (tuple, list)):
            return _untracked(name, write_exact(name, result, out), args, kwargs)
        if not isinstance(out, (tuple, list)):
            raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                            f"{type(out).__name__}")
        if len(out) != len(result):
            raise RuntimeError(f"{kernel or name}_out expected an out= argument of size "
                               f"{len(result)}, got size {len(out)}")
        for r, o in zip(result, out):
            _untracked(name, write_exact(name, r, o), args, kwargs)
        return None

    return wrapper


def _untracked(name: str, out: Tensor, args: tuple, kwargs: dict) -> Tensor:
    """``out`` after an out= call of an op without an out derivative whose inputs require
    grad: as in PyTorch, it then requires grad through a ``NotImplemented`` node, whose
    backward raises."""
    inputs = [v for v in (*args, *kwargs.values()) if isinstance(v, Tensor) and v.requires_grad]
    if inputs and is_grad_enabled():
        from ..autograd import views
        from ..autograd.function import named
        from .counting import no_derivative

        marker = no_derivative(out._data, name, "torch::autograd::NotImplemented", *inputs,
                               message=f"derivative for aten::{name} is not implemented")
        views.set_node(out, named(marker, marker.grad_fn.torch_name, *inputs).grad_fn)
    return out
