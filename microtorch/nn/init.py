"""``microtorch.nn.init``: in-place weight initialisers with PyTorch's formulas.

Each one fills the tensor in place without recording a graph and draws its random numbers
with one ``backend.uniform``/``backend.normal`` call of the tensor's shape, exactly as
PyTorch's ``uniform_``/``normal_`` do, so after the same ``manual_seed`` the CPU results are
bit-identical to PyTorch's.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._tensor import Tensor
from ..autograd import saved
from ..ops.creation import randperm

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_"]

_LINEAR = {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid"}


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fill(tensor: Tensor, arr) -> Tensor:
    """Write ``arr`` into ``tensor``'s buffer (no graph: initialisation is not an op)."""
    if saved.writes.count:
        saved.before_write(tensor)
    tensor._data[...] = tensor._backend.asarray(arr)
    tensor._vbox[0] += 1
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    source = tensor._backend if generator is None else generator
    return _fill(tensor, source.uniform(tuple(tensor.shape), tensor._data.dtype, a, b))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2)."""
    source = tensor._backend if generator is None else generator
    return _fill(tensor, source.normal(tuple(tensor.shape), tensor._data.dtype, mean, std))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b], by PyTorch 2.13's rejection sampling.

    When [a, b] holds more than 30% of the mass, normal draws (of the whole tensor) replace the
    values outside it until none is left; otherwise uniform proposals on [a, b] are accepted
    with probability pdf/peak. The draws follow PyTorch's order, so the CPU stream matches.
    """
    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    source = tensor._backend if generator is None else generator
    xp, arr = tensor._backend.xp, tensor._data
    shape, dt = tuple(arr.shape), arr.dtype

    def draw(kind: str, *args):
        return tensor._backend.asarray(getattr(source, kind)(shape, dt, *args))

    if norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) > 0.3:
        lo, hi = dt.type(a), dt.type(b)  # bounds as the tensor's dtype sees them
        result = draw("normal", mean, std)
        while True:
            mask = (result < lo) | (result > hi)
            if not bool(mask.any()):
                break
            result = xp.where(mask, draw("normal", mean, std), result)
        return _fill(tensor, result)

    log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2

    def log_pdf(c):  # the same in-place op sequence as PyTorch, in the tensor's dtype
        c = (c - mean) / std
        return c * c * -0.5 - log_peak

    result = draw("uniform", a, b)
    pending = xp.log(draw("uniform", 0.0, 1.0)) > log_pdf(result)
    while bool(pending.any()):
        candidates = draw("uniform", a, b)
        result = xp.where(pending, candidates, result)
        pending = xp.where(pending, xp.log(draw("uniform", 0.0, 1.0)) > log_pdf(candidates),
                           pending)
    return _fill(tensor, result)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    if saved.writes.count:
        saved.before_write(tensor)
    tensor._data.fill(val)
    tensor._vbox[0] += 1
    return tensor


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    if saved.writes.count:
        saved.before_write(tensor)
    tensor._backend.fill_zero(tensor._data)
    tensor._vbox[0] += 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator=generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al.)."""
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def _default_affine_(weight: Tensor, bias: Tensor | None, *, zero_fan_bias: bool) -> None:
    """PyTorch's default reset of Linear and Conv: kaiming_uniform_(a=sqrt(5)) on the weight,
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) on the bias.

    With fan_in 0, Linear still draws the bias (U(0, 0), so zeros: ``zero_fan_bias``) while
    Conv leaves it untouched, as PyTorch does; the random stream depends on that difference.
    """
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is None:
        return
    fan_in = _calculate_fan_in_and_fan_out(weight)[0]
    if fan_in or zero_fan_bias:
        bound = 1 / math.sqrt(fan_in) if fan_in else 0
        uniform_(bias, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan) (He et al.)."""
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator=generator)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the main diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    xp = tensor._backend.xp
    return _fill(tensor, xp.eye(*tensor.shape, dtype=tensor._data.dtype))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta: each of the first
    ``min(out/groups, in)`` channels of every group passes its input channel through the
    kernel's centre unchanged."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    arr = tensor._backend.xp.zeros(sizes, dtype=tensor._data.dtype)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(per_group, sizes[1])):
            arr[(g * per_group + d, d, *centre)] = 1
    return _fill(tensor, arr)


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix: the Q of the QR decomposition of a standard
    normal (rows, numel/rows) draw, signs fixed so that R's diagonal is positive (Mezzadri's
    uniform Haar measure), times ``gain``; the tensor is viewed as 2-D.

    The normal draw is PyTorch's (one ``normal_`` of shape (rows, cols)); the QR runs in
    NumPy's LAPACK, so the result equals PyTorch's to rounding, not bit for bit.
    """
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    source = tensor._backend if generator is None else generator
    flat = tensor._backend.to_numpy(tensor._backend.asarray(
        source.normal((rows, cols), tensor._data.dtype, 0.0, 1.0)))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diagonal(r))
    if rows < cols:
        q = q.T
    q = (q * q.dtype.type(gain)).astype(tensor._data.dtype, copy=False)
    return _fill(tensor, q.reshape(tuple(tensor.shape)))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill a 2-D tensor with N(0, std^2) and zero ``ceil(sparsity * rows)`` random rows of
    every column (one ``randperm`` per column from the default generator, as PyTorch)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    normal_(tensor, 0.0, std, generator=generator)
    arr = tensor._data
    for col in range(cols):
        # torch.randperm(rows): the CPU default generator, whatever the tensor's device
        rows_to_zero = randperm(rows)[:num_zeros].numpy()
        arr[tensor._backend.asarray(rows_to_zero), col] = 0
    return tensor


def _deprecated_alias(fill: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The old name of an in-place initialiser (``uniform`` for ``uniform_``): it warns with
    PyTorch's FutureWarning, at the caller, and then fills exactly as the new name does."""
    new_name = fill.__name__
    old_name = new_name[:-1]

    def alias(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return fill(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name
    alias.__doc__ = (f"{old_name}(...): deprecated, use :func:`{new_name}` (same arguments, "
                     f"same values); warns FutureWarning.")
    return alias


# PyTorch 2.13 keeps these eleven names (not in its ``__all__``), each warning on use.
uniform = _deprecated_alias(uniform_)
normal = _deprecated_alias(normal_)
constant = _deprecated_alias(constant_)
eye = _deprecated_alias(eye_)
dirac = _deprecated_alias(dirac_)
xavier_uniform = _deprecated_alias(xavier_uniform_)
xavier_normal = _deprecated_alias(xavier_normal_)
kaiming_uniform = _deprecated_alias(kaiming_uniform_)
kaiming_normal = _deprecated_alias(kaiming_normal_)
orthogonal = _deprecated_alias(orthogonal_)
sparse = _deprecated_alias(sparse_)
