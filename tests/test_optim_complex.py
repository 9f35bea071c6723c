"""Complex parameters under every elementwise optimizer, against PyTorch: PyTorch steps a
complex parameter as ``view_as_real`` of it, its gradient and its state (a second moment holds
re^2 and im^2, not the complex g^2), and starts Rprop's step sizes and Adagrad's sums at
v + vj. complex128 to 1e-12 over several steps; Adam's compiled step on the real view gives
the NumPy passes' bits."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch
from microtorch.backend import compiled

torch = pytest.importorskip("torch")

_CASES = {
    "SGD": ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    "Adam": ("Adam", {"lr": 0.1}),
    "Adam_amsgrad_decay": ("Adam", {"lr": 0.1, "amsgrad": True, "weight_decay": 0.1}),
    "AdamW": ("AdamW", {"lr": 0.1}),
    "Adamax": ("Adamax", {"lr": 0.1}),
    "NAdam": ("NAdam", {"lr": 0.1}),
    "RAdam": ("RAdam", {"lr": 0.1}),
    "RMSprop_centered": ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
    "Adagrad": ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.3}),
    "Adadelta": ("Adadelta", {"lr": 0.5}),
    "ASGD": ("ASGD", {"lr": 0.1}),
    "Rprop": ("Rprop", {"lr": 0.1}),
}


def _steps(lib, name: str, options: dict, dtype, size: int = 5, steps: int = 8):
    """The parameter after ``steps`` steps on seeded complex gradients (RAdam: enough steps
    to leave its warm-up), as a NumPy array."""
    rng = np.random.default_rng(16)
    p0 = (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(dtype)
    p = lib.tensor(p0, requires_grad=True)
    opt = getattr(lib.optim, name)([p], **options)
    for _ in range(steps):
        g = (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(dtype)
        p.grad = lib.tensor(g)
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("case", list(_CASES))
def test_complex_parameters_step_as_pytorch(case):
    name, options = _CASES[case]
    steps = 12 if name == "RAdam" else 8
    ours = _steps(microtorch, name, options, np.complex128, steps=steps)
    theirs = _steps(torch, name, options, np.complex128, steps=steps)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_adam_kernel_on_a_complex_parameters_real_view(monkeypatch):
    # 70000 complex elements: enough for the compiled step (compiled.MIN_ELEMENTS)
    kernels = compiled.kernels()
    if kernels is None:
        pytest.skip("numba is not available or switched off")
    calls = []
    step = kernels.adam_step
    monkeypatch.setattr(kernels, "adam_step", lambda *args: calls.append(1) or step(*args))
    results = []
    for flag in (True, False):
        compiled.set_enabled(flag)
        try:
            results.append(_steps(microtorch, "Adam", {"lr": 0.1}, np.complex64, size=70000,
                                  steps=3))
        finally:
            compiled.set_enabled(None)
    assert len(calls) == 3  # (the kernel ran, once a step, with the kernels on)
    np.testing.assert_array_equal(results[0].view(np.uint8), results[1].view(np.uint8))
    theirs = _steps(torch, "Adam", {"lr": 0.1}, np.complex64, size=70000, steps=3)
    np.testing.assert_allclose(results[0], theirs, rtol=1e-5, atol=1e-6)


def test_lbfgs_takes_complex_parameters_as_their_real_views():
    # A complex parameter beside a real one; the state dict round trip keeps the flat state real.
    rng = np.random.default_rng(17)
    p0 = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    a0 = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    results = []
    for lib in (microtorch, torch):
        p = lib.tensor(p0, requires_grad=True)
        q = lib.tensor(np.arange(3.0), requires_grad=True)
        a = lib.tensor(a0)
        opt = lib.optim.LBFGS([p, q], lr=0.5, max_iter=5, history_size=3)

        def closure(lib=lib, opt=opt, p=p, q=q, a=a):
            opt.zero_grad()
            r = a @ p
            loss = (r.real ** 2 + r.imag ** 2).sum() + ((q - 1) ** 2).sum()
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
        if lib is microtorch:
            state = opt.state_dict()
            opt = lib.optim.LBFGS([p, q], lr=0.5, max_iter=5, history_size=3)
            opt.load_state_dict(state)
            flat = opt.state[p]["d"]
            assert flat.dtype == microtorch.float64 and tuple(flat.shape) == (11,)
        opt.step(closure)
        results.append([p.detach().numpy(), q.detach().numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-11, atol=1e-12)


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["Adam", "RMSprop", "Rprop"])
def test_complex_parameters_on_cuda_step_as_on_the_cpu(name):
    # On CUDA a complex parameter takes the per-array CuPy code (the fused kernels take real
    # floats only) on its real view, as on the CPU.
    if not microtorch.cuda.is_available():
        pytest.skip("CUDA is not available (the stand-in tier runs this: pytest -m cuda)")
    rng = np.random.default_rng(18)
    p0 = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    grads = [rng.standard_normal(6) + 1j * rng.standard_normal(6) for _ in range(4)]
    results = []
    for device in ("cpu", "cuda"):
        p = microtorch.tensor(p0, device=device, requires_grad=True)
        opt = getattr(microtorch.optim, name)([p], lr=0.1)
        for g in grads:
            p.grad = microtorch.tensor(g, device=device)
            opt.step()
        results.append(p.detach().cpu().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("norm_type", [2.0, float("inf"), 1.0, 3.0])
def test_clip_grad_norm_of_complex_and_real_gradients(norm_type):
    # A complex gradient's norm is that of its magnitudes, real (it raised before).
    rng = np.random.default_rng(19)
    g0, g1 = rng.standard_normal(5) + 1j * rng.standard_normal(5), rng.standard_normal(3)
    results = []
    for lib in (microtorch, torch):
        p = lib.tensor(np.zeros(5, complex), requires_grad=True)
        q = lib.tensor(np.zeros(3), requires_grad=True)
        p.grad, q.grad = lib.tensor(g0), lib.tensor(g1)
        total = lib.nn.utils.clip_grad_norm_([p, q], 0.7, norm_type=norm_type)
        assert total.dtype == lib.float64
        results.append([total.numpy(), p.grad.numpy(), q.grad.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
