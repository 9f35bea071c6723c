"""Muon (MomentUm Orthogonalized by Newton-Schulz) exactly as ``torch.optim.Muon`` of
PyTorch 2.13: Nesterov momentum, then the momentum's orthogonalisation by a quintic
Newton-Schulz iteration run in bfloat16, a shape-dependent learning rate, decoupled weight
decay; for 2-D parameters only.

PyTorch rounds every step of the iteration to bfloat16 (each product accumulated in float32,
each ``addmm`` rounded once); here the values are float32 arrays rounded to bfloat16 by bit
arithmetic after each of those operations, so the same code runs on NumPy and CuPy (which has
no bfloat16). The momentum ``lerp`` and the final ``add_(update, alpha=-lr)`` are rounded as
PyTorch's kernels round them: on the CPU by ``backend.aten_arith`` (one fused multiply-add in
its AVX2/AVX512 builds, a product and a sum in DEFAULT), on CuPy arrays as one fused
multiply-add (CUDA's compiler contracts them too; and the CUDA stand-in's steps give the AVX
CPU's bits).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._tensor import Tensor
from ..backend import aten_arith, exact_fma
from ..ops._util import xp_of
from .optimizer import Optimizer, ParamsT, _zeros_like

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def _round_bf16(xp, x):
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32."""
    x = xp.asarray(x, dtype=np.float32)
    bits = xp.ascontiguousarray(x).reshape(-1).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) \
        & np.uint32(0xFFFF0000)
    out = rounded.view(np.float32).reshape(x.shape)
    return xp.where(xp.isnan(x), x, out)  # (NaN stays NaN: its rounding could carry out)


def _fma(a, b, c):
    """a * b + c in ``c``'s dtype (float32 or float64): NumPy arrays as PyTorch's CPU kernels
    round it (``aten_arith``), CuPy arrays with one rounding."""
    if xp_of(c) is np:
        return aten_arith.multiply_add(a, b, c)
    return exact_fma.fma(a, b, c)


def _lerp(start, end, weight: float):
    """PyTorch's lerp with a scalar weight, fused: ``start + w * (end - start)`` for |w| < 0.5,
    else ``end - (end - start) * (1 - w)``; the weight in the arrays' precision."""
    w = float(start.dtype.type(weight))
    diff = end - start
    if abs(w) < 0.5:
        return _fma(w, diff, start)
    return _fma(-diff, float(start.dtype.type(1.0) - start.dtype.type(w)), end)


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps: int, eps: float):
    """PyTorch's ``_zeropower_via_newtonschulz`` on arrays: the quintic iteration
    X <- a X + (b A + c A A) X with A = X X^T, in bfloat16 (as float32 values)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    xp = xp_of(grad)
    a, b, c = (float(np.float32(v)) for v in ns_coefficients)
    # grad.bfloat16(): float64 goes through float32 first, as c10::BFloat16's conversion
    x = _round_bf16(xp, grad.astype(np.float32))
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _round_bf16(xp, xp.sqrt((x * x).sum(dtype=np.float32)))  # ortho.norm()
    norm = xp.maximum(norm, _round_bf16(xp, xp.asarray(eps, dtype=np.float32)))
    x = _round_bf16(xp, x / norm)
    for _ in range(ns_steps):
        gram = _round_bf16(xp, x @ x.T)
        update = _round_bf16(xp, (gram @ gram) * c + gram * b)  # addmm(beta=b, alpha=c)
        x = _round_bf16(xp, update @ x + x * a)  # addmm(ortho, update, ortho, beta=a)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    """Muon's learning rate for a parameter of ``shape`` (A, B)."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon exactly as ``torch.optim.Muon``; state key ``momentum_buffer`` (no step count).

    Per step and parameter: ``buf.lerp_(g, 1 - momentum)``; the update is ``g.lerp(buf,
    momentum)`` with ``nesterov`` (else ``buf``), orthogonalised by ``ns_steps`` Newton-Schulz
    iterations with ``ns_coefficients``; then ``param *= 1 - lr * weight_decay`` and
    ``param -= adjusted_lr * update`` (``adjust_lr_fn``: "original", sqrt(max(1, A / B)), or
    "match_rms_adamw", 0.2 sqrt(max(A, B))). Only 2-D parameters; other parameters (biases,
    embeddings) belong to another optimizer such as AdamW.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B,
                                                                DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("momentum_buffer",)

    def _step_group(self, group: dict[str, Any], params: list[Tensor],
                    grads: list[Tensor]) -> None:
        for p in params:
            if p.is_complex():
                raise RuntimeError("Muon does not support complex parameters")
        lr = float(group["lr"].item() if isinstance(group["lr"], Tensor) else group["lr"])
        weight_decay, momentum = float(group["weight_decay"]), float(group["momentum"])
        for p, g in zip(params, grads):
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = Tensor._make(_zeros_like(g._data))
            buf = state["momentum_buffer"]._data
            pa, ga = p._data, g._data
            if ga.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            buf[...] = _lerp(buf, ga, 1.0 - momentum)
            update = _lerp(ga, buf, momentum) if group["nesterov"] else buf
            update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                 group["ns_steps"], float(group["eps"]))
            adjusted = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
            pa *= 1.0 - lr * weight_decay  # param.mul_(1 - lr * weight_decay)
            if xp_of(pa) is np:  # param.add_(update, alpha=-lr) (large ones: compiled FMA)
                aten_arith.add_scaled_(pa, update.astype(pa.dtype), -adjusted)
            else:
                pa[...] = _fma(update.astype(pa.dtype), -adjusted, pa)
            p._vbox[0] += 1  # mul_ then add_: PyTorch counts two; Optimizer.step adds the other
