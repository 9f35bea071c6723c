"""PyTorch's top-level utilities that are not ops: conversion (``asarray``, ``frombuffer``),
deprecated or removed functions (``range``, ``chain_matmul``, ``set_default_tensor_type``,
``matrix_rank`` & co), the warn-always flag, storage classes, eager control flow (``cond``,
``while_loop``) and a few aliases of classes defined elsewhere in microtorch.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import _dtype
from ._tensor import Tensor
from .amp.grad_scaler import GradScaler
from .cuda.memory import OutOfMemoryError
from .ops import legacy_storage as _legacy
from .ops.creation import arange, from_numpy, tensor
from .ops.dlpack import from_dlpack
from .ops.legacy_storage import TypedStorage
from .ops.storage import UntypedStorage

_WARN_ALWAYS = [False]


def set_warn_always(b: bool) -> None:
    """``torch.set_warn_always``: warnings PyTorch gives once per process are given every time
    (the flag is recorded; microtorch's once-only warnings consult it where they are)."""
    _WARN_ALWAYS[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """``torch.is_warn_always_enabled``."""
    return _WARN_ALWAYS[0]


def set_flush_denormal(mode: bool) -> bool:
    """``torch.set_flush_denormal``: NumPy gives no control of the CPU's flush-to-zero mode,
    so this returns False (PyTorch's answer where the mode is unsupported) and changes
    nothing."""
    return False


def typename(obj, /) -> str:
    """``torch.typename``: ``torch.FloatTensor`` for a tensor, else ``module.QualName``."""
    if isinstance(obj, Tensor):
        return obj.type().replace("microtorch.", "torch.")
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = type(obj).__module__ or ""
        qualname = type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _user_warning(message: str, where: str) -> None:
    warnings.warn(f"{message} (Triggered internally at {where}.)", UserWarning, stacklevel=3)


def set_default_tensor_type(t, /) -> None:
    """``torch.set_default_tensor_type`` (deprecated): the default dtype from a legacy tensor
    type (``torch.DoubleTensor`` or its name), and the CUDA device for a ``cuda`` one."""
    _user_warning("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  "/__w/pytorch/pytorch/torch/csrc/tensor/python_tensor.cpp:434")
    from .backend import set_default_device
    from .ops import legacy_tensors
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    short = name.rsplit(".", 1)[-1]
    cls = getattr(legacy_tensors, short, None)
    if cls is None:
        raise TypeError(f"invalid type: '{name}'")
    if not cls.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dtype.set_default_dtype(cls.dtype)
    set_default_device("cuda" if ".cuda." in name else None)


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None,  # noqa: A001
          device=None, requires_grad: bool = False) -> Tensor:
    """``torch.range`` (deprecated): ``start`` to ``end`` *inclusive* by ``step``, of the
    default floating dtype unless ``dtype`` is given."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = int(math.floor((float(end) - float(start)) / float(step))) + 1
    dt = dtype or _dtype.get_default_dtype()
    result = (arange(n, dtype=_dtype.float64) * step + start).to(dt)
    if device is not None:
        result = result.to(device)
    if out is not None:
        return out.resize_(result.shape).copy_(result)
    return result.requires_grad_(requires_grad) if requires_grad else result


def chain_matmul(*matrices, out=None) -> Tensor:
    """``torch.chain_matmul`` (deprecated): ``linalg.multi_dot`` of the arguments."""
    from .linalg import multi_dot
    _user_warning("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters",
                  "/__w/pytorch/pytorch/aten/src/ATen/native/LinearAlgebra.cpp:1102")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    result = matrices[0].clone() if len(matrices) == 1 else multi_dot(list(matrices))
    return result if out is None else out.resize_(result.shape).copy_(result)


# -- removed functions: PyTorch's errors --------------------------------------------------------
_REMOVED = "This function was deprecated since version 1.9 and is now removed."
_REMOVED_HINTS = {
    "matrix_rank": " Please use the `torch.linalg.matrix_rank` function instead. The parameter "
    "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
    "lstsq": " `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg."
    "lstsq` has reversed arguments and does not return the QR decomposition in the returned "
    "tuple (although it returns other information about the problem).\n\nTo get the QR "
    "decomposition consider using `torch.linalg.qr`.\n\nThe returned solution in `torch.lstsq` "
    "stored the residuals of the solution in the last m - n columns of the returned value "
    "whenever m > n. In torch.linalg.lstsq, the residuals are in the field 'residuals' of the "
    "returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, A)."
    "solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution",
    "solve": " `torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg."
    "solve` has its arguments reversed and does not return the LU factorization.\n\nTo get the "
    "LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or `torch."
    "lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = torch.linalg."
    "solve(A, B)",
    "eig": " `torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather "
    "than real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced "
    "with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True)"
    " should be replaced with:\nL_complex, V_complex = torch.linalg.eig(A)",
    "symeig": " The default behavior has changed from using the upper triangular portion of the "
    "matrix by default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper="
    "upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')"
    "\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = "
    "torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
}


def _removed(name: str, sep: str = "\n"):
    hint = _REMOVED_HINTS[name]
    message = _REMOVED + (sep + hint[1:] if sep == "\n" else hint)

    def removed(*args, **kwargs):
        raise RuntimeError(message)
    removed.__name__ = removed.__qualname__ = name
    removed.__doc__ = f"``torch.{name}``: removed in PyTorch 1.9; raises PyTorch's error."
    return removed


matrix_rank = _removed("matrix_rank")
lstsq, solve, eig, symeig = (_removed(n, " ") for n in ("lstsq", "solve", "eig", "symeig"))


# -- conversion ---------------------------------------------------------------------------------
def _alias_error(src: _dtype.dtype, dst: _dtype.dtype) -> ValueError:
    return ValueError(f"can't alias tensor with dtype '{_dtype.title(src)}' into dtype "
                      f"'{_dtype.title(dst)}'.")


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """``torch.asarray``: ``obj`` (a tensor, NumPy array, DLPack object, buffer, sequence or
    scalar) as a tensor, sharing its memory when ``dtype`` and ``device`` allow and ``copy``
    is not True; ``copy=False`` raises where sharing is impossible."""
    if isinstance(obj, Tensor):
        source = obj
    elif isinstance(obj, np.ndarray):
        source = from_numpy(obj) if obj.dtype.kind in "biufc" and obj.dtype != np.uint64 \
            else None
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, np.generic):
        source = from_dlpack(obj)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        source = frombuffer(obj, dtype=dtype or _dtype.get_default_dtype())
    else:
        source = None
    if source is None:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)
    result = source
    if dtype is not None and dtype is not result.dtype:
        if copy is False:
            raise _alias_error(result.dtype, dtype)
        result = result.to(dtype)
    if device is not None and result.device != _device(device):
        if copy is False:
            raise ValueError(f"can't alias tensor from device '{result.device}' to "
                             f"'{_device(device)}'.")
        result = result.to(device)
    if copy and result is source:
        result = source.clone()
    if result is not source:
        result = result.detach()
    if requires_grad:
        result.requires_grad_(True)
    return result


def _device(device):
    from .backend.device import device as device_cls
    d = device_cls(device)
    return device_cls("cuda", 0) if d.type == "cuda" and d.index is None else d


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """``torch.frombuffer``: a 1-d tensor sharing the memory of a buffer-protocol object."""
    view = memoryview(buffer)
    length = view.nbytes
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    item = dtype.itemsize
    if count < 0 and (length - offset) % item:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                         f"bytes) must be a multiple of element size ({item})")
    if count > 0 and count * item > length - offset:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    arr = np.frombuffer(view, dtype=dtype.np, count=count, offset=offset)
    if not arr.flags.writeable:
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor. You may want to copy "
                      "the buffer to protect its data or make it writable before converting it "
                      "to a tensor. This type of warning will be suppressed for the rest of "
                      "this program.", UserWarning, stacklevel=2)
        arr = np.ndarray(arr.shape, arr.dtype, np.frombuffer(bytearray(0), np.uint8)
                         if not arr.size else arr.copy())
    result = from_numpy(arr)
    return result.requires_grad_(True) if requires_grad else result


def is_storage(obj) -> bool:
    """``torch.is_storage``: True for typed and untyped storages."""
    return isinstance(obj, (TypedStorage, UntypedStorage))


# -- eager control flow -------------------------------------------------------------------------
def cond(pred, true_fn, false_fn, operands=()):
    """``torch.cond`` in eager mode: ``true_fn(*operands)`` if ``pred`` else
    ``false_fn(*operands)``; ``pred`` is a bool, number or one-element tensor."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"{pred}.")
        pred = bool(pred.item())
    elif not isinstance(pred, (bool, int, float)):
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    return (true_fn if pred else false_fn)(*operands)


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        for x in tree:
            yield from _leaves(x)
    elif isinstance(tree, dict):
        for x in tree.values():
            yield from _leaves(x)
    else:
        yield tree


def while_loop(cond_fn, body_fn, carried_inputs):
    """``torch.while_loop`` in eager mode: ``carried_inputs = body_fn(*carried_inputs)`` while
    ``cond_fn(*carried_inputs)``; returns the final carried values (a tuple)."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not all(isinstance(t, (Tensor, int)) for t in _leaves(carried_inputs)):
        raise RuntimeError("Expect carried_inputs to be a tuple of possibly nested "
                           "dict/list/tuple that onlyconsists of tensor or int leaves, but got "
                           f"{carried_inputs}.")
    carried = tuple(carried_inputs)
    while bool(cond_fn(*carried)):
        out = body_fn(*carried)
        carried = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return carried


class AcceleratorError(RuntimeError):
    """``torch.AcceleratorError``: an error reported by an accelerator runtime."""


# The legacy storage classes: one per dtype, the classes ``Tensor.storage_type()`` returns.
_STORAGES = {f"{_legacy._storage_name(dt)}": _legacy.storage_class(dt) for dt in (
    _dtype.float32, _dtype.float64, _dtype.float16, _dtype.bfloat16, _dtype.int64,
    _dtype.int32, _dtype.int16, _dtype.int8, _dtype.uint8, _dtype.bool_, _dtype.complex64,
    _dtype.complex128)}
globals().update(_STORAGES)
Storage = _STORAGES["FloatStorage"]

__all__ = [
    "set_warn_always", "is_warn_always_enabled", "set_flush_denormal", "typename",
    "set_default_tensor_type", "range", "chain_matmul", "matrix_rank", "lstsq", "solve", "eig",
    "symeig", "asarray", "frombuffer", "is_storage", "cond", "while_loop", "AcceleratorError",
    "GradScaler", "OutOfMemoryError", "TypedStorage", "UntypedStorage", "Storage", *_STORAGES,
]
