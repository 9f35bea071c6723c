"""The autodiff transforms of ``torch.func``: ``grad``, ``grad_and_value``, ``vjp``, ``jvp``,
``jacrev``, ``jacfwd``, ``hessian``, ``linearize`` (PyTorch's ``torch/_functorch/
eager_transforms.py``: arguments, pytrees, output structure and errors as there).

Reverse-mode transforms run microtorch's autograd on fresh leaves (or, for inputs that already
require grad, views of them, so the caller's graph goes on): a transform nested in another
(``grad`` of ``grad``, ``jacrev`` of ``jacrev``) keeps its backward pass recorded so the outer
one can differentiate it, and so does any transform whose function reaches tensors that
require grad from outside (``create_graph`` exactly when something outside may need it).
Forward-mode transforms enter a forward level of their own (``autograd.forward_mode``), so
``jvp`` nests. Jacobians are ``vmap`` over the rows (``jacrev``) or columns (``jacfwd``) of an
identity, as in PyTorch.
"""

from __future__ import annotations

import functools

from .. import ops
from .._tensor import Tensor
from ..autograd import forward_mode
from ..autograd import grad as autograd_grad
from ..autograd.forward_ad import make_dual_at, unpack_dual_at
from ..autograd.grad_mode import enable_grad, recording
from ..utils._pytree import tree_flatten, tree_map, tree_unflatten
from .vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]


# -- arguments ------------------------------------------------------------------------------------
def _wrap_argnum(argnum, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _slice_argnums(args: tuple, argnums, as_tuple: bool = True):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        i = _wrap_argnum(argnums, len(args))
        return (args[i],) if as_tuple else args[i]
    argnums = tuple(_wrap_argnum(a, len(args)) for a in argnums)
    if not argnums:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(args[i] for i in argnums)


def _replace_args(args: tuple, new, argnums) -> tuple:
    if isinstance(argnums, int):
        i = _wrap_argnum(argnums, len(args))
        return tuple(new[0] if j == i else a for j, a in enumerate(args))
    argnums = tuple(_wrap_argnum(a, len(args)) for a in argnums)
    return tuple(new[argnums.index(j)] if j in argnums else a for j, a in enumerate(args))


def _differentiable(x) -> Tensor:
    """A fresh differentiable input for ``x``: a view when ``x`` is in the caller's graph
    already (its gradient then flows on), else a new leaf."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if x.requires_grad:
        return x.view_as(x)
    leaf = x.detach().requires_grad_(True)
    forward_mode.copy_tangents(x, leaf)  # an outer jvp's tangents go on (jacfwd of jacrev)
    return leaf


def _reaches_outside(outputs, inputs) -> bool:
    """True when the graph of ``outputs`` reaches a tensor needing a gradient other than
    ``inputs`` (a tensor the function closed over, or an outer transform's input)."""
    own = {id(t) for t in inputs}
    seen: set = set()
    stack = [o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None]
    while stack:
        node = stack.pop()
        for edge in getattr(node, "_next", ()):
            if edge is None:
                continue
            if isinstance(edge, Tensor):
                if id(edge) not in own:
                    return True
            elif id(edge) not in seen:
                seen.add(id(edge))
                stack.append(edge)
    return False


def _grads(outputs, inputs, grad_outputs, create_graph: bool, retain_graph: bool = False):
    """``autograd.grad`` over the outputs that require grad, zeros where an input is unused
    (PyTorch's ``_autograd_grad``)."""
    if grad_outputs is None:
        pairs = [(o, None) for o in outputs if o.requires_grad]
    else:
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(ops.zeros_like(x) for x in inputs)
    outs = [o for o, _ in pairs]
    gos = None if grad_outputs is None else [g for _, g in pairs]
    result = autograd_grad(outs, list(inputs), gos, retain_graph=retain_graph or create_graph,
                           create_graph=create_graph, allow_unused=True)
    return tuple(ops.zeros_like(x) if g is None else g for g, x in zip(result, inputs))


def _tensors_only(tree):
    """``tree`` checked to hold only tensors (an aux output, as PyTorch unwraps it)."""
    for leaf in tree_flatten(tree)[0]:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    return tree


def _detached(tree, keep: bool):
    """``tree``'s tensors cut from the transform's graph unless ``keep`` (an outer
    transform, or the caller's graph, needs it); tangents of outer ``jvp``s stay, cut too."""
    if keep:
        return tree
    return tree_map(lambda x: _strip(x) if isinstance(x, Tensor) else x, tree)


def _strip(t: Tensor) -> Tensor:
    out = t.detach()
    if t._fw_tangents:
        for level, tangent in t._fw_tangents.items():
            forward_mode.set_tangent(out, level, _strip(tangent))
    return out


def _needs(outer: bool, flat_inputs: list, outputs, new_inputs: list) -> tuple[bool, bool]:
    """(keep the results in the caller's graph, record the backward pass): the graph is kept
    when an input requires grad or the function reached tensors that do (and grad mode is
    on); the backward pass is also recorded while a ``jvp`` is live, so its tangents flow
    through it (``jacfwd(jacrev(f))``)."""
    keep = outer and (any(x.requires_grad for x in flat_inputs)
                      or _reaches_outside(outputs, new_inputs))
    return keep, keep or bool(forward_mode.state.levels)


# -- grad, vjp ------------------------------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux: bool = False):
    """A function returning ``(gradient of func w.r.t. argnums, func's value)`` (with aux:
    ``(gradient, (value, aux))``)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        outer = recording()
        with enable_grad():
            diff = _slice_argnums(args, argnums, as_tuple=False)
            flat_diff, spec = tree_flatten(diff)
            flat_new = [_differentiable(x) for x in flat_diff]
            new_diff = tree_unflatten(flat_new, spec)
            new_args = _replace_args(args, (new_diff,) if isinstance(argnums, int)
                                     else new_diff, argnums)
            output = func(*new_args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(output, tuple) and len(output) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should "
                                       "be a tuple: (output, aux) if has_aux is True")
                output, aux = output
                _tensors_only(aux)
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.dim()} dims. Maybe "
                                   f"you wanted to use the vjp or jacrev APIs instead?")
            keep, record = _needs(outer, flat_diff, (output,), flat_new)
            grads = _grads((output,), flat_new, None, create_graph=record)
        grad_input = _detached(tree_unflatten(list(grads), spec), keep)
        output = _detached(output, keep)
        if has_aux:
            return grad_input, (output, _detached(aux, keep))
        return grad_input, output

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """A function returning the gradient of the scalar ``func`` with respect to the
    arguments ``argnums`` (with aux: ``(gradient, aux)``)."""
    transformed = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = transformed(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def _vjp(func, primals: tuple, argnums=None, has_aux: bool = False):
    outer = recording()
    with enable_grad():
        if argnums is None:
            flat, spec = tree_flatten(primals)
            flat_new = [_differentiable(x) for x in flat]
            new_primals = tree_unflatten(flat_new, spec)
        else:
            diff = _slice_argnums(primals, argnums, as_tuple=False)
            flat, spec = tree_flatten(diff)
            flat_new = [_differentiable(x) for x in flat]
            new_diff = tree_unflatten(flat_new, spec)
            new_primals = _replace_args(primals, (new_diff,) if isinstance(argnums, int)
                                        else new_diff, argnums)
        out = func(*new_primals)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            out, aux = out
            _tensors_only(aux)
        flat_out, out_spec = tree_flatten(out)
        if (len(flat_out) == 1 and flat_out[0] is None) or not flat_out:
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has "
                               f"non-empty output (got output = {flat_out})")
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"vjp(f, *primals): expected f(*primals) to return only "
                                   f"tensors, got unsupported type {type(o)}")
            if not (o.is_floating_point() or o.is_complex()):
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or "
                                   f"complex Tensors, got Tensor with dtype {o.dtype}")
        keep, record = _needs(outer, flat, flat_out, flat_new)

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        if create_graph is None:
            create_graph = recording()
        create_graph = create_graph and (keep or record) or bool(forward_mode.state.levels)
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{_pprint(cot_spec)}, primal output: {_pprint(out_spec)}")
        with enable_grad():
            result = _grads(flat_out, flat_new, flat_cot, create_graph=create_graph,
                            retain_graph=retain_graph)
        return _detached(tree_unflatten(list(result), spec), keep and create_graph)

    return _detached(out, keep), vjp_fn, _detached(aux, keep)


def _pprint(spec) -> str:
    """PyTorch's ``treespec_pprint``: the structure with leaves as ``*``."""
    return repr(tree_unflatten([_Star()] * spec.num_leaves, spec))


class _Star:
    def __repr__(self) -> str:
        return "*"


def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` is the vector-Jacobian product
    with respect to every primal (with aux: ``(output, vjp_fn, aux)``)."""
    out, vjp_fn, aux = _vjp(func, primals, None, has_aux)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


# -- jvp ----------------------------------------------------------------------------------------
_JVP = "jvp(f, primals, tangents)"


def _tensor_list(values: list, name: str) -> None:
    if not values:
        raise RuntimeError(f"{_JVP}: Expected {name} to contain at least one Tensor.")
    for v in values:
        if not isinstance(v, Tensor):
            raise RuntimeError(f"{_JVP}: Expected {name} to only contain Tensors, got "
                               f"{type(v)}")


def _jvp(func, primals, tangents, argnums=None, strict: bool = False, has_aux: bool = False):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to "
                           f"call f(*primals).")
    diff = primals if argnums is None else _slice_argnums(primals, argnums)
    flat_primals, pspec = tree_flatten(diff)
    flat_tangents, tspec = tree_flatten(tangents)
    if pspec != tspec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {pspec} and "
                           f"tangents with structure {tspec}")
    _tensor_list(flat_primals, "primals")
    _tensor_list(flat_tangents, "tangents")
    level = forward_mode.enter_level()
    try:
        duals = tree_unflatten([make_dual_at(p, t, level)
                                for p, t in zip(flat_primals, flat_tangents)], pspec)
        args = duals if argnums is None else _replace_args(primals, duals, argnums)
        result = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(f"{_JVP}: output of function f should be a tuple: (output, "
                                   f"aux) if has_aux is True")
            result, aux = result
            aux = tree_map(lambda x: unpack_dual_at(x, level).primal, _tensors_only(aux))
        flat_out, out_spec = tree_flatten(result)
        if (len(flat_out) == 1 and flat_out[0] is None) or not flat_out:
            raise RuntimeError(f"{_JVP}: Expected f to be a function that has non-empty output "
                               f"(got output = {flat_out})")
        primals_out, tangents_out = [], []
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{_JVP}: expected f(*args) to return only tensors, got "
                                   f"unsupported type {type(o)}")
            primal, tangent = unpack_dual_at(o, level)
            if tangent is None:
                if strict:
                    raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f "
                                       "is independent of the inputs. This is not allowed with "
                                       "strict=True.")
                tangent = ops.zeros_like(primal)
            primals_out.append(primal)
            tangents_out.append(tangent)
    finally:
        forward_mode.exit_level(level)
    out = (tree_unflatten(primals_out, out_spec), tree_unflatten(tangents_out, out_spec))
    return (*out, aux) if has_aux else out


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product by forward-mode AD
    (with aux: ``(output, jvp_out, aux)``)."""
    return _jvp(func, primals, tangents, None, strict, has_aux)


# -- Jacobians and Hessians ---------------------------------------------------------------------
def _no_complex(name: str, values, is_input: bool) -> None:
    for i, v in enumerate(tree_flatten(values)[0]):
        if isinstance(v, Tensor) and v.is_complex():
            kind = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{name}: Expected all {kind} to be real but received complex "
                               f"tensor at flattened input idx: {i}")


def _basis(tensors: list, numels: list, chunk: int | None = None):
    """Chunks of the rows of the identity over the concatenated ``tensors``, as one tensor
    per tensor: ``(rows, *tensor.shape)`` (PyTorch's ``_chunked_standard_basis_for_``)."""
    total = sum(numels)
    size = chunk if chunk and chunk < total else total
    starts = []
    offset = 0
    for n in numels:
        starts.append(offset)
        offset += n
    for lo in range(0, total, size):
        rows = min(size, total - lo)
        chunks = []
        for t, n, start in zip(tensors, numels, starts):
            block = t.new_zeros((rows, n))
            block.diagonal(lo - start).fill_(1)
            chunks.append(block.view((rows, *t.shape)))
        yield tuple(chunks)


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False):
    """The Jacobian of ``func`` with respect to ``argnums`` by reverse mode: ``vmap`` of the
    vjp over the rows of the identity (``chunk_size`` rows at a time)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        _no_complex("jacrev", args, True)
        output, vjp_fn, aux = _vjp(func, args, argnums, has_aux)
        flat_out, out_spec = tree_flatten(output)
        _no_complex("jacrev", flat_out, False)
        numels = [o.numel() for o in flat_out]
        primals = _slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)
        pieces = []
        for chunk in _basis(flat_out, numels, chunk_size):
            if chunk_size == 1:
                chunk = tuple(c.squeeze(0) for c in chunk)
                rows = tree_flatten(vjp_fn(tree_unflatten(list(chunk), out_spec)))[0]
                rows = [r.unsqueeze(0) for r in rows]
            else:
                rows = tree_flatten(vmap(vjp_fn)(tree_unflatten(list(chunk), out_spec)))[0]
            pieces.append(rows)
        per_input = [ops.cat([p[i] for p in pieces], 0) if len(pieces) > 1 else pieces[0][i]
                     for i in range(len(flat_primals))]
        split = [r.split(numels, 0) for r in per_input]
        by_input = [tuple(s.view(tuple(o.shape) + tuple(p.shape)) for s, o in zip(parts, flat_out))
                    for parts, p in zip(split, flat_primals)]
        by_output = [tree_unflatten(list(per_out), primals_spec) for per_out in zip(*by_input)]
        if isinstance(argnums, int):
            by_output = [j[0] for j in by_output]
        result = tree_unflatten(by_output, out_spec)
        return (result, aux) if has_aux else result

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` with respect to ``argnums`` by forward mode: ``vmap`` of the
    jvp over the columns of the identity."""

    @functools.wraps(func)
    def wrapper(*args):
        _no_complex("jacfwd", args, True)
        primals = _slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)
        numels = [p.numel() for p in flat_primals]
        basis = tree_unflatten(list(next(_basis(flat_primals, numels))), primals_spec)

        def push_jvp(basis):
            out = _jvp(func, args, basis, argnums, has_aux=has_aux)
            _no_complex("jacfwd", out[0], False)
            return (out[1], out[2]) if has_aux else out[1]

        results = vmap(push_jvp, randomness=randomness)(basis)
        aux = None
        if has_aux:
            results, aux = results
            flat_aux, aux_spec = tree_flatten(aux)
            aux = tree_unflatten([v[0] for v in flat_aux], aux_spec)
        jac_outs, spec = tree_flatten(results)
        by_output = []
        for jac in jac_outs:
            cols = jac.movedim(0, -1).split(numels, -1)
            per_input = [c.unflatten(-1, tuple(p.shape)) if p.dim() else c.squeeze(-1)
                         for c, p in zip(cols, flat_primals)]
            by_output.append(tree_unflatten(per_input, primals_spec))
        if isinstance(argnums, int):
            by_output = [j[0] for j in by_output]
        result = tree_unflatten(by_output, spec)
        return (result, aux) if has_aux else result

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of ``func`` with respect to ``argnums``: forward over reverse,
    ``jacfwd(jacrev(func))``."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` with ``jvp_fn(*tangents)`` the Jacobian-vector product at
    ``primals`` (each call runs the forward-mode pass again: microtorch traces no graph)."""
    output = func(*primals)
    _, out_spec = tree_flatten(output)
    flat_primals, primals_spec = tree_flatten(primals)
    shapes = [p.shape for p in flat_primals]
    devices = [p.device for p in flat_primals]
    dtypes = [p.dtype for p in flat_primals]

    def jvp_fn(*tangents):
        flat_tangents, tangents_spec = tree_flatten(tangents)
        if tangents_spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {tangents_spec} to have the same argspec "
                               f"as the primals {primals_spec}")
        for i, t in enumerate(flat_tangents):
            for what, got, want in (("shape", t.shape, shapes[i]),
                                    ("device", t.device, devices[i]),
                                    ("dtype", t.dtype, dtypes[i])):
                if got != want:
                    raise RuntimeError(f"tangent:{i} with {what} {got} in flattened pytree "
                                       f"doesn't match the {what} {want} of the corresponding "
                                       f"primal.")
        _, tangents_out = _jvp(func, primals, tangents)
        return tree_unflatten(tree_flatten(tangents_out)[0], out_spec)

    return output, jvp_fn
