"""Dropout: elementwise ``dropout`` and channel-wise ``dropout1d/2d/3d``, and the alpha
dropouts of self-normalising networks (``alpha_dropout``, ``feature_alpha_dropout``).

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.elementwise``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

import math
import warnings

from ...backend.base import dense_order
from ...ops._util import Tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p).

    The mask comes from the backend's ``bernoulli(1 - p)`` and is scaled in the input's dtype,
    the same recipe as PyTorch's CPU dropout; on the CPU the stream follows PyTorch's
    ``bernoulli_``, but bit-equal masks with PyTorch are not guaranteed (and not on CUDA).
    """
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    mask = _kept(input, p)
    mask /= 1.0 - p
    noise = Tensor._make(mask, False, None)
    if inplace:
        return input.mul_(noise)
    return input * noise


def _kept(input: Tensor, p: float):
    """A bernoulli(1 - p) array of input's shape and dtype (1 = kept), drawn as PyTorch does."""
    arr = input._data
    # PyTorch draws the mask into a tensor laid out like the input and fills it in memory
    # order: draw it in that order, then view it in the input's axis order.
    order = dense_order(arr) or tuple(range(arr.ndim))  # (any other layout: logical order)
    mask = input._backend.bernoulli(1.0 - p, tuple(arr.shape[a] for a in order), arr.dtype)
    return input._backend.asarray(mask).transpose(sorted(range(arr.ndim),
                                                         key=order.__getitem__))


# SELU's negative saturation value: alpha dropout sets dropped elements to it (then rescales)
_SELU_SATURATION = 1.7580993408473766


def _alpha_noise(kept, p: float) -> tuple[Tensor, Tensor]:
    """(scale, shift) of alpha dropout from a 1 = kept mask: kept elements a * x + a * alpha * p,
    dropped ones -a * alpha (1 - p) so that the mean and variance of SELU outputs are kept."""
    a = 1.0 / math.sqrt((_SELU_SATURATION * _SELU_SATURATION * p + 1) * (1 - p))
    shift = (kept - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    kept *= a
    return Tensor._make(kept, False, None), Tensor._make(shift, False, None)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for self-normalising (SELU) networks: dropped elements take SELU's saturation
    value and the result is rescaled to keep zero mean and unit variance (identity unless
    ``training``, which defaults to False here, as in PyTorch)."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    scale, shift = _alpha_noise(_kept(input, p), p)
    return input.mul_(scale).add_(shift) if inplace else input * scale + shift


# -- channel dropout -----------------------------------------------------------------------------
def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     batched: bool = True, alpha: bool = False) -> Tensor:
    """PyTorch's ``feature_dropout``: one bernoulli(1 - p) draw per (sample, channel), shape
    (N, C, 1, ...), divided by 1 - p in the input's dtype, then multiplied in (``alpha``: the
    alpha-dropout scale and shift instead)."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    if input.ndim < (2 if batched else 1):
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    lead = tuple(input.shape[:2]) if batched else (1, input.shape[0])
    rest = input.ndim - (2 if batched else 1)
    arr = input._data
    mask = input._backend.asarray(input._backend.bernoulli(1.0 - p, lead + (1,) * rest,
                                                           arr.dtype))
    if not batched:
        mask = mask.reshape(mask.shape[1:])
    if alpha:
        scale, shift = _alpha_noise(mask, p)
        return input.mul_(scale).add_(shift) if inplace else input * scale + shift
    mask /= 1.0 - p
    noise = Tensor._make(mask, False, None)
    return input.mul_(noise) if inplace else input * noise


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels of (N, C, ...) input (identity unless ``training``)."""
    _check_p(p)
    return _feature_dropout(input, p, training, inplace, alpha=True)


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p != p:  # NaN passes PyTorch's Python check and fails its kernel's
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           f"input. Note that dropout1d exists to provide channel-wise dropout "
                           f"on inputs with 1 spatial dimension, a channel dimension, and an "
                           f"optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) input with probability ``p`` (a 3-D input is taken
    as (N, C, L) with PyTorch's warning, as PyTorch still does)."""
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. Note "
                      f"that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension "
                      f"(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change in "
                      "a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. Note "
                      f"that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension "
                      f"(i.e. 4D or 5D inputs).", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, batched=input.ndim != 4)
