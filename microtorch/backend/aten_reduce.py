"""PyTorch's CPU reduction orders, replayed on NumPy arrays: the shared home of the replays of
how ATen's vectorized kernels sum, so that ops give PyTorch's bits, not just its values.

- :func:`welford_reduce`: ``WelfordOps`` in float64 on one thread, element by element, the
  kernel of ``var``/``std`` over dims and of ``var_mean``/``std_mean`` (small reductions);
- :func:`sum_all`, :func:`dot_all`: ``vec::reduce_all`` / ``map2_reduce_all`` (lanes, then
  the lanes' reduction by halves for float32 in the AVX2/AVX512 builds);
- :func:`rowwise_moments`: ``at::native::RowwiseMoments`` (``moments_utils.h``), the mean and
  variance of each row by Welford's algorithm as the normalisation kernels compute them
  (``group_norm``; ``layer_norm``'s kernel runs it too, not replayed here: it cost the
  Transformer's training step 18% in NumPy): each of the ``lanes`` lanes of a ``Vectorized`` runs
  Welford over chunks of 16 vectors, the chunks are merged (``AddMomentsVec``) by a binary
  counter (a cascade: complete blocks of 2**j chunks as perfect trees, the blocks then merged
  from the last, smallest, one up), the leftover ``N % lanes`` elements run a scalar Welford,
  and the lanes are merged into it one by one (``AddMoments``).

The multiply-adds of these formulas are fused in PyTorch's AVX2 and AVX512 builds (GCC
contracts them, ``cpu_capability``) and rounded twice in the DEFAULT build; the replays take the
build and the vector width from ``cpu_capability``. Rows are processed all at once (the loops
here run over the 16 steps of a chunk, the levels of the cascade and the lanes, never over
elements). NumPy float32/float64 only: the CuPy paths keep their own order (PyTorch's CUDA
kernels are not this project's oracle).
"""

from __future__ import annotations

import numpy as np

from . import aten_arith, cpu_capability, exact_fma

__all__ = ["dot_all", "fma_if", "lanes_dot", "rowwise_moments", "sum_all", "welford_applies",
           "welford_double", "welford_reduce"]

_CHUNK = 16  # moments_utils.h's kChunkSize: vectors per Welford chunk


def fma_if(a, b, c, fused: bool):
    """``a * b + c`` rounded once where ``fused`` (a multiply-add an AVX2/AVX512 build
    contracts), else rounded twice; NumPy arrays (or numbers) of one float dtype."""
    if fused:
        dt = np.result_type(a, b, c)
        if aten_arith.fuses(a, b, c):  # (its compiled kernel for large arrays)
            return np.asarray(aten_arith.multiply_add(a, b, c), dtype=dt)
        return np.asarray(exact_fma.fma(a, b, c), dtype=dt)
    return a * b + c


_fma = fma_if


def _add_moments(acc, add, fused: bool, site: str = "merge"):
    """``AddMomentsVec`` (``site="merge"``) or ``AddMoments`` (``"lane"``): the moments ``add``
    merged into ``acc``; each a tuple (count, m1, m2), the counts integer arrays (or ints)
    broadcasting against m1 and m2."""
    n0, m1, m2 = acc
    na, m1a, m2a = add
    dt = m1.dtype.type
    n = n0 + na
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(n == 0, dt(0), np.asarray(na, dt) / np.asarray(n, dt)).astype(dt)
    delta = m1a - m1
    if site == "merge":
        # the vector form: c * delta and delta * m0 rounded, m1 + c * delta, and
        # m2 = fmadd(delta * m0, c * delta, m2 + m2_add)
        cd = c * delta
        m2 = _fma(delta * np.asarray(n0, dt), cd, m2 + m2a, fused)
        return n, m1 + cd, m2
    # the scalar form, its multiply-adds contracted (measured): m1 += c * delta,
    # m2 += m2_add + delta * delta * c * m0
    m1 = _fma(c, delta, m1, fused)
    m2 = m2 + _fma(delta * delta * c, np.asarray(n0, dt), m2a, fused)
    return n, m1, m2


def rowwise_moments(rows, ddof: int = 0, kernel_build: str | None = None):
    """(mean, var) of each row of the (R, N) float32/float64 NumPy array ``rows`` (N >= 1), each
    (R,), as ``RowwiseMoments(row, N, ddof)`` returns them: the variance is ``m2 / (N - ddof)``.
    ``kernel_build`` is the build of the calling kernel (default ``cpu_capability.build()``,
    that of a kernel without an AVX512 registration)."""
    rows = np.asarray(rows)
    dt = rows.dtype.type
    build = kernel_build or cpu_capability.build()
    fused = build != "DEFAULT"
    lanes = cpu_capability.vector_lanes(rows.dtype, build)
    r, total = rows.shape
    n = total // lanes
    stats = None
    if n:
        m = -(-n // _CHUNK)
        # (step j of every chunk as one contiguous (R, m, lanes) array: vecs[j])
        vecs = np.zeros((_CHUNK, r, m, lanes), dt)
        full = n // _CHUNK
        if full:
            vecs[:, :, :full] = rows[:, :full * _CHUNK * lanes].reshape(
                r, full, _CHUNK, lanes).transpose(2, 0, 1, 3)
        if full < m:
            vecs[:n - full * _CHUNK, :, full] = rows[:, full * _CHUNK * lanes:n * lanes].reshape(
                r, n - full * _CHUNK, lanes).transpose(1, 0, 2)
        counts = np.minimum(_CHUNK, n - _CHUNK * np.arange(m))
        m1 = np.zeros((r, m, lanes), dt)
        m2 = np.zeros((r, m, lanes), dt)
        for j in range(int(counts.max())):
            x = vecs[j]
            delta = x - m1
            new1 = _fma(delta, dt(1) / dt(j + 1), m1, fused)
            new2 = _fma(delta, x - new1, m2, fused)
            if counts[-1] <= j:  # (the last chunk is short: it stops here)
                live = (counts > j)[:, None]
                new1, new2 = np.where(live, new1, m1), np.where(live, new2, m2)
            m1, m2 = new1, new2
        # The binary-counter cascade: chunk i lands in the stack, carried up while i + 1 is
        # even; what is left, lowest level first, is then merged into level 0.
        blocks = []
        start = 0
        for j in reversed(range(int(m).bit_length())):
            if m >> j & 1:
                blocks.append((start, 1 << j))
                start += 1 << j
        result = None
        for start, size in reversed(blocks):  # (the smallest, last, block first)
            bc = counts[start:start + size]
            b1, b2 = m1[:, start:start + size], m2[:, start:start + size]
            while size > 1:
                left = (bc[0::2][:, None], b1[:, 0::2], b2[:, 0::2])
                right = (bc[1::2][:, None], b1[:, 1::2], b2[:, 1::2])
                bc, b1, b2 = _add_moments(left, right, fused)
                bc = bc[:, 0]
                size //= 2
            block = (int(bc[0]), b1[:, 0], b2[:, 0])
            result = block if result is None else _add_moments(result, block, fused)
        stats = result
    # the scalar Welford over the leftover elements, then each lane merged into it
    tail = rows[:, n * lanes:]
    c0 = 0
    m1 = np.zeros(r, dt)
    m2 = np.zeros(r, dt)
    for k in range(tail.shape[1]):
        x = tail[:, k]
        delta = x - m1
        c0 += 1
        m1 = m1 + delta / dt(c0)
        m2 = m2 + delta * (x - m1)  # (not fused in any build: measured)
    if stats is not None:
        acc = (c0, m1, m2)
        for i in range(lanes):
            acc = _add_moments(acc, (n, stats[1][:, i], stats[2][:, i]), fused, "lane")
        _, m1, m2 = acc
    return m1, (m2 / dt(total - ddof)).astype(dt, copy=False)


def _vec_reduce_all(acc, build: str):
    """``vec::vec_reduce_all`` with ``+`` of the (R, lanes) array ``acc``: float32 in the AVX2
    and AVX512 builds by halves (lane i plus lane i + lanes / 2, ..., the shuffles of
    ``VecReduceAllSIMD``), else lane 0 plus lane 1 plus ... in order."""
    if acc.dtype == np.float32 and build != "DEFAULT":
        while acc.shape[1] > 1:
            half = acc.shape[1] // 2
            acc = acc[:, :half] + acc[:, half:]
        return acc[:, 0]
    return np.add.accumulate(acc, axis=1)[:, -1]


def _in_order(a, axis: int):
    """The sums along ``axis`` (not the last) of the NumPy array ``a``, added in order: NumPy's
    reduction over an outer axis adds whole slices one after another (its pairwise summation
    is only along the innermost axis); checked against ``np.add.accumulate``."""
    return a.sum(axis=axis)


def _lanes(rows, build):
    return cpu_capability.vector_lanes(rows.dtype, build)


def sum_all(rows, kernel_build: str | None = None):
    """Each row's sum as ``vec::reduce_all`` with ``+`` sums it: vectors of ``lanes``
    elements added in order into the first, the short last one into its first lanes, then
    the lanes reduced (:func:`_vec_reduce_all`); rows shorter than a vector in order."""
    build = kernel_build or cpu_capability.build()
    k = _lanes(rows, build)
    r, length = rows.shape
    if length < k:
        return np.add.accumulate(rows, axis=1)[:, -1] if length else np.zeros(r, rows.dtype)
    nf = length // k
    acc = _in_order(rows[:, :nf * k].reshape(r, nf, k), 1)
    t = length - nf * k
    if t:
        acc[:, :t] += rows[:, nf * k:]
    return _vec_reduce_all(acc, build)


def dot_all(a, b, kernel_build: str | None = None, fused: bool = False):
    """Each row's ``sum(a * b)`` as ``vec::map2_reduce_all`` with ``x * y`` and ``+`` computes
    it: :func:`sum_all`'s order, each product rounded before it is added to its lane's sum
    (``fused``: in one multiply-add instead; PyTorch 2.13's float64 kernels do not fuse it,
    measured)."""
    build = kernel_build or cpu_capability.build()
    k = _lanes(a, build)
    r, length = a.shape
    if length < k:
        return np.add.accumulate(a * b, axis=1)[:, -1] if length else np.zeros(r, a.dtype)
    nf = length // k
    va = a[:, :nf * k].reshape(r, nf, k)
    vb = b[:, :nf * k].reshape(r, nf, k)
    acc = va[:, 0] * vb[:, 0]
    if nf > 1:
        if fused:
            acc = exact_fma.fma_chain(np.moveaxis(va[:, 1:], 1, 0), np.moveaxis(vb[:, 1:], 1, 0),
                                      acc)
        else:
            acc = _in_order(va * vb, 1)
    t = length - nf * k
    if t:
        acc = acc.copy()
        acc[:, :t] = fma_if(a[:, nf * k:], b[:, nf * k:], acc[:, :t], fused)
    return _vec_reduce_all(acc, build)


def lanes_dot(v, w, fused: bool, kernel_build: str | None = None):
    """``sum(v * w)`` over the last axis as group norm's ``CalcDsDb`` and the lines after it
    compute it: whole vectors multiply-added into lanes from zero, the lanes summed in order
    from 0 (``std::accumulate``), then the remaining elements multiply-added one by one."""
    build = kernel_build or cpu_capability.build()
    k = _lanes(v, build)
    length = v.shape[-1]
    nf = length // k
    lead = v.shape[:-1]
    acc = np.zeros(lead + (k,), v.dtype)
    for j in range(nf):
        acc = fma_if(v[..., j * k:(j + 1) * k], w[..., j * k:(j + 1) * k], acc, fused)
    total = np.zeros(lead, v.dtype)
    if nf:
        for i in range(k):
            total = total + acc[..., i]
    for j in range(nf * k, length):
        total = fma_if(v[..., j], w[..., j], total, fused)
    return total


WELFORD_MAX_LENGTH = 2048  # (longer reductions keep NumPy's two-pass: the replay loops)
_GRAIN_SIZE = 32768  # at::internal::GRAIN_SIZE: smaller reductions run on one thread


def welford_double(rows):
    """(mean, m2, count) of each row of the (R, L) float32/float64 NumPy array as
    ``WelfordOps<scalar_t, double>`` reduces it on one thread (``binary_kernel_reduce``, the
    kernel of ``var``/``std`` over dims and of ``var_mean``/``std_mean``): in float64, element
    by element in order, ``m2 += delta * (x - new_mean)`` (not fused in any build: measured);
    the mean and m2 float64 arrays (R,)."""
    r, length = rows.shape
    mean = np.zeros(r)
    m2 = np.zeros(r)
    for i in range(length):
        x = rows[:, i].astype(np.float64)
        delta = x - mean
        mean = mean + delta / float(i + 1)
        m2 = m2 + delta * (x - mean)
    return mean, m2, length


def welford_applies(arr, dims) -> bool:
    """Whether :func:`welford_double` replays PyTorch's ``var``/``var_mean`` of the NumPy array
    ``arr`` over ``dims`` (a tuple, or None for all): float32/float64, a serial reduction
    (fewer elements than ATen's grain size) of at most ``WELFORD_MAX_LENGTH`` per output."""
    if type(arr) is not np.ndarray or arr.dtype.char not in "fd" or not arr.size:
        return False
    if arr.size >= _GRAIN_SIZE:
        return False
    nd = arr.ndim
    red = range(nd) if dims is None else [d % nd for d in dims] if nd else []
    length = int(np.prod([arr.shape[d] for d in set(red)])) if nd else 1
    return 0 < length <= WELFORD_MAX_LENGTH


def welford_reduce(arr, dims):
    """(mean, m2, count) of ``arr`` over ``dims`` (None: all) by :func:`welford_double`, the
    reduced axes taken in memory order (C order), shaped as the kept axes."""
    nd = arr.ndim
    red = sorted(set(range(nd) if dims is None else (d % nd for d in dims))) if nd else []
    keep = [d for d in range(nd) if d not in red]
    moved = np.transpose(arr, keep + red) if nd else arr.reshape(())
    kept_shape = tuple(arr.shape[d] for d in keep)
    rows = np.ascontiguousarray(moved).reshape(int(np.prod(kept_shape)) if keep else 1, -1)
    mean, m2, n = welford_double(rows)
    return mean.reshape(kept_shape), m2.reshape(kept_shape), n
