"""NumPy reference implementations of the CUDA kernels in ``kernels/``.

Each function has the signature and semantics of its launcher in ``kernels.py`` and works in
place on NumPy arrays. They define what the kernels must compute (the CUDA tests compare the two)
and are what the CPU backend runs for foreach/fused updates, so they are vectorised and in place.

Dtypes: a float32 array stays float32. NumPy 2 promotes float32 to float64 through NumPy
scalars and 0-d arrays but not through Python floats, so every hyperparameter here is a Python
float (``float(x)``), and derived scalars (``1 - beta1``, ``lr / bc1``) are computed in Python,
in double precision, exactly as the CUDA launchers compute them before casting.

The plan helpers (``chunk_plan``, ``collapse_layout``) are shared with the launchers: the
tables the CUDA kernels read are built from them, so testing them here tests those tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "ACCUMULATE_DTYPES", "OPTIM_DTYPES", "chunk_plan", "plan_arrays", "collapse_layout",
    "fill_strided", "multi_tensor_zero", "accumulate_grad", "fused_sgd", "fused_adam",
    "sgd_scalars", "adam_scalars", "check_group", "check_accumulate",
]

# Option bits of the fused optimizer kernels (mirrors the #defines in kernels/fused_optim.cu).
SGD_WEIGHT_DECAY, SGD_MOMENTUM, SGD_NESTEROV, SGD_MAXIMIZE, SGD_FIRST_STEP = 1, 2, 4, 8, 16
ADAM_WEIGHT_DECAY, ADAM_DECOUPLED, ADAM_AMSGRAD, ADAM_MAXIMIZE = 1, 2, 4, 8

ACCUMULATE_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
OPTIM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


# --------------------------------------------------------------------------- plans


def plan_arrays(sizes: Sequence[int], chunk_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The block table of a multi-tensor launch: ``(block_tensor, block_chunk)`` int64 arrays.

    Block ``b`` handles elements ``[block_chunk[b] * chunk_size, +chunk_size)`` of tensor
    ``block_tensor[b]`` (clipped to its size). Empty tensors get no block.
    """
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    sizes_arr = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if (sizes_arr < 0).any():
        raise ValueError("tensor sizes must be non-negative")
    chunks = -(-sizes_arr // chunk_size)  # ceil division
    block_tensor = np.repeat(np.arange(len(sizes_arr), dtype=np.int64), chunks)
    first_block = np.cumsum(chunks) - chunks  # index of each tensor's first block
    block_chunk = np.arange(len(block_tensor), dtype=np.int64) - first_block[block_tensor]
    return block_tensor, block_chunk


def chunk_plan(sizes: Sequence[int], chunk_size: int) -> list[tuple[int, int, int]]:
    """The ``(tensor index, start, stop)`` element range of every block, in block order."""
    sizes = [int(s) for s in sizes]
    block_tensor, block_chunk = plan_arrays(sizes, chunk_size)
    return [(int(t), int(c) * chunk_size, min((int(c) + 1) * chunk_size, sizes[t]))
            for t, c in zip(block_tensor.tolist(), block_chunk.tolist(), strict=True)]


def collapse_layout(shape: Sequence[int], strides: Sequence[int]
                    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The smallest ``(shape, strides)`` (strides in elements) that addresses the same elements.

    Used by the strided fill, where only the set of addressed elements matters, not their order:
    size-1 dimensions are dropped, dimensions are sorted by decreasing ``|stride|`` and
    neighbours that step evenly are merged. A C- or F-contiguous array becomes one dimension.
    An empty array gives ``((0,), (1,))``, a one-element array ``((1,), (1,))``.
    """
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if 0 in shape:
        return (0,), (1,)
    dims = sorted(((int(n), int(s)) for n, s in zip(shape, strides, strict=True) if n != 1),
                  key=lambda d: -abs(d[1]))
    merged: list[list[int]] = []
    for n, s in dims:
        if merged and merged[-1][1] == n * s:  # outer stride == one full step of this dim
            merged[-1] = [merged[-1][0] * n, s]
        else:
            merged.append([n, s])
    if not merged:
        return (1,), (1,)
    return tuple(n for n, _ in merged), tuple(s for _, s in merged)


# --------------------------------------------------------------------------- zeroing


def fill_strided(arr: np.ndarray, value) -> None:
    """Set every element of ``arr`` (any layout, any dtype) to ``value``, in place."""
    arr[...] = value


def multi_tensor_zero(arrays: Sequence[np.ndarray]) -> None:
    """Zero many C-contiguous arrays (any dtypes and sizes) in place.

    The CUDA kernel does it in one launch over a ``chunk_plan``; on the CPU one ``fill(0)`` per
    array is already a memset.
    """
    for arr in arrays:
        if not arr.flags.c_contiguous:
            raise ValueError("multi_tensor_zero needs C-contiguous arrays")
    for arr in arrays:
        arr.fill(0)


# --------------------------------------------------------------------------- gradients


def check_accumulate(grad, incoming) -> None:
    """Raise unless ``grad += incoming`` is a supported accumulation (shared with CUDA)."""
    if grad.shape != incoming.shape:
        raise ValueError(f"gradient shape {tuple(grad.shape)} != incoming "
                         f"{tuple(incoming.shape)}")
    if grad.dtype not in ACCUMULATE_DTYPES or incoming.dtype not in ACCUMULATE_DTYPES:
        raise TypeError(f"accumulate_grad supports float16/32/64, got {grad.dtype} "
                        f"and {incoming.dtype}")
    if not grad.flags.c_contiguous:
        raise ValueError("accumulate_grad needs a C-contiguous grad")


def accumulate_grad(grad: np.ndarray, incoming: np.ndarray) -> None:
    """``grad += incoming`` in place, converting ``incoming`` to ``grad``'s dtype.

    The sum is computed in the promoted dtype and rounded once to ``grad.dtype``, as PyTorch's
    ``grad.add_(incoming)``. ``incoming`` may have any layout (a broadcast view, say).
    """
    check_accumulate(grad, incoming)
    np.add(grad, incoming, out=grad, casting="unsafe")


# --------------------------------------------------------------------------- optimizers


def check_group(lists: Sequence[Sequence[np.ndarray] | None], names: Sequence[str]) -> None:
    """All present lists match ``lists[0]`` (params): length, shape, dtype, C-contiguity."""
    params = lists[0]
    for name, arrays in zip(names[1:], lists[1:], strict=True):
        if arrays is None:
            continue
        if len(arrays) != len(params):
            raise ValueError(f"{name} has {len(arrays)} arrays for {len(params)} parameters")
        for arr, p in zip(arrays, params, strict=True):
            if arr.shape != p.shape or arr.dtype != p.dtype:
                raise ValueError(f"{name}: {arr.dtype}{tuple(arr.shape)} does not match the "
                                 f"parameter's {p.dtype}{tuple(p.shape)}")
            if not arr.flags.c_contiguous:
                raise ValueError(f"{name} arrays must be C-contiguous")
    for p in params:
        if p.dtype not in OPTIM_DTYPES:
            raise TypeError(f"fused optimizers support float32 and float64, got {p.dtype}")


def sgd_scalars(*, lr, momentum, dampening, weight_decay, nesterov, maximize, first_step,
                momentum_bufs) -> tuple[float, float, float, float, int]:
    """Validate SGD options; give ``(lr, momentum, 1 - dampening, weight_decay, flags)``."""
    lr, momentum, dampening, weight_decay = (float(lr), float(momentum), float(dampening),
                                             float(weight_decay))
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError("nesterov needs momentum > 0 and dampening == 0")
    if momentum != 0 and momentum_bufs is None:
        raise ValueError("momentum != 0 needs momentum_bufs (preallocated on the first step)")
    flags = ((SGD_WEIGHT_DECAY if weight_decay != 0 else 0)
             | (SGD_MOMENTUM if momentum != 0 else 0)
             | (SGD_NESTEROV if nesterov else 0)
             | (SGD_MAXIMIZE if maximize else 0)
             | (SGD_FIRST_STEP if first_step else 0))
    return lr, momentum, 1.0 - dampening, weight_decay, flags


def fused_sgd(params: Sequence[np.ndarray], grads: Sequence[np.ndarray],
              momentum_bufs: Sequence[np.ndarray] | None, *, lr: float, momentum: float = 0.0,
              dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
              maximize: bool = False, first_step: bool = False) -> None:
    """One SGD step (docs/semantics.md) on every parameter, in place.

    ``momentum_bufs`` is None without momentum; with momentum it holds one array per parameter,
    overwritten with a clone of the (decayed) gradient when ``first_step`` is true. A caller
    whose group mixes new and existing buffers makes two calls.
    """
    lr, momentum, one_minus_damp, weight_decay, flags = sgd_scalars(
        lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
        nesterov=nesterov, maximize=maximize, first_step=first_step,
        momentum_bufs=momentum_bufs)
    check_group([params, grads, momentum_bufs if flags & SGD_MOMENTUM else None],
                 ["params", "grads", "momentum_bufs"])
    bufs = momentum_bufs if flags & SGD_MOMENTUM else [None] * len(params)
    for p, grad, buf in zip(params, grads, bufs, strict=True):
        # d is the update direction; `owned` says whether d is our temporary (free to modify).
        if flags & SGD_WEIGHT_DECAY:
            d = np.multiply(p, weight_decay)
            d = np.subtract(d, grad, out=d) if flags & SGD_MAXIMIZE else np.add(d, grad, out=d)
            owned = True
        elif flags & SGD_MAXIMIZE:
            d, owned = np.negative(grad), True
        else:
            d, owned = grad, False
        if flags & SGD_MOMENTUM:
            if flags & SGD_FIRST_STEP:
                np.copyto(buf, d)
            else:
                buf *= momentum
                if one_minus_damp == 1.0:
                    buf += d  # 1.0 * d == d exactly: skip the multiply
                else:
                    buf += np.multiply(d, one_minus_damp)
            if flags & SGD_NESTEROV:
                step = np.multiply(buf, momentum)
                step += d
                d, owned = step, True
            else:
                d, owned = buf, False
        p -= np.multiply(d, lr, out=d if owned else None)


def adam_scalars(*, step, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize,
                 max_exp_avg_sqs) -> tuple[tuple[float, ...], int]:
    """Validate Adam options; give the kernel's scalars and option flags.

    Scalars: ``(beta1, 1 - beta1, beta2, 1 - beta2, eps, weight_decay, 1 - lr * weight_decay,
    lr / bc1, sqrt(bc2))`` with ``bc = 1 - beta ** step``, all computed in double precision.
    """
    step, lr, beta1, beta2, eps, weight_decay = (int(step), float(lr), float(beta1), float(beta2),
                                                 float(eps), float(weight_decay))
    if step < 1:
        raise ValueError(f"step counts from 1 (the step being taken), got {step}")
    if amsgrad and max_exp_avg_sqs is None:
        raise ValueError("amsgrad needs max_exp_avg_sqs")
    bias_correction1 = 1.0 - beta1 ** step
    bias_correction2 = 1.0 - beta2 ** step
    scalars = (beta1, 1.0 - beta1, beta2, 1.0 - beta2, eps, weight_decay,
               1.0 - lr * weight_decay, lr / bias_correction1, math.sqrt(bias_correction2))
    flags = (((ADAM_DECOUPLED if decoupled else ADAM_WEIGHT_DECAY) if weight_decay != 0 else 0)
             | (ADAM_AMSGRAD if amsgrad else 0)
             | (ADAM_MAXIMIZE if maximize else 0))
    return scalars, flags


def fused_adam(params: Sequence[np.ndarray], grads: Sequence[np.ndarray],
               exp_avgs: Sequence[np.ndarray], exp_avg_sqs: Sequence[np.ndarray],
               max_exp_avg_sqs: Sequence[np.ndarray] | None, *, step: int, lr: float,
               beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
               weight_decay: float = 0.0, decoupled: bool = False, amsgrad: bool = False,
               maximize: bool = False) -> None:
    """One Adam (``decoupled=False``) or AdamW (``decoupled=True``) step, in place.

    ``step`` is the step being taken (1 on the first call; the caller keeps the count), and
    the bias corrections follow from it. ``max_exp_avg_sqs`` is None unless ``amsgrad``.
    """
    scalars, flags = adam_scalars(step=step, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                                  weight_decay=weight_decay, decoupled=decoupled,
                                  amsgrad=amsgrad, maximize=maximize,
                                  max_exp_avg_sqs=max_exp_avg_sqs)
    (beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay_factor, step_size,
     bc2_sqrt) = scalars
    check_group([params, grads, exp_avgs, exp_avg_sqs,
                  max_exp_avg_sqs if flags & ADAM_AMSGRAD else None],
                 ["params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"])
    vmaxes = max_exp_avg_sqs if flags & ADAM_AMSGRAD else [None] * len(params)
    for p, grad, m, v, vmax in zip(params, grads, exp_avgs, exp_avg_sqs, vmaxes, strict=True):
        if flags & ADAM_WEIGHT_DECAY:
            g = np.multiply(p, weight_decay)
            g = np.subtract(g, grad, out=g) if flags & ADAM_MAXIMIZE else np.add(g, grad, out=g)
        elif flags & ADAM_MAXIMIZE:
            g = np.negative(grad)
        else:
            g = grad
        if flags & ADAM_DECOUPLED:
            p *= decay_factor
        m *= beta1
        tmp = np.multiply(g, one_minus_beta1)
        m += tmp
        v *= beta2
        np.multiply(g, g, out=tmp)
        tmp *= one_minus_beta2
        v += tmp
        if flags & ADAM_AMSGRAD:
            np.maximum(vmax, v, out=vmax)
            v = vmax
        denom = np.sqrt(v, out=tmp)
        denom /= bc2_sqrt
        denom += eps
        np.divide(m, denom, out=denom)
        denom *= step_size
        p -= denom
