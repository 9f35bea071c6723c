"""``functional_call`` under its pre-2.0 name (PyTorch's ``torch.nn.utils.stateless``),
deprecated in favour of ``microtorch.func.functional_call``, which does the work here.

This module imports ``microtorch.func``, which builds on ``microtorch.nn``: ``nn.utils`` should
load it on first use rather than import it, or the two packages would import each other.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from ..._functorch.functional_call import _MISSING, _restore, _swap_all, _untied, check_keys
from ..._tensor import Tensor
from ...func import functional_call as _func_functional_call
from ..modules.module import Module

__all__ = ["functional_call"]

_DEPRECATION = ("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                "and will be removed in a future version of PyTorch. Please use "
                "`torch.func.functional_call` instead which is a drop-in replacement.")


def functional_call(module: Module, parameters_and_buffers: dict[str, Tensor],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the named parameters and buffers of
    ``parameters_and_buffers`` in place of its own for this one call (deprecated: warns with
    PyTorch's FutureWarning, then runs ``microtorch.func.functional_call``).

    ``args`` that is not a tuple is the one positional argument. ``tie_weights``: a value
    given for one name of a tensor the module holds under several names is used for all of
    them. ``strict``: the names must be exactly the module's parameters and buffers. A value
    the call reassigns (``self.foo = self.foo + 1``) lands in ``parameters_and_buffers``."""
    # (The text names torch.*, as PyTorch's does: code filtering the warning by message
    # keeps working when it switches to microtorch.)
    warnings.warn(_DEPRECATION, FutureWarning, stacklevel=2)
    return _func_functional_call(module, parameters_and_buffers, args, kwargs,
                                 tie_weights=tie_weights, strict=strict)


functional_call.__deprecated__ = _DEPRECATION  # (what typing_extensions.deprecated records)


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict[str, Tensor],
                          tie_weights: bool = False, strict: bool = False,
                          stack_weights: bool = False) -> Iterator[None]:
    """Context manager (PyTorch's private helper, which some libraries call): inside it,
    ``module`` holds the tensors of ``parameters_and_buffers`` under their names; on exit its
    own are back and the values the block reassigned land in ``parameters_and_buffers``.

    ``tie_weights`` and ``strict`` as in ``functional_call``. ``stack_weights`` changes
    nothing here: the originals always go back in reverse order (PyTorch's order with
    ``stack_weights``), so a submodule reached under two paths gets its own tensor back."""
    named = _untied(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        check_keys(module, named)
    memo: dict = {}
    originals = _swap_all(module, named, memo)
    try:
        yield
    finally:
        left = _restore(module, originals, memo)
        parameters_and_buffers.update({k: left[k] for k in parameters_and_buffers
                                       if k in left and left[k] is not _MISSING})
