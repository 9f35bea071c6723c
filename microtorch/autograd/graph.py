"""``torch.autograd.graph``: the backward graph as users see it and hook into it.

Saved-tensor hooks (``saved_tensors_hooks``, ``save_on_cpu``, ``disable_saved_tensors_hooks``;
the mechanism is ``autograd/saved.py``), gradient hooks over several tensors
(``register_multi_grad_hook``), the ``Node`` interface of ``grad_fn`` objects, gradient edges,
and ``increment_version``.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from .._hooks import RemovableHandle
from .._tensor import Tensor
from . import engine, saved
from .grad_mode import no_grad
from .node import AccumulateGrad, ShownNode
from .node import Node as _GraphNode

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors", "Node",
           "GradientEdge", "get_gradient_edge", "increment_version"]


class Node(abc.ABC):
    """What every ``grad_fn`` is (``isinstance(t.grad_fn, autograd.graph.Node)``): a node
    of the backward graph with ``name()``, ``next_functions``, ``metadata``,
    ``register_hook`` and ``register_prehook``."""

    @abc.abstractmethod
    def name(self) -> str:
        """The node's name, e.g. ``CloneBackward0``."""

    @property
    @abc.abstractmethod
    def next_functions(self) -> tuple:
        """((node, output index), ...) for each input of the node's forward."""

    @property
    @abc.abstractmethod
    def metadata(self) -> dict:
        """A dict kept with the node for the user's annotations."""

    @abc.abstractmethod
    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` after the node runs."""

    @abc.abstractmethod
    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs)`` before the node runs."""

    @classmethod
    def __subclasshook__(cls, subclass: type) -> bool:
        if cls is Node and issubclass(subclass, (_GraphNode, ShownNode, AccumulateGrad)):
            return True
        return NotImplemented


class GradientEdge(NamedTuple):
    """Where the gradient of a tensor is computed: a node and which of its outputs
    (``autograd.grad(loss, edge)`` is ``autograd.grad(loss, tensor)``)."""

    node: Any
    output_nr: int
    ownership_token: Any = None


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The gradient edge of ``tensor``: its ``grad_fn`` (or the AccumulateGrad of a leaf)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node = tensor.grad_fn
    if node is None:
        return GradientEdge(AccumulateGrad(tensor), 0)
    return GradientEdge(node, getattr(node, "output_nr", 0))


def _edge_of(t) -> Any:
    """The engine's key for ``t``'s gradient edge (a node, or the leaf itself)."""
    if isinstance(t, GradientEdge):
        return engine._target_edge(t)
    return t.grad_fn if t.grad_fn is not None else t


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Count an in-place change made behind autograd's back (a kernel writing through a
    pointer), so that saved-tensor checks see it. Takes a tensor or several."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._vbox[0] += 1


class saved_tensors_hooks:  # noqa: N801  (PyTorch's name)
    """Context manager: tensors saved for backward inside it are passed to
    ``pack_hook(tensor) -> Any`` when saved, and what it returns to ``unpack_hook(packed) ->
    Tensor`` whenever backward needs them. Nested managers: the innermost pair applies.
    Per thread, as in PyTorch."""

    def __init__(self, pack_hook: Callable[[Tensor], Any],
                 unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        saved.push_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args: object) -> None:
        saved.pop_hooks()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801  (PyTorch's name)
    """Context manager: tensors saved for backward are kept in host memory (pinned, with an
    asynchronous copy, when ``pin_memory`` and CUDA is available) and copied back to their
    device when backward needs them."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        from ..backend import cuda_available
        from ..ops.creation import empty

        def pack_to_cpu(tensor: Tensor) -> tuple:
            if not pin_memory:
                return tensor.device, tensor.cpu()
            pinnable = device_type == "cuda" and cuda_available()
            packed = empty(tensor.size(), dtype=tensor.dtype, pin_memory=pinnable)
            packed.copy_(tensor, non_blocking=pinnable)
            return tensor.device, packed

        def unpack_from_cpu(packed: tuple) -> Tensor:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Context manager: entering a saved-tensor hooks context inside it (in this thread)
    raises ``RuntimeError(error_message)``; so does entering it while hooks are active."""
    previous = saved.disabled_message()
    try:
        saved.set_disabled(error_message)
        yield
    finally:
        saved.set_disabled(previous, fail_if_non_empty=previous is not None)


class _MultiHandle(RemovableHandle):
    """Removes the tensor hooks ``register_multi_grad_hook`` installed."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __getstate__(self) -> tuple:
        return self.handles

    def __setstate__(self, state: tuple) -> None:
        self.handles = state


def _current_task() -> engine.GraphTask:
    task = engine.current_graph_task()
    if task is None:
        raise AssertionError("expected this hook to be called inside a backward call")
    return task


def register_multi_grad_hook(tensors: Sequence[Tensor], fn: Callable, *,
                             mode: str = "all") -> RemovableHandle:
    """Call ``fn`` once per backward pass over several tensors' gradients.

    ``mode="all"``: after the gradients of every tensor the pass computes (``fn(grads)``, None
    for those it does not compute); ``mode="any"``: at the first of them (``fn(grad)``).
    Returns a handle removing the hooks.
    """
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()
    if mode == "all":
        count: dict[int, int] = {}
        expected: dict[int, int] = {}
        buffer: dict[int, list] = {}
        edges = [_edge_of(t) for t in tensors]
        n = len(tensors)

        def inner_hook(idx: int, grad: Tensor) -> None:
            task = _current_task()
            key = task.id
            with lock:
                seen = count.get(key, 0)
                count[key] = seen + 1
                if seen == 0:  # the first call of this pass: how many to wait for
                    expected[key] = sum(map(task.will_execute, edges))
                    buffer[key] = [None] * n
            buffer[key][idx] = grad
            if seen == expected[key] - 1:
                grads = buffer.pop(key)
                del count[key], expected[key]
                fn(grads)

        handles = tuple(t.register_hook(functools.partial(inner_hook, i))
                        for i, t in enumerate(tensors))
    else:
        ran: dict[int, bool] = defaultdict(bool)

        @functools.wraps(fn)
        def wrapped_fn(grad: Tensor) -> None:
            key = _current_task().id
            with lock:
                prev, ran[key] = ran[key], True
            if not prev:
                fn(grad)

        handles = tuple(t.register_hook(wrapped_fn) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)


# -- allow_mutation_on_saved_tensors ----------------------------------------------------------
# A saved tensor is remembered by (object id, address, version) and its alias key by (address,
# version); the original is held until an in-place write into a tensor with the same alias key
# is about to happen (``saved.watch_writes``), which clones it first. Backward then unpacks the
# clone if there is one, else the original.
_allow_mutation_on_saved_tensors_enabled = False


class _Handle:
    pass


class _AllowMutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` region (for debugging)."""

    def __init__(self) -> None:
        self.cloned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.original: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.tid_to_weakhandle: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self.sid_to_tid: defaultdict = defaultdict(set)

    def clear(self) -> None:
        self.cloned.clear()
        self.original.clear()
        self.tid_to_weakhandle.clear()
        self.sid_to_tid.clear()

    def pack(self, tensor: Tensor) -> _Handle:
        sid = (saved.address(tensor), tensor._version)
        tid = (id(tensor), *sid)
        self.sid_to_tid[sid].add(tid)
        handle = self.tid_to_weakhandle.get(tid)
        if handle is None:  # the same tensor at the same version may be saved several times
            handle = self.tid_to_weakhandle[tid] = _Handle()
            self.original[handle] = tensor
        return handle

    def unpack(self, handle: _Handle) -> Tensor:
        # (PyTorch's words, its missing space included)
        message = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' "
                   "contextin which the graph was originally recorded.")
        if not _allow_mutation_on_saved_tensors_enabled:
            raise AssertionError(message)
        if handle in self.cloned:
            return self.cloned[handle]
        if handle not in self.original:
            raise AssertionError(message)
        return self.original[handle]

    def before_write(self, tensor: Tensor) -> None:
        for tid in self.sid_to_tid.get((saved.address(tensor), tensor._version), ()):
            handle = self.tid_to_weakhandle.get(tid)
            if handle is None or handle in self.cloned:  # freed by a backward, or cloned
                continue
            with no_grad():
                self.cloned[handle] = self.original[handle].clone()
            del self.original[handle]


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Context manager: tensors saved for backward may be modified in place inside it; they
    are cloned just before the change, so backward sees the saved values. Run forward and
    backward inside it. Yields the region's state (cleared on exit)."""
    global _allow_mutation_on_saved_tensors_enabled
    ctx = _AllowMutationOnSavedContext()
    with saved_tensors_hooks(ctx.pack, ctx.unpack):
        saved.watch_writes(ctx.before_write)
        try:
            if _allow_mutation_on_saved_tensors_enabled:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _allow_mutation_on_saved_tensors_enabled = True
            yield ctx
        finally:
            saved.unwatch_writes(ctx.before_write)
            ctx.clear()
            _allow_mutation_on_saved_tensors_enabled = False
