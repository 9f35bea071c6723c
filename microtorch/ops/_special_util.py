"""Shared pieces of the special functions (``ops/bessel``, ``polynomials``, ``normal``,
``entropy``, ``gamma``): PyTorch's dtype rules and errors for them, SciPy calls on the right
device, their operand promotion, and polynomial evaluation on the array module.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..backend import special_functions
from ._util import Tensor, is_scalar, promote_operands, xp_of


def kernel_error(kernel: str, x: Tensor, dt) -> NotImplementedError:
    """PyTorch's error of a kernel ``kernel`` (``"bessel_j0"``) without a loop for ``dt``:
    ``"bessel_j0_cpu" not implemented for 'Half'`` (a ``kernel`` ending in ``!``: its name
    as it is, without the device, as ``"digamma"``'s)."""
    name = _dtype.title(_dtype.from_numpy_dtype(dt))
    kernel = kernel[:-1] if kernel.endswith("!") else f"{kernel}_{x.device.type}"
    return NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')


def float_input(x: Tensor, kernel: str, half: bool = True):
    """``x``'s array in the dtype a unary special function computes in: integers and bool in
    the default float dtype, float16/bfloat16 only where PyTorch has a loop for them
    (``half``), never complex (PyTorch's NotImplementedError otherwise)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"special function {kernel}(): argument 'input' must be Tensor, not "
                        f"{type(x).__name__}")
    arr = x._data
    kind = _dtype.kind_of(arr.dtype)
    if kind == "c" or (kind == "f" and arr.dtype.itemsize == 2 and not half):
        raise kernel_error(kernel, x, arr.dtype)
    if kind != "f":
        arr = arr.astype(_dtype.get_default_dtype().np)
    return arr


def float_pair(input, other, kernel: str, integers: bool = True, half: bool = True):
    """``(x, y)``: two operands (one may be a number) as tensors of PyTorch's promoted dtype.
    ``integers``: an integer (or bool) result dtype becomes the default float, as in PyTorch's
    float ops (else PyTorch's error for it, as ``igamma``'s); ``half``: whether float16 and
    bfloat16 have a loop."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{kernel}(): expected at least one tensor argument")
    ref = input if isinstance(input, Tensor) else other
    for v in (input, other):
        if not isinstance(v, Tensor) and not is_scalar(v):
            raise TypeError(f"{kernel}(): expected a Tensor or a number, got "
                            f"{type(v).__name__}")
    _, _, dt = promote_operands(input, other)
    kind = _dtype.kind_of(dt)
    if kind == "c" or (kind == "f" and dt.itemsize == 2 and not half) or (
            kind != "f" and not integers):
        raise kernel_error(kernel, ref, dt)
    if kind != "f":
        dt = _dtype.get_default_dtype().np
    xp = xp_of(ref._data)

    def as_tensor(v):
        if isinstance(v, Tensor):
            return v if v._data.dtype == dt else v.to(_dtype.from_numpy_dtype(dt))
        return Tensor._make(xp.asarray(v, dtype=dt))

    return as_tensor(input), as_tensor(other)


def broadcast(*arrays):
    """``arrays`` as read-only views of their common shape (``broadcast_arrays``' writeable
    views are deprecated in NumPy)."""
    xp = xp_of(arrays[0])
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return tuple(xp.broadcast_to(a, shape) for a in arrays)


def _widened(arr):
    # SciPy and CuPy have no bfloat16 (and few float16) loops: 16-bit floats compute in
    # float32, as PyTorch's kernels do for them, and round back.
    return arr.astype(np.float32) if arr.dtype.itemsize == 2 else arr


def scipy_call(name: str, *arrays):
    """SciPy's special function ``name`` (``cupyx.scipy.special``'s on CUDA) of ``arrays``,
    in the dtype of the first array."""
    sp = special_functions(xp_of(arrays[0]))
    out = getattr(sp, name)(*(_widened(a) for a in arrays))
    return out.astype(arrays[0].dtype, copy=False)


def horner(z, coefficients, start=None):
    """``c[0] z^(k-1) + ... + c[k-1]`` by Horner's rule from 0, step by step as PyTorch's
    kernels evaluate it (``0 * z + c[0]`` first: NaN for an infinite ``z``), in ``z``'s
    dtype (the Python float coefficients round to it)."""
    acc = z * 0.0 if start is None else start
    for c in coefficients:
        acc = acc * z + c
    return acc
