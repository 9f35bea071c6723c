"""PyTorch's top-level forms (``torch.X``) of ops microtorch implements elsewhere.

PyTorch exposes many ops twice: ``torch.nn.functional.X`` (Python, string ``reduction``,
keyword-friendly) and ``torch.X`` (the aten binding: integer ``reduction``, required
positional flags, sometimes another argument order: ``torch.embedding(weight, indices)``,
``torch.batch_norm(input, weight, bias, running_mean, ...)``). Every function here is only an
argument adapter onto the existing implementation (``nn.functional``, a Tensor method,
``linalg``, ``view_copies.materialised``); none computes anything of its own.
"""

from __future__ import annotations

import warnings

from . import linalg as _linalg
from ._tensor import Tensor
from .distributions import sampling as _sampling
from .nn import functional as F
from .nn.functional.dropout import _feature_dropout
from .nn.utils.parametrizations import norm_except_dim as _norm_except_dim
from .ops import rnn as _rnn
from .ops.dlpack import to_dlpack
from .ops.shape import split, transpose
from .ops.view_copies import materialised

# aten's ``reduction`` integers (at::Reduction): None, Mean, Sum. PyTorch's Python binding
# reads the schemas' default ``at::Reduction::Mean`` as 0: an omitted reduction is none (tested).
_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _reduction(reduction) -> str:
    if isinstance(reduction, str):
        return reduction
    try:
        return _REDUCTION[int(reduction)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


# -- normalisation ------------------------------------------------------------------------------
def batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """``torch.batch_norm``: ``F.batch_norm`` with aten's argument order (all required)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight, bias, running_mean, running_var,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    """``torch.instance_norm``: ``F.instance_norm`` with aten's argument order."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    """``torch.layer_norm`` (``cudnn_enable`` is accepted and ignored)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    """``torch.group_norm`` (``cudnn_enabled`` is accepted and ignored)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape, weight=None, eps: float | None = None) -> Tensor:
    """``torch.rms_norm``."""
    return F.rms_norm(input, normalized_shape, weight, eps)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """``torch.norm_except_dim``: the ``pow``-norm over all dimensions but ``dim`` (``dim=-1``:
    over all), shaped to broadcast against ``v`` (weight normalisation's ``g``)."""
    return _norm_except_dim(v, pow, dim)


def native_norm(input: Tensor, p=2, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """``torch.native_norm``: the vector ``p``-norm (over ``dim``, all by default)."""
    return _linalg.vector_norm(input, p, dim, keepdim, dtype=dtype)


def frobenius_norm(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``torch.frobenius_norm``: the 2-norm over ``dim``."""
    return _linalg.vector_norm(input, 2, dim, keepdim)


def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """``torch.nuclear_norm``: the sum of singular values of the matrices over ``dim``
    (the last two dimensions by default); ``nuclear_norm(input, keepdim)`` also works."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return _linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


# -- dropout ------------------------------------------------------------------------------------
def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout``: ``train`` is positional and required."""
    return F.dropout(input, p, train)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.alpha_dropout``."""
    return F.alpha_dropout(input, p, train)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_alpha_dropout``."""
    return F.feature_alpha_dropout(input, p, train)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_dropout``: whole channels (dimension 1) zeroed, any rank >= 2."""
    return _feature_dropout(input, p, train, False)


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    """``torch.native_dropout``: ``(output, mask)``; the mask is boolean (kept elements), all
    True outside training (``train=False``)."""
    if train is False:
        return input.clone(), input.new_ones(input.shape).bool()
    if p == 1.0:
        return input * 0.0, input.new_zeros(input.shape).bool()
    mask = input.new_empty(input.shape).bernoulli_(1.0 - p).bool()
    return input * mask * (1.0 / (1.0 - p)), mask


# -- activations --------------------------------------------------------------------------------
def celu(input: Tensor, alpha=1.0) -> Tensor:
    """``torch.celu``."""
    return F.celu(input, alpha)


def selu(input: Tensor) -> Tensor:
    """``torch.selu``."""
    return F.selu(input)


def rrelu(input: Tensor, lower=0.125, upper=1.0 / 3.0, training: bool = False,
          generator=None) -> Tensor:
    """``torch.rrelu`` (the slopes are drawn from the global generator when training)."""
    return F.rrelu(input, lower, upper, training)


def threshold(input: Tensor, threshold, value) -> Tensor:  # noqa: A002
    """``torch.threshold``: ``value`` where ``input <= threshold``."""
    return F.threshold(input, threshold, value)


def hardshrink(input: Tensor, lambd=0.5) -> Tensor:
    """``torch.hardshrink``."""
    return input.hardshrink(lambd)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``torch.prelu``."""
    return F.prelu(input, weight)


# -- pooling and convolution --------------------------------------------------------------------
def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """``torch.adaptive_avg_pool1d``."""
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple[Tensor, Tensor]:
    """``torch.adaptive_max_pool1d``: always ``(values, indices)``."""
    return F.adaptive_max_pool1d(input, output_size, True)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """``torch.avg_pool1d``."""
    return F.avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def _stride(stride):
    """aten's ``stride=()`` (empty: the kernel size) as F's None."""
    return None if stride is None or (isinstance(stride, (tuple, list)) and not stride) \
        else stride


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool1d`` (values only)."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """``torch.max_pool1d_with_indices``: ``(values, indices)``."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, True)


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool2d`` (values only)."""
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool3d`` (values only)."""
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = (F.conv_transpose1d, F.conv_transpose2d,
                                                        F.conv_transpose3d)
conv_tbc, bilinear, pdist = F.conv_tbc, F.bilinear, F.pdist
pixel_shuffle, pixel_unshuffle = F.pixel_shuffle, F.pixel_unshuffle
channel_shuffle, native_channel_shuffle = F.channel_shuffle, F.native_channel_shuffle
cosine_similarity, pairwise_distance = F.cosine_similarity, F.pairwise_distance


def convolution(input: Tensor, weight: Tensor, bias, stride, padding, dilation,
                transposed: bool, output_padding, groups: int) -> Tensor:
    """``torch.convolution``: the 1-, 2- or 3-d (transposed) convolution by ``weight``'s rank."""
    n = weight.ndim - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"Expected {n + 2}D weight to be 3D, 4D or 5D for convolution")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return (F.conv1d, F.conv2d, F.conv3d)[n - 1](input, weight, bias, stride, padding,
                                                 dilation, groups)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """``torch.affine_grid_generator``: ``F.affine_grid`` with ``align_corners`` required."""
    return F.affine_grid(theta, list(size), align_corners)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``torch.embedding``: note the order, ``weight`` first; ``padding_idx=-1`` is none."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


# -- losses (aten's integer reduction) ----------------------------------------------------------
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight=None,
                                     pos_weight=None, reduction: int = 0) -> Tensor:
    """``torch.binary_cross_entropy_with_logits``."""
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 0) -> Tensor:
    """``torch.cosine_embedding_loss``."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 0) -> Tensor:
    """``torch.hinge_embedding_loss``."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    """``torch.margin_ranking_loss``."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction))


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *,
           log_target: bool = False) -> Tensor:
    """``torch.kl_div`` (an omitted ``reduction`` is none, as in PyTorch)."""
    with warnings.catch_warnings():  # F's warning about 'mean' is F's own, not aten's
        warnings.simplefilter("ignore", UserWarning)
        return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """``torch.poisson_nll_loss`` (every argument required)."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, reduction: int = 0) -> Tensor:
    """``torch.triplet_margin_loss``."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: int = 0, zero_infinity: bool = False) -> Tensor:
    """``torch.ctc_loss``."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction), zero_infinity)


# -- recurrent cells ----------------------------------------------------------------------------
def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih=None,
              b_hh=None) -> tuple[Tensor, Tensor]:
    """``torch.lstm_cell``: ``hx`` is the pair ``(h, c)``; returns ``(h', c')``."""
    h, c = hx
    return _rnn.lstm_cell(input, h, c, w_ih, w_hh, b_ih, b_hh)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None,
             b_hh=None) -> Tensor:
    """``torch.gru_cell``."""
    return _rnn.gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None,
                  b_hh=None) -> Tensor:
    """``torch.rnn_tanh_cell``."""
    return _rnn.rnn_cell(input, hx, w_ih, w_hh, b_ih, b_hh, False)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None,
                  b_hh=None) -> Tensor:
    """``torch.rnn_relu_cell``."""
    return _rnn.rnn_cell(input, hx, w_ih, w_hh, b_ih, b_hh, True)


# -- aliases and Tensor-method forms ------------------------------------------------------------
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``torch.swapaxes``: ``transpose``."""
    return transpose(input, axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``torch.swapdims``: ``transpose``."""
    return transpose(input, dim0, dim1)


def adjoint(input: Tensor) -> Tensor:
    """``torch.adjoint``: the conjugate transpose of the last two dimensions (a view)."""
    return input.adjoint()


def detach(input: Tensor) -> Tensor:
    """``torch.detach``."""
    return input.detach()


def is_nonzero(input: Tensor) -> bool:
    """``torch.is_nonzero``: the truth of a one-element tensor."""
    return input.is_nonzero()


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """``torch.is_same_size``."""
    return input.is_same_size(other)


def is_signed(input: Tensor) -> bool:
    """``torch.is_signed``."""
    return input.is_signed()


def is_inference(input: Tensor) -> bool:
    """``torch.is_inference``."""
    return input.is_inference()


def is_distributed(input: Tensor) -> bool:
    """``torch.is_distributed``: always False (no distributed tensors)."""
    return False


def get_device(input: Tensor) -> int:
    """``torch.get_device``: the CUDA device index, -1 on the CPU."""
    return input.get_device()


def _comparison(name: str, op: str):
    def compare(input: Tensor, other, *, out: Tensor | None = None) -> Tensor:
        from . import ops
        fn = getattr(ops, op)
        result = fn(input, other)
        return result if out is None else out.copy_(result)
    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = f"``torch.{name}``: an alias of ``{op}``."
    return compare


greater, greater_equal = _comparison("greater", "gt"), _comparison("greater_equal", "ge")
less, less_equal = _comparison("less", "lt"), _comparison("less_equal", "le")
not_equal = _comparison("not_equal", "ne")


def row_stack(tensors, *, out: Tensor | None = None) -> Tensor:
    """``torch.row_stack``: an alias of ``vstack``."""
    from .ops import vstack
    result = vstack(tensors)
    return result if out is None else out.copy_(result)


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """``torch.binomial``: draws of Binomial(count, prob), of ``prob``'s dtype."""
    from .random import default_generator
    if generator is not None and generator is not default_generator:
        raise NotImplementedError("microtorch's binomial draws from the default generator only")
    return Tensor._make(_sampling.binomial(count, prob))


# -- *_copy forms of views ----------------------------------------------------------------------
def detach_copy(input: Tensor) -> Tensor:
    """``detach``, materialised."""
    return input.detach().clone()


def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    """``select``, materialised."""
    return materialised(input.select(dim, index), input, "SelectBackward0_copy")


def slice_copy(input: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """``input[..., start:end:step, ...]`` along ``dim``, materialised."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    dim = dim + input.ndim if dim < 0 else dim
    key = (slice(None),) * dim + (slice(start, end, step),)
    return materialised(input[key], input, "SliceBackward0_copy")


def split_copy(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``split`` into pieces of ``split_size``, materialised."""
    return materialised(split(input, split_size, dim), input, "SplitBackward0_copy")


def view_as_real_copy(input: Tensor) -> Tensor:
    """``view_as_real``, materialised."""
    from .ops import view_as_real
    return materialised(view_as_real(input), input, "ViewAsRealBackward0_copy")


def view_as_complex_copy(input: Tensor) -> Tensor:
    """``view_as_complex``, materialised."""
    from .ops import view_as_complex
    return materialised(view_as_complex(input), input, "ViewAsComplexBackward0_copy")


def _sparse_part_copy(name: str):
    def part_copy(input: Tensor) -> Tensor:
        return getattr(input, name)().clone()
    part_copy.__name__ = part_copy.__qualname__ = f"{name}_copy"
    part_copy.__doc__ = f"``Tensor.{name}()`` of a sparse tensor, copied."
    return part_copy


values_copy, indices_copy = _sparse_part_copy("values"), _sparse_part_copy("indices")
crow_indices_copy = _sparse_part_copy("crow_indices")
col_indices_copy = _sparse_part_copy("col_indices")

__all__ = [
    "batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm", "norm_except_dim",
    "native_norm", "frobenius_norm", "nuclear_norm", "dropout", "alpha_dropout",
    "feature_alpha_dropout", "feature_dropout", "native_dropout", "celu", "selu", "rrelu",
    "threshold", "hardshrink", "prelu", "adaptive_avg_pool1d", "adaptive_max_pool1d",
    "avg_pool1d", "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool3d",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "conv_tbc", "bilinear", "pdist", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "native_channel_shuffle", "cosine_similarity", "pairwise_distance", "convolution",
    "affine_grid_generator", "embedding", "binary_cross_entropy_with_logits",
    "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "kl_div",
    "poisson_nll_loss", "triplet_margin_loss", "ctc_loss", "lstm_cell", "gru_cell",
    "rnn_tanh_cell", "rnn_relu_cell", "swapaxes", "swapdims", "adjoint", "detach",
    "is_nonzero", "is_same_size", "is_signed", "is_inference", "is_distributed", "get_device",
    "greater", "greater_equal", "less", "less_equal", "not_equal", "row_stack", "binomial",
    "detach_copy", "select_copy", "slice_copy", "split_copy", "view_as_real_copy",
    "view_as_complex_copy", "values_copy", "indices_copy", "crow_indices_copy",
    "col_indices_copy", "to_dlpack",
]
