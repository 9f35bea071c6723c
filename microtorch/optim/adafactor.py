"""Adafactor (``torch.optim.Adafactor``, PyTorch 2.5+): Adam-like steps whose second moment
of a matrix is kept factored, as one row and one column average of the squared gradient.

The step replays PyTorch's Python implementation operation by operation on the backend
arrays, in its order: ``lerp_`` and ``add_(x, alpha=...)`` go through ``aten_arith``
(PyTorch's fused multiply-adds), the clamps, ``rsqrt`` and divisions round as PyTorch's
float kernels do, and ``foreach=True`` follows ``_multi_tensor_adafactor`` (the update is
multiplied by its step size and then added: two roundings, where the single-tensor step adds
it with ``alpha``: one multiply-add).

Where the bits can still differ: the 2-norms (of the parameter, of the update, and of the
gradient along its last two dimensions) follow the structure of PyTorch's CPU reduction
kernels (``_norm2_*``: per-lane running sums along a contiguous run, sequential sums along
the second-last dimension), which reproduces PyTorch's value for most inputs but not all
(PyTorch 2.13's kernel differs in the last bit for a few percent of rows, in a way not
identified here), and the mean of ``row_var`` of a 3-D or larger parameter is NumPy's sum.
Measured against PyTorch 2.13 (tests/test_swa_adafactor_data.py): vectors and most matrices
bitwise after several steps, the rest within a few ulps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..backend import aten_arith, cpu_capability
from ..ops._util import xp_of
from .optimizer import Optimizer, ParamsT, _increment, _step_tensor, _to_array_like

__all__ = ["Adafactor"]


def _lanes(dtype) -> int:
    """Elements per SIMD vector in PyTorch's CPU kernels for ``dtype`` (32-byte AVX2 vectors,
    64-byte AVX-512 ones, 16-byte in the DEFAULT build)."""
    width = {"AVX512": 64, "AVX2": 32}.get(cpu_capability.build(), 16)
    return max(1, width // np.dtype(dtype).itemsize)


def _norm2_lastdim(x):
    """``torch.norm(x, dim=-1, keepdim=True)`` of a contiguous array as PyTorch's CPU kernel
    sums it: per row, one running sum of squares per SIMD lane over the whole vectors, the
    lane sums added in order, then the squares of the tail elements, then the square root."""
    xp = xp_of(x)
    n = x.shape[-1]
    rows = xp.ascontiguousarray(x).reshape(-1, n)
    if xp is not np:
        out = xp.sqrt(xp.sum(rows * rows, axis=1))
        return out.reshape(x.shape[:-1] + (1,))
    lanes = _lanes(x.dtype)
    whole = n - n % lanes
    acc = np.zeros((rows.shape[0], lanes), x.dtype)
    for k in range(0, whole, lanes):
        chunk = rows[:, k:k + lanes]
        acc += chunk * chunk
    total = acc[:, 0].copy()
    for j in range(1, lanes):
        total += acc[:, j]
    for k in range(whole, n):
        col = rows[:, k]
        total += col * col
    return np.sqrt(total).reshape(x.shape[:-1] + (1,))


def _norm2_all(x):
    """``x.norm(2)``: the whole tensor as one contiguous run (see ``_norm2_lastdim``); a
    Python float of a NumPy array (PyTorch's ``.item()``), a 0-d array on a device (reading
    it back would wait for the device on every step)."""
    if x.size == 0:
        return 0.0
    norm = _norm2_lastdim(x.reshape(1, -1))[0, 0]
    return float(norm) if xp_of(x) is np else norm


def _at_least(floor: float, value):
    """``max(floor, value)`` of a float, or of a 0-d device array (without reading it)."""
    if isinstance(value, float):
        return max(floor, value)
    return xp_of(value).maximum(value, floor)


def _add_update(pa, update, scale) -> None:
    """``pa.add_(update, alpha=scale)``: one fused multiply-add where PyTorch's CPU kernel
    fuses (``aten_arith``); on a device, with a 0-d array ``scale``, product then sum."""
    if isinstance(scale, float):
        aten_arith.add_scaled_(pa, update, scale)
    else:
        update *= scale
        pa += update


def _norm2_rows(x):
    """``torch.norm(x, dim=-2, keepdim=True)`` as PyTorch's generic reduction sums it: each
    output accumulates the squares of its column in order, one rounding per step."""
    xp = xp_of(x)
    moved = xp.moveaxis(x, -2, 0)
    acc = xp.zeros(moved.shape[1:], x.dtype)
    for row in moved:
        acc += row * row
    return xp.expand_dims(xp.sqrt(acc), -2)


def _mean_rows(x):
    """``x.mean(dim=-2, keepdim=True)`` with microtorch's replay of PyTorch's sum."""
    return Tensor._make(x).mean(dim=-2, keepdim=True)._data


class Adafactor(Optimizer):
    """Adafactor exactly as ``torch.optim.Adafactor`` (PyTorch 2.5+).

    Per step ``t`` (counted per parameter): ``beta2_t = 1 - t^beta2_decay``,
    ``rho = min(lr, 1/sqrt(t))``, step size ``alpha = max(eps2, RMS(param)) * rho``; decoupled
    weight decay ``param *= 1 - lr * weight_decay``. A parameter of two or more dimensions
    keeps ``row_var`` (the last dimension reduced to 1) and ``col_var`` (the second-last
    reduced to 1), running means of the squared gradient along its last two dimensions,
    whose product divided by the mean of ``row_var`` (clamped at ``eps1``) estimates the
    second moment; a vector keeps the full ``variance``. The update ``g / sqrt(max(v, eps1^2))``
    is scaled down when its RMS exceeds ``d``. ``eps = (eps1, eps2)``; ``eps1`` None means
    the parameter dtype's machine epsilon. State keys ``step`` (a float32 0-d CPU tensor),
    ``row_var``/``col_var`` or ``variance``.

    ``foreach=True`` takes PyTorch's multi-tensor formula (see the module), ``None``/``False``
    the single-tensor one (PyTorch defaults to it on every device for this optimizer).
    Complex parameters and sparse gradients raise RuntimeError, as in PyTorch.
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("step",)

    def _load_state_value(self, index, key: str, value, p: Tensor):
        """``row_var``/``col_var`` have the parameter's shape with the last (second-last)
        dimension reduced to 1; the other entries as ``Optimizer._load_state_value``."""
        if key not in ("row_var", "col_var"):
            return super()._load_state_value(index, key, value, p)
        expected = list(p.shape)
        if len(expected) >= 2:
            expected[-1 if key == "row_var" else -2] = 1
        shape = list(getattr(value, "shape", np.shape(value)))
        if len(expected) < 2 or shape != expected:
            raise ValueError(f"state {key!r} of parameter {index!r} has shape {shape}, "
                             f"expected {expected} for a parameter of shape {list(p.shape)}")
        return Tensor._make(_to_array_like(value, p))

    def _init_state(self, p: Tensor, g: Tensor) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            xp = xp_of(p._data)
            shape = g._data.shape
            if len(shape) > 1:
                state["row_var"] = Tensor._make(xp.zeros(shape[:-1] + (1,), g._data.dtype))
                state["col_var"] = Tensor._make(
                    xp.zeros(shape[:-2] + (1,) + shape[-1:], g._data.dtype))
            else:
                state["variance"] = Tensor._make(xp.zeros_like(g._data))
        return state

    def _step_group(self, group: dict[str, Any], params: list[Tensor],
                    grads: list[Tensor]) -> None:
        for p in params:
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
        states = [self._init_state(p, g) for p, g in zip(params, grads)]
        lr = group["lr"]
        lr = float(lr.item()) if isinstance(lr, Tensor) else float(lr)
        eps1, eps2 = group["eps"]
        options = {"lr": lr, "beta2_decay": float(group["beta2_decay"]),
                   "weight_decay": float(group["weight_decay"]), "eps2": float(eps2),
                   "d": float(group["d"]), "maximize": bool(group["maximize"])}
        with no_grad():
            if group["foreach"]:
                _multi_tensor(params, grads, states, eps1, options)
            else:
                _single_tensor(params, grads, states, eps1, options)


def _schedule(step: float, o: dict[str, Any]) -> tuple[float, float]:
    """``(1 - beta2_t, rho_t)`` of step ``step``, as PyTorch computes them in Python."""
    return step ** o["beta2_decay"], min(o["lr"], 1 / (step ** 0.5))


def _second_moment(g, state: dict[str, Any], weight: float, eps1: float):
    """Update the running second moment of one gradient in place; return the (new) estimate
    array, which the caller may overwrite."""
    xp = xp_of(g)
    if g.ndim > 1:
        row_var, col_var = state["row_var"]._data, state["col_var"]._data
        row_mean = _norm2_lastdim(g)
        row_mean *= row_mean
        row_mean /= g.shape[-1]
        row_var[...] = aten_arith.lerp(row_var, row_mean, weight)
        col_mean = _norm2_rows(g)
        col_mean *= col_mean
        col_mean /= g.shape[-2]
        col_var[...] = aten_arith.lerp(col_var, col_mean, weight)
        estimate = row_var * col_var  # (row_var @ col_var: an outer product, one product each)
        estimate /= xp.maximum(_mean_rows(row_var), g.dtype.type(eps1))
        return estimate
    variance = state["variance"]._data
    variance[...] = aten_arith.lerp(variance, g * g, weight)
    return variance.copy()


def _direction(g, estimate, eps1: float):
    """``g / sqrt(max(estimate, eps1^2))`` in PyTorch's order (clamp, rsqrt, multiply), in
    ``estimate``'s storage."""
    xp = xp_of(g)
    xp.maximum(estimate, g.dtype.type(eps1 * eps1), out=estimate)
    root = xp.sqrt(estimate)
    xp.divide(g.dtype.type(1), root, out=estimate)
    estimate *= g
    return estimate


def _clip_denominator(update, d: float):
    """``max(1, RMS(update) / d)``, the clipping of an update whose RMS exceeds ``d``."""
    return _at_least(1.0, _norm2_all(update) / ((update.size ** 0.5) * d))


def _single_tensor(params: list[Tensor], grads: list[Tensor], states: list[dict[str, Any]],
                   eps1: float | None, o: dict[str, Any]) -> None:
    """``_single_tensor_adafactor``: one parameter after another."""
    for p, g, state in zip(params, grads, states):
        pa, ga = p._data, g._data
        if o["maximize"]:
            ga = -ga
        if eps1 is None:  # (set once, by the first parameter: PyTorch's loop does the same)
            eps1 = float(np.finfo(pa.dtype).eps)
        step = _increment(state["step"])
        weight, rho = _schedule(step, o)
        alpha = _at_least(o["eps2"], _norm2_all(pa) / (pa.size ** 0.5)) * rho
        if o["weight_decay"] != 0:
            pa *= 1 - o["lr"] * o["weight_decay"]
        update = _direction(ga, _second_moment(ga, state, weight, eps1), eps1)
        _add_update(pa, update, -alpha / _clip_denominator(update, o["d"]))


def _multi_tensor(params: list[Tensor], grads: list[Tensor], states: list[dict[str, Any]],
                  eps1: float | None, o: dict[str, Any]) -> None:
    """``_multi_tensor_adafactor``: parameters grouped by (device, dtype) and then into
    matrices and vectors, in PyTorch's grouping order; within a group each phase runs over
    all its parameters before the next, and the update is multiplied by its step size before
    it is added."""
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(params):
        groups.setdefault((str(p.device), p._data.dtype), []).append(i)
    split: dict[tuple, list[int]] = {}
    for key, members in groups.items():
        for i in members:
            split.setdefault((*key, grads[i]._data.ndim > 1), []).append(i)
    for (_, dtype, _), members in split.items():
        if eps1 is None:
            eps1 = float(np.finfo(dtype).eps)
        ps = [params[i]._data for i in members]
        gs = [grads[i]._data for i in members]
        if o["maximize"]:
            gs = [-g for g in gs]
        steps = [_increment(states[i]["step"]) for i in members]
        schedules = [_schedule(s, o) for s in steps]
        alphas = [_at_least(o["eps2"], _norm2_all(pa) / (pa.size ** 0.5)) * rho
                  for pa, (_, rho) in zip(ps, schedules)]
        if o["weight_decay"] != 0:
            for pa in ps:
                pa *= 1 - o["lr"] * o["weight_decay"]
        updates = [_direction(ga, _second_moment(ga, states[i], weight, eps1), eps1)
                   for i, ga, (weight, _) in zip(members, gs, schedules)]
        scales = [-a / _clip_denominator(u, o["d"]) for a, u in zip(alphas, updates)]
        for pa, update, scale in zip(ps, updates, scales):
            update *= scale
            pa += update

