"""Carry PyTorch's OpInfo entries over to microtorch: names, functions and sample values.

An OpInfo names its op (``abs``, ``nn.functional.relu``, ``linalg.norm``, ``__radd__``) and
may list aliases; ``resolve`` looks each name up in microtorch's namespaces (the package, its
subpackages, then ``Tensor``), so an op another branch adds is picked up without a list here.
Some OpInfos wrap their op in a lambda written in ``torch.testing`` (``lambda x, shape:
x.view(shape)``, ``lambda x, n: torch.polygamma(n, x)``): ``port`` copies such a function with
its global ``torch`` (and any torch submodule) rebound to microtorch's, so the same lambda
runs on microtorch. ``to_mt`` converts a sample's values (tensors, dtypes, sizes, memory
formats, parameter-free modules, nested lists/tuples/dicts) to microtorch objects on the device
under test. A sparse COO or CSR tensor is carried over as the same sparse tensor (its indices,
values, size, coalesced flag and requires_grad, through microtorch's own constructors), so a
sample's sparse operands reach microtorch's sparse kernels and receive its gradients.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import types
import warnings
import weakref

import numpy as np
import torch

import microtorch as mt


class Unportable(Exception):
    """A value or function of PyTorch that microtorch has no counterpart for."""


def _walk(root, path: str):
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def resolve_name(name: str):
    """microtorch's object for a PyTorch op name (``linalg.norm``, ``abs``, ``__radd__``), or
    None: looked up in the microtorch package first, then on ``Tensor`` (methods, dunders)."""
    found = _walk(mt, name)
    if found is not None and not isinstance(found, (mt.dtype, types.ModuleType)):
        return found
    if "." not in name:
        found = getattr(mt.Tensor, name, None)
        if found is not None:
            return found
    return None


def op_names(op) -> list[str]:
    """The OpInfo's name followed by its aliases' names."""
    return [op.name, *(a.name for a in op.aliases)]


def has_name(op) -> bool:
    """True when microtorch has the op under its name or one of its aliases, or, for an entry
    named after what it samples (``cauchy``) whose op is a torch.testing lambda around an
    in-place method (``Tensor.cauchy_``), when microtorch has that method."""
    if any(resolve_name(n) is not None for n in op_names(op)):
        return True
    return _from_testing(op.op) and variant_function(op.inplace_variant) is not None


def _from_testing(fn) -> bool:
    return isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing")


def op_function(op):
    """microtorch's callable for ``op.op``: a ported copy of a lambda written in torch.testing,
    else the object of the first of the OpInfo's names that microtorch has."""
    if _from_testing(op.op):
        return port(op.op)
    for name in op_names(op):
        found = resolve_name(name)
        if found is not None and callable(found):
            return found
    raise Unportable(f"microtorch has none of {op_names(op)}")


def variant_function(fn):
    """microtorch's callable for an OpInfo's method or in-place variant, or None."""
    if fn is None:
        return None
    if _from_testing(fn):
        return port(fn)
    name = getattr(fn, "__name__", None)
    return getattr(mt.Tensor, name, None) if name else None


@contextlib.contextmanager
def _mt_fork_rng():
    state = mt.get_rng_state()
    try:
        yield
    finally:
        mt.set_rng_state(state)


def _mt_wrapper_set_seed(op, *args, **kwargs):
    # torch.testing's wrapper_set_seed: seed 42 inside a saved-and-restored RNG state.
    with _mt_fork_rng():
        mt.manual_seed(42)
        return op(*args, **kwargs)


# Helpers of torch.testing that touch PyTorch's internals; their microtorch twins.
_TWINS = {"wrapper_set_seed": _mt_wrapper_set_seed}


def _module_twin(module: types.ModuleType):
    name = module.__name__
    if name != "torch" and not name.startswith("torch."):
        return module
    try:
        return importlib.import_module("micro" + name)
    except ImportError as e:
        raise Unportable(f"microtorch has no module {'micro' + name}") from e


def translate(obj):
    """microtorch's counterpart of a global a torch.testing function uses."""
    if isinstance(obj, types.ModuleType):
        return _module_twin(obj)
    if obj is torch.Tensor:
        return mt.Tensor
    if isinstance(obj, types.FunctionType) and obj.__module__.startswith("torch.testing"):
        return _TWINS.get(obj.__name__) or port(obj)
    return to_mt(obj, "cpu", {})


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


class _Absent:
    """Stands for a global microtorch lacks: using it raises ``Unportable``."""

    def __init__(self, why: str) -> None:
        self._why = why

    def __getattr__(self, name: str):
        raise Unportable(self._why)

    def __call__(self, *args, **kwargs):
        raise Unportable(self._why)


# Ported copies by the original function, dropped with it: keyed by the function itself, not
# its id() (the samples' output_process_fn_grad closures are made afresh per sample, and a
# freed one's id is soon another's: an id cache handed svd's sample the identity of another
# entry's sample).
_PORTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def port(fn: types.FunctionType) -> types.FunctionType:
    """A copy of ``fn`` whose globals and closure name microtorch where ``fn``'s name torch."""
    hit = _PORTED.get(fn)
    if hit is not None:
        return hit
    glob = dict(fn.__globals__)
    cells = None
    if fn.__closure__:
        cells = tuple(types.CellType(translate(c.cell_contents)) for c in fn.__closure__)
    new = types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, cells)
    new.__kwdefaults__ = fn.__kwdefaults__
    _PORTED[fn] = new  # before the globals are translated: a recursive helper finds itself
    for name in _code_names(fn.__code__):
        if name in fn.__globals__:
            try:
                glob[name] = translate(fn.__globals__[name])
            except Unportable as e:
                glob[name] = _Absent(str(e))
    return new


def mt_dtype(dtype: torch.dtype):
    """microtorch's dtype of the same name."""
    name = str(dtype).removeprefix("torch.")
    found = getattr(mt, name, None)
    if not isinstance(found, mt.dtype):
        raise Unportable(f"microtorch has no dtype {name}")
    return found


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A tensor's values as a NumPy array (conjugate and negative bits resolved; a gradient
    PyTorch gives as a ZeroTensor as zeros; bfloat16 as float32; a sparse tensor's dense
    values)."""
    t = t.detach()
    if t.layout != torch.strided:
        t = t.to_dense()
    if t._is_zerotensor():
        return np.zeros(tuple(t.shape), dtype=torch.empty(0, dtype=t.dtype).numpy().dtype)
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.resolve_conj().resolve_neg().cpu().numpy()


def to_mt(obj, device: str, memo: dict):
    """``obj`` with every PyTorch value replaced by microtorch's on ``device``. ``memo`` maps
    a torch tensor to its microtorch copy, so a tensor passed twice stays one tensor."""
    if isinstance(obj, torch.Tensor):
        hit = memo.get(id(obj))
        if hit is not None:
            return hit[1]
        if obj.layout in (torch.sparse_coo, torch.sparse_csr):
            out = _sparse_twin(obj, device)
        elif obj.layout != torch.strided or obj.dtype == torch.complex32:
            raise Unportable(f"no NumPy form of a {obj.layout} {obj.dtype} tensor")
        else:
            # (from a copy: a storage handed to NumPy can no longer be resized, and PyTorch's
            # in-place ops that resize their input, addbmm_ of a broadcast input, then raise)
            out = mt.tensor(to_numpy(obj.detach().clone()), dtype=mt_dtype(obj.dtype),
                            device=device, requires_grad=obj.requires_grad)
        memo[id(obj)] = (obj, out)  # the torch tensor is kept alive so its id stays unique
        return out
    if isinstance(obj, torch.dtype):
        return mt_dtype(obj)
    if isinstance(obj, torch.Size):
        return mt.Size(obj)
    if isinstance(obj, torch.device):
        return mt.device(device if obj.type == "cpu" else str(obj))
    if isinstance(obj, (torch.memory_format, torch.layout)):
        name = str(obj).removeprefix("torch.")
        found = getattr(mt, name, None)
        if found is None:
            raise Unportable(f"microtorch has no torch.{name}")
        return found
    if isinstance(obj, torch.Generator):
        raise Unportable("a torch.Generator argument")
    if isinstance(obj, torch.nn.Module):
        return _module_instance(obj)
    if dataclasses.is_dataclass(obj) and type(obj).__module__.startswith("torch.nn."):
        return _dataclass_twin(obj, device, memo)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(to_mt(v, device, memo) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_mt(v, device, memo) for v in obj)
    if isinstance(obj, dict):
        return {k: (_device_arg(v, device) if k == "device" else to_mt(v, device, memo))
                for k, v in obj.items()}
    if isinstance(obj, types.FunctionType) and obj.__module__.startswith("torch.testing"):
        return translate(obj)
    return obj


def _sparse_twin(t: torch.Tensor, device: str):
    """microtorch's sparse tensor of a PyTorch COO or CSR tensor on ``device``: the same
    indices as stored (an uncoalesced COO tensor stays uncoalesced), values, size, dtype and
    requires_grad (a leaf, as the sample's own tensors are)."""
    dtype = mt_dtype(t.dtype)
    size = tuple(t.shape)

    def host(part: torch.Tensor) -> np.ndarray:
        # From a copy: a storage handed to NumPy can no longer be resized, and an ``out=``
        # sample's sparse tensor must grow its indices and values in PyTorch's own call.
        return to_numpy(part.detach().clone())

    with warnings.catch_warnings():  # (PyTorch's beta and invariant-check notices)
        warnings.simplefilter("ignore")
        if t.layout == torch.sparse_coo:
            values = mt.tensor(host(t._values()), dtype=dtype, device=device)
            indices = mt.tensor(host(t._indices()), device=device)
            return mt.sparse_coo_tensor(indices, values, size, check_invariants=False,
                                        is_coalesced=t.is_coalesced(),
                                        requires_grad=t.requires_grad)
        if t.dense_dim():
            raise Unportable("microtorch has no hybrid sparse CSR tensors (dense dimensions)")
        values = mt.tensor(host(t.values()), dtype=dtype, device=device)
        crow = mt.tensor(host(t.crow_indices()), dtype=mt.int64, device=device)
        col = mt.tensor(host(t.col_indices()), dtype=mt.int64, device=device)
        return mt.sparse_csr_tensor(crow, col, values, size, check_invariants=False,
                                    requires_grad=t.requires_grad)


def _module_instance(module: torch.nn.Module):
    """microtorch's module of the same class and settings (a sample's ``distance_function=
    nn.PairwiseDistance()``): parameter-free modules only, their plain attributes copied."""
    cls = getattr(mt.nn, type(module).__name__, None)
    if cls is None or any(True for _ in module.parameters()) or any(
            True for _ in module.buffers()):
        raise Unportable(f"no microtorch twin of the module {type(module).__name__}")
    twin = cls()
    for key, value in vars(module).items():
        if not key.startswith("_") and isinstance(value, (bool, int, float, str, type(None))):
            setattr(twin, key, value)
    return twin


def _dataclass_twin(obj, device: str, memo: dict):
    """microtorch's dataclass of the same name in ``microtorch.nn`` (a sample's
    ``options=nn.LinearCrossEntropyOptions(...)``), its fields converted."""
    cls = getattr(mt.nn, type(obj).__name__, None)
    if cls is None or not dataclasses.is_dataclass(cls):
        raise Unportable(f"no microtorch twin of {type(obj).__name__}")
    return cls(**{f.name: to_mt(getattr(obj, f.name), device, memo)
                  for f in dataclasses.fields(obj)})


def _device_arg(value, device: str):
    # The samples are made for the CPU; a ``device=`` argument names the device under test.
    if isinstance(value, torch.device):
        value = value.type
    return device if value in ("cpu", None) else value
