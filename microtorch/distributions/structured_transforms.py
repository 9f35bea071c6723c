"""More transforms (PyTorch's ``torch.distributions.transforms``): maps onto the simplex,
triangular and positive-definite matrices and correlation Cholesky factors, reshapes, and
functors applying transforms per slice (``CatTransform``, ``StackTransform``) or over extra
event dimensions (``IndependentTransform``).

The shared machinery (``Transform``, caching, inverses, composition) lives in ``transforms``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .. import linalg, ops
from .._tensor import Size, Tensor
from ..nn import functional as F
from . import constraints
from .transforms import Transform, _clipped_sigmoid, identity_transform
from .utils import sum_rightmost

__all__ = ["AbsTransform", "CatTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "ReshapeTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform",
           "identity_transform", "tril_matrix_to_vec", "vec_to_tril_matrix"]


def _tril_positions(n: int, diag: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the entries on or below diagonal ``diag`` of an n x n matrix,
    in row order."""
    rows, cols = np.nonzero(np.arange(n)[None, :] < np.arange(n)[:, None] + (diag + 1))
    return rows, cols


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of (a batch of) square matrices on or below diagonal ``diag``, row by row,
    as vectors."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = _tril_positions(n, diag)
    flat = ops.tensor(rows * n + cols, device=mat.device)
    return mat.reshape(*mat.shape[:-2], n * n)[..., flat]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """(A batch of) lower triangular matrices holding ``vec`` on and below diagonal ``diag``,
    row by row (zeros elsewhere): the inverse of ``tril_matrix_to_vec``."""
    length = vec.shape[-1]
    # The positive root of D^2 + (1 + 2 diag) D - |diag| (diag + 1) - 2 length = 0.
    b = 1 + 2 * diag
    n = (-b + (b * b + 8 * length + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > float(np.finfo(vec._data.dtype).eps):
        raise ValueError(f"The size of last dimension is {length} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    rows, cols = _tril_positions(n, diag)
    # Gather from [0, vec...]: slot 0 (a zero) fills the entries above the diagonal.
    source = np.zeros(n * n, dtype=np.int64)
    source[rows * n + cols] = np.arange(1, len(rows) + 1)
    padded = ops.cat([vec.new_zeros((*vec.shape[:-1], 1)), vec], -1)
    picked = padded[..., ops.tensor(source, device=vec.device)]
    return picked.reshape(*vec.shape[:-1], n, n)


class AbsTransform(Transform):
    """y = |x| (not injective: the inverse picks the non-negative preimage)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class SoftplusTransform(Transform):
    """y = log(1 + exp(x)), onto the positive numbers."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other) -> bool:
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more rightmost dimensions taken as
    the event: the map is unchanged, the log-det Jacobian is summed over those dimensions."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


def _check_event_shape(shape, event_shape: Size) -> int:
    """Where the event ``event_shape`` starts in ``shape`` (PyTorch's errors if it is not
    there)."""
    if len(shape) < len(event_shape):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(event_shape)
    if tuple(shape[cut:]) != tuple(event_shape):
        raise ValueError(f"Shape mismatch: expected {Size(tuple(shape[cut:]))} but got "
                         f"{event_shape}")
    return cut


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dimensions into ``out_shape`` (unit Jacobian)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape = Size(tuple(in_shape))
        self.out_shape = Size(tuple(out_shape))
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape):
        cut = _check_event_shape(shape, self.in_shape)
        return Size(tuple(shape[:cut]) + tuple(self.out_shape))

    def inverse_shape(self, shape):
        cut = _check_event_shape(shape, self.out_shape)
        return Size(tuple(shape[:cut]) + tuple(self.in_shape))


def _at_least_one_dim(shape):
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")
    return shape


class SoftmaxTransform(Transform):
    """Onto the simplex by exponentiating and normalising (not bijective: the inverse is the
    log, one of many preimages)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other) -> bool:
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        return _at_least_one_dim(shape)

    def inverse_shape(self, shape):
        return _at_least_one_dim(shape)


def _stick_offset(length: int, like: Tensor) -> Tensor:
    """[length, length - 1, ..., 1] in ``like``'s dtype and device."""
    return ops.arange(length, 0, -1, dtype=like.dtype, device=like.device)


class StickBreakingTransform(Transform):
    """Onto the simplex of one more dimension by stick breaking: each coordinate, through a
    shifted sigmoid, takes its fraction of what the previous ones left (bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other) -> bool:
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        z = _clipped_sigmoid(x - _stick_offset(x.shape[-1], x).log())
        left = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(left, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = _stick_offset(y_crop.shape[-1], y)
        remaining = (1 - y_crop.cumsum(-1)).clamp(min=float(np.finfo(y._data.dtype).tiny))
        return y_crop.log() - remaining.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        x = x - _stick_offset(x.shape[-1], x).log()
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        shape = _at_least_one_dim(shape)
        return Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        shape = _at_least_one_dim(shape)
        return Size(tuple(shape[:-1]) + (shape[-1] - 1,))


class LowerCholeskyTransform(Transform):
    """Square matrices to lower triangular ones with a positive diagonal: the strictly lower
    part is kept, the diagonal exponentiated."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive-definite ones: L L^T of ``LowerCholeskyTransform``'s L."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        low = LowerCholeskyTransform()(x)
        return low @ low.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """Unconstrained vectors of length D(D-1)/2 to Cholesky factors of D x D correlation
    matrices (lower triangular, positive diagonal, rows of unit norm).

    The vector fills the strictly lower triangle row by row through tanh; each row then becomes
    a unit vector by a signed stick breaking of the squares.
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = float(np.finfo(x._data.dtype).eps)
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        left = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + ops.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * F.pad(left[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        remaining = F.pad((1 - ops.cumsum(y * y, dim=-1))[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(remaining, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        remaining = tril_matrix_to_vec(1 - (y * y).cumsum(dim=-1), diag=-2)
        stick_breaking_logdet = 0.5 * remaining.log().sum(-1)
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


def _check_dim(value: Tensor, dim: int, where: str, label: str, size: int, what: str) -> None:
    """PyTorch's assertions that ``dim`` exists in ``value`` and holds ``size`` slices."""
    if not -value.dim() <= dim < value.dim():
        raise AssertionError(f"dim {dim} out of range for {where} with {value.dim()} dimensions")
    if value.size(dim) != size:
        raise AssertionError(f"{label}.size({dim}) = {value.size(dim)} must equal {what} {size}")


def _as_transforms(tseq, cache_size: int) -> list:
    if not all(isinstance(t, Transform) for t in tseq):
        raise AssertionError("All elements of tseq must be Transform instances")
    if cache_size:
        tseq = [t.with_cache(cache_size) for t in tseq]
    return list(tseq)


class CatTransform(Transform):
    """Apply ``tseq[i]`` to the i-th block of ``lengths[i]`` slices along ``dim`` (blocks laid
    out as ``cat`` joins them)."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0,
                 lengths: Sequence[int] | None = None, cache_size: int = 0):
        tseq = _as_transforms(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        """The size of ``dim`` the transform expects."""
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, value, where: str, label: str) -> None:
        _check_dim(value, self.dim, where, label, self.length, "length")

    def _blocks(self, value):
        start = 0
        for length in self.lengths:
            yield value.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        self._check(x, "tensor", "x")
        return ops.cat([t(b) for t, b in zip(self.transforms, self._blocks(x))], dim=self.dim)

    def _inverse(self, y):
        self._check(y, "tensor", "y")
        return ops.cat([t.inv(b) for t, b in zip(self.transforms, self._blocks(y))],
                       dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x", "x")
        self._check(y, "y", "y")
        terms = []
        for t, xb, yb in zip(self.transforms, self._blocks(x), self._blocks(y)):
            term = t.log_abs_det_jacobian(xb, yb)
            if t.event_dim < self.event_dim:
                term = sum_rightmost(term, self.event_dim - t.event_dim)
            terms.append(term)
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim += self.event_dim
        if dim < 0:
            return ops.cat(terms, dim=dim)
        return sum(terms)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Apply ``tseq[i]`` to the i-th slice along ``dim`` (slices laid out as ``stack`` joins
    them)."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0):
        tseq = _as_transforms(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _check(self, value, where: str, label: str) -> None:
        _check_dim(value, self.dim, where, label, len(self.transforms), "len(transforms)")

    def _call(self, x):
        self._check(x, "tensor", "x")
        return ops.stack([t(s) for s, t in zip(self._slice(x), self.transforms)], dim=self.dim)

    def _inverse(self, y):
        self._check(y, "tensor", "y")
        return ops.stack([t.inv(s) for s, t in zip(self._slice(y), self.transforms)],
                         dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x", "x")
        self._check(y, "y", "y")
        terms = [t.log_abs_det_jacobian(xs, ys)
                 for xs, ys, t in zip(self._slice(x), self._slice(y), self.transforms)]
        return ops.stack(terms, dim=self.dim)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """y = F(x), the CDF of ``distribution``, onto the unit interval (e.g. for copulas)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
