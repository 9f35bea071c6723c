"""``Function``: PyTorch's ``torch.autograd.Function`` contract for user-defined operations.

A user subclass writes ``forward(ctx, *args)`` (or ``forward(*args)`` plus
``setup_context(ctx, inputs, output)``) on Tensors, run under no_grad, returning Tensors (or a
tuple of them and of other values), and ``backward(ctx, *grads)`` returning one gradient Tensor
(or None) per argument of forward. The ctx is the output's ``grad_fn``: an instance of a node
class made for each Function (``<Name>Backward``, PyTorch's ``BackwardCFunction``) that offers
``save_for_backward``, ``saved_tensors``, ``needs_input_grad``, ``mark_dirty``,
``mark_non_differentiable`` and ``set_materialize_grads``.

microtorch's own ops subclass ``Function`` too, with the internal fast contract of ``Node``
(forward returns an array, the op instance is its own node, see ``node.py``). Which contract a
subclass gets is decided by where it is defined: inside the microtorch package it is an op,
anywhere else it is a user Function. So moving an op between microtorch's modules changes
nothing, and no user class can land on the internal path by accident.
"""

from __future__ import annotations

import functools
import inspect
import warnings

from .grad_mode import no_grad, recording
from .node import (  # noqa: F401  (the helpers microtorch's op modules import from here)
    AccumulateGrad,
    Node,
    broadcast_message,
    edge_of,
    finish,
    lift,
    modified_error,
    named,
    namespace,
)

_PACKAGE = __name__.partition(".")[0]
_ONCE = "trying to differentiate twice a function that was marked with @once_differentiable"


def _defined_in_microtorch(cls) -> bool:
    module = cls.__module__ or ""
    return module == _PACKAGE or module.startswith(_PACKAGE + ".")


class FunctionCtx:
    """What ``forward`` / ``setup_context`` and ``backward`` of a user Function get as ``ctx``.

    Attributes set on it in forward are there in backward.
    """

    needs_input_grad: tuple = ()
    materialize_grads = True
    _to_save: tuple = ()
    _dirty: tuple = ()
    _non_differentiable: tuple = ()
    _saved_for_forward: tuple = ()
    _in_jvp = False  # while the user's jvp runs: saved_tensors are those saved for forward

    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` (or None) for backward, where ``saved_tensors`` returns them; they
        must not be modified in place in between, and are freed after backward unless
        ``retain_graph``."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``; raises if they were freed by a backward
        without ``retain_graph``, or modified in place since they were saved."""
        if self._in_jvp:
            return self._saved_for_forward
        saved = self._saved
        if saved is None:
            raise RuntimeError(_FREED)
        if saved == () and self._to_save:  # forward ran without recording a graph
            return self._to_save
        if self._packed:
            return unpack_values(saved, self)
        for i, (value, version) in enumerate(zip(saved, self._versions)):
            if value is not None and value._vbox[0] != version:
                raise modified_error(value, version, self if i in self._saved_outputs else None)
        return saved

    def save_for_forward(self, *tensors) -> None:
        """Keep ``tensors`` (or None) for ``jvp``, where ``saved_tensors`` returns them."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_forward expects all arguments to be tensors; you "
                                f"should save non-tensors as attributes on ctx (argument {i} "
                                f"is of type {type(t).__name__})")
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        """Declare input tensors that forward modified in place (and returns)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that get no gradient (indices, masks, ...)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward gets zero tensors (True, the default) or None for outputs whose
        gradient is undefined (unused or non-differentiable outputs)."""
        self.materialize_grads = bool(value)


class BackwardCFunction(FunctionCtx, Node):
    """The node of one application of a user Function (PyTorch's ``BackwardCFunction``); a
    subclass named ``<Name>Backward`` is made for each Function."""

    _forward_cls = None
    lifted = True  # the engine may hand over raw arrays: ``_run_backward`` wraps them
    _single = 0  # index of the only differentiable output, or None when there are several
    _outputs: tuple = ()  # per output: (shape, dtype, backend) of a tensor, else None
    _inputs: tuple = ()  # per argument: (shape, dtype, device) of a tensor, else None
    _versions: tuple = ()
    _saved_outputs: frozenset = frozenset()  # indices of saved tensors that are outputs

    def __repr__(self) -> str:
        return f"<{_PACKAGE}.autograd.function.{self.name()} object at {id(self):#x}>"

    @staticmethod
    def backward(ctx, grad):
        """Called by the engine: the user's backward on one gradient per output."""
        return _run_backward(ctx, grad)

    def apply(self, *grads):
        """Run the user's backward on ``grads`` (one per output), as PyTorch's node.apply."""
        return self._forward_cls._user_backward(self, *grads)


class Function(Node):
    """Base class of user-defined differentiable operations, PyTorch's contract.

    Subclass with static ``forward`` and ``backward`` and call ``MyFunction.apply(*args)``.
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # One of microtorch's ops: the internal contract (unless it asks for the user one, as
        # nn's module backward hooks do: they need several outputs and Tensor gradients).
        if _defined_in_microtorch(cls) and not cls.__dict__.get("user_contract", False):
            cls.apply = _NODE_APPLY
            return
        name = f"{cls.__name__}Backward"
        cls._backward_cls = type(name, (BackwardCFunction,), {
            "_forward_cls": cls, "torch_name": name, "__module__": __name__,
            "__doc__": f"The backward node of {cls.__qualname__}."})
        cls._uses_setup_context = cls.setup_context is not Function.setup_context
        if cls._uses_setup_context:
            cls._forward_signature = inspect.signature(cls.forward)
        cls._user_backward = (cls.vjp if cls.backward is Function.backward
                              and cls.vjp is not Function.vjp else cls.backward)

    def __init__(self, *args, **kwargs) -> None:
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions "
                      f"are all static, so you should invoke them on the class itself. "
                      f"Instantiating an autograd function will raise an error in a future "
                      f"version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        """The operation, on Tensors (run under no_grad)."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        """Optional: fill ``ctx`` from the inputs and output (then forward takes no ctx)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """One gradient (or None) per argument of forward, given one per output."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    @staticmethod
    def vjp(ctx, *grad_outputs):
        """Another name for ``backward`` (define one of the two)."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode AD: one tangent per output, given one per argument of forward
        (tensors saved with ``ctx.save_for_forward`` are ``ctx.saved_tensors`` here)."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward on ``args`` and, when an input requires grad, record the node; with
        forward-mode tangents on the inputs, ``jvp`` gives the outputs' tangents."""
        if _fw_state.levels and forward_mode.touches(args, kwargs):
            return forward_mode.apply_user_function(cls, args, kwargs,
                                                    lambda: cls._run(args, kwargs))
        if _profiling.active:  # a profiler collects: the Function as one event
            out = _profiler_op(cls, None, args, kwargs)
            if out is not _PROCEED:
                return out
        return cls._run(args, kwargs)[1]

    @classmethod
    def _run(cls, args: tuple, kwargs: dict) -> tuple:
        """(ctx, outputs) of one application."""
        ctx = object.__new__(cls._backward_cls)
        if cls._uses_setup_context:  # every argument positional, defaults filled in
            bound = cls._forward_signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, {}
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx.needs_input_grad = needs
        record = recording() and any(needs)
        edges = ()
        if record:  # up to the last tensor argument, as for every node
            last = max(i for i, a in enumerate(args) if isinstance(a, Tensor))
            edges = tuple(edge_of(a) if isinstance(a, Tensor) else None for a in args[:last + 1])
        with no_grad():
            if cls._uses_setup_context:
                out = cls.forward(*args)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        return ctx, _wrap_outputs(ctx, args, out, record, edges)


_NODE_APPLY = Node.__dict__["apply"]


def _wrap_outputs(ctx, args: tuple, out, record: bool, edges: tuple):
    """Give forward's tensor outputs their place in the graph, as PyTorch's _wrap_outputs."""
    is_tuple = isinstance(out, tuple)
    outs = list(out) if is_tuple else [out]
    inputs = {id(a): a for a in args if isinstance(a, Tensor)}
    if any(id(t) not in inputs for t in ctx._dirty):
        warnings.warn("ctx.mark_dirty() received a tensor that was not an input. Only input "
                      "Tensors that have been mutated should be passed to ctx.mark_dirty().",
                      UserWarning, stacklevel=3)
    dirty = {id(t) for t in ctx._dirty if id(t) in inputs}
    if not dirty <= {id(t) for t in outs}:
        raise RuntimeError("Some elements marked as dirty during the forward method were not "
                           "returned as output. The inputs that are modified inplace must all "
                           "be outputs of the Function.")
    if record and any(id(t) in dirty and t.requires_grad and t.grad_fn is None for t in outs):
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                           "operation.")
    non_diff = {id(t) for t in ctx._non_differentiable}
    for t in ctx._dirty:
        if id(t) in dirty:
            t._vbox[0] += 1  # the in-place change forward made, as PyTorch counts it
    differentiable = [i for i, t in enumerate(outs) if isinstance(t, Tensor)
                      and id(t) not in non_diff and t._data.dtype.kind in "fc"]
    if not record:
        for i, t in enumerate(outs):
            if isinstance(t, Tensor) and id(t) in inputs and id(t) not in dirty:
                outs[i] = _alias(t)
        ctx._saved = ()
        return tuple(outs) if is_tuple else outs[0]
    ctx._next = edges
    ctx._seq = _next_sequence_number()
    if anomaly.enabled:
        ctx._stack = traceback.format_stack()[:-3]
    ctx._inputs = tuple((a._data.shape, a._data.dtype, a.device) if isinstance(a, Tensor)
                        else None for a in args)
    ctx._outputs = tuple((t._data.shape, t._data.dtype, t._backend) if isinstance(t, Tensor)
                         else None for t in outs)
    ctx._single = differentiable[0] if len(differentiable) == 1 else None
    for i, t in enumerate(outs):
        if not isinstance(t, Tensor):
            continue
        if id(t) not in dirty and (id(t) in inputs or t.grad_fn is not None
                                   or t.requires_grad):
            t = outs[i] = _alias(t)  # never re-home a tensor the caller already holds
        if i not in differentiable:
            continue
        node = ctx if ctx._single is not None else OutputSlot._for(ctx, i)
        if id(t) in dirty:
            _rebase_dirty(t, node)
        else:
            t.grad_fn = node
            t.requires_grad = True
    to_save = tuple(ctx._to_save)
    if inference_active.seen:
        refuse_inference_saved(to_save)
    output_ids = {id(t) for t in outs}
    ctx._saved_outputs = frozenset(i for i, t in enumerate(to_save) if id(t) in output_ids)
    # Packed by saved-tensor hooks now that the outputs have their node, as PyTorch does.
    if not (saved_hooks.count and ctx._pack(to_save, ctx._saved_outputs)):
        ctx._saved = to_save
        ctx._versions = tuple(None if t is None else t._vbox[0] for t in to_save)
    return tuple(outs) if is_tuple else outs[0]


def _alias(t: Tensor) -> Tensor:
    """A new tensor on ``t``'s data, sharing its version counter (PyTorch returns a view)."""
    alias = Tensor._make(t._data)
    alias._vbox = t._vbox
    return alias


def _rebase_dirty(t: Tensor, node: Node) -> None:
    """Make ``node`` the history of ``t``, an input forward modified in place."""
    if t._base is None:
        views.set_node(t, node)
        return
    views.check_inplace(t, ())
    views.rebase(t, views.Strided.of(t._data, t._base._data), node)


class OutputSlot(Node):
    """The ``grad_fn`` of output ``output_nr`` of a Function with several differentiable
    outputs: it hands its gradient on to the Function's node, marked with its index.

    (microtorch's graph edges are nodes, one gradient buffer each, so each output needs its
    own; unlike PyTorch, ``a.grad_fn is b.grad_fn`` is False for two such outputs, while names,
    ``next_functions`` and ctx attributes read through to the shared node.)
    """

    lifted = True
    profiled = False  # no event of its own in a profile: PyTorch has one node, the Function's

    @classmethod
    def _for(cls, ctx: Node, index: int) -> OutputSlot:
        slot = cls._make_node((ctx,))
        slot.output_nr = index
        return slot

    @staticmethod
    def backward(slot, grad):
        return (OutputGrads({slot.output_nr: grad}),)

    def name(self) -> str:
        return self._next[0].name()

    def __repr__(self) -> str:
        return repr(self._next[0])

    @property
    def next_functions(self) -> tuple:
        return self._next[0].next_functions

    # Node hooks and metadata belong to the Function's node, as in PyTorch (one node there).
    def register_hook(self, fn):
        return self._next[0].register_hook(fn)

    def register_prehook(self, fn):
        return self._next[0].register_prehook(fn)

    @property
    def metadata(self) -> dict:
        return self._next[0].metadata

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(self._next[0], attr)


def _run_backward(ctx, grad) -> tuple:
    """The user's backward, given the engine's gradient(s) for ``ctx``'s outputs; its result
    checked and fitted to the inputs as PyTorch does."""
    n = len(ctx._outputs)
    if ctx._single is not None:
        grads = [None] * n
        grads[ctx._single] = grad
    else:
        grads = [grad.get(i) for i in range(n)]
    for i, g in enumerate(grads):
        if g is not None and not isinstance(g, Tensor):
            grads[i] = Tensor._make(g)  # a raw array from a lifted backward
        elif g is None and ctx.materialize_grads and ctx._outputs[i] is not None:
            shape, dtype, backend = ctx._outputs[i]
            with backend.context():
                grads[i] = Tensor._make(backend.xp.zeros(shape, dtype=dtype))
    grad = None  # (no stray reference: the engine may adopt a gradient buffer it owns alone)
    result = ctx._forward_cls._user_backward(ctx, *grads)
    grads = None
    if not isinstance(result, tuple):
        result = (result,)
    expected = len(ctx._inputs)
    if len(result) != expected and (len(result) < expected or any(
            g is not None for g in result[expected:])):
        raise RuntimeError(f"function {ctx.name()} returned an incorrect number of gradients "
                           f"(expected {expected}, got {len(result)})")
    out = [_fit_gradient(ctx, i, result[i]) for i in range(expected)]
    return tuple(out[:len(ctx._next)])


def _fit_gradient(ctx, i: int, g):
    """Gradient ``i`` checked against argument ``i``: summed to its shape where it was
    broadcast, cast to its dtype (PyTorch's validate_outputs)."""
    if g is None:
        return None
    if not isinstance(g, Tensor):
        raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
    meta = ctx._inputs[i]
    if meta is None:
        raise RuntimeError(f"function {ctx.name()} returned a gradient different than None at "
                           f"position {i + 1}, but the corresponding forward input was not a "
                           f"Variable")
    if not ctx.needs_input_grad[i]:
        return None
    shape, dtype, device = meta
    if g._data.shape != shape:
        if not _expandable(shape, g._data.shape):
            raise RuntimeError(f"Function {ctx.name()} returned an invalid gradient at index "
                               f"{i} - got {list(g._data.shape)} but expected shape compatible "
                               f"with {list(shape)}")
        g = g.sum_to_size(shape)
    if g.device != device:
        raise RuntimeError(f"Function {ctx.name()} returned an invalid gradient at index {i} - "
                           f"expected device {device} but got {g.device}")
    if g._data.dtype != dtype:
        g = g.to(_dtype.from_numpy_dtype(dtype))
    return g


def _expandable(shape: tuple, target: tuple) -> bool:
    """True when a tensor of ``shape`` broadcasts to ``target``."""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))


class DelayedError(Node):
    """The node given to gradients computed by a ``once_differentiable`` backward under
    create_graph: differentiating them again raises."""

    @staticmethod
    def forward(ctx, *grads):
        return grads[0]._data

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(_ONCE)


def once_differentiable(fn):
    """Decorate a backward that is not itself differentiable: it runs under no_grad, and where
    a double backward would need its result, differentiating it raises instead."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not recording():
            return outputs
        incoming = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        if not incoming:
            return outputs
        single = not isinstance(outputs, tuple)
        wrapped = tuple(DelayedError.apply(g, *incoming) if isinstance(g, Tensor) else g
                        for g in ((outputs,) if single else outputs))
        return wrapped[0] if single else wrapped

    return wrapper


import traceback  # noqa: E402

from .. import _dtype  # noqa: E402
from .._tensor import Tensor  # noqa: E402
from . import forward_mode, views  # noqa: E402
from ._profiler_record import PROCEED as _PROCEED  # noqa: E402
from ._profiler_record import op as _profiler_op  # noqa: E402
from ._profiler_record import state as _profiling  # noqa: E402
from .engine import OutputGrads  # noqa: E402
from .forward_mode import state as _fw_state  # noqa: E402
from .grad_mode import anomaly, inference_active  # noqa: E402
from .node import _FREED, _next_sequence_number, refuse_inference_saved  # noqa: E402
from .saved import hooks as saved_hooks  # noqa: E402
from .saved import unpack_values  # noqa: E402
