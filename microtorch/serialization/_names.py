"""The names PyTorch's pickles use for dtypes and storage types, and microtorch's dtypes.

A checkpoint names a storage's element type by a legacy storage class (``torch.FloatStorage``)
and a dtype by a ``torch`` attribute (``torch.float16``, or an alias such as ``torch.half``):
the latter are ``_dtype``'s own names.
"""

from __future__ import annotations

from .. import _dtype

# dtype name -> the legacy storage class torch.save writes for it
_STORAGE_OF = {
    "bool": "BoolStorage", "uint8": "ByteStorage", "int8": "CharStorage",
    "int16": "ShortStorage", "int32": "IntStorage", "int64": "LongStorage",
    "float16": "HalfStorage", "bfloat16": "BFloat16Storage", "float32": "FloatStorage",
    "float64": "DoubleStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}
_DTYPE_OF_STORAGE = {storage: _dtype._by_name(name) for name, storage in _STORAGE_OF.items()}


def storage_class_name(dtype: _dtype.dtype) -> str:
    """``torch.<name>`` of the storage class a tensor of ``dtype`` is saved with."""
    return _STORAGE_OF[dtype.name]


def dtype_of_storage_class(name: str) -> _dtype.dtype | None:
    """The dtype of storage class ``name`` (``"FloatStorage"``), None if unknown here."""
    return _DTYPE_OF_STORAGE.get(name)


def storage_class_names() -> list[str]:
    """Every storage class name a checkpoint may use."""
    return list(_DTYPE_OF_STORAGE)


def torch_dtype_names() -> dict[str, _dtype.dtype]:
    """``torch.<name>`` -> microtorch dtype, for every dtype microtorch has (with aliases)."""
    return dict(_dtype._BY_NAME)
