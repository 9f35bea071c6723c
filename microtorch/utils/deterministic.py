"""``fill_uninitialized_memory`` (PyTorch's ``torch.utils.deterministic``): a module
attribute, True by default, read and set as ``microtorch.utils.deterministic.
fill_uninitialized_memory``.

While it is True and ``microtorch.use_deterministic_algorithms(True)`` is on, the tensors made
with unspecified contents (``empty``, ``empty_like``, ``new_empty``, ``empty_strided``,
``empty_permuted``) are filled with NaN (floating-point and complex dtypes) or the dtype's
largest value (integers; True for bool), as PyTorch fills them, so that code reading
memory it never wrote gets the same values on every run. ``resize_`` fills the elements it
adds with zeros whatever the flags (see ``Tensor.resize_``), where PyTorch fills them the same
way as ``empty``.
"""

from __future__ import annotations

import sys
import types

from .. import _determinism


class _Deterministic(types.ModuleType):
    """This module's class: a property gives the flag checked, shared storage."""

    @property
    def fill_uninitialized_memory(self) -> bool:
        """Whether uninitialized memory is filled while deterministic algorithms are on."""
        return _determinism.get_fill_uninitialized_memory()

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode: bool) -> None:
        _determinism.set_fill_uninitialized_memory(mode)


# (The flag lives in microtorch._determinism, which the tensor factories read; the class swap
# makes the module attribute a view of it, as PyTorch's module does with its C++ flag.)
sys.modules[__name__].__class__ = _Deterministic
