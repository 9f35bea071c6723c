"""Complex numbers: parts (``real``, ``imag``, ``angle``), ``conj``, ``torch.complex``,
``view_as_real`` / ``view_as_complex`` and ``polar``.

Gradients follow PyTorch's convention for complex inputs: the gradient of a real loss L with
respect to z = x + iy is dL/dx + i dL/dy (the conjugate Wirtinger derivative times two), so a
holomorphic op's backward multiplies by the *conjugate* of its derivative.
"""

from __future__ import annotations

import builtins
import math

from .. import _dtype
from ..autograd.function import Function, namespace
from ..autograd.views import as_view
from ._util import Tensor, reduce_grad, xp_of

__all__ = ["real", "imag", "conj", "conj_physical", "angle", "complex", "polar",
           "view_as_real", "view_as_complex", "is_conj", "resolve_conj"]


def is_complex_value(x) -> bool:
    """True for a complex tensor, array or number."""
    if isinstance(x, Tensor):
        return x._data.dtype.kind == "c"
    return isinstance(x, builtins.complex) or getattr(getattr(x, "dtype", None), "kind", "") == "c"


def conj_of(x):
    """``x``'s conjugate when it is complex (array, tensor or number), else ``x`` itself:
    what a backward formula multiplies by under PyTorch's convention."""
    if type(x) is float or type(x) is int:  # (a number operand: the common case, first)
        return x
    if isinstance(x, Tensor):
        return conj(x) if x._data.dtype.kind == "c" else x
    if isinstance(x, builtins.complex):
        return x.conjugate()
    if getattr(getattr(x, "dtype", None), "kind", "") == "c":
        return x.conj()
    return x


def _complex_like(grad: Tensor, x_dtype) -> Tensor:
    """A real gradient as a complex tensor of the input's dtype."""
    return grad.to(_dtype.from_numpy_dtype(x_dtype))


class Real(Function):
    torch_name = "RealBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.x_dtype = x._data.dtype
        return x._data.real

    @staticmethod
    def backward(ctx, grad):
        return _complex_like(grad, ctx.x_dtype)


class Imag(Function):
    torch_name = "ImagBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.x_dtype = x._data.dtype
        return x._data.imag

    @staticmethod
    def backward(ctx, grad):
        return _complex_like(grad, ctx.x_dtype) * 1j  # y's gradient is the imaginary part


def real(input: Tensor) -> Tensor:
    """The real parts (a view); a real tensor itself."""
    if input._data.dtype.kind != "c":
        return input
    return as_view(Real.apply(input), input)


def imag(input: Tensor) -> Tensor:
    """The imaginary parts (a view); complex tensors only, as in PyTorch."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return as_view(Imag.apply(input), input)


class Conj(Function):
    torch_name = "ConjBackward0"

    @staticmethod
    def forward(ctx, x):
        return xp_of(x._data).conj(x._data)

    @staticmethod
    def backward(ctx, grad):
        return conj(grad)


def conj(input: Tensor) -> Tensor:
    """The complex conjugate (a copy here: microtorch has no lazy conjugate bit); a real
    tensor itself."""
    if input._data.dtype.kind != "c":
        return input
    return Conj.apply(input)


def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate, materialised (the same as ``conj`` in microtorch)."""
    return conj(input)


def is_conj(input: Tensor) -> bool:
    """False: microtorch conjugates eagerly, so no tensor carries PyTorch's conjugate bit."""
    return False


def resolve_conj(input: Tensor) -> Tensor:
    """``input`` itself (no tensor has a pending lazy conjugation here)."""
    return input


class Angle(Function):
    torch_name = "AngleBackward0"

    @staticmethod
    def forward(ctx, x):
        arr = x._data
        ctx.save_for_backward(x)
        if arr.dtype.kind in "biu":
            arr = arr.astype(_dtype.get_default_dtype().np)
        xp = xp_of(arr)
        if arr.dtype.kind == "c":
            return xp.angle(arr)
        # PyTorch's real kernel: pi where x < 0, else 0, NaN kept; NumPy's atan2(0, x) would
        # give pi for -0.0 too (and is float64)
        out = xp.where(arr < 0, arr.dtype.type(math.pi), arr.dtype.type(0))
        return xp.where(xp.isnan(arr), arr, out)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if x._data.dtype.kind != "c":  # constant (0 or pi) for real inputs: zeros, not g * 0
            return namespace(grad).zeros_like(grad)
        # d(atan2(y, x)) = (-y dx + x dy) / |z|^2, i.e. the gradient i z / |z|^2 (0 at z = 0)
        sq = x.abs() ** 2
        safe = sq.where(sq != 0, 1.0)
        return (x * (grad / safe)).where(sq != 0, 0.0) * 1j


def angle(input: Tensor) -> Tensor:
    """The argument (phase) of each element, in radians; 0 or pi for real tensors."""
    return Angle.apply(input)


class Complex(Function):
    torch_name = "ComplexBackward0"

    @staticmethod
    def forward(ctx, re, im):
        a, b = re._data, im._data
        out_dtype = _dtype.from_numpy_dtype(a.dtype).to_complex().np
        xp = xp_of(a)
        out = xp.empty(xp.broadcast_shapes(a.shape, b.shape), out_dtype)
        out.real[...] = a  # (views of the parts; a + 1j * b would turn an inf part into NaN)
        out.imag[...] = b
        ctx.shapes = (a.shape, a.dtype), (b.shape, b.dtype)
        return out

    @staticmethod
    def backward(ctx, grad):
        (sa, da), (sb, db) = ctx.shapes
        return (reduce_grad(real(grad).clone(), sa, da),
                reduce_grad(imag(grad).clone(), sb, db))


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001
    """The complex tensor ``real + i imag`` (float32 parts give complex64, float64 complex128)."""
    for name, t in (("real", real), ("imag", imag)):
        if not isinstance(t, Tensor):
            raise TypeError(f"complex(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if real._data.dtype != imag._data.dtype:
        raise RuntimeError(f"Expected object of scalar type {_dtype.title(real.dtype)} but got "
                           f"scalar type {_dtype.title(imag.dtype)} for second argument")
    if real.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_dtype.title(real.dtype)} and {_dtype.title(imag.dtype)}")
    return Complex.apply(real, imag)


def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002
    """The complex tensor with magnitudes ``abs`` and phases ``angle``."""
    return complex(abs * angle.cos(), abs * angle.sin())


class ViewAsReal(Function):
    torch_name = "ViewAsRealBackward0"

    @staticmethod
    def forward(ctx, x):
        arr = x._data
        parts = arr.real.dtype
        if arr.ndim and arr.flags.c_contiguous:
            return arr.view(parts).reshape(arr.shape + (2,))
        # A view in every layout (writes reach the complex tensor), 0-d included: a new last
        # axis of one element reinterpreted as two parts (the array libraries refuse to change
        # the itemsize of a 0-d array or of a strided last axis).
        return arr[..., None].view(parts)

    @staticmethod
    def backward(ctx, grad):
        return view_as_complex(grad.contiguous())


class ViewAsComplex(Function):
    torch_name = "ViewAsComplexBackward0"

    @staticmethod
    def forward(ctx, x):
        arr = x._data
        return arr.view(_dtype.from_numpy_dtype(arr.dtype).to_complex().np)[..., 0]

    @staticmethod
    def backward(ctx, grad):
        return view_as_real(grad)


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor as real numbers with a last dimension of size 2 (real, imaginary)."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return as_view(ViewAsReal.apply(input), input)


def view_as_complex(input: Tensor) -> Tensor:
    """A float32/float64 tensor whose last dimension has size 2 as complex numbers: a view, so
    PyTorch's stride rules (last stride 1, the others and the storage offset even)."""
    from .storage import storage_offset

    arr = input._data
    if input.dtype not in (_dtype.float32, _dtype.float64):
        if input.dtype == _dtype.float16:  # (PyTorch's complex32: microtorch has none)
            raise RuntimeError("view_as_complex: float16 would give complex32, which "
                               "microtorch does not have")
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {_dtype.title(input.dtype)}")
    if arr.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if arr.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if storage_offset(input) % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return as_view(ViewAsComplex.apply(input), input)


def install(cls) -> None:
    """``Tensor.real`` / ``Tensor.imag`` (settable, as in PyTorch) and the complex methods."""

    def _set_part(part):
        def setter(self, value) -> None:
            target = real(self) if part == "real" else imag(self)
            target.copy_(value if isinstance(value, Tensor) else
                         Tensor._make(xp_of(target._data).asarray(value, target._data.dtype)))

        return setter

    cls.real = property(real, _set_part("real"), doc="The real parts (a view).")
    cls.imag = property(imag, _set_part("imag"), doc="The imaginary parts (a view).")
    for fn in (conj, conj_physical, angle, is_conj, resolve_conj):
        setattr(cls, fn.__name__, fn)
