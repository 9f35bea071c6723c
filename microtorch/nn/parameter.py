"""``Parameter``: a tensor that a Module registers as one of its learnable weights."""

from __future__ import annotations

from .._tensor import Tensor
from ..ops.creation import empty


class Parameter(Tensor):
    """A leaf Tensor that ``Module.__setattr__`` registers as a parameter.

    It shares the data array (and version counter) of the tensor it wraps and requires grad by
    default, like ``torch.nn.Parameter``.
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        # Tensor.__new__ is the legacy torch.Tensor(...) constructor; build from the array.
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
        param = cls._make(data._data, False, None)
        param._vbox = data._vbox  # shares storage, so in-place writes are seen by both
        if requires_grad:
            param.requires_grad_(True)
        return param

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return Tensor.__reduce_ex__(self, protocol)
