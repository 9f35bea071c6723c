"""The array routines under ``torch.linalg``, on each backend (arrays in, arrays out).

CPU arrays go to LAPACK through NumPy and SciPy, the routines PyTorch's CPU kernels call:
getrf/getrs (LU), gesdd (SVD), syevd/heevd (eigh), geev (eig), geqrf/orgqr (QR), sytrf/hetrf
(LDL), potrf (Cholesky) and the lstsq drivers gels/gelsy/gelsd/gelss. CuPy arrays use
``cupy.linalg`` where CuPy has the routine (svd, eigh, qr, solve, cholesky), and otherwise
routines written here on the array module: the batched LU factorisation and its triangular
solves (CuPy's LU is one matrix at a time, with a synchronisation per call), the QR form of
the ``gels`` least-squares driver, and the scaling-and-squaring matrix exponential, which all
backends share. What CuPy lacks altogether runs on the host through ``host_fallback`` (an
explicit device->host copy and back): ``eig`` (PyTorch computes it on the host for CUDA
tensors too), the LDL routines, ``geqrf``, and the partial factor and info code of a failed
Cholesky factorisation.
"""

from __future__ import annotations

import numpy as np

from ..backend import backend_of, xp_of

__all__ = ["host_fallback", "getrf", "getrs", "svd", "eigh", "eig", "qr", "geqrf",
           "sytrf", "sytrs", "potrf", "lstsq", "expm", "substitute"]


def _on_host(arr) -> bool:
    return type(arr) is np.ndarray


def host_fallback(fn, *arrays):
    """``fn`` (NumPy/SciPy) on host copies of device arrays, its results copied back: the
    device path of the routines CuPy lacks. On the CPU, ``fn`` on the arrays themselves."""
    if _on_host(arrays[0]):
        return fn(*arrays)
    backend = backend_of(arrays[0])
    out = fn(*(backend.to_numpy(a) for a in arrays))
    if isinstance(out, tuple):
        return tuple(backend.asarray(o) for o in out)
    return backend.asarray(out)


def _lapack(name: str, *arrays):
    from scipy.linalg import lapack

    return lapack.get_lapack_funcs((name,), arrays)[0]


def _flat(arr, batch: tuple, core: int = 2):
    """``arr`` (``core`` trailing dimensions per item) broadcast over ``batch``, its batch
    dimensions flattened to one."""
    xp = xp_of(arr)
    tail = arr.shape[arr.ndim - core:]
    count = int(np.prod(batch, dtype=np.int64))
    return xp.broadcast_to(arr, batch + tail).reshape((count,) + tail)


# -- LU ------------------------------------------------------------------------------------
def getrf(a, pivot: bool = True):
    """LU factorisation with partial pivoting: ``(LU, pivots, info)``, pivots 1-based int32
    (LAPACK's ipiv, PyTorch's convention), info the 1-based index of the first zero pivot."""
    if _on_host(a):
        return _getrf_host(a)
    return _getrf_device(a, pivot)


def _getrf_host(a):
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    lu = np.empty(a.shape, a.dtype)
    piv = np.empty(batch + (k,), np.int32)
    info = np.zeros(batch, np.int32)
    if a.size:
        fn = _lapack("getrf", a)
        for idx in np.ndindex(*batch):
            lu[idx], p, info[idx] = fn(a[idx])
            piv[idx] = p + 1
    return lu, piv, info


def _getrf_device(a, pivot: bool):
    """Right-looking elimination over the whole batch at once (one step per column), with
    LAPACK's pivot rule: the first entry of largest |re| + |im| (i?amax)."""
    xp = xp_of(a)
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    count = int(np.prod(batch, dtype=np.int64))
    lu = a.reshape(count, m, n).copy()
    piv = xp.empty((count, k), np.int32)
    info = xp.zeros(count, np.int32)
    rows = xp.arange(count)
    for j in range(k):
        if pivot:
            col = lu[:, j:, j]
            mag = xp.abs(col.real) + xp.abs(col.imag) if col.dtype.kind == "c" else xp.abs(col)
            p = xp.argmax(mag, axis=1) + j
            piv[:, j] = (p + 1).astype(np.int32)
            top = lu[rows, j].copy()
            lu[rows, j] = lu[rows, p]
            lu[rows, p] = top
        else:
            piv[:, j] = j + 1
        d = lu[:, j, j]
        zero = d == 0
        info = xp.where((info == 0) & zero, j + 1, info).astype(np.int32)
        if j + 1 < m:
            lu[:, j + 1:, j] /= xp.where(zero, xp.ones((), d.dtype), d)[:, None]
            if j + 1 < n:
                lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return lu.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def getrs(lu, piv, b, adjoint: bool = False):
    """Solve ``A X = B`` (``A^H X = B`` when ``adjoint``) from ``getrf``'s factors; batch
    dimensions of the factors and of ``b`` broadcast."""
    batch = tuple(np.broadcast_shapes(lu.shape[:-2], b.shape[:-2]))
    dt = np.result_type(lu.dtype, b.dtype)
    if _on_host(lu):
        out = np.empty(batch + b.shape[-2:], dt)
        if out.size:
            fn = _lapack("getrs", lu.astype(dt, copy=False))
            lus, pivs = _flat(lu, batch), _flat(piv, batch, 1)
            bs, flat = _flat(b, batch), out.reshape((len(lus),) + b.shape[-2:])
            for i in range(flat.shape[0]):
                flat[i], _ = fn(lus[i], pivs[i] - 1, bs[i], trans=2 if adjoint else 0)
        return out
    xp = xp_of(lu)
    n = lu.shape[-1]
    lus, pivs = _flat(lu, batch), _flat(piv, batch, 1) - 1
    x = _flat(b, batch).astype(dt, copy=True)
    rows = xp.arange(x.shape[0])
    swaps = range(n) if not adjoint else range(n - 1, -1, -1)
    if not adjoint:
        _swap_rows(x, rows, pivs, swaps)
        x = substitute(lus, x, upper=False, unit=True)
        x = substitute(lus, x, upper=True, unit=False)
    else:  # A^H = U^H L^H P^T
        lh = lus.swapaxes(-1, -2).conj()
        x = substitute(lh, x, upper=False, unit=False)
        x = substitute(lh, x, upper=True, unit=True)
        _swap_rows(x, rows, pivs, swaps)
    return x.reshape(batch + b.shape[-2:])


def _swap_rows(x, rows, pivs, order) -> None:
    for i in order:
        p = pivs[:, i]
        top = x[rows, i].copy()
        x[rows, i] = x[rows, p]
        x[rows, p] = top


def substitute(a, b, upper: bool, unit: bool):
    """Solve ``a x = b`` for triangular ``a`` (the other triangle is not read) by
    substitution, row by row over the whole batch: plain array code for every backend."""
    xp = xp_of(a)
    n = a.shape[-1]
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    a = xp.broadcast_to(a, batch + a.shape[-2:])
    dt = np.result_type(a.dtype, b.dtype)
    x = xp.array(xp.broadcast_to(b, batch + b.shape[-2:]), dtype=dt, copy=True)
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        done = slice(i + 1, n) if upper else slice(0, i)
        if done.start != done.stop:
            x[..., i, :] -= (a[..., i, done][..., None] * x[..., done, :]).sum(-2)
        if not unit:
            x[..., i, :] /= a[..., i, i][..., None]
    return x


# -- spectral decompositions and QR --------------------------------------------------------
def _real(dt) -> np.dtype:
    return np.empty((), dt).real.dtype


def _eyes(xp, n: int, cols: int, batch: tuple, dt):
    return xp.broadcast_to(xp.eye(n, cols, dtype=dt), batch + (n, cols)).copy()


def svd(a, full_matrices: bool, compute_uv: bool = True):
    """``(U, S, Vh)`` (gesdd; S real, descending), or S alone when not ``compute_uv``."""
    xp = xp_of(a)
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        s = xp.zeros(batch + (k,), _real(a.dtype))
        if not compute_uv:
            return s
        u = _eyes(xp, m, m if full_matrices else k, batch, a.dtype)
        vh = _eyes(xp, n if full_matrices else k, n, batch, a.dtype)
        return u, s, vh
    if not compute_uv:
        return xp.linalg.svd(a, compute_uv=False)
    return tuple(xp.linalg.svd(a, full_matrices=full_matrices))


def eigh(a, uplo: str, vectors: bool = True):
    """Eigenvalues (ascending, real) and eigenvectors of Hermitian matrices (syevd/heevd),
    reading the ``uplo`` triangle."""
    xp = xp_of(a)
    if a.size == 0:
        w = xp.zeros(a.shape[:-1], _real(a.dtype))
        return (w, xp.zeros(a.shape, a.dtype)) if vectors else w
    if not vectors:
        return xp.linalg.eigvalsh(a, UPLO=uplo)
    return tuple(xp.linalg.eigh(a, UPLO=uplo))


def eig(a):
    """Eigenvalues and unit eigenvectors of general matrices (geev), always complex; on the
    host for every backend (CuPy's geev needs CUDA 12.6; PyTorch too runs it on the host)."""
    complex_dt = np.result_type(a.dtype, np.complex64)

    def run(x):
        if x.size == 0:
            return np.zeros(x.shape[:-1], complex_dt), np.zeros(x.shape, complex_dt)
        w, v = np.linalg.eig(x)
        return w.astype(complex_dt), v.astype(complex_dt)

    return host_fallback(run, a)


def qr(a, mode: str):
    """``(Q, R)`` by Householder reflections (geqrf + orgqr); R alone for ``mode="r"``."""
    xp = xp_of(a)
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        rows = m if mode == "complete" else k
        r = xp.zeros(batch + (rows, n), a.dtype)
        return r if mode == "r" else (_eyes(xp, m, rows, batch, a.dtype), r)
    if mode == "r":
        return xp.linalg.qr(a, mode="r")
    return tuple(xp.linalg.qr(a, mode=mode))


def geqrf(a):
    """LAPACK's compact QR: the reflectors below R's diagonal, and their scales ``tau``."""
    def run(x):
        batch, (m, n) = x.shape[:-2], x.shape[-2:]
        out = np.empty(x.shape, x.dtype)
        tau = np.zeros(batch + (min(m, n),), x.dtype)
        if x.size:
            fn = _lapack("geqrf", x)
            for idx in np.ndindex(*batch):
                out[idx], tau[idx], _, _ = fn(x[idx])
        return out, tau

    return host_fallback(run, a)


def sytrf(a, hermitian: bool):
    """Bunch-Kaufman LDL factorisation of the lower triangle (sytrf, hetrf when complex
    Hermitian): ``(LD, pivots, info)`` as PyTorch returns them (upper triangle zeroed)."""
    def run(x):
        batch, n = x.shape[:-2], x.shape[-1]
        ld = np.zeros(x.shape, x.dtype)
        piv = np.zeros(batch + (n,), np.int32)
        info = np.zeros(batch, np.int32)
        if x.size:
            fn = _lapack("hetrf" if hermitian and x.dtype.kind == "c" else "sytrf", x)
            for idx in np.ndindex(*batch):
                out, piv[idx], info[idx] = fn(x[idx], lower=1)
                ld[idx] = np.tril(out)
        return ld, piv, info

    return host_fallback(run, a)


def sytrs(ld, piv, b, hermitian: bool):
    """Solve ``A X = B`` from ``sytrf``'s factors (batch dimensions broadcast)."""
    def run(ld, piv, b):
        batch = tuple(np.broadcast_shapes(ld.shape[:-2], b.shape[:-2]))
        out = np.empty(batch + b.shape[-2:], np.result_type(ld.dtype, b.dtype))
        if out.size:
            name = "hetrs" if hermitian and ld.dtype.kind == "c" else "sytrs"
            fn = _lapack(name, ld)
            lds, pivs, bs = _flat(ld, batch), _flat(piv, batch, 1), _flat(b, batch)
            flat = out.reshape((len(lds),) + b.shape[-2:])
            for i in range(flat.shape[0]):
                flat[i], _ = fn(lds[i], pivs[i], bs[i], lower=1)
        return out

    return host_fallback(run, ld, piv, b)


def potrf(a):
    """Cholesky factor of the lower triangle and info per matrix, LAPACK's potrf: a failed
    matrix keeps its partial factor (what PyTorch's ``cholesky_ex`` returns)."""
    def run(x):
        low = np.zeros(x.shape, x.dtype)
        info = np.zeros(x.shape[:-2], np.int32)
        if x.size:
            fn = _lapack("potrf", x)
            for idx in np.ndindex(*x.shape[:-2]):
                low[idx], info[idx] = fn(x[idx], lower=1, clean=1)
        return low, info

    return host_fallback(run, a)


# -- least squares ---------------------------------------------------------------------------
def lstsq(a, b, rcond: float, driver: str):
    """``(X, residuals, rank, singular_values)`` as PyTorch's ``linalg.lstsq`` returns them
    for ``driver`` (empty arrays where the driver gives none)."""
    xp = xp_of(a)
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    m, n = a.shape[-2:]
    real = _real(a.dtype)
    if driver == "gels":
        x, res = _gels(a, b, batch)
        rank = xp.zeros((0,), np.int64)
    else:  # (the CPU only: on CUDA PyTorch has the gels driver alone)
        x, res, rank, sv = _lstsq_host(a, b, batch, rcond, driver)
    # PyTorch's residuals: for tall matrices, not from gelsy, and from gelsd/gelss only when
    # every matrix has full rank.
    if not (m > n and driver != "gelsy" and res is not None and x.size
            and (driver == "gels" or bool((rank == n).all()))):
        res = xp.zeros((0,), real)
    if driver not in ("gelsd", "gelss"):
        sv = xp.zeros((0,), real)
    return x, res, rank, sv


def _lstsq_host(a, b, batch, rcond, driver):
    import scipy.linalg

    (m, n), nrhs = a.shape[-2:], b.shape[-1]
    k, real = min(m, n), _real(a.dtype)
    x = np.zeros(batch + (n, nrhs), a.dtype)
    res = np.zeros(batch + (nrhs,), real)
    rank = np.zeros(batch, np.int64)
    sv = np.zeros(batch + (k,), real)
    if a.size and b.size:
        aa, bb = _flat(a, batch), _flat(b, batch)
        for i, idx in enumerate(np.ndindex(*batch)):
            sol, r, rk, s = scipy.linalg.lstsq(aa[i], bb[i], cond=rcond, check_finite=False,
                                               lapack_driver=driver)
            x[idx], rank[idx] = sol, rk
            if s is not None:
                sv[idx] = s
            if np.size(r):
                res[idx] = r
    return x, res, rank, sv


def _gels(a, b, batch):
    """The QR driver (full-rank matrices): ``R^-1 Q^H B`` for tall matrices, the minimum
    norm solution ``Q R^-H B`` (from ``A^H = Q R``) for wide ones; the residuals are the
    squared norms of ``A X - B``'s columns."""
    xp = xp_of(a)
    (m, n), nrhs = a.shape[-2:], b.shape[-1]
    a = xp.broadcast_to(a, batch + (m, n))
    b = xp.broadcast_to(b, batch + (m, nrhs))
    if a.size == 0 or b.size == 0:
        return xp.zeros(batch + (n, nrhs), a.dtype), None
    if m >= n:
        q, r = xp.linalg.qr(a, mode="reduced")
        x = substitute(r, q.swapaxes(-1, -2).conj() @ b, upper=True, unit=False)
    else:
        q, r = xp.linalg.qr(a.swapaxes(-1, -2).conj(), mode="reduced")
        x = q @ substitute(r.swapaxes(-1, -2).conj(), b, upper=False, unit=False)
    diff = a @ x - b
    return x, (diff.real ** 2 + diff.imag ** 2 if diff.dtype.kind == "c" else diff ** 2).sum(-2)


# -- matrix exponential ----------------------------------------------------------------------
# The [13/13] Pade approximant's coefficients and its scaling threshold (Higham, "The scaling
# and squaring method for the matrix exponential revisited", SIAM J. Matrix Anal. Appl. 2005).
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def expm(a):
    """``exp(A)`` of each matrix: A scaled by 2^-s so its 1-norm is at most theta_13, the
    [13/13] Pade approximant, then s squarings (s per matrix)."""
    xp = xp_of(a)
    if a.size == 0:
        return a.copy()
    n = a.shape[-1]
    norm = xp.abs(a).sum(-2).max(-1)
    finite = xp.isfinite(norm)
    ratio = xp.where(finite, norm, 0) / _THETA13
    steps = xp.where(ratio > 1, xp.ceil(xp.log2(xp.where(ratio > 1, ratio, 1))), 0)
    most = int(backend_of(a).item(steps.max())) if steps.size else 0
    x = a / (2.0 ** steps.astype(a.real.dtype))[..., None, None]
    b = _PADE13
    ident = xp.eye(n, dtype=a.dtype)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2
             + b[1] * ident)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 \
        + b[0] * ident
    r = xp.linalg.solve(v - u, v + u)
    for i in range(most):
        r = xp.where((steps > i)[..., None, None], r @ r, r)
    return r
