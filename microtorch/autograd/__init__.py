"""Reverse-mode automatic differentiation: ``backward``, ``grad``, grad modes, ``Function``,
``gradcheck`` / ``gradgradcheck`` and the ``functional`` Jacobian and Hessian helpers."""

from __future__ import annotations

import warnings

from .._tensor import Tensor
from .engine import run_backward
from .function import Function
from .grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)

__all__ = ["Function", "Variable", "gradcheck", "gradgradcheck", "functional", "forward_ad",
           "backward", "profiler", "DeviceType",
           "grad", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "set_detect_anomaly", "detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "inference_mode",
           "is_inference_mode_enabled"]


def _as_list(x) -> list:
    if x is None:
        return []
    if isinstance(x, Tensor) or isinstance(x, graph.GradientEdge):
        return [x]
    return list(x)


def _root_grads(outputs: list, grad_outputs: list) -> list:
    """The starting gradient of each output: given, or ones for a scalar."""
    if len(grad_outputs) not in (0, len(outputs)):
        raise RuntimeError(f"grad requires one gradient per output: got {len(grad_outputs)} "
                           f"gradients for {len(outputs)} outputs")
    grads = []
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               f"a grad_fn")
        g = grad_outputs[i] if grad_outputs else None
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._data.dtype.kind == "c":
                raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                   f"outputs but got {out.dtype}")
            g = Tensor._make(out._backend.xp.ones(out._data.shape, dtype=out._data.dtype))
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradient must be a Tensor, got {type(g).__name__}")
        elif g.shape != out.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{tuple(g.shape)} and output[{i}] has a shape of "
                               f"{tuple(out.shape)}.")
        elif g.device != out.device:
            raise RuntimeError(f"gradient is on {g.device} but the output is on {out.device}")
        grads.append(g)
    return grads


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the graph's leaves (or only into ``inputs``)."""
    outputs = _as_list(tensors)
    grads = _root_grads(outputs, _as_list(grad_tensors))
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        targets = _as_list(inputs)
        captured = run_backward(outputs, grads, retain_graph, create_graph, capture=targets,
                                allow_unused=True, accumulate=True)
        from .engine import accumulate_captured

        for t, g in zip(targets, captured):
            if g is not None:
                accumulate_captured(t, g, create_graph)
        return
    run_backward(outputs, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``.
    ``only_inputs`` is PyTorch's deprecated, ignored flag (WGAN-GP code still passes it);
    ``is_grads_batched``: the first dimension of every grad_output is a batch, and the
    gradients of all its entries come out stacked from one batched backward pass (vmap)."""
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). "
                      "To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    if is_grads_batched:
        gos = _as_list(grad_outputs)
        if len(gos) != len(_as_list(outputs)) or any(g is None for g in gos):
            raise RuntimeError("grad requires one batched gradient per output when "
                               "is_grads_batched=True")
        if retain_graph is None:
            retain_graph = create_graph
        return functional.VMAP[0](lambda *g: grad(
            outputs, inputs, list(g), retain_graph=True, create_graph=create_graph,
            allow_unused=allow_unused, materialize_grads=materialize_grads))(*gos)
    allow_unused = bool(allow_unused)
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for i, t in enumerate(ins):
        if isinstance(t, graph.GradientEdge):
            continue
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors, but got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require "
                               f"grad")
    grads = _root_grads(outs, _as_list(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    result = run_backward(outs, grads, retain_graph, create_graph, capture=ins,
                          allow_unused=allow_unused or materialize_grads)
    if materialize_grads:
        if any(g is None and isinstance(t, graph.GradientEdge) for g, t in zip(result, ins)):
            raise RuntimeError("materialize_grads cannot be used when the given input is a "
                               "GradientEdge")
        result = tuple(g if g is not None else t.new_zeros(t.shape) for g, t in zip(result, ins))
    return result


def Variable(data, requires_grad: bool = False, volatile: bool = False) -> Tensor:  # noqa: N802
    """Legacy ``Variable(tensor, requires_grad=...)``: returns a Tensor."""
    if not isinstance(data, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    out = data.detach()
    out._vbox = [0]
    if requires_grad:
        out.requires_grad_(True)
    return out


# torch.autograd.anomaly_mode (detect_anomaly, set_detect_anomaly) lives in grad_mode here
from .. import _module_aliases  # noqa: E402

# (they use grad, defined above)
from . import forward_ad, functional, graph, profiler, profiler_util  # noqa: E402
from . import grad_mode as _grad_mode  # noqa: E402
from .gradcheck import gradcheck, gradgradcheck  # noqa: E402
from .profiler_util import DeviceType  # noqa: E402

_module_aliases.alias_modules(__name__, {"anomaly_mode": _grad_mode})
