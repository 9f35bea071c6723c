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


_UNINITIALIZED_SHAPE = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually "
    "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
    "initialized one. Call `forward` to initialize the parameters before accessing their "
    "attributes.")


class _Uninitialized:
    """What uninitialized parameters and buffers share: no shape until ``materialize`` gives
    them one (and their final class, ``cls_to_become``)."""

    cls_to_become: type = Tensor
    _lazy = True  # (state_dict keeps such a tensor itself, as PyTorch's lazy modules do)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Allocate the data (uninitialised) with ``shape`` and become a plain parameter or
        buffer of that shape."""
        from .._dtype import as_dtype

        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else as_dtype(dtype)
        self._data = empty(tuple(shape), device=device, dtype=dtype)._data
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_UNINITIALIZED_SHAPE)

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter of a lazy module before its first forward: no shape yet (reading it
    raises); ``materialize(shape)`` turns it into a ``Parameter``."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer of a lazy module before its first forward (see ``UninitializedParameter``);
    ``materialize(shape)`` turns it into a plain tensor."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        t = cls._make(empty(0, device=device, dtype=dtype)._data, False, None)
        if requires_grad:
            t.requires_grad_(True)
        return t


def is_lazy(value) -> bool:
    """True for an uninitialized parameter or buffer."""
    return isinstance(value, _Uninitialized)
