"""``nn.Buffer``: a marker that makes a tensor assigned as a module attribute a buffer.

As PyTorch's (2.5+): ``Buffer(data, persistent=...)`` returns ``data`` detached (keeping its
``requires_grad``) and tagged; ``isinstance(t, nn.Buffer)`` is true for tagged tensors and
``Module.__setattr__`` registers them with ``register_buffer(name, t, t.persistent)``.
"""

from __future__ import annotations

from .._tensor import Tensor

__all__ = ["Buffer"]


class _BufferMeta(type(Tensor)):
    """``isinstance(t, Buffer)``: any tensor tagged by ``Buffer(...)``."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and getattr(instance, "_is_buffer",
                                                                      False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that is module state but not a parameter (running statistics, ...);
    ``persistent=False`` keeps it out of the ``state_dict``."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:
        if data is None:
            from ..ops.creation import empty

            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t
