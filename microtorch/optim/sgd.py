"""Stochastic gradient descent with momentum, dampening, weight decay and Nesterov momentum."""

from __future__ import annotations

from typing import Any

from .._layout import SPARSE_DATA
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..backend import aten_arith
from ..ops._util import xp_of
from .optimizer import Optimizer, ParamsT, _at_least_1d, _decayed_grad, _zeros_like

__all__ = ["SGD"]


class SGD(Optimizer):
    """SGD exactly as ``torch.optim.SGD`` (DESIGN.md section 3); state key ``momentum_buffer``.

    ``foreach`` and ``flat_grads`` choose the gradient storage strategy (see ``Optimizer``).
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None,
                 flat_grads: bool = False) -> None:
        if differentiable or fused:
            raise ValueError("microtorch's SGD supports neither differentiable nor fused")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": False, "fused": None}
        super().__init__(params, defaults, flat_grads=flat_grads)

    _ranges = (("lr", None, "learning rate", None), ("momentum", None, "momentum value", None),
               ("weight_decay", None, "weight_decay value", None))
    _nan_passes = True  # torch.optim.SGD tests ``value < 0.0``
    _takes_sparse = True  # (sparse gradients take PyTorch's single-tensor steps: _sgd_sparse)

    def _check_hyperparameters(self, group: dict[str, Any]) -> None:
        super()._check_hyperparameters(group)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("momentum_buffer",) if group["momentum"] != 0 else ()

    def _check_sparse_grad(self, index: int, group_index: int, p: Tensor, g: Tensor) -> None:
        super()._check_sparse_grad(index, group_index, p, g)
        if self.param_groups[group_index]["weight_decay"] != 0:  # PyTorch's grad.add(param)
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")

    def _step_group(self, group: dict[str, Any], params: list[Tensor],
                    grads: list[Tensor]) -> None:
        lr, momentum, dampening = float(group["lr"]), float(group["momentum"]), \
            float(group["dampening"])
        nesterov, maximize = group["nesterov"], group["maximize"]
        state = self.state
        bufs: list[Tensor | None] = ([state[p].get("momentum_buffer") for p in params]
                                     if momentum != 0 else [None] * len(params))
        sparse = [type(g._data) in SPARSE_DATA for g in grads]
        if any(sparse):
            for i in [i for i, s in enumerate(sparse) if s]:
                bufs[i] = _sgd_sparse(params[i], grads[i], bufs[i], lr=lr, momentum=momentum,
                                      dampening=dampening, nesterov=nesterov,
                                      maximize=maximize)
            dense = [i for i, s in enumerate(sparse) if not s]
            rest = [bufs[i] for i in dense]
            self._step_dense(group, [params[i] for i in dense], [grads[i] for i in dense], rest)
            for i, buf in zip(dense, rest):
                bufs[i] = buf
        else:
            self._step_dense(group, params, grads, bufs)
        if momentum != 0:
            for p, buf in zip(params, bufs):
                state[p]["momentum_buffer"] = buf

    def _step_dense(self, group: dict[str, Any], params: list[Tensor], grads: list[Tensor],
                    bufs: list[Tensor | None]) -> None:
        """The update of the parameters with dense gradients (``bufs`` filled in place)."""
        if not params:
            return
        lr, momentum, dampening = float(group["lr"]), float(group["momentum"]), \
            float(group["dampening"])
        weight_decay, nesterov, maximize = float(group["weight_decay"]), group["nesterov"], \
            group["maximize"]
        if self._use_fused(group, params) and _fused_sgd(
                params, grads, bufs, lr=lr, momentum=momentum, dampening=dampening,
                weight_decay=weight_decay, nesterov=nesterov, maximize=maximize):
            pass
        else:
            # (one decision per step, by all its elements, as Adam's: many small parameters
            # take the compiled fused multiply-add too)
            kernels = aten_arith.step_kernels(xp_of(params[0]._data), params[0]._data.dtype,
                                              sum(p._data.size for p in params))
            for i, (p, g) in enumerate(zip(params, grads)):
                buf = bufs[i]
                if momentum != 0 and buf is None:
                    bufs[i] = buf = Tensor._make(_zeros_like(p._data))
                    first = True
                else:
                    first = False
                _sgd_update(p._data, g._data, None if buf is None else buf._data, first,
                            lr=lr, momentum=momentum, dampening=dampening,
                            weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                            kernels=kernels)


def _sgd_sparse(p: Tensor, g: Tensor, buf: Tensor | None, *, lr: float, momentum: float,
                dampening: float, nesterov: bool, maximize: bool) -> Tensor | None:
    """PyTorch's single-tensor SGD step with a sparse gradient, in its operations: the
    momentum buffer starts as a (sparse) copy of the gradient and is updated with sparse
    arithmetic; only the parameter's rows the gradient names change. Returns the buffer."""
    with no_grad():
        grad = -g if maximize else g
        if momentum != 0:
            if buf is None:
                buf = grad.clone().detach()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        p.add_(grad, alpha=-lr)
    return buf


def _sgd_update(p, g, buf, first: bool, *, lr: float, momentum: float, dampening: float,
                weight_decay: float, nesterov: bool, maximize: bool, kernels=None) -> None:
    """One SGD step of one array, in place, in PyTorch's single-tensor order (``kernels``:
    the compiled ones chosen for the step, or None).

    ``buf`` is the momentum buffer (None without momentum); ``first`` says it is new and gets a
    copy of the gradient. Scalars stay Python floats so float32 stays float32.
    """
    xp = xp_of(p)
    p, g, buf = _at_least_1d(p, g, buf)
    d = _decayed_grad(xp, p, g, weight_decay, maximize)
    if momentum != 0:
        if first:
            buf[...] = d
        else:  # buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            buf *= momentum
            aten_arith.add_scaled_(buf, d, 1.0 - dampening, kernels)
        # (grad.add(buf, alpha=momentum) with nesterov)
        d = aten_arith.add_scaled(d, buf, momentum) if nesterov else buf
    aten_arith.add_scaled_(p, d, -lr, kernels)  # param.add_(grad, alpha=-lr)


def _fused_sgd(params: list[Tensor], grads: list[Tensor], bufs: list[Tensor | None],
               **options) -> bool:
    """The CUDA multi-tensor step (one launch per device, dtype and buffer age).

    Returns False (nothing done) when some array does not suit the kernel; the caller then
    runs the per-array path.
    """
    from ..backend import kernels
    from ..backend.kernel_reference import OPTIM_DTYPES

    if not all(p._data.flags.c_contiguous and g._data.flags.c_contiguous
               and p._data.dtype in OPTIM_DTYPES and p.device == params[0].device
               for p, g in zip(params, grads)):
        return False
    momentum = options["momentum"]
    batches: dict[tuple, list[int]] = {}
    for i, (p, buf) in enumerate(zip(params, bufs)):
        if momentum != 0 and buf is None:
            bufs[i] = Tensor._make(_zeros_like(p._data))
        batches.setdefault((p._data.dtype, momentum != 0 and buf is None), []).append(i)
    for (_, first), idx in batches.items():
        kernels.fused_sgd([params[i]._data for i in idx], [grads[i]._data for i in idx],
                          [bufs[i]._data for i in idx] if momentum != 0 else None,
                          first_step=first, **options)
    return True
