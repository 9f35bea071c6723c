"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``.

Both are compositions of differentiable Tensor ops (matmul, softmax, masked_fill, dropout,
linear), so gradients, ``create_graph`` and CUDA come for free. They follow PyTorch's
``torch.nn.functional`` versions step by step (same mask conventions, same order of random
draws for dropout), so with the same seed the CPU results match PyTorch's.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..._tensor import Tensor
from ...ops._autocast import autocast_op
from ...ops.activation import softmax
from ...ops.creation import zeros, zeros_like
from ...ops.shape import cat
from .dropout import dropout
from .linear import linear
from .vision import pad

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")


def _causal_array(L: int, S: int) -> np.ndarray:
    """(L, S) float64: 0 on and below the diagonal (top-left aligned), -inf above."""
    return np.triu(np.full((L, S), -np.inf), 1)


def _causal_bias(L: int, S: int, like: Tensor) -> Tensor:
    """``_causal_array`` as a constant tensor in ``like``'s dtype, on its device."""
    bias = _causal_array(L, S).astype(like.dtype.np)
    return Tensor._make(like._backend.asarray(bias), False, None)


def _as_bias(mask: Tensor, dtype) -> Tensor:
    """A boolean mask (True = attend) as an additive float mask (0 / -inf); floats as given."""
    if mask.dtype.is_floating_point:
        return mask
    return zeros_like(mask, dtype=dtype).masked_fill(mask.logical_not(), _NEG_INF)


@autocast_op("scaled_dot_product_attention")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value``, with PyTorch's semantics.

    ``query``: (..., L, E), ``key``: (..., S, E), ``value``: (..., S, Ev). A boolean
    ``attn_mask`` marks the positions that may be attended (True); a float one is added to
    the scores. ``is_causal`` masks the positions above the diagonal (top-left aligned, as
    ``tril(ones(L, S))``). ``scale`` defaults to ``1/sqrt(E)``. Dropout (``dropout_p``) is
    applied to the attention weights whenever ``dropout_p > 0`` (the functional form has no
    training flag), with the mask of ``F.dropout`` drawn at the same point as PyTorch's math
    path, so after the same seed the CPU result equals PyTorch's. Rows whose keys are all
    masked give zeros (and zero gradients), as PyTorch's ``_safe_softmax``. ``enable_gqa``
    repeats the key/value heads (dim -3) to the query's head count.
    """
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {query.dtype} key.dtype: {key.dtype} and value.dtype: "
                           f"{value.dtype} instead.")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"Expected query and key to have the same embedding dimension, but "
                           f"got {query.shape[-1]} and {key.shape[-1]}")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in query")
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hv)
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    scores = (query @ key.transpose(-2, -1)) * scale_factor
    bias = None
    if is_causal:
        bias = _causal_bias(L, S, query)
    elif attn_mask is not None:
        bias = _as_bias(attn_mask, query.dtype)
    if bias is None:
        weights = softmax(scores, dim=-1)
    else:
        scores = scores + bias
        # PyTorch's _safe_softmax: fully masked rows give 0, not NaN (and no NaN gradients).
        dead = (scores == _NEG_INF).all(-1, keepdim=True)
        weights = softmax(scores.masked_fill(dead, 0.0), dim=-1).masked_fill(dead, 0.0)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return weights @ value


def _repeat_heads(x: Tensor, times: int) -> Tensor:
    """``x.repeat_interleave(times, dim=-3)``."""
    if times == 1:
        return x
    shape = tuple(x.shape)
    out = x.unsqueeze(-3).expand(*shape[:-2], times, *shape[-2:])
    return out.reshape(*shape[:-3], shape[-3] * times, *shape[-2:])


# -- multi-head attention ------------------------------------------------------------------------
def _canonical_mask(mask: Tensor | None, mask_name: str, other_type, other_name: str,
                    target_type, check_other: bool = True) -> Tensor | None:
    """A bool mask (True = masked out) as an additive float mask; float masks pass through."""
    if mask is None:
        return None
    is_float = mask.dtype.is_floating_point
    if mask.dtype.name != "bool" and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      "same type for both instead.", stacklevel=3)
    if not is_float:
        mask = zeros_like(mask, dtype=target_type).masked_fill(mask, _NEG_INF)
    return mask


def _none_or_dtype(input: Tensor | None):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """PyTorch's checks of the input ranks; True for batched (3-D) input."""
    rank = query.dim()
    if rank not in (2, 3):
        raise AssertionError("query should be unbatched 2D or batched 3D tensor but received "
                             f"{rank}-D query tensor")
    which = f"For {'batched' if rank == 3 else 'unbatched'} ({rank}-D) `query`"
    if key.dim() != rank or value.dim() != rank:
        raise AssertionError(f"{which}, expected `key` and `value` to be {rank}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != rank - 1:
        raise AssertionError(f"{which}, expected `key_padding_mask` to be `None` or "
                             f"{rank - 1}-D but found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(f"{which}, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        expected = (num_heads, query.shape[0], key.shape[0])
        if rank == 2 and attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                 f"{attn_mask.shape}")
    return rank == 3


def _pad_key(*masks):
    """The masks (None stays None) with a column for one more key (``bias_k`` or the zero
    key of ``add_zero_attn``)."""
    return tuple(None if m is None else pad(m, (0, 1)) for m in masks)


def _in_projection(query, key, value, w, b, w_q=None, w_k=None, w_v=None):
    if w_q is None:
        if key is value and query is key:  # self-attention: one projection
            return linear(query, w, b).chunk(3, -1)
        w_q, w_k, w_v = w.chunk(3)
    b_q = b_k = b_v = None
    if b is not None:
        b_q, b_k, b_v = b.chunk(3)
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """The forward pass of ``nn.MultiheadAttention`` (sequence-first: (L, N, E) or (L, E)).

    Masks use PyTorch's MHA convention: a boolean ``key_padding_mask``/``attn_mask`` marks
    the positions that may NOT be attended (True); float masks are added to the scores.
    With ``need_weights`` the weights are computed explicitly (fully masked rows give NaN, as
    PyTorch); otherwise through ``scaled_dot_product_attention`` (zeros there, as PyTorch).
    Returns ``(attn_output, attn_weights or None)``.
    """
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint replaces the mask in scaled_dot_product_attention
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, "
                                 "k_proj_weight or v_proj_weight is None")
        q, k, v = _in_projection(query, key, value, None, in_proj_bias, q_proj_weight,
                                 k_proj_weight, v_proj_weight)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            correct = (tgt_len, src_len)
            if tuple(attn_mask.shape) != correct:
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {correct}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            correct = (bsz * num_heads, tgt_len, src_len)
            if tuple(attn_mask.shape) != correct:
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {correct}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask, key_padding_mask = _pad_key(attn_mask, key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = (k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None
         else _static(static_k, bsz * num_heads, head_dim, "k"))
    v = (v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None
         else _static(static_v, bsz * num_heads, head_dim, "v"))
    if add_zero_attn:
        zero_shape = (bsz * num_heads, 1, head_dim)
        k = cat([k, zeros(zero_shape, dtype=k.dtype, device=k.device)], dim=1)
        v = cat([v, zeros(zero_shape, dtype=v.dtype, device=v.device)], dim=1)
        attn_mask, key_padding_mask = _pad_key(attn_mask, key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = (key_padding_mask.reshape(bsz, 1, 1, src_len)
                            .expand(-1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len))
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0

    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        scores = q_scaled @ k.transpose(-2, -1)
        if attn_mask is not None:
            scores = attn_mask + scores
        weights = softmax(scores, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = (weights @ v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _static(t: Tensor, rows: int, head_dim: int, name: str) -> Tensor:
    if t.shape[0] != rows:
        raise AssertionError(f"expecting static_{name}.size(0) of {rows}, but got {t.shape[0]}")
    if t.shape[2] != head_dim:
        raise AssertionError(f"expecting static_{name}.size(2) of {head_dim}, but got "
                             f"{t.shape[2]}")
    return t
