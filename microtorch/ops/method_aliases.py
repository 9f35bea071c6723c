"""Tensor methods of PyTorch built from existing ops: in-place comparisons (``eq_``, ``lt_``, ...,
writing 1/0 in self's dtype, with a zero gradient as PyTorch's ``EqBackward0``), the alias
names (``greater``, ``less_equal_``, ``divide_``, ``absolute_``, ...), ``addmm_``/``baddbmm_``,
``hardshrink``/``prelu`` and small queries (``is_nonzero``, ``is_signed``, ``itemsize``,
``dim_order``, ``get_device``, ``output_nr``, ...) and legacy names (``volatile``,
``reinforce``, ``record_stream``, ``module_load``, ``as_subclass``).

``methods(existing)`` returns them, given the methods already built (``ops.METHODS`` plus
the in-place forms ``install_tensor_methods`` derived).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from .. import _dtype
from ..autograd.function import Function, named, namespace
from ..autograd.grad_mode import no_grad
from ._util import Tensor, is_scalar
from ._writes import _check_inplace, _frozen, _write

# In-place comparison name -> out-of-place method name.
_COMPARISONS = {"eq_": "eq", "ne_": "ne", "lt_": "lt", "le_": "le", "gt_": "gt", "ge_": "ge"}
# PyTorch's alias -> the method it stands for.
_ALIASES = {
    "greater": "gt", "greater_": "gt_", "greater_equal": "ge", "greater_equal_": "ge_",
    "less": "lt", "less_": "lt_", "less_equal": "le", "less_equal_": "le_",
    "not_equal": "ne", "not_equal_": "ne_", "absolute_": "abs_", "divide_": "div_",
    "multiply_": "mul_", "subtract_": "sub_",
}


class _CompareInPlace(Function):
    """A comparison written into ``x``: 1/0 in ``x``'s dtype; gradients are zeros, as
    PyTorch's ``EqBackward0`` & co give them."""

    @staticmethod
    def forward(ctx, x, other, compare, torch_name):
        ctx.torch_name = torch_name
        ctx.other_shape = tuple(other._data.shape) if isinstance(other, Tensor) else None
        return compare(x, other)._data.astype(x._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        ns = namespace(grad)
        zeros = ns.zeros_like(grad)
        if ctx.other_shape is None:
            return zeros, None, None, None
        if ctx.other_shape == tuple(grad.shape):
            return zeros, ns.zeros_like(grad), None, None
        if isinstance(grad, Tensor):
            other = ns.zeros(ctx.other_shape, dtype=grad.dtype, device=grad.device)
        else:
            other = ns.zeros(ctx.other_shape, dtype=grad.dtype)
        return zeros, other, None, None


def _check_comparison_operand(name: str, other) -> None:
    if not isinstance(other, Tensor) and not is_scalar(other):
        kind = type(other).__name__
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({kind}), "
                        f"but expected one of:\n * (Tensor other)\n      didn't match because "
                        f"some of the arguments have invalid types: (!{kind}!)\n * (Number "
                        f"other)\n      didn't match because some of the arguments have invalid "
                        f"types: (!{kind}!)\n")


def _comparison_inplace(name: str, compare: Callable) -> Callable:
    """``self.<name>(other)``: ``compare(self, other)`` stored in self's dtype."""
    stem = name[:-1].capitalize()

    def method(self: Tensor, other) -> Tensor:
        _check_comparison_operand(name, other)
        if _check_inplace(self, other):  # (PyTorch: ...Backward0 for a number, 1 for a tensor)
            torch_name = stem + ("Backward1" if isinstance(other, Tensor) else "Backward0")
            return _write(self, _CompareInPlace.apply(_frozen(self), other, compare, torch_name))
        with no_grad():
            return _write(self, compare(self, other))

    method.__name__ = name
    method.__doc__ = (f"In-place ``{name[:-1]}``: 1 where it holds, else 0, in self's dtype "
                      f"(``other`` broadcasts to self's shape).")
    return method


def _logical_not_(self: Tensor) -> Tensor:
    """In-place ``logical_not``: 1 where self is zero, else 0, in self's dtype. PyTorch records
    no node for it (self keeps its gradient function)."""
    from .comparison import logical_not

    with no_grad():
        result = logical_not(self)
    _check_inplace(self)
    return _write(self, result)


def _matmul_inplace(name: str, op: Callable) -> Callable:
    """``addmm_``/``baddbmm_``: ``op(self, ...)`` written into self, whose shape it must keep."""

    def method(self: Tensor, a: Tensor, b: Tensor, *, beta=1, alpha=1) -> Tensor:
        recorded = _check_inplace(self, a, b)
        if recorded:
            result = op(_frozen(self), a, b, beta=beta, alpha=alpha)
        else:
            with no_grad():
                result = op(self, a, b, beta=beta, alpha=alpha)
        if result._data.shape != self._data.shape:
            raise RuntimeError(f"Bad in-place call: input tensor size {list(self._data.shape)} "
                               f"and output tensor size {list(result._data.shape)} should match")
        return _write(self, result)

    method.__name__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: self = beta * self + alpha * (a @ b)."
    return method


# -- small queries --------------------------------------------------------------------------------
def is_nonzero(self: Tensor) -> bool:
    """True when the one-element tensor is not zero (PyTorch's errors for other sizes)."""
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


def is_same_size(self: Tensor, other: Tensor) -> bool:
    """True when ``other`` has self's shape."""
    if not isinstance(other, Tensor):
        raise TypeError(f"is_same_size(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(other).__name__}")
    return tuple(self.shape) == tuple(other.shape)


def is_signed(self: Tensor) -> bool:
    """True for signed dtypes: floating, complex and signed integers (not bool or uintN)."""
    dt = self.dtype
    return dt.is_floating_point or dt.is_complex or (dt.is_signed and dt.name != "bool")


def ndimension(self: Tensor) -> int:
    """The number of dimensions (alias of ``dim()``)."""
    return self.dim()


def get_device(self: Tensor) -> int:
    """The CUDA device index, or -1 for a CPU tensor."""
    dev = self.device
    return -1 if dev.type == "cpu" else (dev.index or 0)


def _itemsize(self: Tensor) -> int:
    """Bytes per element (``element_size()``)."""
    return self.element_size()


def _output_nr(self: Tensor) -> int:
    """Which output of its gradient function the tensor is: 0 for leaves and single outputs,
    the position for the views of ``unbind``/``split``/``chunk`` (other multi-output ops here
    give each output a node of its own, so 0)."""
    meta = self.__dict__.get("_vmeta") if self.grad_fn is not None else None
    if isinstance(meta, tuple) and len(meta) > 1 and meta[0] == "multi":
        return int(meta[1])
    return 0


def dim_order(self: Tensor, *, ambiguity_check=False) -> tuple[int, ...]:
    """The dimensions from outermost to innermost in memory (sorted by decreasing stride, ties
    kept in order). ``ambiguity_check`` (True, or a list of memory formats) raises when the order
    is not unique (a tie between strides of dims of size > 1 or size 1), as PyTorch does."""
    from .. import _memory_format as mf

    if not isinstance(ambiguity_check, bool):
        if not isinstance(ambiguity_check, (list, tuple)) or not all(
                isinstance(f, type(mf.contiguous_format)) for f in ambiguity_check):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                            "formats.")
        for fmt in ambiguity_check:
            if self.is_contiguous(memory_format=fmt):
                ndim = self.dim()
                if fmt is mf.contiguous_format:
                    return tuple(range(ndim))
                return (0, *range(2, ndim), 1)
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    strides = self.stride()
    order = tuple(sorted(range(len(strides)), key=lambda d: -strides[d]))
    if ambiguity_check and len(set(strides)) != len(strides):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    return order


def const_data_ptr(self: Tensor) -> int:
    """``data_ptr()`` (PyTorch's read-only-access form)."""
    return self.data_ptr()


def record_stream(self: Tensor, stream) -> None:
    """Mark the tensor's memory as used by ``stream`` (CUDA). Memory here is freed by the
    array library, which orders it on its own streams: a no-op for CUDA tensors; PyTorch's
    error for other arguments."""
    if not (hasattr(stream, "wait_stream") and hasattr(stream, "synchronize")):  # a Stream
        raise RuntimeError("unknown parameter type")
    if self.device.type != "cuda":
        raise RuntimeError("record_stream is only supported on CUDA tensors")


def is_distributed(self: Tensor) -> bool:
    """False: microtorch tensors are never distributed tensors."""
    return False


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """What ``nn.Module.load_state_dict`` swaps in for ``self`` given ``other`` (when swapping
    is on): ``other.detach()`` with ``assign``, else ``self.copy_(other).detach()``."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """The tensor as an instance of Tensor subclass ``cls``, sharing its data and graph node."""
    if not isinstance(cls, type) or not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    out = named(self[...], "AliasBackward0")  # an alias of self
    if cls is not Tensor:
        out.__class__ = cls
    return out


def _volatile(self: Tensor) -> bool:
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def reinforce(self: Tensor, reward) -> None:
    """Removed in PyTorch (use ``torch.distributions``); raises as PyTorch does."""
    raise RuntimeError(
        "reinforce() was removed.\nUse torch.distributions instead.\n"
        "See https://pytorch.org/docs/main/distributions.html\n\nInstead of:\n\n"
        "probs = policy_network(state)\naction = probs.multinomial()\n"
        "next_state, reward = env.step(action)\naction.reinforce(reward)\naction.backward()\n\n"
        "Use:\n\nprobs = policy_network(state)\n# NOTE: categorical is equivalent to what used "
        "to be called multinomial\nm = torch.distributions.Categorical(probs)\n"
        "action = m.sample()\nnext_state, reward = env.step(action)\n"
        "loss = -m.log_prob(action) * reward\nloss.backward()\n")


def hardshrink(self: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0 (``nn.functional.hardshrink``; floating types only)."""
    from .activation import Hardshrink, floating_only

    if not self.is_floating_point():
        floating_only(self, f"hardshrink_{self.device.type}")
    return Hardshrink.apply(self, float(lambd))


def prelu(self: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else weight * x, ``weight`` (one value, or one per channel: dim 1)
    broadcast over the other dims (``nn.functional.prelu``)."""
    from ..autograd.node import ShownNode, edge_of
    from .activation import Prelu

    if self._data.dtype != weight._data.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_dtype.title(self.dtype)} "
                           f"and {_dtype.title(weight.dtype)}")
    n = weight.numel()
    if n != 1:
        if self.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = self.shape[1] if self.ndim >= 2 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {channels}.")
        if weight.ndim != 1:
            raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                               f"ndim = {weight.ndim}")
    w = weight.reshape((n,) + (1,) * (self.ndim - 2) if n != 1 else (1,) * self.ndim)
    shown = ShownNode("ViewBackward0", edge_of(weight)) if weight.requires_grad else None
    return named(Prelu.apply(self, w), "PreluKernelBackward0", self, shown)


def methods(existing: dict[str, Callable]) -> dict[str, object]:
    """The methods above, with the comparison and alias forms built from ``existing``."""
    from .matrix import addmm, baddbmm

    out: dict[str, object] = {name: _comparison_inplace(name, existing[op])
                              for name, op in _COMPARISONS.items()}
    out.update(logical_not_=_logical_not_, addmm_=_matmul_inplace("addmm_", addmm),
               baddbmm_=_matmul_inplace("baddbmm_", baddbmm))
    for alias, name in _ALIASES.items():
        out[alias] = out.get(name) or existing[name]
    out.update(
        is_nonzero=is_nonzero, is_same_size=is_same_size, is_signed=is_signed,
        ndimension=ndimension, get_device=get_device, dim_order=dim_order,
        const_data_ptr=const_data_ptr, record_stream=record_stream,
        is_distributed=is_distributed, module_load=module_load, as_subclass=as_subclass,
        reinforce=reinforce, hardshrink=hardshrink, prelu=prelu,
        itemsize=property(_itemsize, doc="Bytes per element."),
        output_nr=property(_output_nr, doc=_output_nr.__doc__),
        volatile=property(_volatile, doc="Always False (removed in PyTorch; warns)."),
        name=None,
    )
    return out
