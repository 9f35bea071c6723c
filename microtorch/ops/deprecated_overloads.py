"""PyTorch's deprecated positional overloads, which old tutorials still use.

``p.data.add_(-lr, p.grad.data)``, ``torch.add(x, 2, y)``, ``x.addcmul_(0.5, a, b)``,
``torch.addmm(beta, m, alpha, a, b)``: a number where PyTorch's current signature takes a
tensor is the old scalar-first form (``tools/autograd/deprecated.yaml`` in PyTorch). PyTorch
2.13 still accepts them, with a deprecation warning naming both signatures; so does
microtorch (once per overload and process; PyTorch warns once for the first of them only).
``install`` wraps the functions and methods that have such an overload; a call in the current
form goes straight through after one type check.
"""

from __future__ import annotations

import functools
import numbers
import warnings

# name -> (the scalar's keyword, the tensors that follow it): op(self, scalar, *tensors)
_SCALAR_FIRST = {"add": ("alpha", ("other",)), "sub": ("alpha", ("other",)),
                 "addcmul": ("value", ("tensor1", "tensor2")),
                 "addcdiv": ("value", ("tensor1", "tensor2"))}
# name -> its two matrix operands: op(beta, self, [alpha,] a, b); as methods (beta, [alpha,] a, b)
_BETA_FIRST = {"addmm": ("mat1", "mat2"), "addmv": ("mat", "vec"), "addr": ("vec1", "vec2"),
               "baddbmm": ("batch1", "batch2"), "addbmm": ("batch1", "batch2")}

_warned: set[str] = set()


def _is_number(x) -> bool:
    return isinstance(x, numbers.Number)


def _warn(name: str, old: list[str], new: list[str], keywords: list[str]) -> None:
    """PyTorch's warning for the overload ``name(old)``; ``new`` are the current signature's
    positional parameters, ``keywords`` its keyword-only ones."""
    signature = f"{name}({', '.join(old)})"
    if signature in _warned:
        return
    _warned.add(signature)
    current = ", ".join([*new, "*", *keywords])
    warnings.warn(f"This overload of {name} is deprecated:\n\t{signature}\nConsider "
                  f"using one of the following signatures instead:\n\t{name}({current})",
                  UserWarning, stacklevel=3)


def _scalar_first(name: str, fn, method: bool):
    scalar, tensors = _SCALAR_FIRST[name.rstrip("_")]
    n = 1 + len(tensors)  # positional arguments after self/input in the old form
    outs = [] if method else ["Tensor out = None"]
    lead = [] if method else ["Tensor input"]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = 1  # args[0] is self (method) or input (function)
        if (len(args) == start + n and _is_number(args[start]) and scalar not in kwargs
                and not any(map(_is_number, args[start + 1:]))):
            _warn(name, [*lead, f"Number {scalar}", *(f"Tensor {t}" for t in tensors), *(
                      ["*", *outs] if outs else [])],
                  [*lead, *(f"Tensor {t}" for t in tensors)], [f"Number {scalar} = 1", *outs])
            return fn(args[0], *args[start + 1:], **{scalar: args[start]}, **kwargs)
        return fn(*args, **kwargs)

    return wrapper


def _beta_first(name: str, fn, method: bool):
    a, b = _BETA_FIRST[name.rstrip("_")]
    outs = [] if method else ["Tensor out = None"]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not (args and _is_number(args[0] if not method else args[1] if len(args) > 1
                                    else None)):
            return fn(*args, **kwargs)
        if method:  # self, beta, [alpha,] a, b
            self, beta, *rest = args
        else:       # beta, input, [alpha,] a, b
            beta, self, *rest = args
        alpha = rest.pop(0) if len(rest) == 3 and _is_number(rest[0]) else None
        if len(rest) != 2 or any(map(_is_number, rest)):
            return fn(*args, **kwargs)  # (not this overload: the op's own error)
        old = ["Number beta", *([] if method else ["Tensor input"]),
               *(["Number alpha"] if alpha is not None else []), f"Tensor {a}", f"Tensor {b}",
               *(["*", *outs] if outs else [])]
        _warn(name, old, [*([] if method else ["Tensor input"]), f"Tensor {a}", f"Tensor {b}"],
              ["Number beta = 1", "Number alpha = 1", *outs])
        extra = {"beta": beta, **({"alpha": alpha} if alpha is not None else {})}
        return fn(self, *rest, **extra, **kwargs)

    return wrapper


def install(namespace: dict, method: bool) -> None:
    """Wrap the ops of ``namespace`` (a module's globals, or the Tensor methods when
    ``method``) that have a deprecated scalar-first overload, in-place methods included."""
    for name in list(namespace):
        base = name.rstrip("_")
        if name.startswith("_") or not callable(namespace[name]) or (
                name != base and not method):
            continue
        if base in _SCALAR_FIRST:
            namespace[name] = _scalar_first(name, namespace[name], method)
        elif base in _BETA_FIRST:
            namespace[name] = _beta_first(name, namespace[name], method)
