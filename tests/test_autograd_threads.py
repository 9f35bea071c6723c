"""Autograd under real threads (issue 15 §1): grad mode and inference mode belong to each thread
as in PyTorch, anomaly mode is process-wide as in PyTorch, and backward passes running at once
into a shared leaf accumulate every gradient."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def frequent_thread_switches():
    """Switch threads every 10 microseconds, so races show up within short loops."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(previous)


def run_threads(target, n: int, *args) -> list:
    """Run ``target(i, *args)`` in ``n`` threads started together; re-raise the first error."""
    results: list = [None] * n
    errors: list = []
    start = threading.Barrier(n)

    def body(i):
        try:
            start.wait()
            results[i] = target(i, *args)
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def modes_seen_by_a_new_thread(lib) -> dict:
    """What a thread started inside no_grad + inference_mode + anomaly mode reads."""
    seen = {}

    def probe():
        seen["grad"] = lib.is_grad_enabled()
        seen["inference"] = lib.is_inference_mode_enabled()
        seen["anomaly"] = lib.is_anomaly_enabled()

    with lib.no_grad(), lib.inference_mode(), lib.autograd.set_detect_anomaly(True):
        t = threading.Thread(target=probe)
        t.start()
        t.join()
    return seen


def test_a_new_thread_starts_with_pytorchs_modes():
    got = modes_seen_by_a_new_thread(mt)
    assert got == modes_seen_by_a_new_thread(torch)
    assert got == {"grad": True, "inference": False, "anomaly": True}
    assert mt.is_grad_enabled() and not mt.autograd.is_anomaly_enabled()


@pytest.mark.parametrize("lib", [mt, torch], ids=["microtorch", "torch"])
def test_no_grad_in_one_thread_leaves_another_recording(lib):
    """One thread toggles no_grad / set_grad_enabled / inference_mode in a tight loop while the
    other records graphs: every result of the recording thread must require grad."""
    w = lib.ones(3, requires_grad=True)
    stop = threading.Event()

    def toggler(i):
        while not stop.is_set():
            with lib.no_grad():
                pass
            lib.set_grad_enabled(False)
            lib.set_grad_enabled(True)
            with lib.inference_mode():
                pass

    def recorder(i):
        try:
            for _ in range(3000):
                y = w * 2.0
                assert y.requires_grad and lib.is_grad_enabled()
            return True
        finally:
            stop.set()

    results = run_threads(lambda i: recorder(i) if i == 0 else toggler(i), 3)
    assert results[0] is True


def train_linear(seed: int, steps: int, lib=mt) -> np.ndarray:
    """Train a small two-layer net with SGD on synthetic data; the final weights."""
    lib.manual_seed(seed)
    gen = np.random.default_rng(seed)
    x = lib.tensor(gen.standard_normal((16, 4)), dtype=lib.float64)
    y = lib.tensor(gen.standard_normal((16, 1)), dtype=lib.float64)
    w1 = lib.tensor(gen.standard_normal((4, 8)) * 0.5, dtype=lib.float64, requires_grad=True)
    w2 = lib.tensor(gen.standard_normal((8, 1)) * 0.5, dtype=lib.float64, requires_grad=True)
    opt = lib.optim.SGD([w1, w2], lr=0.05, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        loss = (((x @ w1).tanh() @ w2 - y) ** 2).mean()
        loss.backward()
        opt.step()
        with lib.no_grad():  # another thread's no_grad must not reach the others
            w1.mul_(1.0)
    return np.concatenate([w1.detach().numpy().ravel(), w2.detach().numpy().ravel()])


def test_models_trained_in_parallel_threads_match_their_single_thread_runs():
    steps = 150
    alone = [train_linear(seed, steps) for seed in range(4)]
    together = run_threads(train_linear, 4, steps)
    for seed in range(4):
        np.testing.assert_array_equal(together[seed], alone[seed])
    # and the single-thread run is PyTorch's
    np.testing.assert_allclose(alone[0], train_linear(0, steps, torch), rtol=1e-10, atol=1e-12)


def test_many_threads_backward_into_one_model_lose_no_gradient():
    """4 threads x 200 backward passes into the same leaves: exactly 800 times the gradient."""
    x = mt.tensor(np.arange(1.0, 65.0).reshape(8, 8))
    w = mt.ones(8, 8, dtype=mt.float64, requires_grad=True)
    b = mt.zeros(8, dtype=mt.float64, requires_grad=True)

    def worker(i):
        for _ in range(200):
            ((x * w).sum(1) + b).sum().backward()

    run_threads(worker, 4)
    np.testing.assert_array_equal(w.grad.numpy(), 800 * x.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), np.full(8, 800.0))


def test_threads_backward_with_create_graph_into_a_shared_leaf():
    w = mt.tensor([1.0, 2.0, 3.0], dtype=mt.float64, requires_grad=True)

    def worker(i):
        for _ in range(50):
            (w ** 2).sum().backward(create_graph=True)

    run_threads(worker, 4)
    np.testing.assert_array_equal(w.grad.detach().numpy(), 200 * 2 * w.detach().numpy())


def test_queued_callbacks_belong_to_their_thread():
    """A callback queued in one thread's backward runs at the end of that thread's pass."""
    from microtorch.autograd.engine import queue_callback

    def worker(i):
        ran = []
        w = mt.ones(4, requires_grad=True)
        for _ in range(100):
            y = w * 3.0
            y.register_hook(lambda g: queue_callback(lambda: ran.append(i)))
            y.sum().backward()
        return ran

    results = run_threads(worker, 4)
    assert results == [[i] * 100 for i in range(4)]


def grad_mode_forms(lib) -> list:
    """What the grad-mode context managers and decorators report, in PyTorch's forms."""
    seen = []

    @lib.no_grad
    def bare_no_grad():
        return lib.is_grad_enabled()

    @lib.inference_mode
    def bare_inference():
        return lib.is_grad_enabled(), lib.is_inference_mode_enabled()

    @lib.inference_mode()
    def called_inference():
        return lib.is_inference_mode_enabled()

    seen += [bare_no_grad(), bare_inference(), called_inference()]
    with lib.inference_mode():
        seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        with lib.inference_mode(False):
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        with lib.enable_grad():
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        seen.append((lib.ones(2, requires_grad=True) * 2).requires_grad)
    previous = lib.set_grad_enabled(False)
    seen.append((lib.is_grad_enabled(), repr(previous).split(".")[-1]))
    lib.set_grad_enabled(True)
    with lib.autograd.set_detect_anomaly(True, check_nan=False):
        seen.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
    seen.append((lib.is_grad_enabled(), lib.is_anomaly_enabled(),
                 lib.is_anomaly_check_nan_enabled(), lib.is_inference_mode_enabled()))
    return seen


def test_grad_mode_forms_match_pytorch():
    assert grad_mode_forms(mt) == grad_mode_forms(torch)
    with pytest.raises(TypeError) as got:
        mt.set_grad_enabled(1)
    with pytest.raises(TypeError) as want:
        torch.set_grad_enabled(1)
    assert str(got.value) == str(want.value)
