"""``gradcheck`` and ``gradgradcheck``: backward's gradients against finite differences, with
PyTorch's signatures, checks and messages.

Supported: dense real tensors (float64 recommended, as in PyTorch), ``eps``, ``atol``,
``rtol``, ``raise_exception``, ``nondet_tol`` (backward is run twice and must agree),
``check_grad_dtypes``, ``check_undefined_grad`` (a backward given zero gradients, or for one
output of several only, must give zero or no input gradients: microtorch's form of PyTorch's
undefined-gradient check), ``fast_mode`` (accepted; the full Jacobians are always compared,
which is stricter). Not supported, a clear NotImplementedError: ``check_forward_ad``,
``check_batched_grad``, ``check_batched_forward_grad``, ``check_fwd_over_rev`` (microtorch has
no forward-mode AD and no vmap). Complex inputs are not supported.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` and ``gradgradcheck`` when a check fails."""


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable_outputs(out) -> tuple:
    return tuple(o for o in _as_tuple(out) if isinstance(o, Tensor) and o.requires_grad)


def _check_inputs(inputs: tuple) -> None:
    found = False
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        if x.dtype not in (_dtype.float64, getattr(_dtype, "complex128", None)):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          f"point or complex. This check will likely fail if all the inputs are "
                          f"not of double precision floating point or complex. ", stacklevel=3)
        if x._data.dtype.kind == "c":
            raise NotImplementedError("microtorch's gradcheck does not support complex inputs")
        if not all(st > 0 or n <= 1 for st, n in zip(x.stride(), x.shape)):
            raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only "
                               f"supports inputs that are non-overlapping to be able to compute "
                               f"the numerical gradients correctly. You should call .contiguous "
                               f"on the input before passing it to gradcheck.")
        found = True
    if not found:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")


def _numerical_jacobians(func, inputs: tuple, eps: float) -> list[list[np.ndarray]]:
    """[input][output] -> (input numel, output numel) central differences, every output
    (PyTorch's layout); each input element is moved in place, then restored. ``func`` runs
    with grad mode as it is (it may differentiate inside, as gradgradcheck's does)."""
    result = []
    for x in inputs:
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        data = x._data
        columns: list[list[np.ndarray]] | None = None
        for idx in np.ndindex(*data.shape):
            orig = data[idx].item()
            values = []
            for step in (eps, -eps):
                data[idx] = orig + step
                outs = _as_tuple(func(*inputs))
                values.append([np.array(o.detach().cpu().numpy(), dtype=np.float64).reshape(-1)
                               if isinstance(o, Tensor) else None for o in outs])
            data[idx] = orig
            if columns is None:
                columns = [[] for _ in values[0]]
            for j, (plus, minus) in enumerate(zip(*values)):
                if plus is not None:
                    columns[j].append((plus - minus) / (2 * eps))
        outs_now = _as_tuple(func(*inputs))
        per_output = []
        for j, o in enumerate(outs_now):
            if not isinstance(o, Tensor):
                continue
            rows = columns[j] if columns else []
            per_output.append(np.stack(rows) if rows else np.zeros((0, o.numel())))
        result.append(per_output)
    return result


def _analytical_jacobian(inputs: tuple, output: Tensor, nondet_tol: float,
                         check_grad_dtypes: bool) -> list[np.ndarray]:
    """(input numel, output numel) per differentiable input, by one backward per output
    element, computed twice to catch a non-deterministic backward."""
    diff_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]

    def rows():
        jac = [np.zeros((x.numel(), output.numel())) for x in diff_inputs]
        types_ok = sizes_ok = True
        for k in range(output.numel()):
            onehot = np.zeros(output.numel(), dtype=output._data.dtype)
            onehot[k] = 1
            v = ops.tensor(onehot.reshape(output.shape), device=output.device)
            grads = grad(output, diff_inputs, v, retain_graph=True, allow_unused=True)
            for i, (g, x) in enumerate(zip(grads, diff_inputs)):
                if g is None:
                    continue
                types_ok = types_ok and g.dtype == x.dtype
                sizes_ok = sizes_ok and g.shape == x.shape
                if g.numel() == x.numel():
                    jac[i][:, k] = g.detach().cpu().numpy().reshape(-1)
        return jac, types_ok, sizes_ok

    first, types_ok, sizes_ok = rows()
    second, _, _ = rows()
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    for a, b in zip(first, second):
        if a.shape != b.shape or not (np.abs(a - b) <= nondet_tol).all():
            raise GradcheckError(
                f"Backward is not reentrant, i.e., running backward with same input and "
                f"grad_output multiple times gives different values, although analytical "
                f"gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}.")
    return first


def _check_zero_grad_outputs(func, inputs: tuple, outputs: tuple,
                             check_undefined_grad: bool) -> None:
    """A backward given zero gradients must give zero input gradients of the inputs' kind;
    with ``check_undefined_grad``, also when only one output of several gets a gradient."""
    diff_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    zeros = [o.detach() * 0 for o in outputs]
    grads = grad(outputs, diff_inputs, zeros, retain_graph=True, allow_unused=True)
    for g, x in zip(grads, diff_inputs):
        if g is None:
            continue
        if not bool((g == 0).all()):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.device != x.device:
            raise GradcheckError("grad is incorrect device")
        if g.shape != x.shape:
            raise GradcheckError("grad is incorrect size")
    if not check_undefined_grad or len(outputs) < 2:
        return
    for j in range(len(outputs)):
        fresh = _differentiable_outputs(func(*inputs))
        grads = grad(fresh[j], diff_inputs, fresh[j].detach() * 0, allow_unused=True)
        if any(g is not None and not bool((g == 0).all()) for g in grads):
            raise GradcheckError(
                "Expected all input grads to be undefined or zero when all output grads are "
                "undefined or zero. Please look at \"Notes about undefined output gradients\" "
                "in \"tools/autograd/derivatives.yaml\"")


def _unsupported(**flags) -> None:
    for name, value in flags.items():
        if value:
            raise NotImplementedError(f"gradcheck: {name}=True is not supported by microtorch "
                                      f"(it has no forward-mode AD and no vmap)")


def gradcheck(func: Callable, inputs, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients backward computes for ``func`` at ``inputs`` against central finite
    differences (``allclose(analytical, numerical, rtol, atol)``) for every pair of a
    differentiable output and an input that requires grad. True, or a GradcheckError (False
    with ``raise_exception=False``). See the module docstring for what is supported."""
    _unsupported(check_forward_ad=check_forward_ad, check_batched_grad=check_batched_grad,
                 check_batched_forward_grad=check_batched_forward_grad)
    if not check_backward_ad:
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to "
                             "be True")
    try:
        return _gradcheck(func, _as_tuple(inputs), eps, atol, rtol, nondet_tol,
                          check_undefined_grad, check_grad_dtypes)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func, inputs: tuple, eps, atol, rtol, nondet_tol, check_undefined_grad,
               check_grad_dtypes) -> bool:
    _check_inputs(inputs)
    outputs = _differentiable_outputs(func(*inputs))
    numerical = _numerical_jacobians(func, inputs, eps)  # [input][every output]
    if not outputs:
        if any((n != 0).any() for per_input in numerical for n in per_input):
            raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    all_outputs = [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor)]
    differentiable = [i for i, o in enumerate(all_outputs) if o.requires_grad]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobian(inputs, o, nondet_tol, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][differentiable[i]]
            if a.shape != n.shape or not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {i:d} with respect to input {j:d},\n"
                    f"numerical:{ops.tensor(n)}\nanalytical:{ops.tensor(a)}\n")
    _check_zero_grad_outputs(func, inputs, outputs, check_undefined_grad)
    return True


def gradgradcheck(func: Callable, inputs, grad_outputs=None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """``gradcheck`` of the gradients themselves: the second derivatives of ``func``, through
    ``grad(..., create_graph=True)`` with ``grad_outputs`` (random in [-1, 1) by default)."""
    _unsupported(check_fwd_over_rev=check_fwd_over_rev, check_batched_grad=check_batched_grad)
    if not check_rev_over_rev:
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev "
                             "to be True")
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outs = _differentiable_outputs(func(*inputs))
        grad_outputs = tuple(
            (ops.rand(*o.shape, dtype=o.dtype if o.is_floating_point() else _dtype.float64,
                  device=o.device) * 2 - 1).requires_grad_() for o in outs)
        if gen_non_contig_grad_outputs:  # the same values, through a transposed layout
            grad_outputs = tuple(g.detach().T.contiguous().T.requires_grad_() if g.ndim > 1
                                 else g for g in grad_outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_out = len(grad_outputs)
    diff_args = {i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad}

    def first_derivatives(*args):
        ins, gos = args[:len(args) - n_out], args[len(args) - n_out:]
        outs = _differentiable_outputs(func(*ins))
        diff = [x for i, x in enumerate(ins) if i in diff_args]
        grads = grad(outs, diff, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode)


__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]

# ops is still being imported when this module is: its functions are read when called.
from .. import _dtype, ops  # noqa: E402
from .._tensor import Tensor  # noqa: E402
from . import grad  # noqa: E402
