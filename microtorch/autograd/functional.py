"""``autograd.functional``: Jacobians, Hessians and their products with vectors (PyTorch's
``torch.autograd.functional``).

``vjp``, ``vhp`` and row-by-row ``jacobian``/``hessian`` run reverse-mode autograd.
``jvp`` and ``hvp`` run forward mode (``autograd.forward_ad``; ``hvp`` forward over reverse);
with ``strict=True`` they use the double-backward trick as PyTorch does, whose strict checks
are phrased for it. ``vectorize=True`` computes a Jacobian with one batched pass (``vmap`` of
the vjp, or with ``strategy="forward-mode"`` of the jvp), as PyTorch does.
"""

from __future__ import annotations

from collections.abc import Callable

# ``vmap``, installed by ``microtorch._functorch.vmap`` (which builds on this package).
VMAP: list = [None]

_STRATEGIES = ("forward-mode", "reverse-mode")


def _tensors(value, what: str, fn: str) -> tuple[bool, tuple]:
    """(was it a tuple, the tensors as a tuple); TypeError naming the first non-tensor."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {what}"
            raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of "
                            f"Tensors but the {where} has type {type(v)}.")
    return is_tuple, values


def _unpack(result, outer: bool, inner: bool | None = None):
    """Undo the tuple wrapping of arguments that were single tensors."""
    if inner is not None and not inner:
        result = tuple(r[0] for r in result)
    return result if outer else result[0]


def _prepare(values: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Inputs the function is differentiated at: new leaves, or (create_graph) views that keep
    the caller's graph so the result can be differentiated further."""
    return tuple(v.view_as(v) if create_graph and v.requires_grad
                 else v.detach().requires_grad_(need_graph) for v in values)


def _finish(values, create_graph: bool):
    if isinstance(values, tuple):
        return tuple(_finish(v, create_graph) for v in values)
    return values if create_graph else values.detach()


def _check_v(v: tuple, other: tuple, other_is_tuple: bool) -> None:
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.shape != b.shape:
            where = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.shape} but got "
                               f"{a.shape}.")


_NOT_REQUIRING = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
               "outputs must be computed in a differentiable manner from the input when running "
               "in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
                   "user-provided function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
                "function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
               "independent of the input. This is not allowed in strict mode. You should ensure "
               "that your function is thrice differentiable and that the hessian depends on the "
               "inputs.",
}


def _strict_requires_grad(values: tuple, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, v in enumerate(values):
        if v is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not v.requires_grad:
            raise RuntimeError(_NOT_REQUIRING[kind].format(i=i))


def _grad(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph: bool = False,
          retain_graph: bool | None = None) -> tuple:
    """autograd.grad over the outputs that require grad (None for every input if none does)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    outs, gos = zip(*kept)
    return grad(outs, inputs, list(gos), retain_graph=retain_graph, create_graph=create_graph,
                allow_unused=True)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
                         "in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward mode "
                         "AD.",
}


def _zeros_for_none(grads: tuple, refs: tuple, strict: bool, create_graph: bool,
                    stage: str) -> tuple:
    """Zeros where a gradient is None (its input was unused), or strict mode's error."""
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = ops.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               f"create_graph=True.")
        out.append(g)
    return tuple(out)


def _vector(v, against: tuple, against_is_tuple: bool, create_graph: bool, fn: str,
            none_message: str):
    if v is None:
        if len(against) != 1 or against[0].numel() != 1:
            raise RuntimeError(none_message)
        return None
    _, v = _tensors(v, "v", fn)
    v = _prepare(v, create_graph, need_graph=False)
    _check_v(v, against, against_is_tuple)
    return v


_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is a "
                 "single Tensor with a single element.")


def vjp(func: Callable, inputs, v=None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        inputs_tuple, inputs = _tensors(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function",
                                          "vjp")
        _strict_requires_grad(outputs, "outputs", strict)
        v = _vector(v, outputs, outputs_tuple, create_graph, "vjp",
                    "The vector v can only be None if the user-provided function returns a "
                    "single Tensor with a single element.")
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "back")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(result, create_graph), inputs_tuple))


def _forward_jvp(func: Callable, inputs: tuple, v: tuple | None, fn: str) -> tuple:
    """(whether the outputs were a tuple, the outputs, their tangents) by forward mode."""
    with forward_ad.dual_level():
        duals = tuple(x if t is None else forward_ad.make_dual(x, t)
                      for x, t in zip(inputs, v or (None,) * len(inputs)))
        if v is None:  # a single one-element input: its tangent is 1
            duals = (forward_ad.make_dual(inputs[0], ops.ones_like(inputs[0])),)
        outputs_tuple, outputs = _tensors(func(*duals), "outputs of the user-provided function",
                                          fn)
        unpacked = [forward_ad.unpack_dual(o) for o in outputs]
    primals = tuple(p for p, _ in unpacked)
    tangents = tuple(ops.zeros_like(p) if t is None else t for p, t in unpacked)
    return outputs_tuple, primals, tangents


def jvp(func: Callable, inputs, v=None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), J v): the Jacobian-vector product, by forward-mode AD (by the
    double-backward trick with ``strict=True``, as PyTorch computes it)."""
    if not strict:
        with enable_grad():
            inputs_tuple, inputs = _tensors(inputs, "inputs", "jvp")
            inputs = _prepare(inputs, create_graph, need_graph=create_graph)
            v = _vector(v, inputs, inputs_tuple, create_graph, "jvp", _V_NONE_INPUT)
            outputs_tuple, outputs, tangents = _forward_jvp(func, inputs, v, "jvp")
        return (_unpack(_finish(outputs, create_graph), outputs_tuple),
                _unpack(_finish(tangents, create_graph), outputs_tuple))
    with enable_grad():
        inputs_tuple, inputs = _tensors(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _vector(v, inputs, inputs_tuple, create_graph, "jvp", _V_NONE_INPUT)
        outputs_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function",
                                          "jvp")
        _strict_requires_grad(outputs, "outputs", strict)
        # J^T u is linear in u: differentiating it with respect to u, against v, gives J v.
        u = tuple(ops.zeros_like(o, requires_grad=True) for o in outputs)
        jtu = _grad(outputs, inputs, u, create_graph=True)
        _strict_requires_grad(jtu, "grad_inputs", strict)
        grads = _grad(jtu, u, v, create_graph=create_graph)
        result = _zeros_for_none(grads, outputs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(result, create_graph), outputs_tuple))


def _check_strategy(strategy: str, vectorize: bool, strict: bool,
                    create_graph: bool = False) -> None:
    if strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` '
                                      'and `strategy="forward-mode"` are not supported together '
                                      '(yet). Please either set `create_graph=False` or '
                                      '`strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and '
                               '`strategy="forward-mode"` are not supported together (yet). '
                               'Please either set `strict=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            # PyTorch's words, its missing space included
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-"
                                      "reverse Hessian isonly implemented for `vectorize=True`.")


def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Tensor | tuple:
    """The Jacobian of ``func`` at ``inputs``: for output i and input j a tensor of shape
    ``outputs[i].shape + inputs[j].shape`` (tuples nested as the arguments were).
    ``vectorize``: one batched backward (or, ``strategy="forward-mode"``, forward) pass."""
    _check_strategy(strategy, vectorize, strict, create_graph)
    if strategy == "forward-mode":
        return _jacobian_forward(func, inputs)
    with enable_grad():
        inputs_tuple, inputs = _tensors(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function",
                                          "jacobian")
        _strict_requires_grad(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either "
                               "set `strict=False` or `vectorize=False`.")
        if vectorize:
            result = _jacobian_vectorized(outputs, inputs, create_graph)
        else:
            result = tuple(_jacobian_of(i, out, inputs, create_graph, strict)
                           for i, out in enumerate(outputs))
    return _unpack(_finish(result, create_graph), outputs_tuple, inputs_tuple)


def _basis(tensors: tuple) -> tuple:
    """Rows of the identity over the concatenated ``tensors``: one ``(N, *t.shape)`` per
    tensor (N: their total number of elements)."""
    numels = [t.numel() for t in tensors]
    total, start, out = sum(numels), 0, []
    for t, n in zip(tensors, numels):
        block = t.new_zeros((total, n))
        block.diagonal(-start).fill_(1)
        out.append(block.view((total, *t.shape)))
        start += n
    return tuple(out)


def _jacobian_vectorized(outputs: tuple, inputs: tuple, create_graph: bool) -> tuple:
    """Every row of the Jacobian in one batched backward pass (``vmap`` of the vjp)."""
    numels = [o.numel() for o in outputs]
    flat = tuple(o.reshape(-1) for o in outputs)
    basis = tuple(b.reshape(b.shape[0], -1) for b in _basis(outputs))
    kept = [(o, g) for o, g in zip(flat, basis) if o.requires_grad]
    if kept:
        rows = grad([o for o, _ in kept], inputs, [g for _, g in kept], retain_graph=True,
                    create_graph=create_graph, allow_unused=True, is_grads_batched=True)
    else:
        rows = (None,) * len(inputs)
    rows = tuple(ops.zeros_like(x).expand((sum(numels), *x.shape)) if r is None else r
                 for r, x in zip(rows, inputs))
    per_input = [[j.view(tuple(o.shape) + tuple(x.shape)) for j, o in
                  zip(r.split(numels, 0), outputs)] for r, x in zip(rows, inputs)]
    return tuple(zip(*per_input))


def _jacobian_forward(func: Callable, inputs) -> Tensor | tuple:
    """The Jacobian by forward mode: ``vmap`` of the jvp over the columns of the identity."""
    inputs_tuple, inputs = _tensors(inputs, "inputs", "jacobian")
    numels = [x.numel() for x in inputs]
    info: list = []

    def push(*tangents):
        outputs_tuple, primals, jv = _forward_jvp(func, inputs, tangents, "jacobian")
        info[:] = [outputs_tuple, primals]
        return jv

    columns = VMAP[0](push)(*_basis(inputs))
    outputs_tuple, outputs = info
    result = tuple(tuple(j.permute(*range(1, j.dim()), 0).reshape(tuple(o.shape) + tuple(x.shape))
                         for j, x in zip(col.split(numels, 0), inputs))
                   for col, o in zip(columns, outputs))
    return _unpack(result, outputs_tuple, inputs_tuple)


def _jacobian_of(i: int, out: Tensor, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """Row by row (one backward per element of ``out``): its Jacobian for each input."""
    rows: list[list[Tensor]] = [[] for _ in inputs]
    flat = out.reshape(-1)
    for k in range(out.numel()):
        grads = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
        for j, (g, x) in enumerate(zip(grads, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is independent "
                                       f"of input {j}. This is not allowed in strict mode.")
                g = ops.zeros_like(x)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"The jacobian of the user-provided function is independent "
                                   f"of input {j}. This is not allowed in strict mode when "
                                   f"create_graph=True.")
            rows[j].append(g)
    return tuple(ops.stack(r).view(tuple(out.shape) + tuple(x.shape)) if r
                 else ops.zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
                 for r, x in zip(rows, inputs))


def _single_output(func: Callable, fn: str, strict: bool):
    """``func`` checked to return one single-element Tensor (for hessian / vhp / hvp)."""

    def checked(*args):
        out = func(*args)
        is_tuple, outs = _tensors(out, "outputs of the user-provided function", fn)
        _strict_requires_grad(outs, "outputs", strict)
        if is_tuple:
            raise RuntimeError(f"The function given to {fn} should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {fn} should "
                               f"contain a single element")
        return out

    return checked


def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Tensor | tuple:
    """The Hessian of the scalar ``func`` at ``inputs`` (for inputs i, j a tensor of shape
    ``inputs[i].shape + inputs[j].shape``): the Jacobian of its gradient."""
    inputs_tuple, inputs = _tensors(inputs, "inputs", "hessian")
    _check_strategy(outer_jacobian_strategy, vectorize, strict, create_graph)
    scalar = _single_output(func, "hessian", strict)

    def gradient(*args):
        if outer_jacobian_strategy == "forward-mode":  # forward over reverse
            args = tuple(a.requires_grad_(True) if a.grad_fn is None else a for a in args)
        first = jacobian(lambda *a: scalar(*a).squeeze(), args, create_graph=True)
        _strict_requires_grad(first, "jacobian", strict)
        return first

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                      vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unpack(result, inputs_tuple, inputs_tuple)


def _gradient_at(func: Callable, inputs, v, create_graph: bool, strict: bool, fn: str):
    """What vhp and hvp start from (under enable_grad): whether the inputs were a tuple, the
    prepared inputs, the checked ``v``, the scalar output and its gradient, kept differentiable
    for the second derivative."""
    inputs_tuple, inputs = _tensors(inputs, "inputs", fn)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    v = _vector(v, inputs, inputs_tuple, create_graph, fn, _V_NONE_INPUT)
    out = _single_output(func, fn, strict)(*inputs)
    first = _grad((out,), inputs, create_graph=True)
    _strict_requires_grad(first, "jacobian", strict)
    return inputs_tuple, inputs, v, out, first


def vhp(func: Callable, inputs, v=None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), v^T H): the vector-Hessian product of the scalar ``func``."""
    with enable_grad():
        inputs_tuple, inputs, v, out, first = _gradient_at(func, inputs, v, create_graph,
                                                           strict, "vhp")
        grads = _grad(first, inputs, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "double_back")
    return _finish(out, create_graph), _unpack(_finish(result, create_graph), inputs_tuple)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), H v): the Hessian-vector product of the scalar ``func``, by forward
    mode over the gradient (by the double-backward trick with ``strict=True``, as PyTorch);
    equal to ``vhp`` for a twice continuously differentiable func."""
    if not strict:
        with enable_grad():
            inputs_tuple, inputs = _tensors(inputs, "inputs", "hvp")
            inputs = _prepare(inputs, create_graph, need_graph=True)
            v = _vector(v, inputs, inputs_tuple, create_graph, "hvp", _V_NONE_INPUT)
            scalar = _single_output(func, "hvp", strict)
            holder: list = []

            def gradient(*args):
                out = scalar(*args)
                holder.append(out)
                return _zeros_for_none(_grad((out,), args, create_graph=True), args, False,
                                       True, "back")

            _, grads, hv = _forward_jvp(
                lambda *a: gradient(*(x.view_as(x) for x in a)), inputs, v, "hvp")
        out = forward_ad.unpack_dual(holder[0]).primal if holder else None
        return _finish(out, create_graph), _unpack(_finish(hv, create_graph), inputs_tuple)
    with enable_grad():
        inputs_tuple, inputs, v, out, first = _gradient_at(func, inputs, v, create_graph,
                                                           strict, "hvp")
        u = tuple(ops.zeros_like(x, requires_grad=True) for x in inputs)
        h_u = _grad(first, inputs, u, create_graph=True)  # H^T u, linear in u
        _strict_requires_grad(h_u, "hessian", strict)
        grads = _grad(h_u, u, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "double_back_trick")
    return _finish(out, create_graph), _unpack(_finish(result, create_graph), inputs_tuple)


__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]

# ops is still being imported when this module is: its functions are read when called.
from .. import ops  # noqa: E402
from .._tensor import Tensor  # noqa: E402
from . import forward_ad, grad  # noqa: E402
from .grad_mode import enable_grad  # noqa: E402
