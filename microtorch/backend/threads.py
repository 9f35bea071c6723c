"""CPU threads: how many microtorch uses (``set_num_threads``/``get_num_threads``, PyTorch's
API), its worker pool for row-parallel work, and the BLAS library's thread count.

NumPy runs each elementwise op on one thread, but releases the GIL inside its loops and BLAS
calls; so work on independent rows (a log-softmax over many rows, say) can be shared between
a few threads (``run_rows``), bit-identically, since every row is computed by the same code.
The BLAS library (OpenBLAS) keeps its own threads; after a multi-threaded call they spin for a
while waiting for more, and for the small matrix products of a recurrence a second thread
gains nothing: ``blas_threads(1)`` runs such a stretch on the calling thread alone, so no
core is burnt spinning. BLAS control uses ``threadpoolctl`` (a dependency); should it be
missing, only microtorch's own pool follows ``set_num_threads``.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

_AFFINITY = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count() or 1)


def _default_threads() -> int:
    """OMP_NUM_THREADS when set (as PyTorch reads it), else the BLAS pool's thread count, else
    the usable cores."""
    try:
        value = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        value = 0
    if value >= 1:
        return value
    blas = _blas_controller()
    pools = blas.info() if blas is not None else []
    return max((p["num_threads"] for p in pools), default=_AFFINITY)


class _Threads:
    """The process-wide thread setting, the pool and the BLAS controller (made lazily)."""

    def __init__(self) -> None:
        self.count = 0  # (set on first use: see get_num_threads)
        self.pool: ThreadPoolExecutor | None = None
        self.lock = threading.Lock()
        self.blas = None  # threadpoolctl's controllers of the loaded BLAS libraries
        self.blas_loaded = False
        self.blas_setter = None  # OpenBLAS's own set_num_threads (ctypes), for gemm_threads
        self.blas_now: int | None = None  # what gemm_threads last set (None: unknown)


_threads = _Threads()
_blas_setting = threading.Lock()  # (held while OpenBLAS's count and blas_now change together)


def _forget_pool_in_child() -> None:
    # A forked child (DataLoader workers) has none of the parent's pool threads: it makes its
    # own pool on first use instead of queueing work for threads that do not exist there.
    _threads.pool = None
    _threads.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def get_num_threads() -> int:
    """The number of threads microtorch uses for CPU work (its pool and BLAS)."""
    if not _threads.count:
        _threads.count = _default_threads()
    return _threads.count


def _blas_controller(refresh: bool = False):
    """threadpoolctl's controller of the BLAS libraries loaded so far (``refresh``: scan again,
    for libraries loaded since, such as SciPy's own OpenBLAS)."""
    if refresh or not _threads.blas_loaded:
        _threads.blas_loaded = True
        try:
            import numpy  # noqa: F401  (its BLAS must be loaded for threadpoolctl to see it)
            from threadpoolctl import ThreadpoolController
        except ImportError:
            return None
        # Every BLAS library loaded (as PyTorch's set_num_threads, a process-wide setting).
        _threads.blas = ThreadpoolController().select(user_api="blas")
    return _threads.blas


# A product's size for the thread rules below, in multiply-adds: m * k * n, plus
# ``GEMM_ELEMENT_COST`` for each element of its three matrices. A product whose one dimension is
# small (an LSTM's input projection of 16 features, 1600x16 @ 16x512) is bound by moving its
# operands and result, not by its arithmetic, and a second thread halves that too. Measured on
# an Intel Xeon VM (2026-12-03, one thread), the time of ten shapes from 2^21 to 2^26
# multiply-adds fits 11.2 ps per multiply-add and 198 ps per element (18 multiply-adds) within
# 7%: 1600x16 @ 16x512 326 us (m k n alone would predict 147), 512x64 @ 64x192 92 us; after
# 1 ms of other work, two threads took 211 us for the first (0.65x), 99 us for the second.
GEMM_ELEMENT_COST = 16

# Matrix products smaller than this (``gemm_size``) run on one BLAS thread. Above
# it two threads win while OpenBLAS's second thread is awake, spinning between products (the
# steps of a recurrence: measured on 2 cores, 32x128 @ 128x512 takes 31 us on one thread, 18
# us on two). On a machine busy with other processes a second thread may have to wait for a
# core, and small products then slow down far more than large ones: ``set_num_threads(1)``
# avoids that. The rules depend on shapes only, so results do not change from run to run
# (OpenBLAS rounds a product differently on one thread and on two).
SMALL_GEMM = 1 << 20

# A run of products with fewer multiply-adds in all than this stays on one BLAS thread too.
# After other work OpenBLAS's second thread has gone to sleep (``shorten_blas_spin``), and
# waking it costs more than it saves on all but large products: measured on 2 cores (Intel
# Xeon VM, 2026-12-03), a product after 1 ms of other work, one thread against two: 128x256 @
# 256x256 (2^23) 98 vs 114 us, 512x64 @ 64x512 (2^24) 192 vs 190 us, 512x64 @ 64x2048 (2^26)
# 935 vs 607 us, where back-to-back products take 96 vs 72, 187 vs 142 and 918 vs 530 us.
# The woken thread then spins, taking a share of the core from what follows (the MLP's Adam
# step 0.29 ms after its two-thread products, 0.22 ms after one-thread ones), hence 2^25, not
# the break-even 2^24: the MLP step 1.20 -> 1.00 ms. A run (a recurrence's steps, a
# backward's two products, a batch of matrices) pays the wake-up once: its total counts.
# ``benchmarks/tuning.py`` measures both crossovers (sections small_gemm and lone_gemm).
LONE_GEMM = 1 << 25


def _openblas_libraries() -> list:
    """The loaded OpenBLAS libraries (ctypes handles), NumPy's among them."""
    blas = _blas_controller()
    if blas is None:
        return []
    return [lib.dynlib for lib in blas.lib_controllers
            if getattr(lib, "internal_api", "") == "openblas"]


def _openblas_setter():
    for dynlib in _openblas_libraries():
        for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(dynlib, name, None)
            if fn is not None:
                fn.argtypes, fn.restype = (ctypes.c_int,), None
                return fn
    return None


# How long OpenBLAS's idle threads spin before they sleep: 2**BLAS_SPIN_EXPONENT CPU cycles
# (OPENBLAS_THREAD_TIMEOUT; OpenBLAS's default is 2**28, about 0.1 s). A spinning thread
# holds a core, and microtorch's own pool then gets half of it: measured on 2 cores, a
# log-softmax over 1024 x 1000 rows shared by two threads took 1.40 ms right after a matrix
# product (one thread: 1.22 ms) and 0.80 ms with a short spin. Too short a spin costs a wake-up
# per product instead: 2**19 cycles (some 0.2 ms) still cover the gaps between the products of
# an MLP step or a recurrence (the MLP step: 0.60 ms; 0.67 ms at 2**18; 0.64 ms at OpenBLAS's
# default) and leave the cores to the pool soon enough (the embedding LM's step: 3.0 ms at
# 2**18 and 2**19, 3.4 ms at 2**20, 4.0 ms at the default).
BLAS_SPIN_EXPONENT = 19


def shorten_blas_spin(exponent: int = BLAS_SPIN_EXPONENT) -> bool:
    """Make OpenBLAS's idle threads sleep after ``2**exponent`` cycles instead of ~0.1 s.

    OpenBLAS reads the timeout once, when its threads start: this sets it through its own
    environment reader (``openblas_read_env``) and restarts the threads
    (``blas_thread_shutdown_``; they start again at the next threaded call). The process
    environment is left as it was. True when an OpenBLAS took the setting; False without
    OpenBLAS (MKL, BLIS, ...) or when its build lacks those entry points. Call it while no
    other thread is inside BLAS (microtorch does, on import: ``process_tuning``).
    """
    if not 4 <= exponent <= 30:  # (OpenBLAS clamps to this range)
        raise ValueError(f"exponent must be in [4, 30], got {exponent}")
    done = False
    previous = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(exponent)
    try:
        for dynlib in _openblas_libraries():
            read_env = getattr(dynlib, "openblas_read_env", None)
            shutdown = getattr(dynlib, "blas_thread_shutdown_", None)
            if read_env is None or shutdown is None:
                continue
            read_env.argtypes, read_env.restype = (), None
            shutdown.argtypes, shutdown.restype = (), ctypes.c_int
            read_env()
            shutdown()
            done = True
    finally:
        if previous is None:
            del os.environ["OPENBLAS_THREAD_TIMEOUT"]
        else:
            os.environ["OPENBLAS_THREAD_TIMEOUT"] = previous
    return done


def gemm_size(m: int, k: int, n: int) -> int:
    """The size of an (m, k) @ (k, n) product for the thread rules: its multiply-adds and
    ``GEMM_ELEMENT_COST`` per element of its operands and result."""
    return m * k * n + GEMM_ELEMENT_COST * (m * k + k * n + m * n)


def gemm_threads(m: int, k: int, n: int, count: int = 1, run: int = 0) -> None:
    """Set NumPy's OpenBLAS to the threads ``count`` (m, k) @ (k, n) products (or their
    transposes), run back to back, should use: ``get_num_threads()`` when each one's
    ``gemm_size`` reaches ``SMALL_GEMM`` and all together ``LONE_GEMM``, else one. ``run``:
    the size of other products in the same run, back to back with these (one wake-up for
    all). One ctypes call when that changes, nothing otherwise (no-op without OpenBLAS)."""
    available = get_num_threads()  # (first: its default reads BLAS's count before a change)
    size = gemm_size(m, k, n)
    wide = size >= SMALL_GEMM and size * count + run >= LONE_GEMM
    _set_blas_threads(available if wide else 1)


def one_blas_thread() -> None:
    """Set NumPy's OpenBLAS to one thread: for BLAS calls inside microtorch's row-parallel
    work (``run_rows``: each worker calls BLAS on its own rows, and two threads must not share
    BLAS's pool) and for products too small to gain from a second thread."""
    get_num_threads()  # (first: its default reads BLAS's count before a change)
    _set_blas_threads(1)


def _set_blas_threads(want: int) -> None:
    """OpenBLAS's thread count to ``want``: one ctypes call when it changes, else nothing.
    Under a lock: threads running backward passes at once must not leave ``blas_now`` saying
    one count while OpenBLAS has the other."""
    if want == _threads.blas_now:
        return
    with _blas_setting:
        if _threads.blas_setter is None:
            _threads.blas_setter = _openblas_setter() or False
        if _threads.blas_setter:
            _threads.blas_setter(want)
        _threads.blas_now = want


def set_num_threads(n: int) -> None:
    """Use ``n`` (a checked positive int: ``microtorch.set_num_threads``) threads for CPU
    work: microtorch's pool and the BLAS library's threads."""
    blas = _blas_controller(refresh=True)
    if blas is not None:
        blas.limit(limits=n)  # (kept in force: the returned limiter is not restored)
    with _threads.lock:
        _threads.count = n
        _threads.blas_now = n
        old, _threads.pool = _threads.pool, None
    if old is not None:
        old.shutdown(wait=False)


def pool() -> ThreadPoolExecutor:
    """The worker pool: ``get_num_threads() - 1`` threads (the caller does one share)."""
    p = _threads.pool
    if p is None:
        with _threads.lock:
            if _threads.pool is None:
                _threads.pool = ThreadPoolExecutor(max(1, get_num_threads() - 1),
                                                   thread_name_prefix="microtorch-cpu")
            p = _threads.pool
    return p


# Set in a thread while it runs its share of ``run_rows``: a share that asks to be split again
# runs whole, since the pool's threads are all taken (a worker waiting on the pool it is part
# of would wait for ever).
_sharing = threading.local()


def _share(fn: Callable[[int, int], None], lo: int, hi: int) -> None:
    _sharing.active = True
    try:
        fn(lo, hi)
    finally:
        _sharing.active = False


def run_rows(fn: Callable[[int, int], None], rows: int, work: int, min_work: int) -> None:
    """Call ``fn(lo, hi)`` over consecutive row ranges covering ``range(rows)``.

    ``work`` is the total amount of work (say, elements touched); below ``min_work`` per
    thread, or with one thread, one call on the calling thread does it all. Otherwise the
    ranges are shared between the caller and the pool. ``fn`` must write disjoint rows only.
    Inside a share (``fn`` splitting its own rows again) one call does it all.
    """
    n = min(get_num_threads(), rows, max(1, work // max(1, min_work)))
    if n <= 1 or getattr(_sharing, "active", False):
        fn(0, rows)
        return
    bounds = [rows * i // n for i in range(n + 1)]
    futures = [pool().submit(_share, fn, bounds[i], bounds[i + 1]) for i in range(1, n)]
    _share(fn, bounds[0], bounds[1])
    for f in futures:
        f.result()  # (re-raises a worker's exception here)


@contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """Run the body with the BLAS library limited to ``n`` threads (no-op without
    threadpoolctl, or when the limit would not lower the current count)."""
    blas = _blas_controller()
    if blas is None or n >= get_num_threads():
        yield
        return
    try:
        with blas.limit(limits=n):
            yield
    finally:
        _threads.blas_now = None  # restored to what it was: unknown to gemm_threads
