"""CPU thread control: set_num_threads/get_num_threads (PyTorch's API), the BLAS limit, and
row-parallel work giving bit-identical results whatever the thread count."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import microtorch
from microtorch.backend import threads
from microtorch.ops.activation import _log_softmax_array


@pytest.fixture
def restore_threads():
    before = microtorch.get_num_threads()
    yield
    microtorch.set_num_threads(before)


def test_set_num_threads_checks_its_argument(restore_threads) -> None:
    before = microtorch.get_num_threads()
    for bad in (0, -2, 1.5, True):
        with pytest.raises(RuntimeError):
            microtorch.set_num_threads(bad)
        assert microtorch.get_num_threads() == before  # state untouched


def test_set_num_threads_sets_blas_and_pool(restore_threads) -> None:
    pytest.importorskip("threadpoolctl")
    microtorch.set_num_threads(1)
    assert microtorch.get_num_threads() == 1
    blas = threads._blas_controller()
    assert all(info["num_threads"] == 1 for info in blas.info())
    microtorch.set_num_threads(2)
    assert all(info["num_threads"] == 2 for info in blas.info())
    with threads.blas_threads(1):
        assert all(info["num_threads"] == 1 for info in blas.info())
    assert all(info["num_threads"] == 2 for info in blas.info())


def test_run_rows_covers_every_row_once(restore_threads) -> None:
    microtorch.set_num_threads(3)
    seen = np.zeros(1000, dtype=np.int64)

    def mark(lo, hi):
        seen[lo:hi] += 1

    threads.run_rows(mark, 1000, work=10**9, min_work=1)
    assert (seen == 1).all()
    seen[:] = 0
    threads.run_rows(mark, 1000, work=10, min_work=100)  # too little work: one call
    assert (seen == 1).all()


@pytest.mark.parametrize("count", [2, 3])
def test_run_rows_inside_a_share_runs_whole(restore_threads, count) -> None:
    """A share that splits its rows again (a convolution's chunk of images adding its col2im
    by threads) runs them in one call, on its own thread: the pool's threads are all busy, and
    a worker waiting on its own pool would wait for ever."""
    microtorch.set_num_threads(count)
    calls = []

    def inner(lo, hi):
        calls.append((threading.get_ident(), lo, hi))  # (a share of the outer split's)

    def outer(lo, hi):
        threads.run_rows(inner, 100, work=10**9, min_work=1)

    threads.run_rows(outer, count, work=10**9, min_work=1)
    assert sorted((lo, hi) for _, lo, hi in calls) == [(0, 100)] * count  # (no deadlock)
    seen = []
    threads.run_rows(lambda lo, hi: seen.append((lo, hi)), 4, work=10**9, min_work=1)
    assert len(seen) == min(count, 4)  # outside a share: split again


def test_run_rows_reraises_a_worker_error(restore_threads) -> None:
    microtorch.set_num_threads(2)

    def fail(lo, hi):
        if lo > 0:
            raise KeyError("worker")

    with pytest.raises(KeyError, match="worker"):
        threads.run_rows(fail, 10, work=10**9, min_work=1)


@pytest.mark.parametrize("shape", [(1024, 1000), (257, 1001), (1002, 1000), (4100, 64), (3, 5),
                                   (600, 7)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_is_bit_identical_across_thread_counts_and_blocks(
        restore_threads, monkeypatch, shape, reduction) -> None:
    """The same bits on 1, 2 and 4 threads and with any cache size (the blocks of rows each
    thread takes), and the same as the log-softmax and softmax ops."""
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal(shape) * 4).astype(np.float32)
    target = rng.integers(0, shape[1], shape[0])
    from microtorch.backend import rows
    from microtorch.ops import loss as loss_ops

    results = []
    for n, cache in ((1, None), (2, None), (4, None), (2, 3 * 4096), (1, 1)):
        microtorch.set_num_threads(n)
        if cache is not None:  # (blocks of 1 row, then of a few rows)
            monkeypatch.setattr(rows, "l2_bytes", lambda cache=cache: cache)
        for decide in loss_ops._ROWS.values():
            decide.force("threads")  # (one thread runs one call anyway)
        x = microtorch.tensor(logits, requires_grad=True)
        loss = microtorch.nn.functional.cross_entropy(x, microtorch.tensor(target),
                                                      reduction=reduction)
        loss.sum().backward()
        results.append((loss.detach().numpy().copy(), x.grad.numpy().copy()))
    for decide in loss_ops._ROWS.values():
        decide.force(None)
    for loss, grad in results[1:]:
        assert np.array_equal(loss, results[0][0]) and np.array_equal(grad, results[0][1])
    # The row-wise log-softmax is the reference formula, bit for bit; the softmax is
    # microtorch's softmax op, bit for bit.
    high, log_sum, exps, total = loss_ops._softmax_rows(logits)
    p = exps / total
    assert np.array_equal((logits - high) - log_sum, _log_softmax_array(logits, 1))
    assert np.array_equal(p, microtorch.softmax(microtorch.tensor(logits), 1).numpy())


def test_cross_entropy_gradient_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((300, 700)).astype(np.float32)
    target = rng.integers(0, 700, 300)
    x = microtorch.tensor(logits, requires_grad=True)
    microtorch.nn.functional.cross_entropy(x, microtorch.tensor(target)).backward()
    tx = torch.tensor(logits, requires_grad=True)
    torch.nn.functional.cross_entropy(tx, torch.tensor(target)).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-8)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_row_work_runs_in_a_forked_child(restore_threads) -> None:
    """A child forked after the pool started makes its own pool (no hang on dead threads)."""
    microtorch.set_num_threads(2)
    threads.run_rows(lambda lo, hi: None, 10, work=10**9, min_work=1)  # the pool exists
    pid = os.fork()
    if pid == 0:  # the child: row work must complete
        seen = np.zeros(10)

        def mark(lo, hi):
            seen[lo:hi] += 1

        threads.run_rows(mark, 10, work=10**9, min_work=1)
        os._exit(0 if (seen == 1).all() else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_gemm_threads_puts_small_products_and_short_runs_on_one_blas_thread(
        restore_threads) -> None:
    blas = threads._blas_controller()
    if blas is None or not threads._openblas_setter():
        pytest.skip("needs NumPy on OpenBLAS")
    microtorch.set_num_threads(2)

    def numpys_threads() -> int:  # (SciPy may have loaded an OpenBLAS of its own)
        return next(i["num_threads"] for i in threads._blas_controller().info()
                    if i["internal_api"] == "openblas" and "numpy" in i["filepath"])

    small, lone = threads.SMALL_GEMM, threads.LONE_GEMM

    per_column = threads.gemm_size(1, 1, 2) - threads.gemm_size(1, 1, 1)  # (1 x 1 @ 1 x n)
    base = threads.gemm_size(1, 1, 0)

    def sized(size: int) -> tuple[int, int, int]:  # a (1, 1) @ (1, n) product of that size
        n, rest = divmod(size - base, per_column)
        return 1, 1, n + (rest > 0)

    # (products, each of a size, run back to back) -> BLAS threads
    for (size, count), want in {(lone, 1): 2, (lone // 2, 1): 1, (small, lone // small): 2,
                                (small, lone // small // 2): 1, (small // 2, 1 << 30): 1}.items():
        threads.gemm_threads(*sized(size), count)
        assert numpys_threads() == want, (size, count)
    # Other products of the same run count towards LONE_GEMM, not towards SMALL_GEMM
    for size, short, want in ((small, 0, 2), (small, 1, 1), (small // 2, -lone, 1)):
        shape = sized(size)
        run = lone - threads.gemm_size(*shape) - short
        threads.gemm_threads(*shape, 1, run=run)
        assert numpys_threads() == want, (size, run)
    # Each element moved counts: a product of few multiply-adds but large operands and result
    assert threads.gemm_size(1600, 16, 512) > 2 * 1600 * 16 * 512
    x = microtorch.randn(8, 4, requires_grad=True)  # a small Linear: one thread, same values
    w = microtorch.randn(3, 4, requires_grad=True)
    out = microtorch.nn.functional.linear(x, w)
    np.testing.assert_allclose(out.detach().numpy(), x.detach().numpy() @ w.detach().numpy().T,
                               rtol=1e-6)
    assert numpys_threads() == 1


@pytest.mark.parametrize("op", ["matmul", "linear", "lstm"])
def test_products_do_not_depend_on_the_previous_products_threads(restore_threads, op) -> None:
    """Every product sets BLAS's threads by its own size (OpenBLAS rounds a product
    differently on one thread and on two), so an op's result is the same whatever ran
    before it: a large product (two threads) or a tiny one (one)."""
    if threads._blas_controller() is None or not threads._openblas_setter():
        pytest.skip("needs NumPy on OpenBLAS")
    microtorch.set_num_threads(2)
    microtorch.manual_seed(0)
    a, b = microtorch.randn(96, 160), microtorch.randn(160, 96)  # (between SMALL and LONE_GEMM)
    lstm = microtorch.nn.LSTM(8, 16)
    xs = microtorch.randn(5, 3, 8)
    run = {"matmul": lambda: a @ b,
           "linear": lambda: microtorch.nn.functional.linear(a, b.T),
           "lstm": lambda: lstm(xs)[0]}[op]
    results = []
    for before in (1 << 30, 1, 1 << 30):  # what a large, then a tiny product left set
        threads.gemm_threads(before, 1, 1)
        with microtorch.no_grad():
            results.append(run().numpy().copy())
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


def test_default_thread_count_survives_a_first_small_product() -> None:
    """The default thread count (OMP_NUM_THREADS unset: the BLAS pool's) is read before a
    one-thread product lowers the pool: otherwise a process whose first product is small ran
    every later product on one thread, and its results depended on the environment. (Asked
    for 2, OpenBLAS starts as many as the process may use: 1 on a one-core machine.)"""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["OPENBLAS_NUM_THREADS"] = "2"
    code = ("from threadpoolctl import threadpool_info\n"
            "import numpy\n"
            "pool = max(p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas')\n"
            "import microtorch\n"
            "from microtorch.backend import threads\n"
            "if threads._openblas_setter():\n"
            "    threads.gemm_threads(1, 1, 1)\n"
            "    assert microtorch.get_num_threads() == pool, microtorch.get_num_threads()\n"
            "    threads.gemm_threads(threads.LONE_GEMM, 1, 1)\n"
            "    assert threads._threads.blas_now == pool\n")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


@pytest.mark.parametrize("shape", [(1024, 1000), (1002, 1000), (16, 2, 32, 32), (4100, 64),
                                   (300, 3), (7, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_by_row_blocks_is_the_whole_array_formula(restore_threads, monkeypatch, shape,
                                                          dtype) -> None:
    """softmax and log_softmax over the last axis, by threads and L2-sized row blocks, give
    the bits of the passes over the whole array (exp(x - max) / sums, x - max - log(sums),
    the sums by ``last_axis_sums``) on 1, 2 and 3 threads and with blocks from 1 row on;
    infinities and NaN as there, without warnings."""
    from microtorch.backend import rows
    from microtorch.backend.blas import last_axis_sums
    from microtorch.ops import activation

    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    if x.size > 10:
        x.reshape(-1)[[1, 5, 9]] = [np.inf, np.nan, -np.inf]
    with np.errstate(all="ignore"):
        shifted = x - x.max(axis=-1, keepdims=True)
        log_ref = shifted - np.log(last_axis_sums(np.exp(shifted)))
        soft_ref = np.exp(shifted) / last_axis_sums(np.exp(shifted))
    for n, cache in ((1, None), (2, None), (3, None), (2, 1), (1, 3 * 4096)):
        microtorch.set_num_threads(n)
        if cache is not None:
            monkeypatch.setattr(rows, "l2_bytes", lambda cache=cache: cache)
        for decide in activation._LAST_AXIS_ROWS.values():
            decide.force("threads")
        t = microtorch.tensor(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got_log = microtorch.log_softmax(t, -1).numpy()
            got_soft = microtorch.softmax(t, -1).numpy()
        for decide in activation._LAST_AXIS_ROWS.values():
            decide.force(None)
        np.testing.assert_array_equal(got_log, log_ref)
        np.testing.assert_array_equal(got_soft, soft_ref)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(128, 10), (1024, 1000), (1, 3)])
def test_cross_entropy_plain_rows_are_the_masked_rows_bits(reduction, shape) -> None:
    """Targets all in range, none ignored, no weights: the forward builds no masks, with the
    bits of the masked formula (class weights of ones, an ignore_index that some target
    equals); an out-of-range target still raises PyTorch's error."""
    rng = np.random.default_rng(3)
    logits = (rng.standard_normal(shape) * 3).astype(np.float32)
    target = rng.integers(0, shape[1], shape[0])
    masked = [{"weight": microtorch.ones(shape[1])}]
    if shape[0] > 2:  # an ignore_index between the targets' least and greatest, yet absent
        target[target == 1], target[:2] = 0, (0, shape[1] - 1)
        masked.append({"ignore_index": 1})
    F = microtorch.nn.functional
    results = []
    for kwargs in ({}, *masked):
        x = microtorch.tensor(logits, requires_grad=True)
        loss = F.cross_entropy(x, microtorch.tensor(target), reduction=reduction, **kwargs)
        loss.sum().backward()
        results.append((loss.detach().numpy(), x.grad.numpy()))
    for loss, grad in results[1:]:
        np.testing.assert_array_equal(loss, results[0][0])
        np.testing.assert_array_equal(grad, results[0][1])
    bad = target.copy()
    bad[-1] = shape[1]
    with pytest.raises(IndexError, match="Target"):
        F.cross_entropy(microtorch.tensor(logits), microtorch.tensor(bad))


@pytest.mark.parametrize("shape", [(1024, 1000), (1002, 1000), (16, 2, 32, 32), (300, 3)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_by_row_blocks_is_the_tensor_formula(restore_threads, monkeypatch,
                                                              shape, log) -> None:
    """The backward of softmax (y * (g - sum(g * y))) and log_softmax (g - exp(y) * sum(g))
    over the last axis, by threads and row blocks, gives the bits of the same formula as
    Tensor ops over the whole array (create_graph records it so), at any thread count and
    block size."""
    from microtorch.backend import rows
    from microtorch.ops import activation

    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    op = microtorch.log_softmax if log else microtorch.softmax
    reference = None
    for n, cache, graph in ((1, None, True), (1, None, False), (2, None, False),
                            (3, None, False), (2, 1, False), (1, 3 * 4096, False)):
        microtorch.set_num_threads(n)
        if cache is not None:
            monkeypatch.setattr(rows, "l2_bytes", lambda cache=cache: cache)
        for decide in activation._LAST_AXIS_ROWS.values():
            decide.force("threads")
        t = microtorch.tensor(x, requires_grad=True)
        (grad,) = microtorch.autograd.grad(op(t, -1), t, microtorch.tensor(g),
                                           create_graph=graph)
        for decide in activation._LAST_AXIS_ROWS.values():
            decide.force(None)
        if reference is None:  # (create_graph: the Tensor formula)
            reference = grad.detach().numpy().copy()
        np.testing.assert_array_equal(grad.detach().numpy(), reference)
