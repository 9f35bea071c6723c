"""Dtypes: thin named wrappers over NumPy dtypes, printed and compared like PyTorch's.

``bfloat16`` is NumPy's through the ``ml_dtypes`` package (the one JAX and TensorFlow use); its
NumPy kind is ``"V"``, so code that asks "is this floating?" of an array asks ``kind_of``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

BOOL, INTEGRAL, FLOATING, COMPLEX = range(4)  # categories, in the order of type promotion


class dtype:  # noqa: N801 - mirrors torch.dtype
    """A tensor element type (``microtorch.float32`` ...), backed by a NumPy dtype."""

    __module__ = "microtorch"  # its public name, as PyTorch's
    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize",
                 "_category")

    def __init__(self, name: str, np_dtype, category: int, signed: bool = True) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self._category = category
        self.is_floating_point = category == FLOATING
        self.is_complex = category == COMPLEX
        self.is_signed = signed
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"microtorch.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self) -> dtype:
        """The real dtype of a complex dtype's parts; any other dtype itself."""
        return _COMPLEX_TO_REAL.get(self, self)

    def to_complex(self) -> dtype:
        """The complex dtype whose parts have this dtype (complex itself unchanged)."""
        if self.is_complex:
            return self
        try:
            return _REAL_TO_COMPLEX[self]
        except KeyError:
            raise RuntimeError(f"Unknown Complex ScalarType for {_TITLE[self.name]}") from None


bool_ = dtype("bool", np.bool_, BOOL, signed=False)
uint8 = dtype("uint8", np.uint8, INTEGRAL, signed=False)
int8 = dtype("int8", np.int8, INTEGRAL)
int16 = dtype("int16", np.int16, INTEGRAL)
int32 = dtype("int32", np.int32, INTEGRAL)
int64 = dtype("int64", np.int64, INTEGRAL)
float16 = dtype("float16", np.float16, FLOATING)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, FLOATING)
float32 = dtype("float32", np.float32, FLOATING)
float64 = dtype("float64", np.float64, FLOATING)
complex64 = dtype("complex64", np.complex64, COMPLEX)
complex128 = dtype("complex128", np.complex128, COMPLEX)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64,
       complex128)
_FROM_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64,
                cfloat=complex64, cdouble=complex128)
_COMPLEX_TO_REAL = {complex64: float32, complex128: float64}
# (PyTorch maps float16 to complex32, which microtorch does not have)
_REAL_TO_COMPLEX = {bfloat16: complex64, float32: complex64, float64: complex128}
_TITLE = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "float16": "Half", "float32": "Float", "float64": "Double", "bool": "Bool",
          "bfloat16": "BFloat16", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_BF16 = bfloat16.np
# the 16-bit floats, which PyTorch's CPU kernels accumulate in float32
REDUCED_FLOATS = (float16.np, bfloat16.np)

_default_float = float32


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


def title(d: dtype) -> str:
    """PyTorch's scalar type name of ``d`` (``Float``, ``Long``, ``ComplexFloat`` ...)."""
    return _TITLE[d.name]


def parse_tensor_type(name: str) -> tuple[str | None, dtype]:
    """(device or None, dtype) of a legacy type name: ``"torch.FloatTensor"`` is (None,
    float32), ``"torch.cuda.LongTensor"`` ("cuda", int64); ``microtorch.`` works too."""
    prefix, _, rest = name.partition(".")
    device = None
    if rest.startswith("cuda."):
        device, rest = "cuda", rest[len("cuda."):]
    by_title = {t: _BY_NAME[n] for n, t in _TITLE.items()}
    if prefix not in ("torch", "microtorch") or not rest.endswith("Tensor") or \
            rest[:-len("Tensor")] not in by_title:
        raise ValueError(f"invalid type: {name!r}")
    return device, by_title[rest[:-len("Tensor")]]


def kind_of(np_dtype) -> str:
    """NumPy's kind letter of an array dtype, with ``"f"`` for bfloat16 (NumPy says ``"V"``)."""
    return "f" if np_dtype == _BF16 else np_dtype.kind


def from_numpy_dtype(np_dtype) -> dtype:
    """The microtorch dtype of a NumPy (or CuPy) dtype; TypeError for unsupported ones."""
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        if np.dtype(np_dtype).byteorder == ">" and np.dtype(np_dtype).newbyteorder() in _FROM_NP:
            raise ValueError("given numpy array has byte order different from the native byte "
                             "order. Conversion between byte orders is currently not "
                             "supported.") from None
        raise TypeError(f"unsupported array dtype {np_dtype!r}: microtorch supports "
                        + ", ".join(d.name for d in ALL)) from None


def as_dtype(d) -> dtype:
    """Accept a microtorch dtype, a NumPy dtype, a Python type or a name; return a dtype."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return _default_float
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return default_complex()
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    return from_numpy_dtype(d)


def get_default_dtype() -> dtype:
    """The dtype of floating tensors created from Python floats (float32 unless changed)."""
    return _default_float


def default_complex() -> dtype:
    """The dtype of tensors made from Python complex numbers: complex64 with float32 as the
    default dtype, complex128 with float64."""
    return complex128 if _default_float is float64 else complex64


def set_default_dtype(d) -> None:
    """Set the default floating dtype: what Python floats, creation ops and new layers' weights
    become. PyTorch allows float16, bfloat16, float32 and float64."""
    global _default_float
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_float = d


def promote(a: dtype, b: dtype) -> dtype:
    """PyTorch's promotion of two tensor dtypes (``torch.promote_types``).

    The higher category wins (int32 with float32 is float32, not NumPy's float64), a complex
    result is wide enough for the other side's floats (complex64 with float64 is complex128),
    float16 with bfloat16 is float32; within integers NumPy's rule is PyTorch's."""
    if a is b:
        return a
    if a._category == COMPLEX or b._category == COMPLEX:
        real = promote(a.to_real(), b.to_real())
        return real.to_complex() if real._category == FLOATING else \
            (a if a._category == COMPLEX else b)
    if a._category != b._category:
        return a if a._category > b._category else b
    if a._category == FLOATING:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    return _FROM_NP[np.promote_types(a.np, b.np)]


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """PyTorch's rule between operand priority groups (dimensioned tensors, 0-d tensors,
    Python scalars): the lower group matters only when its category is higher."""
    if higher is None:
        return lower
    if lower is None or higher._category == COMPLEX:
        return higher
    if lower._category == COMPLEX:
        # a complex scalar keeps the precision of floating tensors (float64 + 1j: complex128)
        return higher.to_complex() if higher._category == FLOATING else lower
    if higher._category == FLOATING:
        return higher
    if higher._category == BOOL or lower._category == FLOATING:
        return promote(higher, lower)
    return higher


def scalar_dtype(x) -> dtype:
    """The dtype a Python number takes part in promotion with: bool, int64, the default float,
    or the default complex."""
    if isinstance(x, (bool, np.bool_)):
        return bool_
    if isinstance(x, int):
        return int64
    if isinstance(x, complex):
        return default_complex()
    return _default_float


def result_type(operands) -> dtype:
    """PyTorch's type promotion over tensors, 0-d tensors and Python scalars.

    Each operand is a dtype (a dimensioned tensor), ``("0d", dtype)`` (a 0-d tensor) or a
    Python number. Dimensioned tensors take priority over 0-d tensors, which take priority over
    Python scalars (see ``_combine``).
    """
    dims = zero = scalar = None
    for op in operands:
        if isinstance(op, dtype):
            dims = op if dims is None else promote(dims, op)
        elif isinstance(op, tuple):
            zero = op[1] if zero is None else promote(zero, op[1])
        else:
            d = scalar_dtype(op)
            scalar = d if scalar is None else promote(scalar, d)
    return _combine(_combine(dims, zero), scalar)
