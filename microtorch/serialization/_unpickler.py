"""Unpicklers for checkpoints: the restricted ``weights_only`` one, and the full one.

``weights_only=True`` (the default, as in PyTorch >= 2.6) admits only PyTorch's allowlist:
tensors and storages (through PyTorch's rebuild functions), ``OrderedDict``, ``Counter``,
sets, ``bytearray``, ``complex``, bytes (``_codecs.encode``), dtypes, devices, sizes and
primitive values, plus numeric NumPy arrays and scalars (``_numpy_globals``: PyTorch would
want them allowed first) and the globals a user allows with ``add_safe_globals`` /
``safe_globals``.  Any other global is refused before it is imported, naming it and telling
how to allow it.  The opcodes that would call or mutate something are restricted too: no
tensor constructor can be called, items are only set on dicts and appended to lists, and
``BUILD`` only fills an ``OrderedDict``/``Counter`` or an instance of an allowed class.  The
pure-Python unpickler runs it (it needs no recursion, so deep nesting cannot crash it), and
the nesting of what it produces is bounded (hashing or printing a million-deep tuple would).

``weights_only=False`` runs the ordinary unpickler, which can execute code from the file:
use it only for trusted files.  PyTorch names map to their microtorch equivalents.
"""

from __future__ import annotations

import _compat_pickle
import collections
import contextlib
import importlib
import io
import pickle
from collections.abc import Iterable
from typing import Any

from .._tensor import Size, Tensor
from ..backend.device import device as Device
from ._errors import WeightsOnlyError
from ._names import dtype_of_storage_class, storage_class_names, torch_dtype_names
from ._numpy_globals import build_numpy, numpy_globals
from ._rebuild import LoadContext, StorageClass

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals"]

MAX_NESTING = 200  # containers inside containers: far beyond any state dict
_user_globals: list[Any] = []


# ------------------------------------------------------------------------- safe globals


def add_safe_globals(safe_globals: Iterable[Any]) -> None:
    """Allow these classes/functions in ``weights_only`` loads (each an object, or a tuple
    ``(object, "module.name")`` naming where the checkpoint refers to it)."""
    for entry in safe_globals:
        if isinstance(entry, tuple) and (len(entry) != 2 or not isinstance(entry[1], str)):
            raise TypeError(f"a safe global is an object or (object, 'module.name'), got "
                            f"{entry!r}")
        _user_globals.append(entry)


def get_safe_globals() -> list[Any]:
    """The globals ``add_safe_globals`` allowed (beyond the default allowlist)."""
    return list(_user_globals)


def clear_safe_globals() -> None:
    """Forget every global ``add_safe_globals`` allowed."""
    _user_globals.clear()


class safe_globals(contextlib.ContextDecorator):  # noqa: N801 - mirrors torch.serialization
    """Context manager (or decorator): these globals are allowed inside the block only."""

    def __init__(self, safe_globals: Iterable[Any]) -> None:
        self.safe_globals = list(safe_globals)

    def __enter__(self) -> None:
        self._saved = list(_user_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc) -> None:
        _user_globals[:] = self._saved


def _qualified_name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _user_allowed() -> dict[str, Any]:
    allowed = {}
    for entry in _user_globals:
        obj, name = entry if isinstance(entry, tuple) else (entry, _qualified_name(entry))
        allowed[name] = obj
    return allowed


# ------------------------------------------------------------------ the default allowlist


def _bytearray(*args):
    """``bytearray`` as pickles use it (from bytes): never ``bytearray(huge_number)``."""
    if args and not isinstance(args[0], (bytes, bytearray)):
        raise WeightsOnlyError("bytearray may only be rebuilt from bytes")
    return bytearray(*args)


def _bytes(*args) -> bytes:
    """``bytes()`` as protocol-2 pickles write an empty bytes object: never ``bytes(n)``."""
    if args and not isinstance(args[0], (bytes, bytearray)):
        raise WeightsOnlyError("bytes may only be rebuilt empty or from bytes")
    return bytes(*args)


def _encode(obj, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """``_codecs.encode`` as protocol-2 pickles use it for bytes (a str in latin-1)."""
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8") \
            or errors != "strict":
        raise WeightsOnlyError("_codecs.encode may only encode a str to bytes")
    return obj.encode(encoding)


def torch_globals(ctx: LoadContext) -> dict[str, Any]:
    """PyTorch's default allowlist, each name mapped to what it means in microtorch."""
    from ..nn.parameter import Parameter

    names: dict[str, Any] = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "builtins.set": set,
        "builtins.frozenset": frozenset,
        "builtins.bytearray": _bytearray,
        "builtins.bytes": _bytes,
        "builtins.complex": complex,
        "_codecs.encode": _encode,
        "torch._utils._rebuild_tensor": ctx.rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": ctx.rebuild_tensor_v2,
        "torch._utils._rebuild_parameter": ctx.rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": ctx.rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": ctx.rebuild_from_type_v2,
        "torch._utils._rebuild_sparse_tensor": ctx.rebuild_sparse_tensor,
        "torch.serialization._get_layout": ctx.get_layout,
        "torch.device": Device,
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.nn.parameter.Parameter": Parameter,
    }
    for storage in storage_class_names():
        names[f"torch.{storage}"] = StorageClass(storage, dtype_of_storage_class(storage))
    uint8 = dtype_of_storage_class("ByteStorage")
    names["torch.UntypedStorage"] = names["torch.storage.UntypedStorage"] = \
        StorageClass("UntypedStorage", uint8)
    for name, dtype in torch_dtype_names().items():
        names[f"torch.{name}"] = dtype
    return names


def _compat_name(proto: int, module: str, name: str) -> tuple[str, str]:
    """Python 2 names in protocol < 3 pickles, mapped as the standard unpickler maps them."""
    if proto < 3:
        if (module, name) in _compat_pickle.NAME_MAPPING:
            return _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    return module, name


# -------------------------------------------------------------------------- weights only


def unsupported_global_message(full: str) -> str:
    return (f"Unsupported global: GLOBAL {full} was not an allowed global by default. "
            f"Please use `microtorch.serialization.add_safe_globals([{full}])` or the "
            f"`microtorch.serialization.safe_globals([{full}])` context manager to allowlist "
            f"this global if you trust this class/function. Re-running `microtorch.load` with "
            f"`weights_only=False` will likely succeed, but it can result in arbitrary code "
            f"execution: do it only if you got the file from a trusted source.")


def check_nesting(obj: Any, limit: int = MAX_NESTING) -> None:
    """UnpicklingError if containers nest deeper than ``limit`` (walked without recursion;
    a node reached again by a deeper path is walked again, so sharing cannot hide depth).
    A reference back to a container that encloses it (``d["me"] = d``) is a cycle, not
    nesting: pickle's memo rebuilds it, as PyTorch loads it."""
    deepest: dict[int, int] = {}
    enclosing: set[int] = set()  # the containers on the path from obj to the current node
    stack: list[tuple[Any, int, bool]] = [(obj, 1, False)]
    while stack:
        node, depth, leaving = stack.pop()
        if leaving:
            enclosing.discard(id(node))
            continue
        if not isinstance(node, (list, tuple, dict, set, frozenset)) or id(node) in enclosing:
            continue
        if depth > limit:
            raise WeightsOnlyError(f"containers are nested more than {limit} levels deep")
        if deepest.get(id(node), 0) >= depth:
            continue
        deepest[id(node)] = depth
        enclosing.add(id(node))
        stack.append((node, depth, True))
        children = (*node, *node.values()) if isinstance(node, dict) else node
        stack.extend((v, depth + 1, False) for v in children)


_Base = pickle._Unpickler  # the pure-Python unpickler: its opcodes can be overridden one by one


class WeightsUnpickler(_Base):
    """The restricted unpickler of ``weights_only=True`` loads."""

    dispatch = _Base.dispatch.copy()

    def __init__(self, data: bytes, ctx: LoadContext) -> None:
        super().__init__(io.BytesIO(data))
        self._allowed = {**torch_globals(ctx), **numpy_globals(), **_user_allowed()}
        self._user_classes = tuple(v for v in _user_allowed().values() if isinstance(v, type))
        self.persistent_load = ctx.persistent_load

    def find_class(self, module: str, name: str) -> Any:
        module, name = _compat_name(self.proto, module, name)
        full = f"{module}.{name}"
        if full not in self._allowed:
            raise WeightsOnlyError(unsupported_global_message(full))
        return self._allowed[full]

    def load(self) -> Any:
        result = super().load()
        check_nesting(result)
        return result

    # -- opcodes that call or mutate ----------------------------------------------------------
    def _check_callable(self, func: Any, args: Any) -> None:
        if isinstance(func, type) and issubclass(func, Tensor):
            raise WeightsOnlyError(f"calling the constructor of {func.__name__} is not "
                                   f"allowed in a weights_only load")
        if func in (collections.OrderedDict, collections.Counter, set, frozenset):
            check_nesting(args, MAX_NESTING)  # before their items get hashed

    def load_reduce(self) -> None:
        self._check_callable(self.stack[-2], self.stack[-1])
        _Base.load_reduce(self)

    def load_newobj(self) -> None:
        self._check_callable(self.stack[-2], self.stack[-1])
        _Base.load_newobj(self)

    def load_newobj_ex(self) -> None:
        self._check_callable(self.stack[-3], self.stack[-2:])
        _Base.load_newobj_ex(self)

    def load_build(self) -> None:
        state, inst = self.stack[-1], self.stack[-2]
        if type(inst) in (collections.OrderedDict, collections.Counter):
            if isinstance(state, tuple) and len(state) == 2 and state[1] is None:
                state = state[0]
            if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
                raise WeightsOnlyError(f"invalid BUILD state for {type(inst).__name__}")
            self.stack.pop()
            inst.__dict__.update(state)
            return
        if self._user_classes and isinstance(inst, self._user_classes):
            _Base.load_build(self)
            return
        if build_numpy(inst, state):
            self.stack.pop()
            return
        raise WeightsOnlyError(f"BUILD of a {type(inst).__name__} is not allowed in a "
                                     f"weights_only load (only OrderedDict, Counter and "
                                     f"classes allowed by add_safe_globals)")

    def _target(self, kinds: tuple[type, ...], what: str, depth: int) -> Any:
        target = self.stack[-depth]
        if type(target) not in kinds and not (self._user_classes and
                                              isinstance(target, self._user_classes)):
            raise WeightsOnlyError(f"can only {what} {' or '.join(k.__name__ for k in kinds)}"
                                         f", got {type(target).__name__}")
        return target

    def load_append(self) -> None:
        self._target((list,), "append to", 2)
        _Base.load_append(self)

    def load_appends(self) -> None:
        if not self.metastack or type(self.metastack[-1][-1]) is not list:
            raise WeightsOnlyError("can only append to list")
        _Base.load_appends(self)

    def load_setitem(self) -> None:
        check_nesting(self.stack[-2])
        self._target((dict, collections.OrderedDict, collections.Counter), "set items of", 3)
        _Base.load_setitem(self)

    def load_setitems(self) -> None:
        if not self.metastack or type(self.metastack[-1][-1]) not in (
                dict, collections.OrderedDict, collections.Counter):
            raise WeightsOnlyError("can only set items of dict, OrderedDict or Counter")
        check_nesting(self.stack)
        _Base.load_setitems(self)

    def load_additems(self) -> None:
        if not self.metastack or type(self.metastack[-1][-1]) is not set:
            raise WeightsOnlyError("can only add items to set")
        check_nesting(self.stack)
        _Base.load_additems(self)

    def load_frozenset(self) -> None:
        check_nesting(self.stack)
        _Base.load_frozenset(self)

    def load_dict(self) -> None:
        check_nesting(self.stack)
        _Base.load_dict(self)

    def load_ext1(self) -> None:
        raise WeightsOnlyError("extension codes (EXT opcodes) are not allowed")

    load_ext2 = load_ext4 = load_ext1

    for _code, _method in ((pickle.REDUCE, load_reduce), (pickle.NEWOBJ, load_newobj),
                           (pickle.NEWOBJ_EX, load_newobj_ex), (pickle.BUILD, load_build),
                           (pickle.APPEND, load_append), (pickle.APPENDS, load_appends),
                           (pickle.SETITEM, load_setitem), (pickle.SETITEMS, load_setitems),
                           (pickle.ADDITEMS, load_additems), (pickle.FROZENSET, load_frozenset),
                           (pickle.DICT, load_dict), (pickle.EXT1, load_ext1),
                           (pickle.EXT2, load_ext1), (pickle.EXT4, load_ext1)):
        dispatch[_code[0]] = _method
    del _code, _method


# --------------------------------------------------------------------------------- full


class FullUnpickler(pickle.Unpickler):
    """The ordinary unpickler (``weights_only=False``): runs whatever the file asks for."""

    def __init__(self, data: bytes, ctx: LoadContext) -> None:
        super().__init__(io.BytesIO(data))
        self._torch = torch_globals(ctx)
        self._ctx = ctx

    def persistent_load(self, pid: Any) -> Any:
        return self._ctx.persistent_load(pid)

    def find_class(self, module: str, name: str) -> Any:
        full = f"{module}.{name}"
        if full in self._torch:
            return self._torch[full]
        if module == "torch" or module.startswith("torch."):
            try:
                obj = importlib.import_module("micro" + module)
                for part in name.split("."):
                    obj = getattr(obj, part)
                return obj
            except (ImportError, AttributeError):
                raise pickle.UnpicklingError(f"the checkpoint refers to {full}, which has no "
                                             f"microtorch equivalent") from None
        return super().find_class(module, name)
