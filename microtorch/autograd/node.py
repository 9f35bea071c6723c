"""``Node``: a differentiable operation of microtorch and, once applied, its node in the
backward graph; plus the helpers its backward formulas use (``lift``, ``finish``, ``namespace``).

This is the internal contract, built for speed; user code subclasses the public
``autograd.Function`` (PyTorch's contract, ``function.py``), whose nodes are Nodes too.
An op subclasses Node (through ``Function``, see its module) with two static methods:

- ``forward(ctx, *args, **kwargs)`` gets the op's arguments (tensors stay tensors) and returns
  the result *array*; it saves what backward needs with ``ctx.save_for_backward``.
- ``backward(ctx, grad)`` gets the gradient of the output and returns one gradient (or None)
  per positional argument. It is written with Tensor ops, so under ``create_graph=True`` the
  backward pass itself is recorded and can be differentiated again; a node with
  ``lifted = True`` writes it once for arrays and tensors alike (see ``lift``) and then gets
  and returns raw arrays in a plain backward.

``Node.apply`` runs forward and, when grad mode is on and an input requires grad, turns the
ctx into the output's ``grad_fn``: its ``_next`` holds one edge per positional argument up to
the last tensor (the input's grad_fn, the leaf tensor itself, or None). Backward may return
extra trailing Nones for non-tensor arguments.
"""

from __future__ import annotations

import itertools
import re
import traceback

import numpy as np

from .grad_mode import INFERENCE_SAVED, anomaly, inference_active, recording

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
          "after they have already been freed). Saved intermediate values of the graph are freed "
          "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
          "backward through the graph a second time or if you need to access saved tensors after "
          "calling backward.")


_next_sequence_number = itertools.count().__next__


class Node:
    """Base class of differentiable operations; an applied instance is a graph node."""

    _next: tuple = ()
    _saved: tuple | None = ()
    _pre_hooks: dict | None = None
    _retained = None  # weak reference to a non-leaf tensor that called retain_grad()
    _stack: list | None = None  # forward traceback, kept in anomaly mode
    lifted = False  # backward accepts and may return raw arrays in a plain backward (see lift)
    takes_sparse = False  # forward handles sparse tensors itself (else they are routed)
    profiled = True  # the engine gives its backward events in a profile (see _profiler_record)
    torch_name: str | None = None  # PyTorch's name for this node (``repr``, ``grad_fn.name()``)
    _out_data = None
    _out_vbox = None  # the output's version counter: in-place changes to it are detected
    _out_tangents = None  # the output's forward-mode tangents (forward_mode.apply)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the result array."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):
        """Gradients (Tensors or None) for each positional argument of forward."""
        raise NotImplementedError

    # -- saving values for backward -------------------------------------------------------
    def save_for_backward(self, *values) -> None:
        """Keep tensors (or arrays) for backward; freed after it unless retain_graph.

        The one entry of every value saved for backward (with the output save in ``apply``):
        under saved-tensor hooks (``autograd.graph.saved_tensors_hooks``) they are packed here.
        """
        if _saved_hooks.count and self._pack(values):
            return
        self._saved = values
        # The version of each saved tensor now, to detect later in-place changes (None: no
        # tensor among the values, only numbers or arrays: nothing to check).
        versions = None
        for i, v in enumerate(values):
            if isinstance(v, Tensor):
                if versions is None:
                    versions = [None] * len(values)
                versions[i] = v._vbox[0]
        self._versions = versions

    def _pack(self, values: tuple, outputs=()) -> bool:
        """Save ``values`` packed by this thread's saved-tensor hooks; False when it has none.
        No version check later: what the hooks return is theirs (PyTorch's rule)."""
        packed = pack_values(values, outputs, self)
        if packed is None:
            return False
        self._saved = packed
        self._versions = None
        self._packed = True
        return True

    _packed = False  # saved values (or the output) went through saved-tensor hooks

    @property
    def saved_tensors(self) -> tuple:
        """The saved values; raises if freed or modified in place since they were saved."""
        if self._saved is None:
            raise RuntimeError(_FREED)
        if self._packed:
            return unpack_values(self._saved, self)
        if self._versions is not None:
            for value, version in zip(self._saved, self._versions):
                if version is not None and value._vbox[0] != version:
                    raise modified_error(value, version)
        return self._saved

    def save_output(self) -> None:
        """Ask apply to keep the output array (for ops whose derivative uses their result)."""
        self._out_data = True

    @property
    def saved_output(self):
        """The op's output as a Tensor whose grad_fn is this node (with the output's
        forward-mode tangents, for a backward formula differentiated in forward mode)."""
        if self._packed and type(self._out_data) is SavedSlot:
            out = self._out_data.unpack(self)
        else:
            out = Tensor._make(self.saved_output_array, True, self)
        if self._out_tangents is not None:
            out._fw_tangents = self._out_tangents
        return out

    @property
    def saved_output_array(self):
        """The op's output array (what a plain, unrecorded backward computes with)."""
        if self._out_data is None:
            raise RuntimeError(_FREED)
        if self._packed and type(self._out_data) is SavedSlot:
            return self._out_data.unpack(self)._data
        if self._out_vbox[0] != 0:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: the output of {self.name()} is at version "
                f"{self._out_vbox[0]}; expected version 0 instead.")
        return self._out_data

    # -- graph introspection ---------------------------------------------------------------
    def name(self) -> str:
        """The node's name as PyTorch prints it, e.g. ``MulBackward0``: ``torch_name`` where
        the op is one that PyTorch names otherwise (set on the class, or on the node when it
        depends on the arguments), else the class name."""
        return self.torch_name or f"{type(self).__name__}Backward0"

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    _torch_next: tuple | None = None  # a composite op's inputs' edges (see ``named``)
    # The positional arguments that are PyTorch's inputs of this node, where they differ
    # from "every argument up to the last tensor" (a number operand of ``x * 2`` is an edge
    # to None there; where's condition is no edge).
    torch_operands: tuple | None = None

    @property
    def next_functions(self) -> tuple:
        """((node, 0), ...) for each tensor input, as in PyTorch: for the last node of a
        composite op (``named`` with its inputs), the nodes of the op's own inputs, so the
        graph reads as PyTorch's single node."""
        edges = self._torch_next
        if edges is None:
            edges = self._next
            if self.torch_operands is not None:
                edges = tuple(edges[i] if i < len(edges) else None
                              for i in self.torch_operands)
        return tuple((_edge_node(e), 0) for e in edges)

    @property
    def metadata(self) -> dict:
        """A dict kept with this node for the user's own annotations (PyTorch's)."""
        meta = self.__dict__.get("_metadata")
        if meta is None:
            meta = self._metadata = {}
        return meta

    def register_prehook(self, fn):
        """Call ``fn(grad_outputs)`` before this node runs (a tuple, one gradient per output
        of its forward); a returned tuple replaces ``grad_outputs``. PyTorch's
        ``Node.register_prehook``: returns a removable handle."""
        return RemovableHandle(self._hook_table().pre, fn)

    def register_hook(self, fn):
        """Call ``fn(grad_inputs, grad_outputs)`` after this node ran (the gradients it
        computed for its inputs, and those it received); a returned tuple replaces
        ``grad_inputs``. PyTorch's ``Node.register_hook``: returns a removable handle."""
        return RemovableHandle(self._hook_table().post, fn)

    _node_hooks = None  # NodeHooks once a hook was registered with the two methods above

    def _hook_table(self) -> NodeHooks:
        table = self._node_hooks
        if table is None:
            table = self._node_hooks = NodeHooks()
            # The engine reads a node's hooks only when its tensor pre-hook dict is non-empty:
            # the table sits there too (calling it does nothing), so unhooked nodes pay nothing.
            self._register_tensor_hook(table)
        return table

    def _register_tensor_hook(self, hook):
        """Run ``hook(grad)`` on this node's incoming gradient (``Tensor.register_hook`` of
        its output); it may return a replacement."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return RemovableHandle(self._pre_hooks, hook)

    # -- applying --------------------------------------------------------------------------
    @classmethod
    def _make_node(cls, edges: tuple) -> Node:
        """A node put into the graph directly, with no forward (``autograd.views``' nodes)."""
        node = object.__new__(cls)
        node._next = edges
        node._seq = _next_sequence_number()
        if anomaly.enabled:
            node._stack = traceback.format_stack()[:-2]
        return node

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward on ``args`` and record the node when a gradient is needed."""
        if _fw_state.levels and forward_mode.touches(args, kwargs):  # forward-mode AD
            return forward_mode.apply(cls, args, kwargs)
        ctx = object.__new__(cls)
        if _profiling.active:  # a profiler collects: this op as one event (re-enters once)
            out = _profiler_op(cls, ctx, args, kwargs)
            if out is not _PROCEED:
                return out
        first = None
        if not recording():  # no_grad: nothing to record, so no edges to collect
            for a in args:
                if isinstance(a, Tensor):
                    if first is None:
                        first = a
                    elif type(a._data) is not type(first._data) or (
                            type(a._data) is not np.ndarray
                            and a._data.device != first._data.device):
                        routed = _mixed_operands(cls, first, a, args, kwargs)
                        if routed is not None:
                            return routed
            if (first is not None and type(first._data) is not np.ndarray
                    and type(first._data) in SPARSE_DATA and not cls.takes_sparse):
                return _sparse_route(cls, args, kwargs)
            return Tensor._make(_forward(cls, ctx, first, args, kwargs), False, None)
        needs_grad = False
        # Where each argument's gradient goes: its node, the leaf itself, or nowhere. Built in
        # the same pass as the device check (a loop is cheaper here than a comprehension).
        edges = []
        n_edges = 0  # up to the last tensor argument
        for a in args:
            if isinstance(a, Tensor):
                if first is None:
                    first = a
                elif type(a._data) is not type(first._data) or (
                        type(a._data) is not np.ndarray and a._data.device != first._data.device):
                    routed = _mixed_operands(cls, first, a, args, kwargs)
                    if routed is not None:
                        return routed
                node = a.grad_fn  # (first: a tensor with a node requires grad; one read)
                if node is not None:
                    needs_grad = True
                    edges.append(node)
                elif a.requires_grad:
                    needs_grad = True
                    edges.append(a)
                else:
                    edges.append(None)
                n_edges = len(edges)
            else:
                edges.append(None)
        try:  # (inline, not _forward: this is the hot path of every recorded op)
            if first is not None and type(first._data) is not np.ndarray:
                if type(first._data) in SPARSE_DATA and not cls.takes_sparse:
                    return _sparse_route(cls, args, kwargs)
                with first._backend.context():
                    out = cls.forward(ctx, *args, **kwargs)
            elif kwargs:
                out = cls.forward(ctx, *args, **kwargs)
            else:
                out = cls.forward(ctx, *args)
        except ValueError as exc:  # NumPy's words for shapes that do not broadcast
            if "broadcast" not in str(exc):
                raise
            raise RuntimeError(broadcast_message(args)) from None
        except SparseAccessError:  # a sparse tensor in a dense op (inside a list: cat, stack)
            raise _sparse_error(cls, args) from None
        # An integer or bool result is never differentiable (PyTorch: x.long() does not
        # require grad, and no gradient flows back through it; "V": bfloat16)
        if not (needs_grad and recording()) or getattr(out, "dtype", _F).kind not in "fcV":
            return Tensor._make(out, False, None)
        if inference_active.seen:
            refuse_inference_saved(ctx._saved)
        ctx._next = tuple(edges) if n_edges == len(edges) else tuple(edges[:n_edges])
        ctx._seq = _next_sequence_number()  # creation order: a topological order of the graph
        if anomaly.enabled:
            ctx._stack = traceback.format_stack()[:-2]
        if type(out) is np.ndarray and not tracking.on:  # Tensor._make, inlined (hot path)
            result = object.__new__(Tensor)
            result._data, result.requires_grad, result.grad_fn, result._vbox = out, True, ctx, [0]
        else:
            result = Tensor._make(out, True, ctx)
        if ctx._out_data is not None:
            ctx._out_data = result._data  # (the array: _make turned a NumPy scalar into one)
            ctx._out_vbox = result._vbox  # shared counter, no reference to the tensor: no cycle
            if _saved_hooks.count:  # saved-tensor hooks see the output tensor itself
                packed = pack_values((result,), (0,), ctx)
                if packed is not None:
                    ctx._out_data = packed[0]
                    ctx._packed = True
        return result


_F = np.dtype(np.float32)  # (the dtype of an output without one: a Python float)


def refuse_inference_saved(saved) -> None:
    """PyTorch's error for a recorded op that saved an inference tensor for backward."""
    if saved:
        for v in saved:
            if isinstance(v, Tensor) and v._inference:
                raise RuntimeError(INFERENCE_SAVED)


def _forward(cls, ctx, first, args: tuple, kwargs: dict):
    """``cls.forward(ctx, *args, **kwargs)`` on the device of ``first`` (the first tensor
    argument), with NumPy's broadcasting errors in PyTorch's words."""
    try:
        if first is not None and type(first._data) is not np.ndarray:
            with first._backend.context():
                return cls.forward(ctx, *args, **kwargs)
        if kwargs:
            return cls.forward(ctx, *args, **kwargs)
        return cls.forward(ctx, *args)
    except ValueError as exc:  # NumPy's words for shapes that do not broadcast
        if "broadcast" not in str(exc):
            raise
        raise RuntimeError(broadcast_message(args)) from None
    except SparseAccessError:  # a sparse tensor in a dense op (inside a list: cat, stack)
        raise _sparse_error(cls, args) from None


def _mixed_operands(cls, first, other, args: tuple, kwargs: dict):
    """Tensor operands whose data differ in kind. Two devices: PyTorch's device error. Dense
    arrays of one device (an array and vmap's wrapper of one): None (go on). A sparse tensor
    among them: None when the op takes sparse tensors (go on), else the op's sparse kernel's
    result (``ops.sparse_dispatch``), or PyTorch's error for an op without one."""
    _check_devices(cls, first, other)
    if type(first._data) not in SPARSE_DATA and type(other._data) not in SPARSE_DATA:
        return None
    if cls.takes_sparse:
        return None
    return _sparse_route(cls, args, kwargs)


def _sparse_route(cls, args: tuple, kwargs: dict):
    """The result of op ``cls`` on sparse operands, by its sparse kernel (PyTorch's dispatch
    on the SparseCPU/SparseCUDA keys)."""
    from ..ops.sparse_dispatch import route

    return route(cls, args, kwargs)


def _sparse_error(cls, args: tuple) -> NotImplementedError:
    from ..ops.sparse_dispatch import unsupported

    return unsupported(cls, args)


def _check_devices(cls, first: Tensor, other: Tensor) -> None:
    """PyTorch's error for tensors of two devices (reached when their arrays differ in type:
    NumPy and CuPy, or an array and an array wrapper of the same device, vmap's)."""
    if first.device != other.device:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                           f"two devices, {first.device} and {other.device}! (in {cls.__name__})")


def modified_error(value: Tensor, expected: int, node: Node | None = None) -> RuntimeError:
    """PyTorch's error for a tensor saved for backward and modified in place since; ``node``:
    the node the tensor is an output of, where it was saved as one (else its ``grad_fn``)."""
    node = node or value.grad_fn
    made_by = ("" if node is None else
               f", which is output {getattr(node, 'output_nr', 0)} of "
               f"{re.sub(r'Backward[0-9]*$', '', node.name())}")
    return RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{value.type()} {list(value.shape)}]{made_by}, is at version "
        f"{value._vbox[0]}; expected version {expected} instead. Hint: enable anomaly detection "
        f"to find the operation that failed to compute its gradient, with "
        f"microtorch.autograd.set_detect_anomaly(True, check_nan=False).")


def named(out: Tensor, torch_name: str, *inputs) -> Tensor:
    """``out`` with its node named ``torch_name`` (when it has one): for a composite function,
    several microtorch nodes standing for one PyTorch op, so its result prints as PyTorch's.
    ``inputs`` are the tensor arguments of that op, in PyTorch's order (tensors that need no
    gradient too, numbers left out): the node's ``next_functions`` then lead to their nodes,
    past the composite's inner ones, as PyTorch's graph does. The engine still runs the inner
    nodes. ``out`` must be a fresh result of the function, never one of its inputs."""
    node = out.grad_fn
    if node is not None:
        node.torch_name = torch_name
        if inputs:
            node._torch_next = tuple(edge_of(t) for t in inputs)
    return out


def edge_of(t):
    """Where a gradient for ``t`` goes, as ``apply`` records it: its node, the leaf itself,
    or None (not a tensor, or one that needs no gradient)."""
    if not isinstance(t, Tensor):
        return t if isinstance(t, (Node, ShownNode)) else None
    if t.grad_fn is not None:
        return t.grad_fn
    return t if t.requires_grad else None


def broadcast_message(operands) -> str:
    """PyTorch's error for tensor shapes that do not broadcast (checked from the last dim)."""
    shapes = [x._data.shape for x in operands if isinstance(x, Tensor)]
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    for i in range(ndim - 1, -1, -1):
        sizes = [s[i] for s in padded if s[i] != 1]
        if len(set(sizes)) > 1:
            return (f"The size of tensor a ({sizes[0]}) must match the size of tensor b "
                    f"({sizes[1]}) at non-singleton dimension {i}")
    return "shapes cannot be broadcast together"


def lift(*values) -> tuple:
    """The values a backward formula computes with: arrays in a plain backward (fast), the
    tensors themselves under ``create_graph`` (so the formula is recorded and differentiable).

    Formulas written with operators and ``namespace(x)`` functions run unchanged on both.
    """
    if recording():
        return values
    out = []
    for v in values:  # (a loop: cheaper than a comprehension's frame on Python 3.11)
        out.append(v._data if isinstance(v, Tensor) else v)
    return out


def finish(*grads) -> tuple:
    """The gradients of a lifted formula, ready for the engine.

    Under ``create_graph`` they are Tensors already. In a plain backward they stay raw arrays
    (the engine wraps one only where a Tensor is needed: leaves, hooks, non-lifted nodes),
    counted in the memory statistics like any tensor buffer. (Decided per value rather than by
    reading grad mode: the loop leaves Tensors as they are, and this runs once per node.)
    """
    if not tracking.on:  # the common case: nothing to count, and usually no scalar to wrap
        for g in grads:
            if isinstance(g, np.generic):
                break
        else:
            return grads
    out = []
    for g in grads:
        if isinstance(g, np.generic):  # NumPy turns 0-d results into scalars
            g = np.asarray(g)
        if tracking.on and g is not None and not isinstance(g, Tensor):
            backend_of(g).memory.register(g)
        out.append(g)
    return tuple(out)


def namespace(x):
    """Functions (exp, where, sign, ...) for ``x``: the array module, or microtorch's ops."""
    if isinstance(x, Tensor):
        from .. import ops

        return ops
    return np if isinstance(x, np.generic) else xp_of(x)


def _edge_node(edge):
    if edge is None or isinstance(edge, (Node, ShownNode)):
        return edge
    return AccumulateGrad(edge)


class ShownNode:
    """A node of PyTorch's graph that a fused microtorch node has no counterpart for (the
    ``TBackward0`` of linear's weight, inside ``AddmmBackward0``): it appears in
    ``next_functions``, leading on to real edges, and takes no part in backward."""

    def __init__(self, torch_name: str, *edges) -> None:
        self.torch_name = torch_name
        self._edges = edges

    def name(self) -> str:
        return self.torch_name

    @property
    def next_functions(self) -> tuple:
        return tuple((_edge_node(e), 0) for e in self._edges)

    def __repr__(self) -> str:
        return f"<{self.torch_name} object at {id(self):#x}>"


class AccumulateGrad:
    """The view of a leaf's gradient sink in ``next_functions`` (PyTorch's AccumulateGrad)."""

    next_functions = ()  # a graph's sink, as PyTorch's

    def __init__(self, variable) -> None:
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    # Hooks and metadata live on the leaf: these view objects are made afresh on each access.
    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before the gradient is accumulated into the leaf (a returned
        tuple replaces it)."""
        return RemovableHandle(self._table().pre, fn)

    def register_hook(self, fn):
        """``fn((), grad_outputs)`` after the gradient was accumulated into the leaf."""
        return RemovableHandle(self._table().post, fn)

    @property
    def metadata(self) -> dict:
        """The leaf's AccumulateGrad metadata dict."""
        return self.variable.__dict__.setdefault("_acc_metadata", {})

    def _table(self) -> NodeHooks:
        leaf = self.variable
        table = leaf.__dict__.get("_node_hooks")
        if table is None:
            table = leaf._node_hooks = NodeHooks()
            if leaf._hooks is None:
                leaf._hooks = {}
            RemovableHandle(leaf._hooks, table)  # (the engine reads hooks of hooked leaves)
        return table

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


class NodeHooks:
    """The hooks registered on a node with ``register_prehook`` / ``register_hook`` (run by
    the engine around the node's backward). Sits among the tensor pre-hooks as a no-op."""

    __slots__ = ("pre", "post")

    def __init__(self) -> None:
        self.pre: dict = {}
        self.post: dict = {}

    def __call__(self, grad) -> None:
        return None


from .._hooks import RemovableHandle  # noqa: E402
from .._layout import SPARSE_DATA, SparseAccessError  # noqa: E402
from .._tensor import Tensor  # noqa: E402  (Tensor imports this module first)
from ..backend import backend_of, xp_of  # noqa: E402
from ..backend.base import tracking  # noqa: E402
from . import forward_mode  # noqa: E402
from ._profiler_record import PROCEED as _PROCEED  # noqa: E402
from ._profiler_record import op as _profiler_op  # noqa: E402
from ._profiler_record import state as _profiling  # noqa: E402
from .forward_mode import state as _fw_state  # noqa: E402
from .saved import SavedSlot, pack_values, unpack_values  # noqa: E402
from .saved import hooks as _saved_hooks  # noqa: E402
