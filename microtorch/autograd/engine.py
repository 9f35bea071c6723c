"""The backward pass: node scheduling, gradient buffers, and PyTorch's accumulation rules."""

from __future__ import annotations

import heapq
import itertools
import sys
import threading

import numpy as np

from ._profiler_record import backward_step
from ._profiler_record import state as _profiling
from .grad_mode import anomaly, set_grad_enabled
from .node import AccumulateGrad, Node

_LEAF = "torch::autograd::AccumulateGrad"  # PyTorch's event name of a leaf's accumulation


def _priority(node) -> int:
    """Heap key: later-created nodes first, leaves last.

    A node is always created after the nodes of its inputs, so its creation number (``_seq``)
    orders the graph topologically: popping the newest pending node first means every node
    runs after all nodes that send it a gradient, with no separate sorting pass.
    """
    return -node._seq if isinstance(node, Node) else 1


def _useful_nodes(roots: list, targets: dict) -> set[int]:
    """Ids of the nodes from which a target is reachable (autograd.grad runs no others).

    Iterative post-order DFS, so deep graphs need no recursion.
    """
    useful: set[int] = set(targets)
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(getattr(root, "_next", ())))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(getattr(child, "_next", ()))))
                    break
            else:
                stack.pop()
                if any(e is not None and id(e) in useful for e in getattr(node, "_next", ())):
                    useful.add(id(node))
    return useful


def _refcount_when_owned() -> tuple[int, int]:
    """What sys.getrefcount reports for a local Tensor and its array when nothing else holds them.

    Measured rather than assumed, because interpreters differ in how many references a call
    argument adds.
    """

    class Probe:
        __slots__ = ("_data",)

    grad = Probe()
    grad._data = object()
    return sys.getrefcount(grad), sys.getrefcount(grad._data)


_OWNED_TENSOR_REFS, _OWNED_ARRAY_REFS = _refcount_when_owned()


# Locks guarding accumulation into a leaf's ``.grad``, so threads running backward at once
# into a shared model lose no gradient (PyTorch locks each AccumulateGrad node). A leaf picks
# one by its id: no per-tensor lock object, and threads writing different leaves rarely meet.
_ACCUMULATE_LOCKS = tuple(threading.Lock() for _ in range(64))


def _accumulate(leaf, grad, create_graph: bool, owned: bool) -> None:
    """Add ``grad`` into ``leaf.grad`` following docs/semantics.md, holding the leaf's lock.

    ``owned``: nobody but the engine holds ``grad`` or its buffer (PyTorch's use_count() == 1),
    so it may become ``.grad`` without a copy.
    """
    with _ACCUMULATE_LOCKS[(id(leaf) >> 4) & 63]:
        _accumulate_locked(leaf, grad, create_graph, owned)


def _accumulate_locked(leaf, grad, create_graph: bool, owned: bool) -> None:
    old = leaf._grad
    if type(grad._data) in SPARSE_DATA or (old is not None and type(old._data) in SPARSE_DATA):
        _accumulate_sparse(leaf, old, grad, create_graph, owned)
        return
    if old is None:
        slot = leaf._grad_slot
        if slot is not None and not create_graph:
            slot[...] = grad._data  # flat gradient storage: write into the preassigned view
            leaf._grad = Tensor._make(slot, False, None)
            count = leaf._slot_count
            if count is not None and slot.base is count.flat:
                count.filled()  # its flat buffer keeps count: no process-wide bump
            else:
                grad_epoch.bump()
            return
        grad_epoch.bump()  # leaf gets a new .grad object
        arr = grad._data
        # CuPy arrays have no ``writeable`` flag (device memory is always writable).
        if (not create_graph and arr.base is None and arr.flags.c_contiguous and owned
                and (type(arr) is not np.ndarray or arr.flags.writeable)):
            grad.requires_grad = False
            grad.grad_fn = None
            leaf._grad = grad  # adopt: nobody else holds this buffer
        elif create_graph:
            leaf._grad = grad.clone() if grad.grad_fn is not None else grad.detach().clone()
        else:
            leaf._grad = Tensor._make(arr.copy(), False, None)
    elif create_graph:
        grad_epoch.bump()  # leaf gets a new .grad object
        leaf._grad = old + grad
    else:
        old._backend.accumulate(old._data, grad._data)
        bump_grad_version(old)


def _accumulate_sparse(leaf, old, grad, create_graph: bool, owned: bool) -> None:
    """PyTorch's AccumulateGrad where a sparse gradient is involved: a first sparse gradient
    is kept as it comes (a new tensor on its arrays when nobody else holds it, else a copy);
    sparse + sparse is added in place (the sum stays sparse: PyTorch's ``grad += new``, its
    merge of the two index lists on the CPU); a dense gradient into a sparse ``.grad`` makes
    ``.grad`` dense (``new + grad``); a sparse gradient into a dense ``.grad`` is added in
    place."""
    from ..ops import sparse_kernels

    data = grad._data
    if old is None:  # (a sparse gradient: a dense first one takes the dense rules)
        if owned and not create_graph:  # PyTorch's _sparse_coo_tensor_unsafe on its arrays
            data = type(data)(*data.component_arrays(), data.shape, False) \
                if type(data) is sparse_kernels.CooData else data
        else:
            data = data.copy()
        leaf._grad = Tensor._make(data, False, None)
        grad_epoch.bump()
        return
    sparse_new = type(data) in SPARSE_DATA
    if type(old._data) in SPARSE_DATA and not sparse_new:
        leaf._grad = grad + old  # (add(sparse, dense) does not exist: dense + sparse)
        grad_epoch.bump()
    elif create_graph:
        leaf._grad = old + grad
        grad_epoch.bump()
    elif type(old._data) in SPARSE_DATA:
        old._data = sparse_kernels.add_any(old._data, data, old._data.dtype)
        bump_grad_version(old)
    else:
        sparse_kernels.add_into_dense(old._data, data, 1)
        bump_grad_version(old)


class _PassState(threading.local):
    """The calling thread's backward passes: callbacks queued during a pass, run once the
    outermost pass finishes (PyTorch's ``Variable._execution_engine.queue_callback``), and the
    nesting depth, so a backward nested inside a hook does not run them early.
    DistributedDataParallel waits for its gradient all-reduces here. Per thread, because
    threads run their backward passes independently."""

    depth = 0

    def __init__(self) -> None:
        self.callbacks: list = []
        self.tasks: list[GraphTask] = []  # the passes running now, innermost last


_pass = _PassState()
_task_ids = itertools.count()


class GraphTask:
    """One backward pass, as hooks and checkpointing see it (PyTorch's GraphTask): its id,
    where it starts, and, for ``grad`` / ``backward(inputs=...)``, the nodes it may run."""

    __slots__ = ("id", "roots", "useful", "accumulate", "_reachable")

    def __init__(self, roots: list, useful: set | None, accumulate: bool) -> None:
        self.id = next(_task_ids)
        self.roots = roots  # the tensors backward starts from
        self.useful = useful
        self.accumulate = accumulate
        self._reachable = None

    def will_execute(self, edge) -> bool:
        """Whether this pass runs ``edge`` (a node, or a leaf standing for its
        AccumulateGrad): reachable from the roots and, with inputs given, needed for them."""
        if self._reachable is None:
            self._reachable = _reachable([r.grad_fn if r.grad_fn is not None else r
                                          for r in self.roots])
        key = id(edge)
        if key not in self._reachable:
            return False
        if self.useful is None:
            return True
        if key not in self.useful:
            return False
        if not isinstance(edge, Node) and not self.accumulate:
            raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are "
                               "currently running autograd.grad(). This is currently not "
                               "supported.")
        return True


def _reachable(roots: list) -> set[int]:
    seen = {id(r) for r in roots}
    stack = list(roots)
    while stack:
        for child in getattr(stack.pop(), "_next", ()):
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return seen


def current_graph_task() -> GraphTask | None:
    """The backward pass running in this thread now (the innermost), or None."""
    tasks = _pass.tasks
    return tasks[-1] if tasks else None


def is_checkpoint_valid() -> bool:
    """False inside a pass started by ``grad`` or ``backward(inputs=...)`` (PyTorch's
    ``_is_checkpoint_valid``: the reentrant checkpoint cannot run there)."""
    return all(t.useful is None for t in _pass.tasks)


def queue_callback(callback) -> None:
    """Run ``callback()`` when the current backward pass (of this thread) has finished.

    Only valid while a backward pass runs (from a hook, for instance), as in PyTorch.
    """
    if _pass.depth == 0:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _pass.callbacks.append(callback)


def register_post_accumulate_grad_hook(tensor, hook):
    """Call ``hook(tensor)`` after a gradient has been accumulated into leaf ``tensor.grad``.

    PyTorch's ``Tensor.register_post_accumulate_grad_hook``; returns a removable handle.
    """
    if tensor.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = getattr(tensor, "_post_accumulate_hooks", None)
    if hooks is None:
        hooks = tensor._post_accumulate_hooks = {}
    return RemovableHandle(hooks, hook)


def _run_queued_callbacks() -> None:
    # A callback may queue another (PyTorch runs those too), so drain until empty.
    callbacks = _pass.callbacks
    while callbacks:
        callbacks.pop(0)()


def _check_anomaly(node: Node, grads: tuple) -> None:
    for i, g in enumerate(grads):
        arr = g._data if isinstance(g, Tensor) else g
        if type(arr) in SPARSE_DATA:
            arr = arr.values
        # NaN only, as PyTorch: an infinite gradient (sqrt's at 0) is a legitimate value
        if arr is not None and bool(backend_of(arr).xp.isnan(arr).any()):
            where = "".join(node._stack or ["(forward trace unavailable)\n"])
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               f"output.\nForward call that created the node:\n{where}")


def run_backward(roots: list, grads: list, retain_graph: bool, create_graph: bool,
                 capture: list | None = None, allow_unused: bool = False,
                 accumulate: bool = False):
    """Propagate ``grads`` from ``roots`` (tensors) through the graph.

    Without ``capture`` gradients accumulate into leaves' ``.grad``. With ``capture`` (a list
    of tensors or gradient edges) nothing accumulates: the summed gradient reaching each
    captured tensor is returned instead, as ``autograd.grad`` does (``accumulate``: the caller
    accumulates them, ``backward(inputs=...)``).
    """
    buffers: dict[int, object] = {}
    pending: list = []  # heap of (priority, id, node) for nodes whose buffer holds a gradient
    for root, grad in zip(roots, grads):
        node = root.grad_fn if root.grad_fn is not None else root
        key = id(node)
        if key in buffers:
            buffers[key] = _add(buffers[key], grad)
        else:
            buffers[key] = grad
            heapq.heappush(pending, (_priority(node), key, node))

    targets = captured = useful = None
    if capture is not None:
        targets = {id(_target_edge(t)): i for i, t in enumerate(capture)}
        captured = [None] * len(capture)
        useful = _useful_nodes([entry[2] for entry in pending], targets)

    passes = _pass
    passes.depth += 1
    passes.tasks.append(GraphTask(roots, useful, accumulate))
    try:
        _propagate(pending, buffers, targets, captured, useful, retain_graph, create_graph)
    except BaseException:
        if passes.depth == 1:
            passes.callbacks.clear()  # a failed pass runs no final callbacks
        raise
    finally:
        passes.depth -= 1
        passes.tasks.pop()
    if passes.depth == 0:
        _run_queued_callbacks()

    if capture is None:
        return None
    for i, g in enumerate(captured):
        if g is None and not allow_unused:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to not "
                               f"have been used in the graph. Set allow_unused=True if this is "
                               f"the desired behavior.")
        if g is not None and not create_graph and g.grad_fn is not None:
            captured[i] = g.detach()
    return tuple(captured)


def _propagate(pending: list, buffers: dict, targets: dict | None, captured: list | None,
               useful: set | None, retain_graph: bool, create_graph: bool) -> None:
    """Run each pending node's backward, newest first, accumulating into leaves or capturing."""
    heappop, heappush = heapq.heappop, heapq.heappush
    ready = None  # the next node when it is the only one pending (a chain): no heap round trip
    profiling = _profiling.active  # a profiler collects (in some thread): events per step
    with set_grad_enabled(bool(create_graph)):
        while ready is not None or pending:
            if ready is not None:
                node, ready = ready, None
            else:
                node = heappop(pending)[2]
            grad = buffers.pop(id(node))
            is_leaf = not isinstance(node, Node)
            hooks = node._hooks if is_leaf else node._pre_hooks
            if not isinstance(grad, Tensor) and (is_leaf or hooks or targets is not None
                                             or not node.lifted or node._retained is not None
                                             ) and type(grad) is not OutputGrads:
                grad = Tensor._make(grad)  # a raw array from a lifted backward
            if hooks:
                for hook in tuple(hooks.values()):
                    replaced = hook(grad)
                    if replaced is not None:
                        grad = replaced
                    del replaced
            if type(grad) is not OutputGrads and (is_leaf or targets is not None
                                                   and id(node) in targets) \
                    and type(grad._data) in ARRAY_WRAPPERS:
                # vmap's batched gradient of a tensor from outside an exited vmap: summed
                # over that vmap's samples (PyTorch computes this sum on the physical arrays)
                grad = settled(grad)
            if targets is not None and id(node) in targets:
                captured[targets[id(node)]] = grad
            if is_leaf:
                if targets is None:
                    if hooks and "_node_hooks" in node.__dict__:  # AccumulateGrad's own hooks
                        if profiling:
                            backward_step(_LEAF, None, grad, _accumulate_leaf, node, grad,
                                          create_graph, node._node_hooks)
                        else:
                            _accumulate_leaf(node, grad, create_graph, node._node_hooks)
                        continue
                    # Counted here, where only this local and the call's argument refer to it.
                    owned = (sys.getrefcount(grad) == _OWNED_TENSOR_REFS
                             and sys.getrefcount(grad._data) == _OWNED_ARRAY_REFS)
                    if profiling:
                        backward_step(_LEAF, None, grad, _accumulate, node, grad, create_graph,
                                      owned)
                    else:
                        _accumulate(node, grad, create_graph, owned)
                    post = getattr(node, "_post_accumulate_hooks", None)
                    if post:
                        for hook in tuple(post.values()):
                            hook(node)
                continue
            if node._retained is not None and targets is None:
                kept = node._retained()
                if kept is not None:
                    _accumulate(kept, grad, create_graph, False)
            # Node hooks (register_prehook/register_hook) come with an entry among the tensor
            # hooks, so unhooked nodes only test ``hooks``.
            if hooks and node._node_hooks is not None:
                grad = _call_prehooks(node, node._node_hooks, grad)
            if profiling and node.profiled:
                out = backward_step(node.name(), node, grad, node.backward, node, grad)
            else:
                out = node.backward(node, grad)
            if not isinstance(out, tuple):
                out = (out,)
            if len(out) < len(node._next):
                raise RuntimeError(f"function {node.name()} returned an incorrect number of "
                                   f"gradients (expected {len(node._next)}, got {len(out)})")
            if hooks and node._node_hooks is not None:
                out = _call_posthooks(node, node._node_hooks, out, grad)
            if anomaly.enabled and anomaly.check_nan:
                _check_anomaly(node, out)
            if not retain_graph:  # free what forward saved
                node._saved = node._out_data = None
            new = None  # the first node this one made pending, held back from the heap
            for edge, g in zip(node._next, out):
                if edge is not None and g is not None:
                    key = id(edge)
                    prev = buffers.get(key)
                    if prev is not None:
                        buffers[key] = _add(prev, g)
                    elif useful is None or key in useful:
                        buffers[key] = g
                        if new is None:
                            new = edge
                        else:
                            # _priority(edge), inlined: this is the engine's innermost loop
                            heappush(pending, (-edge._seq if isinstance(edge, Node) else 1,
                                               key, edge))
            if new is not None:
                if pending:
                    heappush(pending, (-new._seq if isinstance(new, Node) else 1, id(new), new))
                else:  # nothing else waits: it runs next, whatever its priority
                    ready = new
            # No stray references: they would defeat the ownership test.
            grad = out = g = new = None


def _accumulate_leaf(leaf, grad, create_graph: bool, table=None) -> None:
    """Accumulate into ``leaf`` as its AccumulateGrad node does, with that node's hooks
    (``table``): pre-hooks, accumulation, post-accumulate-grad hooks, post-hooks."""
    if table is not None and table.pre:
        (grad,) = _check_hooks(table.pre.values(), (grad,))
    if grad is not None:
        _accumulate(leaf, grad, create_graph, False)
    post = getattr(leaf, "_post_accumulate_hooks", None)
    if post:
        for hook in tuple(post.values()):
            hook(leaf)
    if table is not None and table.post:
        for hook in tuple(table.post.values()):
            if hook((), (grad,)) is not None:
                raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an "
                                   f"incorrect number of values (got 1, but expected 0)")


def accumulate_captured(leaf, grad, create_graph: bool) -> None:
    """``backward(inputs=...)``: a captured gradient accumulated into its leaf, with the
    hooks of the leaf's AccumulateGrad and its post-accumulate-grad hooks."""
    _accumulate_leaf(leaf, grad, create_graph, leaf.__dict__.get("_node_hooks"))


def _check_hooks(hooks, grads: tuple) -> tuple:
    for hook in tuple(hooks):
        result = hook(grads)
        if result is not None:
            grads = _check_hook_result(hook, result, grads)
    return grads


def _target_edge(t):
    """The edge whose gradient ``autograd.grad`` captures for ``t``: a tensor's node (its own
    leaf when it has none) or a ``GradientEdge``'s."""
    if isinstance(t, Tensor):
        return t.grad_fn if t.grad_fn is not None else t
    node = t.node
    return node.variable if isinstance(node, AccumulateGrad) else node


def _grad_outputs(node, grad) -> tuple:
    """The gradients ``node`` receives, one per output of its forward (PyTorch's layout)."""
    n = len(getattr(node, "_outputs", ())) or 1
    if type(grad) is OutputGrads:
        return tuple(_as_tensor(grad.get(i)) for i in range(n))
    single = getattr(node, "_single", 0) if n > 1 else 0
    return tuple(_as_tensor(grad) if i == single else None for i in range(n))


def _from_grad_outputs(node, grads: tuple):
    if type(grads) is not tuple and type(grads) is not list:
        raise TypeError(f"hook of {node.name()} must return None or a tuple of Tensors, got "
                        f"{type(grads).__name__}")
    if len(getattr(node, "_outputs", ())) > 1:
        if getattr(node, "_single", None) is not None:
            return grads[node._single]
        return OutputGrads({i: g for i, g in enumerate(grads) if g is not None})
    return grads[0]


def _as_tensor(g):
    return g if g is None or isinstance(g, Tensor) else Tensor._make(g)


def _check_hook_result(hook, result, before: tuple) -> tuple:
    if not isinstance(result, (tuple, list)):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(before):
        raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an incorrect "
                           f"number of values (got {len(result)}, but expected {len(before)})")
    for new, old in zip(result, before):
        if old is None and new is not None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
    return tuple(result)


def _call_prehooks(node, table, grad):
    """Run ``Node.register_prehook`` hooks on the gradients ``node`` is about to use."""
    if not table.pre:
        return grad
    return _from_grad_outputs(node, _check_hooks(table.pre.values(), _grad_outputs(node, grad)))


def _call_posthooks(node, table, out: tuple, grad) -> tuple:
    """Run ``Node.register_hook`` hooks on the gradients ``node`` computed for its inputs,
    one per input of PyTorch's op (None for a number operand: ``torch_operands``)."""
    if not table.post:
        return out
    n = len(node._next)
    positions = node.torch_operands if node.torch_operands is not None else range(n)
    grad_inputs = tuple(_as_tensor(out[i]) if i < n else None for i in positions)
    grad_outputs = _grad_outputs(node, grad)
    for hook in tuple(table.post.values()):
        result = hook(grad_inputs, grad_outputs)
        if result is not None:
            grad_inputs = _check_hook_result(hook, result, grad_inputs)
    out = list(out[:n])
    for g, i in zip(grad_inputs, positions):
        if i < n:
            out[i] = g
    return tuple(out)


class OutputGrads(dict):
    """Gradients of several outputs of one node, by output index, on their way to it (a user
    Function with several differentiable outputs, see ``function.OutputSlot``)."""

    def merged(self, other: OutputGrads) -> OutputGrads:
        out = OutputGrads(self)
        for i, g in other.items():
            out[i] = g if i not in out else _add(out[i], g)
        return out


def _add(a, b):
    """Sum two gradients that may be Tensors or (in a plain backward) raw arrays."""
    if type(a) is OutputGrads:
        return a.merged(b)
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        a = a if isinstance(a, Tensor) else Tensor._make(a)
        b = b if isinstance(b, Tensor) else Tensor._make(b)
        if type(a._data) in SPARSE_DATA and type(b._data) not in SPARSE_DATA:
            return b + a  # (PyTorch's InputBuffer: dense + sparse, never sparse + dense)
        return a + b
    out = a + b
    if isinstance(out, np.generic):  # NumPy turns 0-d sums into scalars
        out = np.asarray(out)
    backend_of(out).memory.register(out)
    return out


from .._hooks import RemovableHandle  # noqa: E402
from .._layout import SPARSE_DATA  # noqa: E402
from .._tensor import Tensor, bump_grad_version, grad_epoch  # noqa: E402
from ..backend import backend_of, settled  # noqa: E402
from ..backend.base import ARRAY_WRAPPERS  # noqa: E402
