"""Saved-tensor hooks: how values saved for backward can be packed and unpacked.

Every value a node keeps for backward passes through ``Node.save_for_backward`` (microtorch's
ops and user Functions alike) or, for an op whose derivative uses its own result, through the
output save in ``Node.apply``. Both call ``pack_values`` only when some thread has pushed a hook
pair (``hooks.count``: one attribute read on the hot path, nothing more). Under a hook pair,
each tensor (or array) is replaced in the node by a ``SavedSlot`` holding what ``pack_hook``
returned; the node's ``saved_tensors`` / ``saved_output`` then call ``unpack_hook`` on every
access and rebuild a tensor with the original's place in the graph, as PyTorch's
``SavedVariable`` does (no version check then: the hooks own the data).

The hook stack is per thread, as PyTorch's; only the innermost pair applies.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from .grad_mode import _set_recording, recording

_PACK_INPLACE = ("A saved tensor pack hook is modifying its input in place. Tensors provided as "
                 "input to pack hook cannot be modified by in-place operations as this can lead "
                 "to unexpected side-effects. Please open an issue if you need to perform "
                 "in-place operations on the input to a pack hook.")


class _Count:
    """How many hook pairs are pushed, over all threads: the hot path's only read."""

    count = 0


hooks = _Count()
_count_lock = threading.Lock()


class _ThreadHooks(threading.local):
    """This thread's stack of (pack, unpack) pairs and its 'disabled' message (None: enabled)."""

    def __init__(self) -> None:
        self.stack: list = []
        self.disabled: str | None = None
        self.saving = None  # the node whose values are being packed (checkpoint's debug log)


_tls = _ThreadHooks()


def push_hooks(pack_hook, unpack_hook) -> None:
    """Make (pack_hook, unpack_hook) this thread's innermost pair (PyTorch's error when
    saved-tensor hooks are disabled here)."""
    if _tls.disabled is not None:
        raise RuntimeError(_tls.disabled)
    _tls.stack.append((pack_hook, unpack_hook))
    with _count_lock:
        hooks.count += 1


def pop_hooks() -> None:
    """Remove this thread's innermost pair."""
    _tls.stack.pop()
    with _count_lock:
        hooks.count -= 1


def current_hooks():
    """This thread's innermost (pack, unpack) pair, or None."""
    stack = _tls.stack
    return stack[-1] if stack else None


def disabled_message() -> str | None:
    """The message saved-tensor hooks raise with in this thread, None while they are enabled."""
    return _tls.disabled


def set_disabled(message: str | None, fail_if_non_empty: bool = True) -> None:
    """Disable (a message) or enable (None) saved-tensor hooks in this thread. Disabling while
    a pair is pushed raises the message, as PyTorch's ``_saved_tensors_hooks_disable``."""
    _tls.disabled = message
    if message is not None and fail_if_non_empty and _tls.stack:
        raise RuntimeError(message)


# What a slot stands for, so unpacking rebuilds it: a raw array an op saved, a tensor with a
# node (or none), a leaf that requires grad, or the node's own output.
_ARRAY, _TENSOR, _LEAF, _OUTPUT = range(4)


class SavedSlot:
    """One packed saved value: ``pack_hook``'s result and what rebuilding the tensor needs."""

    __slots__ = ("packed", "unpack_hook", "kind", "grad_fn", "leaf", "requires_grad")

    def unpack(self, node=None):
        """``unpack_hook(packed)`` as the saved value: an array where an array was saved, else
        a tensor in the original's place in the graph (its node, its leaf, or ``node`` for an
        output of ``node``)."""
        t = self.unpack_hook(self.packed)
        if not isinstance(t, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(t).__name__}")
        kind = self.kind
        if kind == _ARRAY:
            return t._data
        if kind == _OUTPUT:
            grad_fn = self.grad_fn() if self.grad_fn is not None else node
            out = Tensor._make(t._data, grad_fn is not None, grad_fn)
        elif kind == _LEAF:
            leaf = self.leaf()
            if leaf is not None and recording():
                # Recorded formulas (create_graph) must lead back to the leaf itself.
                out = Tensor._make(t._data, True, SavedLeaf._make_node((leaf,)))
            else:
                out = Tensor._make(t._data, True, None)
        else:
            out = Tensor._make(t._data, self.requires_grad, self.grad_fn)
        out._vbox = t._vbox
        return out


def _is_array(value) -> bool:
    return isinstance(value, (np.ndarray, np.generic)) or type(value).__name__ == "ndarray"


def _pack_one(value, pack_hook, unpack_hook, is_output: bool):
    slot = SavedSlot()
    if isinstance(value, Tensor):
        t = value
        version = t._vbox[0]
        slot.packed = pack_hook(t)
        if t._vbox[0] != version:
            raise RuntimeError(_PACK_INPLACE)
        slot.grad_fn = None
        if is_output:
            slot.kind = _OUTPUT
            # Weakly: the node holds this slot, so a strong reference would be a cycle.
            slot.grad_fn = None if t.grad_fn is None else weakref.ref(t.grad_fn)
        elif t.grad_fn is None and t.requires_grad:
            slot.kind = _LEAF
            slot.leaf = weakref.ref(t)
        else:
            slot.kind = _TENSOR
            slot.grad_fn = t.grad_fn
            slot.requires_grad = t.requires_grad
    else:  # an array an op saved: the hook sees it as a tensor, backward gets an array back
        slot.kind = _ARRAY
        slot.packed = pack_hook(Tensor._make(value))
    slot.unpack_hook = unpack_hook
    return slot


def pack_values(values: tuple, outputs=(), node=None) -> tuple | None:
    """``values`` (saved by ``node``) with each tensor or array packed by this thread's
    innermost hooks (None when this thread has none). ``outputs``: indices of values that are
    the node's outputs. Pack hooks run under no_grad, as in PyTorch."""
    tls = _tls
    if not tls.stack:
        return None
    pack_hook, unpack_hook = tls.stack[-1]
    prev, prev_node = recording(), tls.saving
    _set_recording(False)
    tls.saving = node
    try:
        return tuple(
            _pack_one(v, pack_hook, unpack_hook, i in outputs)
            if isinstance(v, Tensor) or _is_array(v) else v
            for i, v in enumerate(values))
    finally:
        _set_recording(prev)
        tls.saving = prev_node


def saving_node():
    """The node whose saved values a pack hook is packing now (None outside pack hooks, or
    for a tensor saved outside any node)."""
    return _tls.saving


def unpack_values(values: tuple, node) -> tuple:
    """Saved values with every slot unpacked (the rest as saved)."""
    return tuple(v.unpack(node) if type(v) is SavedSlot else v for v in values)


# -- in-place writes, watched for ``allow_mutation_on_saved_tensors`` --------------------------
class _Writes:
    """How many write watchers are installed: every in-place write of a tensor's data reads
    ``writes.count`` first and calls ``before_write`` only when it is non-zero."""

    count = 0


writes = _Writes()
_watchers: list = []


def watch_writes(watcher) -> None:
    """Call ``watcher(tensor)`` before each in-place write into a tensor's data."""
    with _count_lock:
        _watchers.append(watcher)
        writes.count += 1


def unwatch_writes(watcher) -> None:
    """Stop calling ``watcher``."""
    with _count_lock:
        _watchers.remove(watcher)
        writes.count -= 1


def before_write(t) -> None:
    """``t``'s data is about to be changed in place (see ``watch_writes``)."""
    for watcher in tuple(_watchers):
        watcher(t)


def address(t) -> int:
    """The address of a tensor's first element (PyTorch's ``data_ptr``)."""
    arr = t._data
    return arr.ctypes.data if isinstance(arr, np.ndarray) else arr.data.ptr


class SavedTensor:
    """A tensor kept outside any node, through the hooks active when it is made (PyTorch's
    ``torch._C._autograd._make_saved_tensor``: checkpoint keeps its inputs this way, so an
    enclosing checkpoint manages them)."""

    __slots__ = ("_slot", "_value")

    def __init__(self, tensor) -> None:
        packed = pack_values((tensor,))
        self._slot = None if packed is None else packed[0]
        self._value = tensor if packed is None else None

    def unpack(self):
        """The tensor (through ``unpack_hook`` when it was packed)."""
        return self._value if self._slot is None else self._slot.unpack()


from .._tensor import Tensor  # noqa: E402  (Tensor imports the autograd package first)
from .node import Node  # noqa: E402


class SavedLeaf(Node):
    """An unpacked copy of a saved leaf that requires grad, under create_graph: gradients of
    formulas computed from it flow on to the leaf itself."""

    lifted = True
    torch_name = "AliasBackward0"

    @staticmethod
    def backward(ctx, grad):
        return (grad,)
