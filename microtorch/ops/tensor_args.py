"""PyTorch's TypeError for a non-Tensor where a namespace function requires a Tensor.

PyTorch's argument parser refuses ``torch.atan2(2, t)`` ("atan2(): argument 'input' (position
1) must be Tensor, not int") and, for a function it overloads, ``torch.fmod(2, t)`` ("fmod()
received an invalid combination of arguments - got (int, Tensor), but expected one of: ...").
The ops themselves would compute a result or fail with an AttributeError, so ``install`` wraps
the functions of ``tensor_args_table`` (generated from PyTorch's schemas by
``tests/gen_tensor_args.py``) once: the wrapper checks the listed parameters with
``isinstance`` before the call. Functions that take a number where PyTorch does (``add``,
``mul``, ``pow``, remainder's Scalar-self overload, the deprecated scalar-first forms) are
not in the table, or are wrapped inside ``deprecated_overloads``' translation.
"""

from __future__ import annotations

import functools

from ._util import Tensor
from .tensor_args_table import FUNCTIONS, INTS, SIGNATURES

_MARK = "__tensor_args__"
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python


def type_name(value) -> str:
    """The type's C ``tp_name`` as PyTorch prints it: ``int``, ``numpy.float64``."""
    cls = type(value)
    if cls.__flags__ & _HEAPTYPE or cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def _accepted(value) -> bool:
    """A Tensor, or an object PyTorch's parser hands to ``__torch_function__``."""
    return isinstance(value, Tensor) or hasattr(type(value), "__torch_function__")


def _got(args: tuple, kwargs: dict) -> str:
    """PyTorch's description of the call's types: ``(int, Tensor, out=Tensor)``; it lists the
    keywords last first, each followed by ", " when no positional argument came."""
    named = [f"{k}={type_name(v)}" for k, v in reversed(kwargs.items())]
    if not args:
        return "".join(f"{x}, " for x in named)
    return ", ".join([*(type_name(a) for a in args), *named])


def _params(option: str) -> list[str]:
    """The parameters of a printed signature ``(Tensor input, *, Tensor out = None)``, the
    ``*`` left out (split at the commas outside brackets: defaults may hold tuples)."""
    parts, depth, start = [], 0, 1
    for i, c in enumerate(option[:-1]):
        depth += c in "([" and i > 0
        depth -= c in ")]"
        if c == "," and depth == 0:
            parts.append(option[start:i].strip())
            start = i + 1
    parts.append(option[start:-1].strip())
    return [x for x in parts if x and x != "*"]


def _plausible(options: tuple, n: int) -> list[list[str]]:
    """The signatures a call of ``n`` arguments may mean: PyTorch's parser names the argument
    of the only one such, else lists them all."""
    found = []
    for option in options:
        params = _params(option)
        if sum(" = " not in x for x in params) <= n <= len(params):
            found.append(params)
    return found


def refuse(name: str, params: tuple, listed: int | None, args: tuple, kwargs: dict) -> None:
    """Raise PyTorch's TypeError if a parameter of ``params`` is not a Tensor."""
    options = None if listed is None else SIGNATURES[listed]
    for p, keyword in params:
        if p < len(args):
            value, where = args[p], f" (position {p + 1})"
        elif keyword in kwargs:
            value, where = kwargs[keyword], ""
        else:
            continue
        if _accepted(value):
            continue
        plausible = [] if options is None else _plausible(options, len(args) + len(kwargs))
        if options is None or len(plausible) == 1:
            if plausible and p < len(plausible[0]):  # (that signature's name for it)
                keyword = plausible[0][p].partition(" = ")[0].rpartition(" ")[2]
            raise TypeError(f"{name}(): argument '{keyword}'{where} must be Tensor, not "
                            f"{type_name(value)}")
        expected = options[0] if len(options) == 1 else \
            "one of:\n" + "".join(f" * {o}\n" for o in options)
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({_got(args, kwargs)}), but expected {expected}")


def refuse_bool(name: str, ints: tuple, listed: int | None, args: tuple, kwargs: dict) -> None:
    """Raise PyTorch's TypeError if an int parameter of ``ints`` is given a bool."""
    for p, keyword in ints:
        value = args[p] if p < len(args) else kwargs.get(keyword)
        if value.__class__ is not bool:
            continue
        if listed is None:
            where = f" (position {p + 1})" if p < len(args) else ""
            raise TypeError(f"{name}(): argument '{keyword}'{where} must be int, not bool")
        refuse(name, ((p, keyword),), listed, args, kwargs)  # (a bool is no Tensor either)


def with_tensor_args(name: str, fn, params: tuple, listed: int | None, with_out: tuple = (),
                     ints: tuple = ()):
    """``fn`` that first checks its Tensor parameters ``params`` (``(position, keyword)``),
    and ``with_out`` too in a call with ``out=``; a bool for an int parameter of ``ints``
    (Python's bool is an int, so the ops would take it) is refused as PyTorch's parser does."""
    positions = tuple(p for p, _ in params)
    keywords = frozenset(k for _, k in params)
    out_params = params + with_out
    int_positions = tuple(p for p, _ in ints)
    int_keywords = frozenset(k for _, k in ints)

    # The common call passes Tensors and ints: one class test per listed position.
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        n = len(args)
        for p in positions:
            if p < n and args[p].__class__ is not Tensor and not isinstance(args[p], Tensor):
                refuse(name, params, listed, args, kwargs)
        for p in int_positions:
            if p < n and args[p].__class__ is bool:
                refuse_bool(name, ints, listed, args, kwargs)
        if kwargs:
            if with_out and "out" in kwargs:
                refuse(name, out_params, listed, args, kwargs)
            elif not keywords.isdisjoint(kwargs):
                refuse(name, params, listed, args, kwargs)
            if not int_keywords.isdisjoint(kwargs):
                refuse_bool(name, ints, listed, args, kwargs)
        return fn(*args, **kwargs)

    setattr(wrapper, _MARK, True)
    return wrapper


def install(namespace: dict, space: str = "torch") -> None:
    """Wrap the table's functions of ``space`` ("torch" or "functional") found in
    ``namespace`` (a module's globals); functions already wrapped (also through another
    wrapper's ``functools.wraps``) are left as they are, so installing twice is harmless."""
    for name, entry in FUNCTIONS[space].items():
        fn = namespace.get(name)
        if callable(fn) and not isinstance(fn, type) and not getattr(fn, _MARK, False):
            namespace[name] = with_tensor_args(name, fn, *entry, INTS.get((space, name), ()))
