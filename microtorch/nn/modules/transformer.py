"""Transformer layers: ``TransformerEncoderLayer``, ``TransformerEncoder``,
``TransformerDecoderLayer``, ``TransformerDecoder``, ``Transformer`` (their attention,
``MultiheadAttention``, lives in ``activation`` as PyTorch's does).

Parameters, their names, order, shapes and initialisation (including the order of random
draws) are PyTorch's, so state dicts load across and ``manual_seed`` gives the same weights.
The forward passes follow PyTorch's reference (non-fast-path) code; they are compositions of
differentiable ops (``F.multi_head_attention_forward``, ``F.scaled_dot_product_attention``).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable

import numpy as np

from ..._dtype import float32
from ..._tensor import Tensor
from ...autograd.grad_mode import is_grad_enabled
from ...ops.creation import tensor
from .. import functional as F
from .. import init
from ..functional.attention import _canonical_mask, _causal_array, _none_or_dtype
from .activation import GELU, MultiheadAttention, ReLU
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "Transformer"]


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """(sz, sz) float mask: -inf above the diagonal, 0 elsewhere (float32 by default)."""
    return tensor(_causal_array(sz, sz), dtype=float32 if dtype is None else dtype,
                  device=device)


def _get_seq_len(src: Tensor, batch_first: bool) -> int:
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None = None,
                           size: int | None = None) -> bool:
    """PyTorch's rule: ``is_causal`` if given, else whether ``mask`` is the causal mask."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        if tuple(mask.shape) == (sz, sz) and mask.dtype.is_floating_point:
            make_causal = bool(np.array_equal(mask.detach().cpu().numpy(),
                                              _causal_array(sz, sz)))
        else:
            make_causal = False
    return make_causal


def _get_activation_fn(activation) -> Callable[[Tensor], Tensor]:
    """``"relu"``/``"gelu"`` as ``F.relu``/``F.gelu``; a callable as given."""
    if not isinstance(activation, str):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _attn_block(attn: MultiheadAttention, drop: Module, x: Tensor, mem: Tensor, attn_mask,
                key_padding_mask, is_causal: bool) -> Tensor:
    """``drop(attn(x, mem, mem)[0])``, without weights (self-attention: ``mem is x``). With
    ``batch_first`` PyTorch's output is a transposed view of a sequence-first buffer and its
    dropout mask is drawn in memory order, so draw it on a sequence-first copy (the same
    elements, PyTorch's order)."""
    x = attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
             need_weights=False, is_causal=is_causal)[0]
    if attn.batch_first and x.dim() == 3:
        return drop(x.transpose(0, 1).contiguous()).transpose(0, 1)
    return drop(x)


def _activation_kind(activation) -> int:
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


# -- encoder -------------------------------------------------------------------------------------
class TransformerEncoderLayer(Module):
    """Self-attention + feed-forward block (post-norm, or pre-norm with ``norm_first``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        activation = _get_activation_fn(activation)
        self.activation_relu_or_gelu = _activation_kind(activation)
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """One encoder layer over ``src`` ((S, N, E), (N, S, E) with batch_first, or (S, E))."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(src_mask), "src_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype,
                                   check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool = False):
        return _attn_block(self.self_attn, self.dropout1, x, x, attn_mask, key_padding_mask,
                           is_causal)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer`` (+ optional final norm)."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why = ""
        name = "encoder_layer"
        if not isinstance(encoder_layer, TransformerEncoderLayer):
            why = f"{name} was not TransformerEncoderLayer"
        elif encoder_layer.norm_first:
            why = f"{name}.norm_first was True"
        elif not encoder_layer.self_attn.batch_first:
            why = (f"{name}.self_attn.batch_first was not True"
                   "(use batch_first for better inference performance)")
        elif not encoder_layer.self_attn._qkv_same_embed_dim:
            why = f"{name}.self_attn._qkv_same_embed_dim was not True"
        elif encoder_layer.self_attn.in_proj_bias is None:
            why = f"{name}.self_attn was passed bias=False"
        elif not encoder_layer.activation_relu_or_gelu:
            why = f"{name}.activation_relu_or_gelu was not True"
        elif encoder_layer.norm1.eps != encoder_layer.norm2.eps:
            why = f"{name}.norm1.eps was not equal to {name}.norm2.eps"
        elif encoder_layer.self_attn.num_heads % 2 == 1:
            why = f"{name}.self_attn.num_heads is odd"
        if enable_nested_tensor and why:
            warnings.warn("enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """Run the layers in turn over ``src``, then the optional final norm.

        Where PyTorch would take its nested-tensor inference path (eval mode, no gradient
        needed, batched input, a left-aligned ``src_key_padding_mask`` and no ``mask``, with
        ``use_nested_tensor``), its padded positions come out as zeros before the final norm;
        the same positions are zeroed here (no nested tensors are built), so the numbers agree.
        """
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(mask), "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        batch_first = self.layers[0].self_attn.batch_first
        padded = self._nested_padding(src, mask, src_key_padding_mask)
        is_causal = _detect_is_causal_mask(mask, is_causal, _get_seq_len(src, batch_first))
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if padded is not None:
            output = output.masked_fill(padded, 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _nested_padding(self, src: Tensor, mask, key_padding_mask) -> Tensor | None:
        """The (N, S, 1) padded positions when PyTorch would run its nested-tensor path."""
        first = self.layers[0]
        if (not self.use_nested_tensor or first.training or src.dim() != 3
                or key_padding_mask is None or mask is not None):
            return None
        attn = first.self_attn
        params = (attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                  attn.out_proj.bias, first.norm1.weight, first.norm1.bias, first.norm2.weight,
                  first.norm2.bias, first.linear1.weight, first.linear1.bias,
                  first.linear2.weight, first.linear2.bias)
        if is_grad_enabled() and any(t is not None and t.requires_grad for t in (src, *params)):
            return None
        pad = (key_padding_mask != 0).detach()
        if self.mask_check:  # PyTorch's left-alignment check: valid tokens first in each row
            rows = pad.cpu().numpy()
            if (rows[:, 1:] < rows[:, :-1]).any():
                return None
        pad = pad.unsqueeze(-1)
        return pad if attn.batch_first else pad.transpose(0, 1)


# -- decoder -------------------------------------------------------------------------------------
class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory`` and feed-forward blocks."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _get_activation_fn(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """One decoder layer over ``tgt`` attending to ``memory``."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool = False) -> Tensor:
        return _attn_block(self.self_attn, self.dropout1, x, x, attn_mask, key_padding_mask,
                           is_causal)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal: bool = False):
        return _attn_block(self.multihead_attn, self.dropout2, x, mem, attn_mask,
                           key_padding_mask, is_causal)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer`` (+ optional final norm)."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """Run the layers in turn over ``tgt``, each attending to ``memory``."""
        batch_first = self.layers[0].self_attn.batch_first
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal,
                                               _get_seq_len(tgt, batch_first))
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """Encoder-decoder Transformer (PyTorch's ``nn.Transformer``); every parameter with more
    than one dimension is re-initialised with xavier_uniform_ (in ``parameters()`` order)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encode ``src``, decode ``tgt`` against the memory."""
        is_batched = src.dim() == 3
        if is_batched and src.shape[0 if self.batch_first else 1] != \
                tgt.shape[0 if self.batch_first else 1]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """(sz, sz) float mask: -inf above the diagonal, 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
