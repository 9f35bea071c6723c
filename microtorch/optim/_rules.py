"""The shared machinery of the element-wise optimizers: one per-parameter loop with PyTorch's
lazy state, and the array rules the presets are built from.

Every rule works on the backend arrays of one parameter (``xp`` is NumPy or CuPy, taken from
the parameter), in place, in PyTorch's single-tensor operation order, with scalars kept as
Python floats so that float32 stays float32. The optimizers in ``adam_family``, ``adaptive``,
``averaged``, ``rmsprop`` and ``adagrad`` are presets: a set of defaults, the names of their
state arrays, and a rule. (SGD and Adam/AdamW keep their own loops: their CUDA steps run the
fused multi-tensor kernels.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._tensor import Tensor
from ..backend import aten_arith
from ..ops._util import xp_of
from .optimizer import Optimizer, _as_real_1d, _decayed_grad, _increment, _step_tensor

__all__ = ["ElementwiseOptimizer", "ema_square_", "addcdiv_", "effective_grad",
           "scalar_state", "loaded_scalar", "compat_doc", "multi_tensor"]

# What PyTorch's storage and compilation keywords do here; appended to each preset's docstring.
_COMPAT_DOC = """
    ``foreach`` and ``flat_grads`` choose the gradient storage strategy (see ``Optimizer``).
    ``foreach`` also chooses PyTorch's formula: ``foreach=True`` (and ``None`` on CUDA, as in
    PyTorch) follows its ``_multi_tensor_*`` step, the others its ``_single_tensor_*`` one;
    they round differently for ASGD, NAdam and RAdam, and give the same bits for the rest.
    On CUDA the same per-array CuPy code runs (these optimizers have no multi-tensor kernel).
    ``capturable`` is accepted and stored in the param groups, as in PyTorch, but microtorch
    has no graph capture: the update is PyTorch's ``capturable=False`` formula and the step
    counters stay 0-d float32 CPU tensors.
    ``differentiable=True`` (autograd through the step) is not supported and raises ValueError.
"""


def compat_doc(cls: type) -> type:
    """Class decorator: append the meaning of ``foreach``/``flat_grads``/``capturable``/
    ``differentiable`` in microtorch to the optimizer's docstring."""
    cls.__doc__ = (cls.__doc__ or "") + _COMPAT_DOC
    return cls


def scalar_state(value: float) -> Tensor:
    """A 0-d float32 CPU state tensor (PyTorch's ``step``, ``mu_product``, ``eta``, ``mu``)."""
    return Tensor._make(np.array(value, dtype=np.float32))


def loaded_scalar(index, key: str, value) -> np.ndarray:
    """A scalar state entry of a loaded state dict as a 0-d host array (a tensor's data brought
    to the CPU); a ValueError naming the entry when it holds more than one value."""
    if isinstance(value, Tensor):
        value = value._backend.to_numpy(value._data)
    arr = np.asarray(value)
    if arr.shape != ():
        raise ValueError(f"state {key!r} of parameter {index!r} must be a scalar, got "
                         f"shape {list(arr.shape)}")
    return arr


def effective_grad(xp, p, g, *, lr: float, weight_decay: float, decoupled: bool,
                   maximize: bool):
    """The gradient the moments see: negated with ``maximize``; weight decay either added to
    it (``grad + wd * param``) or, ``decoupled``, applied to the parameter in place
    (``param *= 1 - lr * wd``, AdamW-style)."""
    if decoupled:
        if weight_decay != 0:
            p *= 1.0 - lr * weight_decay
        return xp.negative(g) if maximize else g
    return _decayed_grad(xp, p, g, weight_decay, maximize)


def ema_square_(avg, g, beta: float, kernels=None) -> None:
    """``avg.mul_(beta).addcmul_(g, g, value=1 - beta)`` in place: the running square average
    of RMSprop, Adam's second moment and both Adadelta accumulators (``kernels``: the compiled
    ones chosen for the step, or None)."""
    avg *= beta
    aten_arith.addcmul_(avg, g, g, 1.0 - beta, kernels)  # (addcmul's FMA)


def multi_tensor(group: dict[str, Any], params: list[Tensor]) -> bool:
    """Whether PyTorch steps ``group`` with its multi-tensor formula (``_multi_tensor_*``):
    ``foreach=True``, or ``foreach=None`` on CUDA (its default there; on the CPU None means
    the single-tensor loop). Where the two formulas round differently (ASGD, NAdam, RAdam)
    microtorch follows the one PyTorch would run."""
    foreach = group.get("foreach")
    return bool(foreach) or (foreach is None and bool(params) and params[0].is_cuda)


def addcdiv_(p, t1, t2, value: float) -> None:
    """``p.addcdiv_(t1, t2, value=value)``: ``p + (value * t1) / t2`` (PyTorch's order)."""
    xp = xp_of(p)
    update = xp.multiply(t1, value)
    update /= t2
    p += update


class ElementwiseOptimizer(Optimizer):
    """An optimizer whose step is one rule applied to each parameter that has a gradient.

    A preset declares ``_arrays`` (its state arrays, shaped like the parameter, created on the
    first step in this order after ``step``), ``_scalars`` (extra 0-d float32 state) and the
    rule ``_update(p, g, arrays, state, step, options)``, where ``options`` comes once per
    group from ``_options(group)``, with two entries added for the step: ``kernels`` (the
    compiled kernels for its multiply-adds, chosen once by all its elements, or None) and
    ``multi_tensor`` (:func:`multi_tensor`). As in PyTorch the state of a parameter is created
    on its first step with a gradient, and ``step`` counts only those steps.
    """

    _arrays: tuple[str, ...] = ()
    _scalars: tuple[str, ...] = ()

    def __init__(self, params, defaults: dict[str, Any], *, flat_grads: bool = False) -> None:
        if defaults.get("differentiable"):
            raise ValueError(f"microtorch's {type(self).__name__} does not support "
                             f"differentiable=True (no autograd through optimizer steps)")
        super().__init__(params, defaults, flat_grads=flat_grads)

    def _array_keys(self, group: dict[str, Any]) -> tuple[str, ...]:
        """The state arrays of a parameter in ``group`` (some presets' depend on options)."""
        return self._arrays

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", *self._scalars, *self._array_keys(group))

    def _initial_fill(self, key: str, group: dict[str, Any]) -> float:
        """The value a new state array starts at (zero unless a preset says otherwise). For a
        complex parameter a value v fills both parts, v + vj, as PyTorch starts Rprop's step
        sizes and Adagrad's sums: the update runs on the real view, one element per part."""
        return 0.0

    def _initial_scalars(self, group: dict[str, Any]) -> dict[str, float]:
        """The starting values of the ``_scalars`` state entries."""
        return {}

    def _init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            for key, value in self._initial_scalars(group).items():
                state[key] = scalar_state(value)
            for key in self._array_keys(group):
                fill = self._initial_fill(key, group)
                if p._data.dtype.kind == "c":
                    fill = complex(fill, fill)
                state[key] = self._state_tensor(p, fill)
        return state

    def _load_state_value(self, index, key: str, value, p: Tensor):
        """As ``Optimizer._load_state_value``; the ``_scalars`` entries become 0-d float32 CPU
        tensors (PyTorch keeps them float32 whatever the parameter's dtype)."""
        if key in self._scalars:
            return scalar_state(float(loaded_scalar(index, key, value)))
        return super()._load_state_value(index, key, value, p)

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _update(self, p, g, arrays: list, state: dict[str, Any], step: float,
                options: dict[str, Any]) -> None:
        raise NotImplementedError

    def _step_group(self, group: dict[str, Any], params: list[Tensor],
                    grads: list[Tensor]) -> None:
        options = self._options(group)
        # (one decision per step, by all its elements, as SGD's and Adam's: a small model's
        # many small parameters take the compiled multiply-adds too; complex ones step real)
        options["kernels"] = aten_arith.step_kernels(
            xp_of(params[0]._data), params[0]._data.real.dtype,
            sum(p._data.size for p in params)) if params else None
        options["multi_tensor"] = multi_tensor(group, params)
        keys = self._array_keys(group)
        for p, g in zip(params, grads):
            state = self._init_state(p, group)
            step = _increment(state["step"])
            pa, ga, *arrays = _as_real_1d(p._data, g._data, *(state[k]._data for k in keys))
            self._update(pa, ga, arrays, state, step, options)

