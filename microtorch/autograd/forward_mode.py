"""Forward-mode AD: tangents carried by tensors and pushed through every op as it runs.

A dual tensor keeps its tangents in ``t._fw_tangents``, one per forward level (``{level id:
tangent}``). While a level is live, ``Node.apply`` hands any op with a tangent-carrying input
to ``apply`` here, which computes the primal as usual and then each output tangent:

- with the op's tangent rule (``forward_rules.RULES``: written with Tensor ops, for the common
  ops), or a user Function's ``jvp``;
- otherwise from the op's own backward, by the transpose trick: the vjp ``u -> J^T u`` is linear
  in ``u``, so ``J t = d/du <J^T u, t>``; one double backward of that single op gives it. Every
  op with a double backward therefore has forward mode (slower than a rule, as correct).

Levels nest (``torch.func.jvp`` inside ``jvp``): the tangent of level L is computed with the
levels from L up hidden (``ceiling``), so it carries the tangents of the outer levels itself
(second-order terms), and the output receives the tangents of the outer levels first, so a
rule reading the output sees them. Tangent rules are recorded by reverse-mode autograd like
any op, so reverse-over-forward (``jacrev(jacfwd(f))``) works, and backward formulas run as
Tensor ops under ``create_graph``, so forward-over-reverse (``jacfwd(jacrev(f))``) does too.
"""

from __future__ import annotations

import itertools
import weakref
from contextlib import contextmanager

__all__ = ["state", "touches", "apply", "apply_user_function", "tangent_of", "set_tangent",
           "copy_tangents",
           "enter_level", "exit_level", "hidden_from"]

_INF = float("inf")


class _State:
    """The live forward levels (ids, outermost first) and the ceiling: levels at or above it
    are invisible (while a tangent of that level is being computed)."""

    def __init__(self) -> None:
        self.levels: list[int] = []
        self.ceiling = _INF
        self.duals: dict[int, list] = {}  # level -> weak references to its dual tensors


state = _State()
_ids = itertools.count()


def enter_level() -> int:
    """Start a forward level; its id."""
    level = next(_ids)
    state.levels.append(level)
    state.duals[level] = []
    return level


def exit_level(level: int) -> None:
    """End ``level`` (the innermost): its tangents are dropped from every tensor."""
    if not state.levels or state.levels[-1] != level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    state.levels.pop()
    for ref in state.duals.pop(level, ()):
        t = ref()
        if t is not None and t._fw_tangents:
            t._fw_tangents.pop(level, None)
            if not t._fw_tangents:
                t._fw_tangents = None


@contextmanager
def hidden_from(level):
    """Hide ``level`` and every level above it (the primal of an op, or a tangent of
    ``level`` being computed)."""
    old = state.ceiling
    state.ceiling = min(old, level)
    try:
        yield
    finally:
        state.ceiling = old


def tangent_of(t, level: int):
    """``t``'s tangent at ``level``, or None."""
    tangents = t._fw_tangents
    return None if tangents is None else tangents.get(level)


def set_tangent(t, level: int, tangent) -> None:
    """Give ``t`` a tangent at ``level`` (None removes it)."""
    tangents = t._fw_tangents
    if tangent is None:
        if tangents:
            tangents.pop(level, None)
            if not tangents:
                t._fw_tangents = None
        return
    if tangents is None:
        tangents = t._fw_tangents = {}
    tangents[level] = tangent
    duals = state.duals.get(level)
    if duals is not None:
        duals.append(weakref.ref(t))


def copy_tangents(src, dst) -> None:
    """Give ``dst`` the tangents of ``src`` (every level: an alias of a dual tensor)."""
    if src._fw_tangents:
        for level, tangent in src._fw_tangents.items():
            set_tangent(dst, level, tangent)


def assign_tangents(dst, src) -> None:
    """An in-place op wrote ``src``'s values into ``dst``: ``dst`` takes ``src``'s tangents
    (zeros for a level ``dst`` had and ``src`` has none at: the values written are
    constants there)."""
    levels = set(dst._fw_tangents or ()) | set(src._fw_tangents or ())
    for level in sorted(levels):
        tangent = tangent_of(src, level)
        if tangent is None:
            tangent = ops.zeros_like(dst)
        elif tangent.dtype != dst.dtype:
            tangent = tangent.to(dst.dtype)
        set_tangent(dst, level, tangent)


def write_through(view) -> None:
    """An in-place op wrote into ``view``: its base's tangents take the view's new tangent in
    the view's region (PyTorch's views share their base's tangent)."""
    base = view._base
    levels = set(view._fw_tangents or ()) | set(base._fw_tangents or ())
    if not levels:
        return
    geom = views.Strided.of(view._data, base._data)
    for level in sorted(levels):
        bt = tangent_of(base, level)
        vt = tangent_of(view, level)
        bt = ops.zeros_like(base) if bt is None else bt
        vt = ops.zeros_like(view) if vt is None else vt
        set_tangent(base, level, views.StridedCopy.apply(bt, geom, "mask")
                    + views.StridedCopy.apply(vt, geom, "scatter"))


def _visible(t) -> list:
    tangents = t._fw_tangents
    if not tangents:
        return []
    ceiling = state.ceiling
    return [lv for lv in tangents if lv < ceiling]


def touches(args: tuple, kwargs: dict) -> bool:
    """True when an argument carries a tangent of a visible level."""
    ceiling = state.ceiling
    for a in itertools.chain(args, kwargs.values()):
        if isinstance(a, Tensor):
            tangents = a._fw_tangents
            if tangents and min(tangents) < ceiling:
                return True
    return False


def _levels_of(values) -> list:
    levels: set = set()
    for a in values:
        if isinstance(a, Tensor):
            levels.update(_visible(a))
    return sorted(levels)


def _differentiable(out) -> bool:
    return isinstance(out, Tensor) and out._data.dtype.kind in "fc" or (
        isinstance(out, Tensor) and str(out._data.dtype) == "bfloat16")


def _fit(tangent, out):
    """A tangent shaped, typed like ``out`` (a rule may give a broadcastable one)."""
    if tangent is None:
        return None
    if tangent.shape != out.shape:
        tangent = tangent.expand(out.shape)
    if tangent.dtype != out.dtype:
        tangent = tangent.to(out.dtype)
    return tangent


def apply(cls, args: tuple, kwargs: dict):
    """``cls.apply(*args, **kwargs)`` for an op with tangent-carrying inputs."""
    levels = _levels_of(itertools.chain(args, kwargs.values()))
    rule = forward_rules.rule_for(cls, args, kwargs)
    node = None
    with hidden_from(levels[0]):
        if rule is not None:
            out = cls.apply(*args, **kwargs)
        else:
            out, node = _apply_keeping_node(cls, args, kwargs)
    if not _differentiable(out):
        return out
    for level in levels:
        with hidden_from(level):
            tangents = [tangent_of(a, level) if isinstance(a, Tensor) else None for a in args]
            if rule is not None:
                tangent = rule(cls, args, kwargs, out, tangents)
            else:
                tangent = _by_double_backward(node, args, out, tangents)
            set_tangent(out, level, _fit(tangent, out))
    node = out.grad_fn
    if node is not None and node._out_data is not None and out._fw_tangents:
        node._out_tangents = out._fw_tangents  # what saved_output gives back
    return out


def _apply_keeping_node(cls, args: tuple, kwargs: dict):
    """The op applied with its floating tensor arguments as leaves that require grad, so it
    keeps a node whose backward gives its vjp; the output is then attached to the caller's
    graph (when that records) or detached from the node."""
    outer = recording()
    aliases = []
    for a in args:
        if isinstance(a, Tensor) and a._data.dtype.kind in "fc":
            alias = Tensor._make(a._data, True, None)
            alias._vbox = a._vbox
            copy_tangents(a, alias)
            aliases.append(alias)
        else:
            aliases.append(a)
    with enable_grad():
        out = cls.apply(*aliases, **kwargs)
    node = out.grad_fn
    needs = outer and any(isinstance(a, Tensor) and a.requires_grad for a in args)
    if node is None:
        return out, None
    if needs:
        node._next = tuple(edge_of(a) for a in args[:len(node._next)])
    else:
        out.grad_fn = None
        out.requires_grad = False
    return out, node


def _by_double_backward(node, args: tuple, out, tangents: list):
    """J t from the op's vjp: d/du sum_i <vjp_i(u), t_i>, at u = 1.

    The vjp is linear in u, so any point gives the slope; not u = 0, where a backward's
    short-cut for a zero gradient (PyTorch's ``xlogy(grad, y)`` is 0 where grad == 0) would
    hide it."""
    if node is None or all(t is None for t in tangents):
        return None
    if out._data.dtype.kind == "c":
        raise NotImplementedError(f"forward-mode AD of {node.name()} on complex tensors is not "
                                  f"implemented")
    create = recording()
    with enable_grad():
        u = ops.ones_like(out).requires_grad_(True)
        grads = node.backward(node, u)
        if not isinstance(grads, tuple):
            grads = (grads,)
        total = None
        for g, t in zip(grads, tangents):
            if g is None or t is None:
                continue
            if not isinstance(g, Tensor):
                g = Tensor._make(g)
            term = (g * t).sum()
            total = term if total is None else total + term
        if total is None:
            return None
        if not total.requires_grad:  # a backward that is not differentiable: no forward mode
            raise NotImplementedError(f"Trying to use forward AD with {node.name()} that does "
                                      f"not support it: its backward is not differentiable")
        (jt,) = grad_fn_grad((total,), (u,), create_graph=create, allow_unused=True)
    return jt


def apply_user_function(cls, args: tuple, kwargs: dict, run):
    """A user Function with tangent-carrying inputs: ``run()`` does the forward (tangents
    hidden) and returns (ctx, outputs); the user's ``jvp(ctx, *tangents)`` gives the output
    tangents (zeros for tensor inputs without one, None for other arguments)."""
    levels = _levels_of(itertools.chain(args, kwargs.values()))
    with hidden_from(levels[0]):
        ctx, outputs = run()
    if not isinstance(outputs, tuple):
        single, outs = True, (outputs,)
    else:
        single, outs = False, outputs
    from .function import Function

    if cls.jvp is Function.jvp:
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")
    for level in levels:
        with hidden_from(level):
            tangents = []
            for a in args:
                if isinstance(a, Tensor):
                    t = tangent_of(a, level)
                    tangents.append(t if t is not None else ops.zeros_like(a))
                else:
                    tangents.append(None)
            ctx._in_jvp = True
            try:
                result = cls.jvp(ctx, *tangents)
            finally:
                ctx._in_jvp = False
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) != len(outs):
            raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number "
                               f"of forward gradients (expected {len(outs)}, got "
                               f"{len(result)})")
        for o, t in zip(outs, result):
            if t is not None and _differentiable(o):
                set_tangent(o, level, _fit(t, o))
    return outs[0] if single else outs


from .. import ops  # noqa: E402
from .._tensor import Tensor  # noqa: E402
from . import forward_rules, views  # noqa: E402
from .grad_mode import enable_grad, recording  # noqa: E402
from .node import edge_of  # noqa: E402


def grad_fn_grad(outputs, inputs, **kwargs):
    """``autograd.grad`` (imported late: the package imports this module)."""
    from . import grad

    return grad(outputs, inputs, **kwargs)
