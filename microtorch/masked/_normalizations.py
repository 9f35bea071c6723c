"""The masked normalizations and elementwise ops of ``torch.masked``: cumsum, cumprod,
softmax, log_softmax, softmin, normalize and logaddexp.

Each keeps the input's shape. The masked-out elements enter the op as the identity of the
reduction it is built on (0 for cumsum and normalize's sum, 1 for cumprod, -inf for softmax and
log_softmax, inf for softmin and -inf for logaddexp), so they add nothing to the masked-in
results; what the output holds at masked-out positions is what that identity gives there (0
for softmax, -inf for log_softmax, nan for a fully masked-out softmax slice), as in PyTorch.
"""

from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor
from ..ops import cumprod as _cumprod
from ..ops import cumsum as _cumsum
from ..ops import divide, maximum
from ..ops import log_softmax as _log_softmax
from ..ops import logaddexp as _logaddexp
from ..ops import softmax as _softmax
from ._mask import _canonical_dim, masked_input, strided_only
from ._reductions import norm

__all__ = ["cumsum", "cumprod", "softmax", "log_softmax", "softmin", "normalize", "logaddexp"]


def cumsum(input: Tensor, dim: int, *, dtype: _dtype.dtype | None = None,
           mask: Tensor | None = None) -> Tensor:
    """The running sum of the masked-in elements along ``dim`` (masked-out ones count 0)."""
    strided_only("cumsum", input, mask)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _cumsum(masked_input("sum", input, mask), d, dtype=dtype).to(dtype=dtype)


def cumprod(input: Tensor, dim: int, *, dtype: _dtype.dtype | None = None,
            mask: Tensor | None = None) -> Tensor:
    """The running product of the masked-in elements along ``dim`` (masked-out ones
    count 1)."""
    strided_only("cumprod", input, mask)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _cumprod(masked_input("prod", input, mask), d, dtype=dtype).to(dtype=dtype)


def softmax(input: Tensor, dim: int, *, dtype: _dtype.dtype | None = None,
            mask: Tensor | None = None) -> Tensor:
    """Softmax along ``dim`` over the masked-in elements (0 at masked-out ones, nan in a
    fully masked-out slice)."""
    strided_only("softmax", input, mask)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _softmax(masked_input("amax", input, mask), d, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: _dtype.dtype | None = None,
                mask: Tensor | None = None) -> Tensor:
    """Log-softmax along ``dim`` over the masked-in elements (-inf at masked-out ones, nan
    in a fully masked-out slice)."""
    strided_only("log_softmax", input, mask)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _log_softmax(masked_input("amax", input, mask), d, dtype=dtype)


def softmin(input: Tensor, dim: int, *, dtype: _dtype.dtype | None = None,
            mask: Tensor | None = None) -> Tensor:
    """Softmin (softmax of the negated input) along ``dim`` over the masked-in elements."""
    strided_only("softmin", input, mask)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    # nn.functional.softmin: the negation in the input's dtype, then softmax casts.
    return _softmax(-masked_input("amin", input, mask), d, dtype=dtype)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12,
              dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The input divided by the masked ``ord``-norm of its slices along ``dim`` (at least
    ``eps``); masked-out elements become 0."""
    strided_only("normalize", input, mask)
    dtype = input.dtype if dtype is None else dtype
    x = masked_input("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = maximum(nrm, nrm.new_full([], eps))
    return divide(x, denom)


def logaddexp(input: Tensor, other: Tensor, *, dtype: _dtype.dtype | None = None,
              input_mask: Tensor | None = None, other_mask: Tensor | None = None) -> Tensor:
    """``log(exp(input) + exp(other))``, each operand's masked-out elements taken as -inf
    (so a position masked out in both gives -inf)."""
    strided_only("logaddexp", input, other, input_mask, other_mask)
    dtype = input.dtype if dtype is None else dtype
    a = masked_input("logaddexp", input, input_mask)
    b = masked_input("logaddexp", other, other_mask)
    return _logaddexp(a, b).to(dtype=dtype)
