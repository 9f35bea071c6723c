"""Helpers shared by the op modules: type promotion, shape arguments, gradient reduction."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ..backend import aten_arith, backend_of, is_array_wrapper, xp_of

__all__ = ["Tensor", "promote_operands", "sizes_arg", "wrap_dim", "dims_arg", "reduce_grad",
           "sum_to_shape", "xp_of", "is_scalar", "scalar_name", "has_internal_overlap",
           "assert_no_internal_overlap", "check_bounds", "check_index_bounds",
           "broadcast_shape", "tensors_arg", "check_index_arg",
           "narrow_start", "split_size_arg", "writable_copy", "index_array", "result_xp",
           "wrapped_int", "checked_scalar", "checked_alpha", "add_alpha", "plus_scaled"]

wrap_dim = _wrap_dim


def has_internal_overlap(arr) -> bool:
    """True when several elements of ``arr`` share one memory location (an expanded
    dimension: stride 0, size > 1), the case PyTorch's in-place ops refuse. An empty array
    has no elements to share (NumPy gives it zero strides)."""
    strides = arr.strides
    return (0 in strides and arr.size > 0
            and any(s == 0 and n > 1 for s, n in zip(strides, arr.shape)))


_C_TYPES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t"}


def wrapped_int(value, np_dtype):
    """``value`` as a scalar of ``np_dtype`` when it is a Python int and the dtype an integer
    one, converted as PyTorch converts a number argument: an unsigned type also takes
    negatives down to -max and wraps them (-3 as uint8 is 253), anything else out of range
    raises PyTorch's overflow error (NumPy 2 refuses every out-of-range Python int). Any
    other value is returned unchanged."""
    np_dtype = np.dtype(np_dtype)
    if type(value) is not int or np_dtype.kind not in "ui":
        return value
    info = np.iinfo(np_dtype)
    low = -int(info.max) if np_dtype.kind == "u" else int(info.min)
    if not low <= value <= int(info.max):
        raise RuntimeError(f"value cannot be converted to type {_C_TYPES[np_dtype.name]} "
                           "without overflow")
    return np_dtype.type(value % (1 << (8 * np_dtype.itemsize))) if value < 0 and \
        np_dtype.kind == "u" else np_dtype.type(value)


def checked_alpha(alpha, dt):
    """``alpha`` after PyTorch's ``alpha_check`` for an op of result dtype ``dt``: a bool
    alpha for bool results only, no float alpha for integer results, no complex alpha for real
    ones; converted as PyTorch converts it (a bool result's alpha is a bool, an integer one's
    wraps as ``wrapped_int``)."""
    if isinstance(alpha, bool) and dt.kind != "b":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if dt.kind in "biu" and not isinstance(alpha, (int, np.integer)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if dt.kind != "c" and isinstance(alpha, complex):
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex "
                           "number.")
    return bool(alpha) if dt.kind == "b" else wrapped_int(alpha, dt)


def add_alpha(alpha, dt, subtract: bool = False):
    """The checked ``alpha`` of ``add`` (:func:`checked_alpha`); for ``sub``, which PyTorch
    computes as ``add`` with ``-alpha``, the negation is what must fit the dtype (``sub`` of
    int8 takes ``alpha=128`` and refuses ``-128``, as in PyTorch)."""
    if not subtract:
        return checked_alpha(alpha, dt)
    if isinstance(alpha, bool):
        checked_alpha(alpha, dt)  # (its dtype rule, which -alpha, an int, would pass)
    return checked_alpha(-alpha, dt)


def plus_scaled(xa, xb, alpha, dt, subtract: bool = False):
    """``xa + alpha * xb`` (``add``), or ``xa - alpha * xb`` (``sub``), in the result dtype
    ``dt`` with ``alpha`` checked (:func:`checked_alpha`), rounded as PyTorch's CPU kernel
    rounds it (``backend.aten_arith``: one rounding in its AVX2/AVX512 builds). A number
    operand is taken in ``dt`` first, as PyTorch casts a wrapped number to the op's dtype."""
    alpha = add_alpha(alpha, dt, subtract)
    if aten_arith.fuses(xa, xb):
        return aten_arith.add_scaled(xa, xb, alpha)
    if not hasattr(xb, "dtype"):
        xb = np.asarray(xb).astype(dt)[()]
    return xa + alpha * xb


def checked_scalar(value, np_dtype):
    """A number argument (``fill``'s value, ``scalar_tensor``'s ``s``, a pad value) converted
    to ``np_dtype`` as PyTorch converts a Scalar: integers as ``wrapped_int``, floats into an
    integer dtype truncated when in range, a complex number into a real dtype only without an
    imaginary part, float32 refusing finite values beyond its range (float16 and bfloat16
    saturate); anything else raises PyTorch's overflow error."""
    dt = np.dtype(np_dtype)
    if isinstance(value, np.generic):
        value = value.item()
    if type(value) is int and not -(1 << 63) <= value < (1 << 64):
        raise OverflowError("int too big to convert")
    if dt.kind == "b":
        return bool(value)
    if dt.kind == "c":
        return complex(value)
    # (float16 and bfloat16 take the value through double, so their error names that)
    name = _C_TYPES.get(dt.name, "float" if dt == np.float32 else "double")
    overflow = RuntimeError(f"value cannot be converted to type {name} without overflow")
    if isinstance(value, complex):
        if value.imag != 0:
            raise overflow
        value = value.real
    if dt.kind in "iu":
        if isinstance(value, (bool, int)):
            return wrapped_int(int(value), dt)
        info = np.iinfo(dt)
        if not math.isfinite(value) or not int(info.min) <= value <= int(info.max):
            raise overflow
        return dt.type(int(value))
    if dt == np.float32 and math.isfinite(value) and \
            abs(value) > float(np.finfo(np.float32).max):
        raise overflow
    return value


def assert_no_internal_overlap(arr) -> None:
    """PyTorch's error for an in-place write whose result would depend on the order in which
    the overlapping elements are written (a fill with one value is exempt: callers skip it)."""
    if has_internal_overlap(arr):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")


def broadcast_shape(*tensors: Tensor) -> tuple:
    """The shape ``tensors`` broadcast to, or PyTorch's error naming the sizes that clash."""
    try:
        return tuple(np.broadcast_shapes(*(t._data.shape for t in tensors)))
    except ValueError:
        from ..autograd.node import broadcast_message

        raise RuntimeError(broadcast_message(tensors)) from None


def check_bounds(idx, low: int, high: int, error: type[Exception], message) -> None:
    """``error(message(bad))`` unless every index lies in [low, high): at once on the CPU; on a
    GPU a check on the device, raised at the next synchronisation (no host wait here), whose
    message names the range but not the offending index (that would need the data)."""
    def exact() -> str:
        bad = idx[(idx < low) | (idx >= high)]
        return message(int(bad.max()) if int(bad.max()) >= high else int(bad.min()))

    backend_of(idx).check((idx >= low) & (idx < high), error,
                          message(f"outside [{low}, {high})"), exact)


def check_index_bounds(idx, n: int, dim: int) -> None:
    """PyTorch's error for gather/scatter indices outside ``[0, n)`` (no negative indices)."""
    check_bounds(idx, 0, n, RuntimeError,
                 lambda bad: f"index {bad} is out of bounds for dimension {dim} with size {n}")


def check_index_arg(input: Tensor, dim: int, index: Tensor, fn: str) -> None:
    """PyTorch's checks of gather's and scatter_add's ``index``: integers, as many dims as
    ``input`` (gather: always; scatter_add: unless empty), entries in [0, size of ``dim``);
    index_select's: an integer vector (its bounds are the indexing's)."""
    if fn == "index_select":
        if index._data.ndim > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        if index._data.dtype.kind not in "iu":
            raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
        return
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(f"{fn}(): Expected dtype int64 for index")
    # PyTorch compares the dims with 0-d counted as 1-d (its ensure_nonempty_dim)
    if max(index._data.ndim, 1) != max(input._data.ndim, 1) and (fn == "gather"
                                                                 or index._data.size):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if fn == 'gather' else 'self'} tensor")
    check_index_bounds(index._data, input._data.shape[dim] if input._data.ndim else 1, dim)


def is_scalar(x) -> bool:
    """True for Python (and NumPy) numbers."""
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, Tensor)


def scalar_name(t: Tensor) -> str:
    """PyTorch's ScalarType name of a tensor's dtype (``Long``, ``Float``), as its dtype
    errors print it ("not implemented for 'Long'")."""
    return _dtype.title(t.dtype)


def check_cast(result: np.dtype, target: np.dtype) -> None:
    """PyTorch's canCast for a result written into a tensor of another dtype (in-place ops,
    ``out=``, Huber's loss): no complex -> real, no float -> integer, no non-bool -> bool."""
    if result == target:
        return
    res, tgt = _dtype.from_numpy_dtype(result), _dtype.from_numpy_dtype(target)
    if res._category > tgt._category:
        raise RuntimeError(f"result type {_dtype.title(res)} can't be cast to the desired "
                           f"output type {_dtype.title(tgt)}")


def _keeps_dtype(dt, scalar) -> bool:
    """Fast path: a Python float with a float tensor, or an int with an int/float tensor."""
    kind = dt.kind
    t = type(scalar)
    # Ints that may not fit the dtype take the slow path, which wraps them (uint8 - 3).
    return (t is float and kind == "f") or (t is int and (
        kind == "f" or (kind == "i" and -128 <= scalar <= 127)
        or (kind == "u" and 0 <= scalar <= 255)))


def _promotion_key(x):
    if isinstance(x, Tensor):
        return x.dtype if x._data.ndim else ("0d", x.dtype)
    if isinstance(x, np.generic):
        return x.item()
    if not is_scalar(x):
        raise TypeError(f"unsupported operand type {type(x).__name__}; expected a Tensor or a "
                        f"number")
    return x


def promote_operands(a, b):
    """The arrays (or Python scalars) of ``a`` and ``b`` cast to PyTorch's result dtype."""
    if isinstance(a, Tensor):
        xa = a._data
        if type(b) is float and xa.dtype.kind == "f":  # (the most common case, first)
            return xa, b, xa.dtype
        if isinstance(b, Tensor):
            if xa.dtype == b._data.dtype:
                return xa, b._data, xa.dtype
        elif _keeps_dtype(xa.dtype, b):
            return xa, b, xa.dtype
    elif isinstance(b, Tensor) and _keeps_dtype(b._data.dtype, a):
        return a, b._data, b._data.dtype
    dt = _dtype.result_type((_promotion_key(a), _promotion_key(b))).np
    return _cast(a, dt), _cast(b, dt), dt


def _cast(x, dt):
    if isinstance(x, Tensor):
        arr = x._data
        return arr if arr.dtype == dt else arr.astype(dt)
    if isinstance(x, np.generic):
        x = x.item()
    # A Python scalar of a higher category than dt (e.g. 2.5 with an int tensor) was already
    # folded into dt by promotion; the cast keeps NumPy from widening the result.
    if dt.kind in "bV":  # (bfloat16 arrays promote Python floats to float32: cast them first)
        return dt.type(x)
    if dt.kind in "iu" and not isinstance(x, bool) and isinstance(x, int):
        info = np.iinfo(dt)
        if not info.min <= x <= info.max:  # PyTorch wraps (uint8 - 3); NumPy 2 would raise
            return np.asarray(x).astype(dt)[()]
    return x


def _size_item(s):
    """One size as an int: Python/NumPy ints and one-element integer tensors (not bools)."""
    if isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)):
        return int(s)
    if isinstance(s, Tensor) and s._data.size == 1 and s._data.dtype.kind in "iu":
        return int(s.item())
    return None


def sizes_arg(sizes, fn: str = "", arg: str = "size") -> tuple:
    """Shape arguments given as varargs ``(2, 3)`` or one sequence ``((2, 3),)``, each an
    integer (``fn``/``arg`` name the function and argument in PyTorch's TypeError)."""
    where = f"{fn}(): argument '{arg}'" if fn else f"argument '{arg}'"
    if len(sizes) == 1 and _size_item(sizes[0]) is None:
        sizes = sizes[0]
        if not isinstance(sizes, (tuple, list)):
            raise TypeError(f"{where} (position 1) must be tuple of ints, not "
                            f"{type(sizes).__name__}")
    out = []
    for pos, s in enumerate(sizes):
        n = _size_item(s)
        if n is None:
            raise TypeError(f"{where} failed to unpack the object at pos {pos + 1} with error "
                            f"\"type must be tuple of ints,but got {type(s).__name__}\"")
        out.append(n)
    return tuple(out)


def tensors_arg(tensors, fn: str) -> list:
    """The ``tensors`` argument of cat/stack as a list, each element checked (PyTorch's
    TypeErrors: a sequence of Tensors, not one Tensor or anything else)."""
    if not isinstance(tensors, (list, tuple)) and not (
            hasattr(tensors, "__iter__") and not isinstance(tensors, (Tensor, str))):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return tensors


def narrow_start(size: int, start: int, length: int) -> int:
    """narrow's ``start`` counted from 0 (negative from the end), with PyTorch's errors for a
    start or length outside a dimension of ``size``."""
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    start = start + size if start < 0 else start
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return start


def split_size_arg(step: int, n: int) -> int:
    """split's chunk size, checked as PyTorch does against the dimension's size ``n``."""
    if step < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
    if step == 0 and n:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {n}")
    return step


def dims_arg(dim, ndim: int) -> tuple | None:
    """Normalise a reduction's ``dim`` argument (None, an int or a sequence) to a sorted tuple,
    or None for every dimension. An empty sequence also means every dimension, as in PyTorch's
    int-list reductions (sum, mean, var, amax, logsumexp, vector_norm, count_nonzero: its
    ``make_dim_mask``), not none of them as NumPy's ``axis=()`` would."""
    if dim is None:
        return None
    if not isinstance(dim, (int, np.integer, tuple, list)):
        if not (isinstance(dim, Tensor) and dim._data.ndim == 0):
            raise TypeError(f"argument 'dim' must be int or tuple of ints, not "
                            f"{type(dim).__name__}")
        dim = int(dim)
    if ndim == 0:  # PyTorch accepts dim 0 / -1 on a 0-d tensor; there is nothing to reduce
        for d in (dim,) if isinstance(dim, (int, np.integer)) else dim:
            wrap_dim(d, 0)
        return ()
    if isinstance(dim, (int, np.integer)):
        return (wrap_dim(dim, ndim),)
    if len(dim) == 0:
        return None
    wrapped = [wrap_dim(d, ndim) for d in dim]
    dims = tuple(sorted(wrapped))
    if len(set(dims)) != len(dims):  # (PyTorch names the first repeat, wrapped)
        repeated = next(d for i, d in enumerate(wrapped) if d in wrapped[:i])
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    return dims


def sum_to_shape(arr, shape: tuple):
    """Sum an array over the dimensions that broadcasting added or stretched to reach its shape
    from ``shape`` (the backward of broadcasting)."""
    lead = arr.ndim - len(shape)
    if lead < 0:
        raise RuntimeError(f"size {list(shape)} is not expandable to size {list(arr.shape)}")
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and arr.shape[lead + i] != 1)
    return (arr.sum(axis=axes) if axes else arr).reshape(shape)


def reduce_grad(grad, shape: tuple, dtype):
    """Sum a broadcast gradient back to an input's shape and cast it to the input's dtype.

    Works on Tensors and, for lifted backward formulas, on plain arrays.
    """
    if grad is None:
        return None
    if type(grad) is np.ndarray and grad.dtype is dtype and grad.shape == shape:
        return grad  # (the common case, first: this runs for most inputs of most nodes)
    if not isinstance(grad, Tensor):
        grad = sum_to_shape(grad, shape) if grad.shape != shape else grad
        if grad.dtype.kind == "c" and dtype.kind != "c":
            grad = grad.real  # a real input of a complex result: the real part (PyTorch)
        return grad if grad.dtype == dtype else grad.astype(dtype)
    if grad._data.shape != shape:
        grad = grad.sum_to_size(shape)
    if grad._data.dtype.kind == "c" and dtype.kind != "c":
        grad = grad.real
    if grad._data.dtype != dtype:
        grad = grad.to(_dtype.from_numpy_dtype(dtype))
    return grad


def _needs(ctx, i: int) -> bool:
    """True when positional input ``i`` of the node wants a gradient."""
    return i < len(ctx._next) and ctx._next[i] is not None


def _wrap(arr) -> Tensor:
    return Tensor._make(arr, False, None)


def _float_array(x: Tensor):
    arr = x._data
    if _dtype.kind_of(arr.dtype) != "f":
        arr = arr.astype(_dtype.get_default_dtype().np)
    return arr


def _wrapper_in(values):
    for v in values:
        if is_array_wrapper(v):
            return v
        if isinstance(v, tuple):
            inner = _wrapper_in(v)
            if inner is not None:
                return inner
    return None


def index_array(arr, key):
    """``arr[key]``, also for an unbatched ``arr`` and vmap's batched indices (NumPy's own
    indexing cannot take those)."""
    if not is_array_wrapper(arr):
        batched = _wrapper_in(key if isinstance(key, tuple) else (key,))
        if batched is not None:
            return xp_of(batched).getitem(arr, key)
    return arr[key]


def result_xp(*values):
    """The array module to make a result of ``values`` with: under vmap the batched one when
    any of them (or of the index tuples among them) is batched."""
    batched = _wrapper_in(values)
    if batched is not None:
        return xp_of(batched)
    return xp_of(next(v for v in values if hasattr(v, "shape")))


def writable_copy(arr, *others):
    """A copy of ``arr`` that values computed from ``others`` can be written into: under vmap
    a batched one when any of them is batched (a copy of an unbatched array could not take
    one value per sample)."""
    if not is_array_wrapper(arr):
        batched = _wrapper_in(others)
        if batched is not None:
            out = xp_of(batched).empty(arr.shape, arr.dtype)
            out[...] = arr
            return out
    return arr.copy()


def const(like: Tensor, arr) -> Tensor:
    """A constant tensor on ``like``'s device with its dtype."""
    return Tensor._make(like._backend.asarray(np.asarray(arr, dtype=like._data.dtype)), False,
                        None)


# The integer type of each float width, to select floats by bit masks.
_SAME_WIDTH_INT = {2: np.int16, 4: np.int32, 8: np.int64}


def selects_by_bits(*arrays) -> bool:
    """Whether ``select_bits`` takes these arrays: NumPy real floats of one width it has an
    integer type for (bfloat16's 'V' kind included)."""
    first = arrays[0]
    return all(type(a) is np.ndarray and a.dtype.kind in "fV" and a.dtype == first.dtype
               for a in arrays) and first.dtype.itemsize in _SAME_WIDTH_INT


def select_bits(g: np.ndarray, keep: np.ndarray, out: np.ndarray) -> None:
    """out = g where keep, else +0.0: PyTorch's selection in a gradient (``where``, not a
    product with a 0/1 mask, which gives -0.0 for g < 0 and NaN for an infinite g).

    ``keep`` is a bool array broadcastable to g and is consumed (overwritten). ``np.where``
    branches per element (some 3 ns each on a random mask); this is a bitwise and of g's bits
    with a mask of all ones or all zeros, branch-free and vectorised: a byte-wide pass and
    one pass over g, as fast as the product it replaces. ``out`` may be a strided view.
    """
    mask = keep.view(np.int8)
    np.negative(mask, out=mask)  # 1 -> -1: all bits set (sign-extended to g's width)
    ints = _SAME_WIDTH_INT[g.dtype.itemsize]
    np.bitwise_and(g.view(ints), mask, out=out.view(ints))


def scatter_add_arrays(xp, target, key, values) -> None:
    """target[key] += values, adding repeated indices (np.add.at / cupyx.scatter_add)."""
    if xp is np:
        rows = _row_index(target, key, values)
        if rows is not None:
            # np.add.at is several times faster on single elements than on rows (an embedding
            # backward: 73 vs 406 us); it adds in the same order, so the sums are the same.
            width = values.size // max(1, rows.size)
            flat = (rows.reshape(-1, 1) * width + np.arange(width)).reshape(-1)
            np.add.at(target.reshape(-1), flat, values.reshape(-1))
            return
        np.add.at(target, key, values)
    elif hasattr(xp, "scatter_add"):  # vmap's batched arrays: their own namespace
        xp.scatter_add(target, key, values)
    else:
        import cupyx

        cupyx.scatter_add(target, key, values)


def _row_index(target, key, values):
    """The non-negative row indices when ``key`` picks whole rows of a C-contiguous
    ``target`` with one in-bounds integer array and ``values`` has exactly that shape; else
    None (np.add.at then takes the general path, and reports bad indices itself)."""
    if not isinstance(key, tuple) or len(key) != 1 or target.ndim < 2 or not \
            target.flags.c_contiguous:
        return None
    idx = key[0]
    if not (isinstance(idx, np.ndarray) and idx.dtype.kind in "iu" and idx.size
            and isinstance(values, np.ndarray)
            and values.shape == idx.shape + target.shape[1:]):
        return None
    n = target.shape[0]
    if idx.min() < -n or idx.max() >= n:
        return None
    return np.where(idx < 0, idx + n, idx) if idx.dtype.kind == "i" else idx
