"""``torch.masked``: reductions and normalizations that skip the masked-out elements.

``mask`` is a bool tensor (or one cast to bool) broadcastable to the input, True where an
element takes part; ``mask=None`` means all do. The ops are PyTorch's compositions of ordinary
differentiable ops (``_reductions``, ``_normalizations``, over the helpers of ``_mask``), so
their values, the identities of fully masked-out slices and their gradients are PyTorch's.
Strided tensors only: PyTorch's sparse COO/CSR inputs and its ``MaskedTensor`` class are not
implemented (sparse inputs raise ``NotImplementedError``).
"""

from __future__ import annotations

from ._mask import (
    _canonical_dim,
    _combine_input_and_mask,
    _input_mask,
    _output_mask,
    _reduction_identity,
    _where,
)
from ._normalizations import (
    cumprod,
    cumsum,
    log_softmax,
    logaddexp,
    normalize,
    softmax,
    softmin,
)
from ._reductions import (
    amax,
    amin,
    argmax,
    argmin,
    logsumexp,
    mean,
    median,
    norm,
    prod,
    std,
    sum,  # noqa: A004
    var,
)

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]

# PyTorch's private helpers, used by code written against torch.masked (its OpInfo wrappers).
_HELPERS = (_canonical_dim, _combine_input_and_mask, _input_mask, _output_mask,
            _reduction_identity, _where)
