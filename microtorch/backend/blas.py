"""Direct calls into NumPy's own OpenBLAS, for what NumPy cannot ask of it: a product added
into an array that already holds something (GEMM's ``beta = 1``), and a fast transposing copy
(``omatcopy``).

PyTorch's ``addmm(bias, x, W.T)`` (its linear layer) fills the result with the bias and lets
the GEMM add the product into it. NumPy can only write a product into a fresh array, so the
bias then costs a second pass over the result, reading back the half that the other BLAS
thread wrote on its core: measured on an Intel Xeon (2 threads), 1024 x 64 @ 64 x 1000 with a
bias 809 us that way, 707 us added by the GEMM; 128 x 64 @ 64 x 256 55 vs 41 us. The GEMM adds
its float32 (float64) sum into the bias with one rounding, as ``out += bias`` did after it, so
the bits are the same whenever OpenBLAS does not split the sum along K into blocks (it does
for long sums, some hundreds of terms: then each block is added in turn, still the same bits
every run).

NumPy copies a transposed matrix element by element along the destination's rows, reading
the source with a stride of a whole row: (50, 512, 32) -> (50, 32, 512) takes 725 us, and a
(1600, 512) matrix 5.7 ms, where OpenBLAS's blocked ``omatcopy`` takes 312 us and 0.45 ms
(Intel Xeon). ``transpose_into`` uses it for large matrices.

Sums along the last axis go through BLAS too (``last_axis_sums``): a matrix-vector product
with ones, which OpenBLAS computes row by row on one thread each, so every row's terms add in
one order whatever the thread count or the data's alignment, 3-6x faster than NumPy's
reduction on rows in cache.

OpenBLAS's kernels for AVX-512 cores multiply small products (M*N*K up to 100^3) without first
packing their operands into blocks, a path worth 1.2-1.5x for the shapes of a convolution's
per-image products; ``small_products`` arranges the operands to take it (see
``SMALL_GEMM_MACS``). (Measured and not adopted: the same for ``matmul`` and the linear
layer's forward, which moved no benchmark model's step: MLP 1.04, Transformer 1.01, LSTM
1.01 against the code before, 5 rounds, within this VM's noise.)

Only NumPy's bundled OpenBLAS with 64-bit integers (the ``64_`` symbol suffix of NumPy's
wheels) is called: its integer width is known from the name. Elsewhere the functions answer
False and the caller keeps NumPy's path.
"""

from __future__ import annotations

import ctypes
import functools
import os

import numpy as np

from .threads import _blas_controller, one_blas_thread

__all__ = ["add_product", "last_axis_sums", "small_gemm_macs", "small_products",
           "transpose_into"]

# CBLAS's enum values (cblas.h).
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

_SCALARS = {np.dtype(np.float32): ("s", ctypes.c_float),
            np.dtype(np.float64): ("d", ctypes.c_double)}


class _Functions:
    """One BLAS routine by dtype, looked up on first use ({} when there is none)."""

    def __init__(self, name: str, args) -> None:
        self.name, self.args = name, args
        self.by_dtype: dict | None = None

    def get(self, dtype):
        if self.by_dtype is None:
            self.by_dtype = _load(self.name, self.args)
        return self.by_dtype.get(dtype)


_I64, _PTR, _ENUM = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
# cblas_?gemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
_gemms = _Functions("gemm", lambda s: (_ENUM, _ENUM, _ENUM, _I64, _I64, _I64, s, _PTR, _I64,
                                       _PTR, _I64, s, _PTR, _I64))
# cblas_?omatcopy(order, trans, rows, cols, alpha, a, lda, b, ldb)
_omatcopies = _Functions("omatcopy", lambda s: (_ENUM, _ENUM, _I64, _I64, s, _PTR, _I64, _PTR,
                                                _I64))


def _numpy_openblas_controller():
    """threadpoolctl's controller of the OpenBLAS library inside NumPy's package, or None."""
    blas = _blas_controller()
    if blas is None:
        return None
    numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
    for lib in blas.lib_controllers:
        path = os.path.realpath(getattr(lib, "filepath", "") or "")
        if getattr(lib, "internal_api", "") == "openblas" and \
                os.path.basename(os.path.dirname(path)) == "numpy.libs" and \
                path.startswith(numpy_dir):
            return lib
    return None


def _numpy_openblas():
    """The ctypes handle of the OpenBLAS library inside NumPy's package, or None."""
    lib = _numpy_openblas_controller()
    return None if lib is None else lib.dynlib


def _load(name: str, args) -> dict:
    """{dtype: ctypes function} of the routine ``name`` (without its type letter)."""
    lib = _numpy_openblas()
    found = {}
    if lib is None:
        return found
    for dtype, (letter, scalar) in _SCALARS.items():
        for symbol in (f"scipy_cblas_{letter}{name}64_", f"cblas_{letter}{name}64_"):
            fn = getattr(lib, symbol, None)
            if fn is not None:
                fn.argtypes, fn.restype = args(scalar), None
                found[dtype] = fn
                break
    return found


def _operand(arr) -> tuple[int, int] | None:
    """(CBLAS transpose flag, leading dimension) of a row-major 2-D operand with one unit
    stride: as it is (rows contiguous), or the transpose of such an array (a ``.T`` view)."""
    size = arr.itemsize
    rows, cols = arr.shape
    s0, s1 = arr.strides
    if s1 == size and s0 % size == 0 and s0 // size >= max(1, cols):
        return _NO_TRANS, s0 // size
    if s0 == size and s1 % size == 0 and s1 // size >= max(1, rows):
        return _TRANS, s1 // size
    return None


def add_product(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> bool:
    """``out += a @ b`` by one GEMM with beta = 1; False (nothing done) where it does not
    apply: not NumPy's OpenBLAS, not float32/float64, mixed dtypes, an empty or degenerate
    shape, or an operand without a unit stride. ``out`` (C-contiguous, 2-D) must not overlap
    ``a`` or ``b``. The BLAS thread count is the caller's (``threads.gemm_threads``)."""
    fn = _gemms.get(out.dtype)
    if fn is None or a.dtype != out.dtype or b.dtype != out.dtype or a.ndim != 2 or \
            b.ndim != 2 or out.ndim != 2 or not out.flags.c_contiguous or \
            not out.flags.writeable:
        return False
    (m, k), n = a.shape, b.shape[1]
    if b.shape[0] != k or out.shape != (m, n) or 0 in (m, n, k):
        return False
    flags_a, flags_b = _operand(a), _operand(b)
    if flags_a is None or flags_b is None:
        return False
    fn(_ROW_MAJOR, flags_a[0], flags_b[0], m, n, k, 1.0, a.ctypes.data, flags_a[1],
       b.ctypes.data, flags_b[1], 1.0, out.ctypes.data, max(1, n))
    return True


# Elements per matrix from which ``transpose_into`` calls omatcopy: smaller matrices are
# faster through NumPy (one call for all of them; (50, 128, 32): 54 vs 93 us).
_TRANSPOSE_MIN = 1 << 14


def transpose_into(out: np.ndarray, a: np.ndarray) -> bool:
    """``out[...] = a.swapaxes(-1, -2)`` for C-contiguous float32/float64 arrays of two or
    more axes (one matrix per leading index) by omatcopy; False (nothing done) when it does
    not apply or the matrices are small. omatcopy scales by alpha = 1, which leaves every
    value's bits as they are but a signaling NaN's (made quiet): for arrays computed by
    arithmetic, whose NaNs are quiet, the copy is exact."""
    fn = _omatcopies.get(a.dtype)
    if fn is None or out.dtype != a.dtype or a.ndim < 2 or \
            out.shape != a.shape[:-2] + a.shape[-1:] + a.shape[-2:-1] or \
            not (a.flags.c_contiguous and out.flags.c_contiguous and out.flags.writeable):
        return False
    rows, cols = a.shape[-2:]
    if rows * cols < _TRANSPOSE_MIN:
        return False
    step = rows * cols * a.itemsize
    src, dst = a.ctypes.data, out.ctypes.data
    for i in range(a.size // (rows * cols)):
        fn(_ROW_MAJOR, _TRANS, rows, cols, 1.0, src + i * step, cols, dst + i * step, rows)
    return True


def last_axis_sums(a, out=None):
    """The sums of ``a`` over its last axis, keeping it (size 1), for a C-contiguous NumPy
    float32/float64 array: ``a.reshape(-1, C) @ ones`` (gemv on one BLAS thread; each row's
    terms add in one order whatever the thread count: the same bits every run), into ``out``
    when given. Safe inside row-parallel work once the calling thread set one BLAS thread
    (``threads.one_blas_thread``). Other arrays (CuPy, other dtypes,
    strided, empty): ``a.sum(axis=-1, keepdims=True)``. Measured on an Intel Xeon, one
    thread: (512, 1000) 30 vs 87 us, (1024, 32) 2.8 vs 18 us; as accurate as NumPy's
    pairwise sum (blocked SIMD accumulators, as PyTorch's)."""
    if type(a) is not np.ndarray or a.dtype.char not in "fd" or not a.flags.c_contiguous \
            or not a.size or a.ndim == 0 or (out is not None and not out.flags.c_contiguous):
        return a.sum(axis=-1, keepdims=True, out=out)
    one_blas_thread()  # (memory-bound: a second thread gains nothing, and waking it costs)
    width = a.shape[-1]
    result = np.empty(a.shape[:-1] + (1,), a.dtype) if out is None else out
    np.matmul(a.reshape(-1, width), np.ones(width, a.dtype), out=result.reshape(-1))
    return result


# OpenBLAS (0.3.2x-0.3.3x) multiplies float32 and float64 products of at most 100^3 multiply-adds
# (M*N*K) on its kernels for AVX-512 cores with "small matrix" kernels that read the operands
# where they lie; larger ones, or any product on its Haswell kernels, first pack both operands
# into blocks. Measured on an Intel Xeon (AVX-512, one thread; GMAC/s): (144 x 32) @ (32 x 216)
# 60-67 against 46-52 for 224 columns (1.03M multiply-adds), (100 x 100) @ (100 x 100) 67
# against 51 for 101 columns; float64 29 against 24. With OPENBLAS_CORETYPE=Haswell the same
# products in pieces run within 7% of one call.
SMALL_GEMM_MACS = 100 ** 3
_SMALL_GEMM_CORES = frozenset({"skylakex", "cooperlake", "sapphirerapids"})

# A right operand that is a transposed view (its columns contiguous: ``x @ W.T``, ``q @ k.mT``)
# takes no small-matrix kernel; copied to rows first it does, when each product has
# SMALL_COPY_MIN_ROWS rows to spread the copy over and all of them SMALL_COPY_MIN_MACS
# multiply-adds (a single tiny product loses to the copy's call). Measured (one thread, us,
# transposed view vs copy then product): 32 products (32x32)@(32x32) 42.6 vs 35.0,
# (32x16)@(16x32) 25.4 vs 17.4, 16 of (32x64)@(64x64) 78.8 vs 64.0, (128x256)@(256x10) 17.0
# vs 12.2, (512x64)@(64x16) 12.4 vs 10.7; not taken: (32x128)@(128x10) 2.6 vs 4.2, and a
# convolution's weight gradient with 9 rows, 64 images of (9x784)@(784x16), 294 vs 701.
SMALL_COPY_MIN_ROWS = 16
SMALL_COPY_MIN_MACS = 1 << 17

@functools.cache
def small_gemm_macs() -> int:
    """The most multiply-adds (M*N*K) of a float32 or float64 product that NumPy's OpenBLAS
    multiplies without packing its operands: ``SMALL_GEMM_MACS`` on its AVX-512 kernels, else
    0 (none; also where the library or its kernel name cannot be read). Fixed for the process
    (OpenBLAS picks its kernels when it loads), so a rule built on it is a rule of shapes."""
    lib = _numpy_openblas_controller()
    core = str(getattr(lib, "architecture", "") or "").lower()
    return SMALL_GEMM_MACS if core in _SMALL_GEMM_CORES else 0


def small_products(a, b, out=None):
    """``np.matmul(a, b, out=out)``, arranged for OpenBLAS's small-matrix kernels where it has
    them (``small_gemm_macs``) and the operands are float32 or float64 NumPy arrays of two
    dims or more: a right operand without contiguous rows (a transposed view) copied to rows
    when each product is small enough for those kernels and worth the copy (see
    ``SMALL_COPY_MIN_ROWS``). The same products either way, rounded by whichever kernels
    OpenBLAS runs for those shapes: a rule of shapes."""
    limit = small_gemm_macs()
    if not limit or type(a) is not np.ndarray or type(b) is not np.ndarray or \
            a.dtype != b.dtype or a.dtype.char not in "fd" or a.ndim < 2 or b.ndim < 2 or \
            0 in a.shape or 0 in b.shape:
        return np.matmul(a, b, out=out)
    (m, k), n = a.shape[-2:], b.shape[-1]
    if b.strides[-1] != b.itemsize:
        count = max(a.size // (m * k), b.size // (k * n))
        if m * k * n <= limit and m >= SMALL_COPY_MIN_ROWS and \
                m * k * n * count >= SMALL_COPY_MIN_MACS:
            b = np.ascontiguousarray(b)
    return np.matmul(a, b, out=out)
