"""The type aliases code annotates with (PyTorch's ``torch.types``): ``Number``, ``Device``,
``FileLike``, ``Storage``, and the underscored names PyTorch's own signatures use (``_dtype``,
``_device``, ``_size``, ``_TensorOrTensors``, ``_int``, ...).

microtorch traces no symbolic shapes, so it has no ``SymInt``, ``SymFloat`` or ``SymBool``:
``IntLikeType`` is ``int``, ``FloatLikeType`` ``float``, ``BoolLikeType`` ``bool``,
``PySymType`` is missing and ``py_sym_types`` is empty (``isinstance(x, py_sym_types)`` is
False, as it is for every non-symbolic value in PyTorch). Nor does it have ``DispatchKey`` or
quantization schemes, so ``_dispatchkey`` is ``str`` and ``_qscheme`` is missing.
"""

from __future__ import annotations

import os
from builtins import bool as _bool
from builtins import bytes as _bytes
from builtins import complex as _complex
from builtins import float as _float
from builtins import int as _int
from builtins import str as _str
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any, TypeAlias, Union

from ._dtype import dtype as _dtype
from ._layout import layout as _layout
from ._tensor import Size, Tensor
from .backend.device import device as _device

if TYPE_CHECKING:
    from .autograd.graph import GradientEdge

__all__ = ["Number", "Device", "FileLike", "Storage"]

# (The underscored builtins exist because a module defining ``int`` or ``float`` shadows the
# builtin: ``microtorch.float`` is a dtype.)
_BUILTINS = (_bool, _bytes, _complex, _float, _int, _str, _dtype, _layout)

_TensorOrTensors: TypeAlias = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors: TypeAlias = Tensor | Sequence[Tensor | None]
_TensorOrTensorsOrGradEdge: TypeAlias = Union[  # noqa: UP007 - (a string forward reference)
    Tensor, Sequence[Tensor], "GradientEdge", Sequence["GradientEdge"]]

_size: TypeAlias = Size | list[int] | tuple[int, ...]
_symsize: TypeAlias = Size | Sequence[int]
_dispatchkey: TypeAlias = str

IntLikeType: TypeAlias = int
FloatLikeType: TypeAlias = float
BoolLikeType: TypeAlias = bool
py_sym_types: tuple[type, ...] = ()

# What PyTorch's documentation calls a number.
Number: TypeAlias = int | float | bool
# The same as a tuple, for isinstance checks.
_Number = (int, float, bool)

FileLike: TypeAlias = str | os.PathLike[str] | IO[bytes]

# Anything a ``device=`` argument accepts: a device, "cuda:0", a GPU index, or None (the
# default device).
Device: TypeAlias = _device | str | int | None


class Storage:
    """The protocol of typed storages, for annotations (PyTorch's ``torch.types.Storage``;
    every method raises NotImplementedError: a storage class provides them)."""

    _cdata: int
    device: _device
    dtype: _dtype
    _torch_load_uninitialized: bool

    def __deepcopy__(self, memo: dict[int, Any]) -> Storage:
        raise NotImplementedError

    def _new_shared(self, size: int) -> Storage:
        raise NotImplementedError

    def _write_file(self, f: Any, is_real_file: bool, save_size: bool,
                    element_size: int) -> None:
        raise NotImplementedError

    def element_size(self) -> int:
        """Bytes per element."""
        raise NotImplementedError

    def is_shared(self) -> bool:
        """True when the storage is in shared memory."""
        raise NotImplementedError

    def share_memory_(self) -> Storage:
        """Move the storage to shared memory."""
        raise NotImplementedError

    def nbytes(self) -> int:
        """The storage's size in bytes."""
        raise NotImplementedError

    def cpu(self) -> Storage:
        """A CPU copy of the storage."""
        raise NotImplementedError

    def data_ptr(self) -> int:
        """The address of the first element."""
        raise NotImplementedError

    def from_file(self, filename: str, shared: bool = False, nbytes: int = 0) -> Storage:
        """A storage mapped from a file."""
        raise NotImplementedError

    def _new_with_file(self, f: Any, element_size: int) -> Storage:
        raise NotImplementedError
