"""``autograd.forward_ad``: PyTorch's forward-mode AD API (``dual_level``, ``make_dual``,
``unpack_dual``, ``enter_dual_level``/``exit_dual_level``).

Inside a dual level, ``make_dual(x, t)`` gives a tensor aliasing ``x`` with tangent ``t``; every
op on it computes its output's tangent as it runs (``forward_mode``), and
``unpack_dual(y)`` returns ``(primal, tangent)``. Leaving the level drops its tangents. As in
PyTorch, one level at a time: ``torch.func.jvp`` nests its own.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from .._tensor import Tensor
from . import forward_mode

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

# The public levels entered (as PyTorch numbers them: 0 for the first) and their ids.
_public: list[int] = []


def _current_level() -> int:
    return len(_public) - 1


def enter_dual_level() -> int:
    """Enter a new forward grad level; returns its number (the default of the other
    functions of this module)."""
    if _public:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _public.append(forward_mode.enter_level())
    return _current_level()


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the current forward grad level, deleting every tangent of it."""
    if level is None:
        level = _current_level()
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _current_level():
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    forward_mode.exit_level(_public.pop())


def _level_id(level: int | None) -> int:
    if level is None:
        level = _current_level()
    if level < 0 or level >= len(_public):
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    return _public[level]


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A new tensor aliasing ``tensor`` (a view of it) with ``tangent`` as its forward
    gradient at ``level``. Differentiable in reverse mode in both arguments."""
    if level is None and not _public:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    lid = _level_id(level)
    return make_dual_at(tensor, tangent, lid, level if level is not None else _current_level())


def make_dual_at(tensor: Tensor, tangent: Tensor, lid: int, shown_level: int = 0) -> Tensor:
    """``make_dual`` at internal level id ``lid`` (``torch.func.jvp``'s levels)."""
    if forward_mode.tangent_of(tensor, lid) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {shown_level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    with forward_mode.hidden_from(lid):
        dual = tensor.view_as(tensor)
    if tangent.dtype != tensor.dtype:
        tangent = tangent.to(tensor.dtype)
    forward_mode.set_tangent(dual, lid, tangent)
    return dual


class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s result: the primal (a view of the dual tensor) and its tangent."""

    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """(primal, tangent) of a dual tensor: the primal a view without the tangent, the tangent
    as it is (None when ``tensor`` has none at ``level``)."""
    if level is None:
        level = _current_level()
    if level < 0 or level >= len(_public):
        return UnpackedDualTensor(tensor, None)
    return unpack_dual_at(tensor, _public[level])


def unpack_dual_at(tensor: Tensor, lid: int) -> UnpackedDualTensor:
    """``unpack_dual`` at internal level id ``lid``."""
    tangent = forward_mode.tangent_of(tensor, lid)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with forward_mode.hidden_from(lid):
        primal = tensor.view_as(tensor)
    if primal._fw_tangents:
        primal._fw_tangents = {k: v for k, v in tensor._fw_tangents.items() if k < lid} or None
    return UnpackedDualTensor(primal, tangent)


class dual_level:  # noqa: N801  (PyTorch's name)
    """Context manager (or decorator) for forward AD: computations with dual tensors happen
    inside it; leaving it deletes their tangents."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)

        return wrapper

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        exit_dual_level()
