"""The names PyTorch's pickles use for dtypes and storage types, and microtorch's dtypes.

A checkpoint names a storage's element type by a legacy storage class (``torch.FloatStorage``)
and a dtype by a ``torch`` attribute (``torch.float16``).  ``bfloat16`` is mapped only when
this microtorch has it (``microtorch.bfloat16``, through ml_dtypes).
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
_DTYPE_OF_STORAGE = {v: k for k, v in _STORAGE_OF.items()}


def microtorch_dtype(name: str) -> _dtype.dtype | None:
    """The microtorch dtype called ``name`` (``"float32"``), or None if it has none."""
    # Every dtype microtorch has is an instance in _dtype (bool as ``bool_``).
    return next((d for d in vars(_dtype).values()
                 if isinstance(d, _dtype.dtype) and d.name == name), None)


def storage_class_name(dtype: _dtype.dtype) -> str:
    """``torch.<name>`` of the storage class a tensor of ``dtype`` is saved with."""
    return _STORAGE_OF[dtype.name]


def dtype_of_storage_class(name: str) -> _dtype.dtype | None:
    """The dtype of storage class ``name`` (``"FloatStorage"``), None if unknown here."""
    dtype_name = _DTYPE_OF_STORAGE.get(name)
    return None if dtype_name is None else microtorch_dtype(dtype_name)


def storage_class_names() -> list[str]:
    """Every storage class name a checkpoint may use."""
    return list(_DTYPE_OF_STORAGE)


def torch_dtype_names() -> dict[str, _dtype.dtype]:
    """``torch.<name>`` -> microtorch dtype, for the dtypes microtorch has (with aliases)."""
    names = {}
    for name in _STORAGE_OF:
        dt = microtorch_dtype(name)
        if dt is not None:
            names[name] = dt
    for alias, canonical in (("half", "float16"), ("float", "float32"), ("double", "float64"),
                             ("long", "int64"), ("int", "int32"), ("short", "int16")):
        if canonical in names:
            names[alias] = names[canonical]
    return names
