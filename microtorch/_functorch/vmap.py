"""``vmap``: run a function on a batch of inputs as if on one sample, with one call per op.

The batched inputs become tensors on ``BatchedArray``s (``batched_array``) through the
``AddBatchDim`` node, the function runs once, and ``RemoveBatchDim`` turns its outputs back
into ordinary tensors with the batch at ``out_dims``. Both are graph nodes (each the other's
backward), so gradients flow through vmap to the caller's tensors. Argument checks, chunking
and the randomness modes follow PyTorch's ``torch/_functorch/vmap.py``; random draws inside
vmap go through the backend's random hook (``backend.base.random_hook``).
"""

from __future__ import annotations

import functools
import itertools
import threading

from .. import ops
from .._tensor import Tensor
from ..autograd import functional as autograd_functional
from ..autograd.function import Function, finish, lift
from ..backend import base as backend_base
from ..backend import xp_of
from ..utils._pytree import broadcast_to_and_flatten, tree_flatten, tree_unflatten
from . import array_rules, index_rules, linalg_rules, shape_rules  # noqa: F401  (rules register)
from .batched_array import (
    SETTLE,
    BatchedArray,
    Level,
    dead_levels,
    live_levels,
    materialize,
    pop_level,
    push_level,
    unwrap,
)

__all__ = ["vmap", "is_batched"]


def is_batched(t: Tensor, level: Level | None = None) -> bool:
    """True for a tensor batched by vmap (at ``level`` when given)."""
    arr = t._data
    if level is None:
        return type(arr) is BatchedArray
    return _batched_at(arr, level)


# -- crossing the vmap boundary -------------------------------------------------------------------
def _to_batched(arr, level: Level, dim: int):
    """``arr`` with its dimension ``dim`` as the batch of ``level``. Arrays batched at levels
    above ``level`` (a backward pass through an earlier vmap, run inside a later one) keep
    those outside: a BatchedArray only ever holds arrays of lower levels."""
    if type(arr) is BatchedArray and arr.level.id > level.id:
        return BatchedArray(_to_batched(arr.phys, level, dim + 1), arr.level)
    phys = arr if dim == 0 else xp_of(arr).moveaxis(arr, dim, 0)
    return BatchedArray(phys, level)


def _from_batched(arr, level: Level, dim: int):
    """``arr`` with the batch of ``level`` as dimension ``dim`` (repeated when ``arr`` does
    not vary over it); batches of higher levels stay."""
    if type(arr) is BatchedArray and arr.level.id > level.id:
        return BatchedArray(_from_batched(arr.phys, level, dim + 1), arr.level)
    phys = unwrap(arr, level)
    if phys is None:  # constant over the batch: every sample's copy of it
        phys = xp_of(arr).ascontiguousarray(materialize(arr, level))
    return phys if dim == 0 else xp_of(phys).moveaxis(phys, 0, dim)


def _batched_at(arr, level: Level) -> bool:
    while type(arr) is BatchedArray and arr.level.id >= level.id:
        if arr.level is level:
            return True
        arr = arr.phys
    return False


class AddBatchDim(Function):
    """Dimension ``dim`` of ``x`` becomes the batch of vmap level ``level``."""

    lifted = True

    @staticmethod
    def forward(ctx, x, dim, level):
        ctx.dim, ctx.level = dim, level
        return _to_batched(x._data, level, dim)

    @staticmethod
    def backward(ctx, grad):
        (g,) = lift(grad)
        if isinstance(g, Tensor):
            return RemoveBatchDim.apply(g, ctx.level, ctx.dim), None, None
        return finish(_from_batched(g, ctx.level, ctx.dim), None, None)


class RemoveBatchDim(Function):
    """The batch of level ``level`` becomes dimension ``dim`` of an ordinary tensor (an
    output that does not vary over the batch is repeated along it)."""

    lifted = True

    @staticmethod
    def forward(ctx, x, level, dim):
        ctx.dim, ctx.level = dim, level
        ctx.batched = _batched_at(x._data, level)
        return _from_batched(x._data, level, dim)

    @staticmethod
    def backward(ctx, grad):
        (g,) = lift(grad)
        if not ctx.batched:  # the repeated output's gradient: summed over the batch
            return finish(g.sum(ctx.dim) if isinstance(g, Tensor) else g.sum(axis=ctx.dim),
                          None, None)
        if isinstance(g, Tensor):
            return AddBatchDim.apply(g, ctx.dim, ctx.level), None, None
        return finish(_to_batched(g, ctx.level, ctx.dim), None, None)


def settle(t: Tensor) -> Tensor:
    """``t`` summed over the samples of every exited vmap it is batched at: the gradient of
    a tensor from outside a vmap, reaching it in a backward pass after the vmap (PyTorch's
    backward sums those on the physical arrays). Differentiable (``create_graph``)."""
    for level in dead_levels(t._data):
        t = RemoveBatchDim.apply(t, level, 0).sum(0)
    return t


SETTLE[0] = settle


# -- randomness --------------------------------------------------------------------------------
_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                 "use the 'same' or 'different' randomness flags on vmap or perform the "
                 "randomness operation out of vmap")
_SHAPE_ARG = {"uniform": 0, "normal": 0, "integers": 2, "bernoulli": 1, "exponential": 0,
              "geometric": 0, "cauchy": 0, "log_normal": 0, "random_bits": 0}


class _Drawing(threading.local):
    busy = False


_drawing = _Drawing()


def _random_draw(backend, name: str, method, args: tuple, kwargs: dict):
    """A backend's random draw under vmap: PyTorch's error in 'error' mode, one value for
    every sample in 'same' mode, a value per sample in 'different' mode (drawn as one
    array with the batch first, as PyTorch draws them)."""
    levels = live_levels()
    if not levels or _drawing.busy:
        return method(backend, *args, **kwargs)
    if any(lv.randomness == "error" for lv in levels):
        raise RuntimeError(_RANDOM_ERROR)
    different = [lv for lv in levels if lv.randomness == "different"]
    _drawing.busy = True
    try:
        if not different:
            return method(backend, *args, **kwargs)
        sizes = tuple(lv.size for lv in different)
        if name in _SHAPE_ARG:
            args = list(args)
            i = _SHAPE_ARG[name]
            if i < len(args):
                args[i] = sizes + tuple(args[i])
            else:
                kwargs = {**kwargs, "shape": sizes + tuple(kwargs["shape"])}
            out = method(backend, *args, **kwargs)
        elif name in ("bernoulli_tensor", "poisson"):
            p = args[0]
            for lv in reversed(different):
                p = materialize(p, lv)
            out = method(backend, p, *args[1:], **kwargs)
        else:  # randperm: one permutation per sample
            n = 1
            for s in sizes:
                n *= s
            draws = [method(backend, *args, **kwargs) for _ in range(n)]
            out = xp_of(draws[0]).stack(draws).reshape(sizes + draws[0].shape)
        return _rewrap(out, different)
    finally:
        _drawing.busy = False


def _rewrap(out, levels: list[Level]):
    """The nested BatchedArrays of a physical ``(B1, ..., Bn, *shape)`` draw: the outermost
    level's batch first."""
    arr = out
    while type(arr) is BatchedArray:
        arr = arr.phys
    for lv in levels:
        arr = BatchedArray(arr, lv)
    return arr


backend_base.random_hook[0] = _random_draw


# -- vmap ---------------------------------------------------------------------------------------
def _name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _check_randomness(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def _check_out_dims(out_dims, func) -> None:
    if isinstance(out_dims, int):
        return
    for leaf in tree_flatten(out_dims)[0]:
        if not (leaf is None or isinstance(leaf, int)):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must "
                             f"be an int, None or a python collection of ints representing "
                             f"where in the outputs the vmapped dimension should appear.")


def _batch_size(flat_in_dims: list, flat_args: list) -> int:
    sizes = [arg.shape[d] for d, arg in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _process_inputs(in_dims, args: tuple, func):
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected "
                         f"`in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to "
                         f"add inputs, or you are trying to vmap over a function with no "
                         f"inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_in_dims = broadcast_to_and_flatten(in_dims, spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is "
                         f"not compatible with the structure of `inputs`. in_dims has "
                         f"structure {tree_flatten(in_dims)[1]} but inputs has structure "
                         f"{spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_in_dims)):
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for an input but in_dim must be either an integer "
                             f"dimension or None.")
        if d is not None and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for an input but the input is of type {type(arg)}. "
                             f"We cannot vmap over non-Tensor arguments, please use None as "
                             f"the respective in_dim")
        if d is not None:
            nd = arg.dim()
            if not -nd <= d < nd:
                raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
                                 f"Got in_dim={d} for some input, but that input is a Tensor "
                                 f"of dimensionality {nd} so expected in_dim to satisfy "
                                 f"-{nd} <= in_dim < {nd}.")
            flat_in_dims[i] = d % nd
    return _batch_size(flat_in_dims, flat_args), flat_in_dims, flat_args, spec


def _remove_batch_dim(name: str, out, level: Level, out_dim):
    if out_dim is None:
        if isinstance(out, Tensor) and is_batched(out, level):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when "
                             f"out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                         f"{type(out)}. Did you mean to set out_dims= to None for output?")
    nd = out.dim() + 1
    if not -nd <= out_dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                         f"{nd - 1}], but got {out_dim})")
    return RemoveBatchDim.apply(out, level, out_dim % nd)


def _unwrap_outputs(outputs, out_dims, level: Level, func):
    flat_outs, spec = tree_flatten(outputs)
    name = _name(func)

    def incompatible():
        return ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                          f"compatible with the structure of `outputs`. out_dims has structure "
                          f"{tree_flatten(out_dims)[1]} but outputs has structure {spec}.")

    if isinstance(outputs, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            flat_out_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_out_dims = list(out_dims)
        else:
            raise incompatible()
    else:
        flat_out_dims = broadcast_to_and_flatten(out_dims, spec)
        if flat_out_dims is None:
            raise incompatible()
    return tree_unflatten([_remove_batch_dim(name, o, level, d)
                           for o, d in zip(flat_outs, flat_out_dims)], spec)


def _flat_vmap(func, batch_size: int, flat_in_dims: list, flat_args: list, spec, out_dims,
               randomness: str, kwargs: dict):
    level = push_level(batch_size, randomness)
    try:
        batched = [a if d is None else AddBatchDim.apply(a, d, level)
                   for a, d in zip(flat_args, flat_in_dims)]
        outputs = func(*tree_unflatten(batched, spec), **kwargs)
        return _unwrap_outputs(outputs, out_dims, level, func)
    finally:
        pop_level(level)


def _chunked_vmap(func, chunk_size: int, batch_size: int, flat_in_dims: list,
                  flat_args: list, spec, out_dims, randomness: str, kwargs: dict):
    sizes = [chunk_size] * (batch_size // chunk_size)
    if batch_size % chunk_size:
        sizes.append(batch_size % chunk_size)
    splits = list(itertools.accumulate(sizes))
    chunks = [a.tensor_split(splits, dim=d) if d is not None else [a] * len(splits)
              for a, d in zip(flat_args, flat_in_dims)]
    from .. import random as mt_random

    state = mt_random.get_rng_state() if randomness == "same" else None
    outputs = []
    for chunk_args in zip(*chunks):
        size = _batch_size(flat_in_dims, list(chunk_args))
        if size == 0:
            continue
        if state is not None:
            mt_random.set_rng_state(state)
        outputs.append(_flat_vmap(func, size, flat_in_dims, list(chunk_args), spec, out_dims,
                                  randomness, kwargs))
    flat_chunks = [tree_flatten(o)[0] for o in outputs]
    out_spec = tree_flatten(outputs[0])[1]
    flat_out_dims = broadcast_to_and_flatten(out_dims, out_spec)
    joined = [ops.cat([c[i] for c in flat_chunks], dim=d)
              for i, d in enumerate(flat_out_dims)]
    return tree_unflatten(joined, out_spec)


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` vectorized over a dimension of its inputs (PyTorch's ``torch.func.vmap``):
    ``in_dims`` says which dimension of each input (a nested tuple matching the inputs, None
    for inputs that are shared), ``out_dims`` where the batch goes in each output;
    ``randomness`` is 'error', 'same' or 'different'; ``chunk_size`` runs the batch in
    chunks of that many samples."""
    _check_randomness(randomness)
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        batch_size, flat_in_dims, flat_args, spec = _process_inputs(in_dims, args, func)
        if chunk_size is not None:
            return _chunked_vmap(func, chunk_size, batch_size, flat_in_dims, flat_args, spec,
                                 out_dims, randomness, kwargs)
        return _flat_vmap(func, batch_size, flat_in_dims, flat_args, spec, out_dims,
                          randomness, kwargs)

    return wrapped


autograd_functional.VMAP[0] = vmap  # autograd.grad(is_grads_batched=True), vectorized jacobians
