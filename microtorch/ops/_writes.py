"""In-place writes: the in-place forms of ops (``add_``, ``zero_``, ``copy_``, ...), ``x[key] =
value``, their argument checks and PyTorch's warning for writes into expanded tensors; each
check raises before anything is written. Also ``fill``, the out-of-place ``fill_`` (its node
shared with ``fill_``'s)."""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from .._layout import SPARSE_DATA
from ..autograd import forward_mode, saved, views
from ..autograd._profiler_record import PROCEED as _PROCEED
from ..autograd._profiler_record import inplace as _profiler_inplace
from ..autograd._profiler_record import state as _profiling
from ..autograd.function import Function, named, namespace
from ..autograd.grad_mode import INFERENCE_INPLACE, in_inference_mode, no_grad, recording
from ..autograd.node import broadcast_message
from ..backend import aten_arith
from . import indexing
from ._util import (
    Tensor,
    add_alpha,
    assert_no_internal_overlap,
    check_cast,
    checked_scalar,
    has_internal_overlap,
    is_scalar,
    promote_operands,
    xp_of,
)
from .elementwise import check_sub
from .indexing import is_basic as _is_basic
from .shape import expand, masked_fill


def warn_expanded(op: str, example: str) -> None:
    """PyTorch's deprecation warning for ``op`` on a tensor whose elements share memory."""
    warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor "
                  f"before performing this operation. This also applies to advanced indexing "
                  f"e.g. {example}", UserWarning, stacklevel=3)


def check_copy_source(self: Tensor, src) -> None:
    """PyTorch's errors for a ``copy_`` source that is no tensor or does not broadcast to
    self's shape (checked before anything is written)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    target, given = self._data.shape, src._data.shape
    if given != target:
        try:
            wide = np.broadcast_shapes(target, given)
        except ValueError:
            raise RuntimeError(broadcast_message((self, src))) from None
        if wide != target:
            raise RuntimeError(f"output with shape {list(target)} doesn't match the broadcast "
                               f"shape {list(wide)}")


def check_setitem_value(self: Tensor, arr_key: tuple, value) -> None:
    """PyTorch's errors for ``self[key] = value`` with a value that is neither a tensor nor a
    number, or (basic indexing) a tensor that does not broadcast to the indexed region."""
    if not isinstance(value, Tensor):
        if not is_scalar(value):
            kind = type(value)
            name = kind.__name__ if kind.__module__ == "builtins" else \
                f"{kind.__module__.split('.')[0]}.{kind.__name__}"
            raise TypeError(f"can't assign a {name} to a {self.type()}")
        return
    if not _is_basic(arr_key):
        return  # advanced indexing: NumPy's check, turned into RuntimeError by the caller
    region = self._data[arr_key].shape
    given = value._data.shape
    while len(given) > len(region) and given[0] == 1:  # leading 1s are dropped, as in PyTorch
        given = given[1:]
    if given != region:
        with no_grad():
            expand(value.reshape(given), region)  # raises PyTorch's expand error


# -- the in-place forms of ops, and __setitem__ ------------------------------------------------
def _check_inplace(self: Tensor, *others) -> bool:
    """Raise for in-place ops autograd cannot record; True when the op must be recorded (or
    carries forward-mode tangents: it then runs out of place and is written back)."""
    if self._inference and not in_inference_mode():
        raise RuntimeError(INFERENCE_INPLACE)
    dual = bool(forward_mode.state.levels) and forward_mode.touches((self, *others), {})
    if not recording():
        return dual
    if self._base is not None:
        return views.check_inplace(self, others) or dual
    recorded = self.requires_grad or builtins.any(
        isinstance(o, Tensor) and o.requires_grad for o in others)
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    return recorded or dual


def _write(self: Tensor, result: Tensor, fill: bool = False) -> Tensor:
    """Store an out-of-place result into self's storage and take over its graph node (on a
    view: record the write on its base, ``autograd.views.rebase``). Only a ``fill`` (one
    value everywhere) may write into an expanded tensor, as in PyTorch."""
    res = result._data
    if type(res) in SPARSE_DATA or type(self._data) in SPARSE_DATA:
        from .sparse_dispatch import write_sparse

        return write_sparse(self, result)
    check_cast(res.dtype, self._data.dtype)
    if not fill:
        assert_no_internal_overlap(self._data)
    if res.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(res.shape)}")
    node = result.grad_fn
    geom = None
    if node is not None and self._base is not None:
        geom = views.Strided.of(self._data, self._base._data)  # raises before any write
    if saved.writes.count:
        saved.before_write(self)
    self._data[...] = res
    self._vbox[0] += 1
    if forward_mode.state.levels and (self._fw_tangents or result._fw_tangents or (
            self._base is not None and self._base._fw_tangents)):
        forward_mode.assign_tangents(self, result)
        if self._base is not None:
            forward_mode.write_through(self)
    if geom is not None:
        views.rebase(self, geom, node)
    elif node is not None:
        views.set_node(self, node)
    return self


def _frozen(self: Tensor) -> Tensor:
    """A copy of self at the same place in the graph: what the recorded op saves for backward,
    so overwriting self afterwards does not invalidate it (PyTorch saves the original too)."""
    frozen = Tensor._make(self._data.copy(), self.requires_grad, self.grad_fn)
    forward_mode.copy_tangents(self, frozen)
    return frozen


def _inplace(op):
    """The in-place form of an out-of-place op: compute, then write into self."""
    event = "aten::" + op.__name__ + "_"

    def method(self: Tensor, *args, **kwargs) -> Tensor:
        if _profiling.active and (out := _profiler_inplace(
                event, method, (self, *args), kwargs)) is not _PROCEED:
            return out
        if _check_inplace(self, *args):
            return _write(self, op(_frozen(self), *args, **kwargs))
        with no_grad():
            return _write(self, op(self, *args, **kwargs))

    method.__name__ = op.__name__ + "_"
    method.__doc__ = f"In-place {op.__name__}."
    return method


def _ufunc_inplace(name, op):
    """An in-place arithmetic op that writes straight into self's buffer when not recording."""
    event = "aten::" + op.__name__ + "_"
    with_alpha = name != "multiply"  # (PyTorch's add_/sub_ take alpha, mul_ does not)
    is_sub = name == "subtract"

    def method(self: Tensor, other, *, alpha=1) -> Tensor:
        if is_sub:  # (the fast path below skips Sub: its bool check first, as PyTorch's)
            check_sub(self, other)
        if _profiling.active and (out := _profiler_inplace(
                event, method, (self, other), {"alpha": alpha} if with_alpha else {}
        )) is not _PROCEED:
            return out
        if _check_inplace(self, other):
            kwargs = {"alpha": alpha} if alpha.__class__ is not int or alpha != 1 else {}
            return _write(self, op(_frozen(self), other, **kwargs))
        arr = self._data
        if (type(arr) is not np.ndarray or isinstance(other, Tensor) and type(other._data)
                is not np.ndarray) and _sparse_operand(self, other):
            if name in ("add", "subtract") and type(arr) not in SPARSE_DATA:
                from .sparse_dispatch import add_into  # dense += sparse: only its entries

                return add_into(self, other, -alpha if name == "subtract" else alpha)
            with no_grad():  # (a sparse kernel's out-of-place result, stored into self)
                return _write(self, op(self, other, **({"alpha": alpha} if alpha.__class__ is not
                                                       int or alpha != 1 else {})))
        _, xb, dt = promote_operands(self, other)
        check_cast(dt, arr.dtype)
        assert_no_internal_overlap(arr)
        shape_b = getattr(xb, "shape", ())
        if shape_b and shape_b != arr.shape:  # checked before the write (NumPy's may be partial)
            try:
                wide = np.broadcast_shapes(arr.shape, shape_b)
            except ValueError:
                raise RuntimeError(broadcast_message((self, other))) from None
            if wide != arr.shape:
                raise RuntimeError(f"output with shape {list(arr.shape)} doesn't match the "
                                   f"broadcast shape {list(wide)}")
        fused, ufunc = False, name
        if alpha.__class__ is not int or alpha != 1:  # (True == 1 == 1.0: checked all the same)
            alpha = add_alpha(alpha, dt, name == "subtract")  # (sub: add with -alpha)
            # (one rounding where PyTorch's kernel fuses: backend.aten_arith)
            fused = arr.dtype == dt and aten_arith.fuses(arr, xb)
            if not fused:
                ufunc = "add"
                xb = alpha * (xb if hasattr(xb, "dtype") else np.asarray(xb).astype(dt)[()])
        if saved.writes.count:
            saved.before_write(self)
        if fused:
            aten_arith.add_scaled_(arr, xb, alpha)
        else:
            getattr(xp_of(arr), ufunc)(arr, xb, out=arr, casting="unsafe")
        self._vbox[0] += 1
        return self

    method.__name__ = op.__name__ + "_"
    method.__doc__ = f"In-place {op.__name__}."
    return method


_masked_fill_inplace = _inplace(masked_fill)


def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    """In-place masked_fill (on an expanded tensor it warns and writes only the masked
    elements, as PyTorch does)."""
    if not has_internal_overlap(self._data):
        return _masked_fill_inplace(self, mask, value)
    warn_expanded("masked_fill_", "tensor[mask] = scalar")
    if _check_inplace(self, mask, value):
        return _write(self, masked_fill(_frozen(self), mask, value), fill=True)
    masked_fill(self, mask, value)  # the argument checks
    m = xp_of(self._data).broadcast_to(mask._data, self._data.shape)
    if saved.writes.count:
        saved.before_write(self)
    self._data[m] = value._data if isinstance(value, Tensor) else value
    self._vbox[0] += 1
    return self


def _sparse_operand(self: Tensor, other) -> bool:
    return type(self._data) in SPARSE_DATA or (isinstance(other, Tensor)
                                               and type(other._data) in SPARSE_DATA)


class _Fill(Function):
    """What ``zero_``/``fill_`` write into a tensor that autograd records: ``value`` (a number
    or a 0-d tensor) everywhere in ``x``'s shape and dtype. Its gradient for ``x`` is zeros,
    not ``g * 0`` (an infinite or NaN g gives 0, as PyTorch's), and for a tensor value the sum
    of g; PyTorch's node names."""

    @staticmethod
    def forward(ctx, x, value):
        arr = x._data
        tensor_value = isinstance(value, Tensor)
        ctx.torch_name = ("FillBackward3" if tensor_value else
                          "ZeroBackward0" if value == 0 else "FillBackward2")
        ctx.value = value if tensor_value else None
        fill = value._data.astype(arr.dtype) if tensor_value else value
        return xp_of(arr).full(arr.shape, fill, dtype=arr.dtype)

    @staticmethod
    def backward(ctx, grad):
        zeros = namespace(grad).zeros_like(grad)
        if ctx.value is None:
            return zeros, None
        return zeros, grad.sum().reshape(ctx.value.shape).to(ctx.value.dtype)


def fill(input: Tensor, value) -> Tensor:
    """A new tensor of ``input``'s shape and dtype holding ``value`` everywhere (a number,
    converted as PyTorch converts a Scalar, or a 0-d tensor, which then gets the sum of the
    gradient): the out-of-place ``fill_``."""
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value._data.ndim} dimensions.")
        checked_scalar(value.item(), input._data.dtype)
        return named(_Fill.apply(input, value), "FillBackward1", input, value)
    if not is_scalar(value):
        raise TypeError(f"fill() received an invalid combination of arguments - got (Tensor, "
                        f"{type(value).__name__}), but expected one of:\n * (Tensor input, "
                        f"Tensor value)\n * (Tensor input, Number value)\n")
    value = checked_scalar(value, input._data.dtype)
    return named(_Fill.apply(input, value), "FillBackward0", input)


def zero_(self: Tensor) -> Tensor:
    """Fill with zeros in place."""
    if _profiling.active and (out := _profiler_inplace(
            "aten::zero_", zero_, (self,), {})) is not _PROCEED:
        return out
    if type(self._data) in SPARSE_DATA:
        _check_inplace(self)
        from .sparse_dispatch import zero_sparse

        return zero_sparse(self)
    if _check_inplace(self) and (self.requires_grad or self._fw_tangents):
        return _write(self, _Fill.apply(self, 0), fill=True)
    if saved.writes.count:
        saved.before_write(self)
    self._backend.fill_zero(self._data)
    self._vbox[0] += 1
    return self


def fill_(self: Tensor, value) -> Tensor:
    """Fill with ``value`` in place."""
    if type(self._data) in SPARSE_DATA:
        from .sparse_dispatch import unsupported

        raise unsupported("fill_.Scalar", (self,))
    if _profiling.active and (out := _profiler_inplace(
            "aten::fill_", fill_, (self, value), {})) is not _PROCEED:
        return out
    if is_scalar(value) and value == 0:
        return zero_(self)
    if isinstance(value, Tensor):  # PyTorch's fill_ with a tensor is a copy: no overlaps
        assert_no_internal_overlap(self._data)
    if _check_inplace(self, value) and (self.requires_grad or isinstance(value, Tensor)
                                        or self._fw_tangents):
        return _write(self, _Fill.apply(self, value), fill=True)
    if saved.writes.count:
        saved.before_write(self)
    self._data.fill(value.item() if isinstance(value, Tensor) else value)
    self._vbox[0] += 1
    return self


def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, converted, possibly from another device) into self."""
    if _profiling.active and (out := _profiler_inplace(
            "aten::copy_", copy_, (self, src), {"non_blocking": non_blocking})) is not _PROCEED:
        return out
    check_copy_source(self, src)
    assert_no_internal_overlap(self._data)
    if _check_inplace(self, src):
        moved = src.to(self.device, self.dtype) + self * 0
        return _write(self, moved.expand(self.shape) if moved.shape != self.shape else moved)
    arr = src._data
    if src.device != self.device:
        arr = self._backend.asarray(src._backend.to_numpy(arr))
    if saved.writes.count:
        saved.before_write(self)
    self._data[...] = arr
    self._vbox[0] += 1
    return self


def _inplace_view(op):
    """``t_``, ``transpose_``, ``squeeze_``...: self becomes the view ``op`` makes of it (same
    storage, new shape and strides). Under autograd on a tensor that requires grad this would
    have to rewrite self's graph node in place, which microtorch does not do: it says so."""

    def method(self: Tensor, *args, **kwargs) -> Tensor:
        if recording() and self.requires_grad:
            raise RuntimeError(f"{op.__name__}_() on a tensor that requires grad is not "
                               f"supported by microtorch: use the out-of-place "
                               f"{op.__name__}() (x = x.{op.__name__}(...))")
        with no_grad():
            self._data = op(self, *args, **kwargs)._data
        return self

    method.__name__ = op.__name__ + "_"
    method.__doc__ = f"In-place {op.__name__}: self becomes that view of its storage."
    return method


def setitem(self: Tensor, key, value) -> None:
    """``self[key] = value`` (recorded as an IndexPut when gradients are involved)."""
    arr_key = indexing.index_key(key, self._data.ndim)
    indexing.check_device_index(self._data, arr_key)
    if isinstance(value, Tensor) and value.device != self.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {self.device} and {value.device}!")
    if not _is_basic(arr_key):
        indexing.check_masks(self._data.shape, arr_key)
    check_setitem_value(self, arr_key, value)
    if has_internal_overlap(self._data):
        if _is_basic(arr_key):
            # PyTorch writes into the indexed region (a view): allowed when that region has
            # no overlapping elements (``expanded[0] = v``), refused otherwise.
            region = indexing.getitem(self, key)
            assert_no_internal_overlap(region._data)
            region.copy_(value) if isinstance(value, Tensor) else region.fill_(value)
            return
        warn_expanded("index_put_", "tensor[indices] = tensor")
    try:
        if _check_inplace(self, value):
            _write(self, indexing.IndexPut.apply(self, arr_key, value))
            return
        if saved.writes.count:
            saved.before_write(self)
        dest, k = indexing.target(self._data, arr_key)
        dest[k] = value._data if isinstance(value, Tensor) else value
    except ValueError as exc:  # NumPy checks the shapes before it writes anything
        raise RuntimeError(str(exc).replace("value array", "value tensor")) from None
    self._vbox[0] += 1
